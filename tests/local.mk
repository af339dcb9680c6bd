# Test suites: unit (TAP programs), integration (real daemons), vm (Soft-RoCE), fuzz.
include tests/unit/config.mk
include tests/integration/local.mk
include tests/vm/local.mk

TESTS += tests/check-man.sh
EXTRA_DIST += tests/check-man.sh tests/unit/tap.h
