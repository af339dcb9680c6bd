dist_man_MANS += man/rdmaproxy.conf.5 man/rdmaproxyd.8 man/rdmaproxyctl.8 man/librdmaproxy.3 man/rdmaproxy-perf.1
