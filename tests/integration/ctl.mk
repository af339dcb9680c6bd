# rdmaproxyctl against real daemons: every command in both output forms,
# peers up and down, metrics through promtool, and the authorization rules.
TESTS += tests/integration/test-ctl.sh tests/integration/test-ctl-auth.sh
EXTRA_DIST += tests/integration/test-ctl.sh tests/integration/test-ctl-auth.sh
