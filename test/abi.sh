#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# libprocctl-agent.so's ABI, as built: its SONAME is libprocctl-agent.so.1;
# it exports exactly the functions core/libprocctl-agent.map lists (in
# version PROCCTL_AGENT_1), and that list is exactly the functions the
# public headers (procctl.h, core/procctl_agent.h, arbiter/procctl_arbiter.h)
# declare: a new public function needs its line in the map, and nothing
# internal is exported.
# Usage: abi.sh SOURCE_DIR LIBRARY
set -eu
src=$1
lib=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/procctl-abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "abi: FAILED: $*" >&2
	exit 1
}

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libprocctl-agent.so.1 ] || fail "SONAME is '$soname', not libprocctl-agent.so.1"

# The public headers' functions: every procctl_NAME( outside comments
# (procctl__NAME are procctl.h's internals, static in its users).
cat "$src/procctl.h" "$src/core/procctl_agent.h" "$src/arbiter/procctl_arbiter.h" |
	perl -0777 -pe 's{/\*.*?\*/}{}gs' | grep -oE '\bprocctl_[a-z0-9_]+[[:space:]]*\(' |
	sed 's/[[:space:]]*($//' | grep -v '^procctl__' | sort -u >"$tmp/declared"
sed -n 's/^[[:space:]]*\(procctl_[a-z0-9_]*\);$/\1/p' "$src/core/libprocctl-agent.map" | sort >"$tmp/map"
nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort >"$tmp/exported"
nm -D --defined-only --with-symbol-versions "$lib" | awk '$2 != "A" && $3 !~ /@@PROCCTL_AGENT_1$/ {print $3}' >"$tmp/unversioned"

[ -s "$tmp/declared" ] || fail "no function found in the public headers"
diff -u "$tmp/declared" "$tmp/map" >"$tmp/d1" || fail "the map and the public headers disagree (- headers, + map):
$(cat "$tmp/d1")"
diff -u "$tmp/map" "$tmp/exported" >"$tmp/d2" || fail "the library exports other than the map (- map, + exported):
$(cat "$tmp/d2")"
[ ! -s "$tmp/unversioned" ] || fail "exported outside PROCCTL_AGENT_1: $(cat "$tmp/unversioned")"
echo "abi: $soname exports the $(wc -l <"$tmp/map") functions of the public headers, in PROCCTL_AGENT_1, and nothing else"
