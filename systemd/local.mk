# systemd units; the service is generated so ExecStart names the installed binary.
systemdsystemunit_DATA = systemd/rdmaproxy.service systemd/rdmaproxy.socket
EXTRA_DIST += systemd/rdmaproxy.service.in systemd/rdmaproxy.socket
CLEANFILES += systemd/rdmaproxy.service

systemd/rdmaproxy.service: systemd/rdmaproxy.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/systemd/rdmaproxy.service.in > $@.tmp && mv $@.tmp $@
