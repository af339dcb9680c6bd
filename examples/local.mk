# Examples: waiting on rp_fd() in plain epoll and in libuv, and the demo.
noinst_PROGRAMS += examples/epoll-wait examples/uv-wait examples/rp-demo
examples_epoll_wait_SOURCES = examples/epoll-wait.c
examples_epoll_wait_LDADD = libclient/librdmaproxy.la
examples_uv_wait_SOURCES = examples/uv-wait.c
examples_uv_wait_CFLAGS = $(AM_CFLAGS) $(UV_CFLAGS)
examples_uv_wait_LDADD = libclient/librdmaproxy.la $(UV_LIBS)
examples_rp_demo_SOURCES = examples/rp-demo.c
examples_rp_demo_LDADD = libclient/librdmaproxy.la
examples_epoll_wait_LDFLAGS = $(AM_LDFLAGS) -no-install
examples_uv_wait_LDFLAGS = $(AM_LDFLAGS) -no-install
examples_rp_demo_LDFLAGS = $(AM_LDFLAGS) -no-install
