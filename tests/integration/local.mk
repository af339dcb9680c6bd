# Integration tests: real daemons on temporary sockets.
check_PROGRAMS += tests/helpers/notify-listen tests/helpers/rp-probe
tests_helpers_notify_listen_SOURCES = tests/helpers/notify-listen.c
tests_helpers_rp_probe_SOURCES = tests/helpers/rp-probe.c
TESTS += tests/integration/test-daemon.sh tests/integration/test-service.sh
EXTRA_DIST += tests/integration/lib.sh tests/integration/test-daemon.sh \
	tests/integration/test-service.sh
# rdmaproxy.service under a real systemd in a container: opt-in (RP_TEST_NSPAWN=1).
TESTS += tests/integration/test-service-boot.sh
EXTRA_DIST += tests/integration/test-service-boot.sh
# rp_strerror() for the region refusals; the library itself is not needed.
tests_helpers_rp_probe_SOURCES += libclient/error.c
