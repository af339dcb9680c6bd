#!/bin/bash
# Every man page renders with groff without a single warning.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
GROFF=${GROFF:-groff}
n=0 fail=0
for page in "$top_srcdir"/man/*.[0-9]; do
	n=$((n + 1))
	out=$("$GROFF" -ww -z -man "$page" 2>&1)
	if [ $? -eq 0 ] && [ -z "$out" ]; then
		echo "ok $n - $(basename "$page") renders without warnings"
	else
		echo "not ok $n - $(basename "$page") renders without warnings"
		echo "$out" | sed 's/^/# /'
		fail=1
	fi
done
echo "1..$n"
exit $fail
