# rdmaproxyd. The layers, from the bottom, one directory each (tests/check-layers.sh
# enforces them; headers are included by their path under daemon/, "core/core.h"):
#   daemon/base/   utilities and wire   log, util, memguard, config, stats, ctl_wire, cpuload,
#                                       nametab, evloop.h
#   daemon/rdma/   RDMA resources       vx.h, rdma_dev, verbs_local
#   daemon/core/   client core          core, rings, region, access, exports, op, endpoint, xfer,
#                                       session
#   daemon/peer/   peer layer           peer_proto, peer_hs (wire), peer_gate, peer_link,
#                                       peer_data, peers (behind transport.h)
#                  transports           tcp_stream, verbs_peer_io, verbs_peer
#   daemon/        loop glue and admin  evloop_uv, tcp_uv, engine, clients, listener, notify,
#                                       admin_metrics, admin, manager, main
sbin_PROGRAMS += daemon/rdmaproxyd
RP_DAEMON_UTIL = \
	daemon/base/log.c daemon/base/log.h \
	daemon/base/util.c daemon/base/util.h \
	daemon/base/memguard.c daemon/base/memguard.h \
	daemon/base/config.c daemon/base/config.h \
	daemon/base/stats.c daemon/base/stats.h \
	daemon/base/ctl_wire.c daemon/base/ctl_wire.h \
	daemon/base/cpuload.c daemon/base/cpuload.h \
	daemon/base/nametab.c daemon/base/nametab.h \
	daemon/peer/peer_proto.c daemon/peer/peer_proto.h \
	daemon/peer/peer_hs.c daemon/peer/peer_hs.h \
	libclient/error.c \
	include/rp-proto.h include/rp-ring.h include/rp-fdpass.h include/rdmaproxy.h
RP_DAEMON_RDMA = \
	daemon/rdma/vx.h \
	daemon/rdma/rdma_dev.c daemon/rdma/rdma_dev.h \
	daemon/rdma/verbs_local.c daemon/rdma/verbs_local.h
RP_DAEMON_CORE = \
	daemon/core/core.c daemon/core/core.h \
	daemon/core/rings.c daemon/core/region.c daemon/core/access.c daemon/core/exports.c \
	daemon/core/op.c daemon/core/endpoint.c \
	daemon/core/xfer.c daemon/core/session.c
RP_DAEMON_PEERS = \
	daemon/base/evloop.h daemon/peer/transport.h \
	daemon/peer/peer_gate.c daemon/peer/peer_gate.h \
	daemon/peer/peer_link.c daemon/peer/peer_data.c daemon/peer/peers.c daemon/peer/peer.h daemon/peer/peer_int.h \
	daemon/peer/tcp_stream.c daemon/peer/tcp_stream.h \
	daemon/peer/verbs_peer_io.c daemon/peer/verbs_peer_io.h daemon/peer/verbs_peer.c
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
