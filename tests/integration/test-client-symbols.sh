#!/bin/bash
# librdmaproxy exports exactly the symbols of its version script, each under
# the version node that lists it (RDMAPROXY_1, then RDMAPROXY_1.1 to 1.3 for
# what came later), from librdmaproxy.so.1; the header stands alone in C and C++.
. "$(dirname "$0")/lib.sh"

SO="$top_builddir/libclient/.libs/librdmaproxy.so.1"
MAP="$top_srcdir/libclient/librdmaproxy.map"

[ -e "$SO" ]
ok $? "librdmaproxy.so.1 is built"
objdump -p "$SO" | grep -q 'SONAME *librdmaproxy.so.1$'
ok $? "its soname is librdmaproxy.so.1"
nm -D --defined-only "$SO" | awk '$2 ~ /^[TDBRVW]$/ {sub(/@.*/, "", $3); print $3}' |
	sort >"$T_DIR/exported"
sed -n 's/^[[:space:]]*\(rp_[a-z_0-9]*\);.*/\1/p' "$MAP" | sort >"$T_DIR/listed"
diff "$T_DIR/listed" "$T_DIR/exported" >"$T_DIR/diff"
ok $? "exported symbols equal the version script ($(wc -l <"$T_DIR/listed") symbols)"
diag "$T_DIR/diff"
# "symbol@@NODE" for each symbol listed in the script, and as the library has them.
awk '/^RDMAPROXY_[0-9.]* *\{/ { node = $1 } \
	/^[[:space:]]*rp_[a-z_0-9]*;/ { sub(/;.*/, "", $1); print $1 "@@" node }' "$MAP" |
	sort >"$T_DIR/want-versions"
nm -D --defined-only "$SO" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | sort >"$T_DIR/versions"
diff "$T_DIR/want-versions" "$T_DIR/versions" >"$T_DIR/vdiff" &&
	grep -q '^rp_region_export_acl@@RDMAPROXY_1.1$' "$T_DIR/versions" &&
	grep -q '^rp_relax@@RDMAPROXY_1.2$' "$T_DIR/versions" &&
	grep -q '^rp_endpoint_bind_acl@@RDMAPROXY_1.3$' "$T_DIR/versions"
ok $? "every exported symbol carries the version of its node (RDMAPROXY_1, 1.1, 1.2, 1.3)"
diag "$T_DIR/vdiff"
for f in $(cat "$T_DIR/listed"); do
	grep -q "RP_EXPORT [^;]*\b$f(" "$top_srcdir/include/rdmaproxy.h" || echo "$f"
done >"$T_DIR/undocumented"
[ ! -s "$T_DIR/undocumented" ]
ok $? "every exported symbol is declared in rdmaproxy.h"
diag "$T_DIR/undocumented"
echo '#include <rdmaproxy.h>
int main(void) { return rp_strerror(-RP_EPEERDOWN) ? 0 : 1; }' >"$T_DIR/c.c"
${CC:-cc} -std=c99 -Wall -Wextra -Werror -pedantic -I"$top_srcdir/include" -c "$T_DIR/c.c" \
	-o "$T_DIR/c.o" 2>"$T_DIR/cc.log"
ok $? "rdmaproxy.h compiles alone as C99 with -pedantic"
diag "$T_DIR/cc.log"
if command -v "${CXX:-c++}" >/dev/null; then
	cp "$T_DIR/c.c" "$T_DIR/cxx.cc"
	"${CXX:-c++}" -Wall -Wextra -Werror -I"$top_srcdir/include" -c "$T_DIR/cxx.cc" \
		-o "$T_DIR/cxx.o" 2>"$T_DIR/cxx.log"
	ok $? "rdmaproxy.h compiles as C++"
	diag "$T_DIR/cxx.log"
else
	echo "ok $((T_N += 1)) # SKIP no C++ compiler"
fi
t_done
