# rdmaproxy-perf against a real daemon (tcp transport); tests/vm/bench compares
# it with perftest on Soft-RoCE and is run by hand, not by make check.
TESTS += tests/integration/test-perf.sh
EXTRA_DIST += tests/integration/test-perf.sh tests/vm/bench
