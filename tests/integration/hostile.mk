# Hostile local clients (findings of an independent review, kept as tests).
check_PROGRAMS += tests/helpers/hostile
tests_helpers_hostile_SOURCES = tests/helpers/hostile.c
tests_helpers_hostile_LDADD = libclient/librdmaproxy.la
# A real binary, not libtool's wrapper: test-jobs-fair.sh runs a copy as another user.
tests_helpers_hostile_LDFLAGS = $(AM_LDFLAGS) -no-install
TESTS += tests/integration/test-hostile.sh tests/integration/test-jobs-fair.sh
EXTRA_DIST += tests/integration/test-hostile.sh tests/integration/test-jobs-fair.sh
