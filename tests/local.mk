# Test suites: unit (TAP programs), integration (real daemons), vm (Soft-RoCE), fuzz.
include tests/unit/config.mk
include tests/integration/local.mk
include tests/vm/local.mk
