# Shared by the tests/vm/test-*.sh wrappers: find the runner and decide
# between running and skipping. Skips only where QEMU cannot run at all, and
# never under CI (CI=true), where a missing test bed is a failure.
# shellcheck shell=bash
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
RPVM="$top_srcdir/tests/vm/rp-vm"
# wait_settled, wait_steady: also for the guest-*.sh scripts, which source this file.
. "$top_srcdir/tests/settle.sh"

vm_require() {
	local why
	if why=$("$RPVM" check 2>&1); then
		return 0
	fi
	if [ "${CI:-}" = true ]; then
		echo "1..1"
		echo "not ok 1 - the Soft-RoCE guest cannot run under CI: $why"
		exit 1
	fi
	echo "1..0 # SKIP QEMU cannot run here: $why"
	exit 0
}
