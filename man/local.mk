dist_man_MANS += man/rdmaproxy.conf.5 man/rdmaproxyd.8
