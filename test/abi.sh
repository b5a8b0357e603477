#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# libprocctl-agent.so's ABI, as built: its SONAME is libprocctl-agent.so.1;
# it exports exactly the functions core/libprocctl-agent.map lists (in
# version PROCCTL_AGENT_1), and that list is exactly the functions the
# public headers (procctl.h, include/procctl_agent.h, include/procctl_arbiter.h)
# declare: a new public function needs its line in the map, and nothing
# internal is exported. With a baseline (the gcc build's ctest passes
# core/libprocctl-agent.abi), abidiff (abigail-tools) compares the library
# with it: a function removed or changed (its parameters, or a public
# struct it reaches, even one grown at its end as sz allows) fails while
# the SONAME is the baseline's; functions added are shown and pass. A
# change meant is taken in by scripts/abi-baseline.sh in the same commit
# (reviewed there), with the SONAME bumped when it is incompatible.
# libprocctl-agent.a defines no global symbol without the procctl_ prefix
# (its internals are procctl__*), so none clashes with an embedding
# program's own.
# Usage: abi.sh SOURCE_DIR SHARED_LIBRARY STATIC_LIBRARY [BASELINE]
set -eu
src=$1
lib=$2
archive=$3
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
cat "$src/procctl.h" "$src/include/procctl_agent.h" "$src/include/procctl_arbiter.h" |
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
# (_.stapsdt.base: the SDT probes' hidden, shared anchor, not a name of ours)
nm -g --defined-only "$archive" | awk 'NF == 3 {print $3}' | grep -v -e '^procctl_' -e '^_\.stapsdt\.base$' |
	sort -u >"$tmp/unprefixed" || true
[ ! -s "$tmp/unprefixed" ] || fail "$(basename "$archive") defines globals without the procctl_ prefix: $(cat "$tmp/unprefixed")"
echo "abi: $(basename "$archive") defines no global without the procctl_ prefix"
echo "abi: $soname exports the $(wc -l <"$tmp/map") functions of the public headers, in PROCCTL_AGENT_1, and nothing else"

[ $# -ge 4 ] || exit 0
baseline=$4
if ! command -v abidiff >/dev/null 2>&1; then
	echo "abi: no abidiff (Debian's abigail-tools: scripts/install-deps.sh installs it)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
	echo "abi: $lib has no debug information (a Release build?): abidiff needs it" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
base_soname=$(sed -n "s/^<abi-corpus .*soname='\([^']*\)'.*/\1/p" "$baseline")
rc=0
abidiff "$baseline" "$lib" >"$tmp/abidiff" 2>&1 || rc=$?
# abidiff's status is a bit mask: 1 an error, 4 a change, 8 an incompatible one.
[ $((rc & 1)) -eq 0 ] || fail "abidiff could not compare: $(cat "$tmp/abidiff")"
changed=$(sed -n 's/^Functions changes summary: \([0-9]*\) Removed, \([0-9]*\) Changed.*/\1 \2/p' "$tmp/abidiff")
vars=$(sed -n 's/^Variables changes summary: \([0-9]*\) Removed, \([0-9]*\) Changed, \([0-9]*\) Added.*/\1 \2 \3/p' "$tmp/abidiff")
if { [ "$changed" != "0 0" ] || [ "$vars" != "0 0 0" ] || [ $((rc & 8)) -ne 0 ]; } && [ "$base_soname" = "$soname" ]; then
	fail "changed against core/libprocctl-agent.abi, with the SONAME still $soname (abidiff status $rc):
$(cat "$tmp/abidiff")"
fi
if [ $((rc & 4)) -ne 0 ]; then
	echo "abi: against the baseline (functions added; scripts/abi-baseline.sh takes them in):"
	cat "$tmp/abidiff"
fi
echo "abi: abidiff against $(basename "$baseline") ($base_soname): nothing removed or changed"
