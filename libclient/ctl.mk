# rdmaproxyctl: the admin CLI. It speaks the control protocol through the
# library's internal connection code (compiled in, not linked: conn.c is not
# part of the library's ABI).
bin_PROGRAMS += libclient/rdmaproxyctl
libclient_rdmaproxyctl_SOURCES = \
	libclient/rdmaproxyctl.c libclient/ctl-cmds.c libclient/ctl-lists.c \
	libclient/ctl-out.c libclient/ctl-proto.c libclient/ctl.h libclient/ctl-cmd.h \
	libclient/conn.c libclient/conn.h libclient/error.c \
	include/rdmaproxy.h include/rp-proto.h
# Own flags give the shared sources their own objects (not the library's libtool ones).
libclient_rdmaproxyctl_CFLAGS = $(AM_CFLAGS)
libclient_rdmaproxyctl_LDADD = -lm
