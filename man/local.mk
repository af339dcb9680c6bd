dist_man_MANS += man/rdmaproxy.conf.5
