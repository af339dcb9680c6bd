# rdmaproxyctl: the admin CLI. It speaks the control protocol through the
# library's internal connection code (compiled in, not linked: conn.c is not
# part of the library's ABI).
bin_PROGRAMS += tools/ctl/rdmaproxyctl
tools_ctl_rdmaproxyctl_SOURCES = \
	tools/ctl/rdmaproxyctl.c tools/ctl/ctl-cmds.c tools/ctl/ctl-lists.c \
	tools/ctl/ctl-out.c tools/ctl/ctl-proto.c tools/ctl/ctl.h tools/ctl/ctl-cmd.h \
	libclient/conn.c libclient/conn.h libclient/error.c \
	include/rdmaproxy.h include/rp-proto.h
# Own flags give the shared sources their own objects (not the library's libtool ones).
tools_ctl_rdmaproxyctl_CFLAGS = $(AM_CFLAGS)
tools_ctl_rdmaproxyctl_LDADD = -lm
