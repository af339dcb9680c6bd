# The shipped, fully commented default configuration.
rdmaproxyconfdir = $(sysconfdir)/rdmaproxy
dist_rdmaproxyconf_DATA = conf/rdmaproxy.conf
