# systemd units; the service is generated so ExecStart names the installed binary.
systemdsystemunit_DATA = systemd/rdmaproxy.service systemd/rdmaproxy.socket
EXTRA_DIST += systemd/rdmaproxy.service.in systemd/rdmaproxy.socket systemd/rdmaproxy.sysusers
CLEANFILES += systemd/rdmaproxy.service

systemd/rdmaproxy.service: systemd/rdmaproxy.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/systemd/rdmaproxy.service.in > $@.tmp && mv $@.tmp $@

# The service's system user: sysusers.d/rdmaproxy.conf (the file needs that name).
install-data-local: install-sysusers
uninstall-local: uninstall-sysusers
install-sysusers:
	$(MKDIR_P) '$(DESTDIR)$(sysusersdir)'
	$(INSTALL_DATA) $(srcdir)/systemd/rdmaproxy.sysusers '$(DESTDIR)$(sysusersdir)/rdmaproxy.conf'
uninstall-sysusers:
	rm -f '$(DESTDIR)$(sysusersdir)/rdmaproxy.conf'
.PHONY: install-sysusers uninstall-sysusers
