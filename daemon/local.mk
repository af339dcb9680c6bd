# rdmaproxyd
sbin_PROGRAMS += daemon/rdmaproxyd
daemon_rdmaproxyd_SOURCES = \
	daemon/main.c \
	daemon/manager.c daemon/manager.h \
	daemon/clients.c daemon/clients.h \
	daemon/session.c daemon/session.h \
	daemon/admin.c daemon/admin_metrics.c daemon/admin.h \
	daemon/region.c daemon/exports.c daemon/xfer.c \
	libclient/error.c \
	daemon/config.c daemon/config.h \
	daemon/listener.c daemon/listener.h \
	daemon/notify.c daemon/notify.h \
	daemon/rdma_dev.c daemon/rdma_dev.h daemon/vx.h \
	daemon/verbs_local.c daemon/verbs_local.h \
	daemon/verbs_peer.c daemon/verbs_peer_io.c daemon/verbs_peer_uv.c daemon/verbs_peer.h \
	daemon/peer.c daemon/peer_data.c daemon/peer.h daemon/peer_int.h \
	daemon/peer_proto.c daemon/peer_proto.h daemon/peer_hs.c daemon/peer_hs.h \
	daemon/transport.h daemon/tcp_transport.c \
	daemon/log.c daemon/log.h \
	daemon/util.c daemon/util.h \
	daemon/memguard.c daemon/memguard.h \
	include/rp-proto.h include/rp-ring.h include/rp-fdpass.h include/rdmaproxy.h
daemon_rdmaproxyd_CFLAGS = $(AM_CFLAGS) $(UV_CFLAGS) $(IBVERBS_CFLAGS) $(RDMACM_CFLAGS) \
	$(INIH_CFLAGS) $(SYSTEMD_CFLAGS) $(SODIUM_CFLAGS)
daemon_rdmaproxyd_LDADD = $(UV_LIBS) $(IBVERBS_LIBS) $(RDMACM_LIBS) $(INIH_LIBS) $(SYSTEMD_LIBS) \
	$(SODIUM_LIBS)
