#!/bin/bash
# The C sources follow the checked-in .clang-format: any drift fails, with the
# diff that would fix it. Formatting differs between clang-format releases, so
# only the release the tree was formatted with (14, Debian 12's) is used.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
CLANG_FORMAT=${CLANG_FORMAT:-}
if [ -z "$CLANG_FORMAT" ]; then
	for c in clang-format-14 clang-format; do
		if command -v "$c" >/dev/null && "$c" --version | grep -q 'version 14\.'; then
			CLANG_FORMAT=$c
			break
		fi
	done
fi
if [ -z "$CLANG_FORMAT" ]; then
	echo "1..0 # SKIP clang-format 14 is not installed (apt-get install clang-format-14)"
	exit 77
fi
cd "$top_srcdir" || exit 99
n=0 fail=0
while IFS= read -r f; do
	n=$((n + 1))
	d=$("$CLANG_FORMAT" --style=file "$f" | diff -u "$f" - | sed 1,2d)
	if [ -z "$d" ]; then
		echo "ok $n - $f"
	else
		echo "not ok $n - $f differs from .clang-format ($CLANG_FORMAT -i $f fixes it)"
		echo "$d" | head -40 | sed 's/^/# /'
		fail=1
	fi
done < <(find daemon libclient include tests tools examples -name '*.[ch]' \
	-not -path '*/_*' -not -path 'tests/vm/*/build/*' | LC_ALL=C sort)
echo "1..$n"
exit $fail
