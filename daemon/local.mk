# rdmaproxyd. The layers, from the bottom (tests/check-layers.sh enforces them):
#   utilities and wire     log, util, memguard, config, stats, ctl_wire, peer_proto, peer_hs
#   RDMA resources         vx.h, rdma_dev, verbs_local
#   client core            core, rings, region, access, exports, op, endpoint, xfer, session
#   peer layer             peer_gate, peer_link, peer_data, peers (behind transport.h)
#   transports             tcp_stream, verbs_peer_io, verbs_peer
#   loop glue and admin    evloop_uv, tcp_uv, clients, listener, notify, admin_metrics,
#                          admin, manager, main
sbin_PROGRAMS += daemon/rdmaproxyd
RP_DAEMON_UTIL = \
	daemon/log.c daemon/log.h \
	daemon/util.c daemon/util.h \
	daemon/memguard.c daemon/memguard.h \
	daemon/config.c daemon/config.h \
	daemon/stats.c daemon/stats.h \
	daemon/ctl_wire.c daemon/ctl_wire.h \
	daemon/peer_proto.c daemon/peer_proto.h \
	daemon/peer_hs.c daemon/peer_hs.h \
	libclient/error.c \
	include/rp-proto.h include/rp-ring.h include/rp-fdpass.h include/rdmaproxy.h
RP_DAEMON_RDMA = \
	daemon/vx.h \
	daemon/rdma_dev.c daemon/rdma_dev.h \
	daemon/verbs_local.c daemon/verbs_local.h
RP_DAEMON_CORE = \
	daemon/core.c daemon/core.h \
	daemon/rings.c daemon/region.c daemon/access.c daemon/exports.c daemon/op.c \
	daemon/endpoint.c \
	daemon/xfer.c daemon/session.c
RP_DAEMON_PEERS = \
	daemon/evloop.h daemon/transport.h \
	daemon/peer_gate.c daemon/peer_gate.h \
	daemon/peer_link.c daemon/peer_data.c daemon/peers.c daemon/peer.h daemon/peer_int.h \
	daemon/tcp_stream.c daemon/tcp_stream.h \
	daemon/verbs_peer_io.c daemon/verbs_peer_io.h daemon/verbs_peer.c
RP_DAEMON_GLUE = \
	daemon/evloop_uv.c daemon/evloop_uv.h \
	daemon/tcp_uv.c daemon/tcp_uv.h \
	daemon/engine.c daemon/engine.h \
	daemon/clients.c daemon/clients.h \
	daemon/listener.c daemon/listener.h \
	daemon/notify.c daemon/notify.h \
	daemon/admin_metrics.c daemon/admin_metrics.h daemon/admin.c daemon/admin.h \
	daemon/manager.c daemon/manager.h daemon/manager_uv.h \
	daemon/main.c
daemon_rdmaproxyd_SOURCES = $(RP_DAEMON_UTIL) $(RP_DAEMON_RDMA) $(RP_DAEMON_CORE) \
	$(RP_DAEMON_PEERS) $(RP_DAEMON_GLUE)
daemon_rdmaproxyd_CFLAGS = $(AM_CFLAGS) $(UV_CFLAGS) $(IBVERBS_CFLAGS) $(RDMACM_CFLAGS) \
	$(INIH_CFLAGS) $(SYSTEMD_CFLAGS) $(SODIUM_CFLAGS)
daemon_rdmaproxyd_LDADD = $(UV_LIBS) $(IBVERBS_LIBS) $(RDMACM_LIBS) $(INIH_LIBS) $(SYSTEMD_LIBS) \
	$(SODIUM_LIBS)
