# rdmaproxyctl against real daemons: every command in both output forms,
# peers up and down, metrics through promtool, and the authorization rules.
TESTS += tests/integration/test-ctl.sh tests/integration/test-ctl-auth.sh
EXTRA_DIST += tests/integration/test-ctl.sh tests/integration/test-ctl-auth.sh
check_PROGRAMS += tests/helpers/ctl-load
tests_helpers_ctl_load_SOURCES = tests/helpers/ctl-load.c
tests_helpers_ctl_load_LDADD = libclient/librdmaproxy.la
tests_helpers_ctl_load_LDFLAGS = $(AM_LDFLAGS) -no-install
