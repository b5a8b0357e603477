#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# libprocctl-agent.so's ABI, as built: its SONAME is libprocctl-agent.so.1;
# it exports exactly the functions core/libprocctl-agent.map lists, and
# that list is exactly the functions the public headers (procctl.h,
# include/procctl_agent.h, include/procctl_arbiter.h) declare: a new public
# function needs its line in the map, and nothing internal is exported.
# The map has a version node per release that added functions, each
# inheriting from the one before (PROCCTL_AGENT_1 the first, 1.0.0's;
# then PROCCTL_AGENT_1.1 { global: ...; } PROCCTL_AGENT_1; and so on), so
# that a program built against a newer library fails at load on an older
# one, not at its first call: each function is in exactly one node and
# exported in that version (name@@NODE).
# With a baseline (core/libprocctl-agent.abi, which records each
# function's version), a function of the baseline stays in the node it
# was baselined in (a program built against it asks for name@NODE), every
# node of the baseline is still in the map, and a function the baseline
# lacks sits in a node newer than all of the baseline's: a function added
# to a node already out fails. In the gcc build (the baseline's compiler)
# abidiff (abigail-tools) also compares the library with it: a function
# removed or changed (its parameters, or a public struct it reaches, even
# one grown at its end as sz allows) fails while the SONAME is the
# baseline's; functions added are shown and pass. A change meant is taken
# in by scripts/abi-baseline.sh in the same commit (reviewed there), with
# the SONAME bumped when it is incompatible. Other builds (clang, the
# sanitizers) pass versions-only: the nodes are checked, not abidiff's types.
# libprocctl-agent.a defines no global symbol without the procctl_ prefix
# (its internals are procctl__*), so none clashes with an embedding
# program's own.
# Usage: abi.sh SOURCE_DIR SHARED_LIBRARY STATIC_LIBRARY [BASELINE [versions-only]]
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
# The map's nodes in order (NAME PARENT, - for none) and its functions
# (NAME NODE), its comments left out.
perl -0777 -pe 's{/\*.*?\*/}{}gs' "$src/core/libprocctl-agent.map" | sed 's/[{};]/ & /g' | tr -s ' \t' '\n\n' |
	awk -v nodes="$tmp/nodes" -v syms="$tmp/map_syms" '
	$0 == "" { next }
	state == 0 { node = $0; sect = "global:"; state = 1; next }
	state == 1 { if ($0 != "{") { print "no { after node " node; state = -1; exit } state = 2; next }
	state == 2 && ($0 == "global:" || $0 == "local:") { sect = $0; next }
	state == 2 && $0 == ";" { next }
	state == 2 && $0 == "}" { state = 3; next }
	state == 2 && sect == "global:" { print $0, node >syms; next }
	state == 2 { if ($0 != "*" || n > 0) { print "local: " $0 " in node " node " (only the first node has local: *;)"; state = -1; exit } next }
	state == 3 { print node, ($0 == ";" ? "-" : $0) >nodes; n++; state = ($0 == ";" ? 0 : 4); next }
	state == 4 { if ($0 != ";") { print "no ; after the parent of node " node; state = -1; exit } state = 0 }
	END { if (state > 0 && state != 4) print "the map ends inside node " node }' >"$tmp/parse"
[ ! -s "$tmp/parse" ] || fail "core/libprocctl-agent.map: $(cat "$tmp/parse")"
[ -s "$tmp/nodes" ] && [ -s "$tmp/map_syms" ] || fail "core/libprocctl-agent.map: no node with functions"
# A chain: the first node has no parent, each other inherits from the one
# before it; names are unique.
awk 'NR == 1 && $2 != "-" { print "the first node, " $1 ", inherits from " $2 }
	NR > 1 && $2 != prev { print "node " $1 " inherits from " $2 ", not from the node before it, " prev }
	seen[$1]++ { print "node " $1 " twice" }
	{ prev = $1 }' "$tmp/nodes" >"$tmp/chain"
[ ! -s "$tmp/chain" ] || fail "core/libprocctl-agent.map: $(cat "$tmp/chain")"
awk '{ print $1 }' "$tmp/map_syms" | sort | uniq -d >"$tmp/twice"
[ ! -s "$tmp/twice" ] || fail "in more than one node of the map: $(cat "$tmp/twice")"
awk '{ print $1 }' "$tmp/map_syms" | sort >"$tmp/map"
awk '{ print $1 "@@" $2 }' "$tmp/map_syms" | sort >"$tmp/map_versioned"
nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort >"$tmp/exported"
nm -D --defined-only --with-symbol-versions "$lib" | awk '$2 != "A" {print $3}' | sort >"$tmp/exported_versioned"

[ -s "$tmp/declared" ] || fail "no function found in the public headers"
diff -u "$tmp/declared" "$tmp/map" >"$tmp/d1" || fail "the map and the public headers disagree (- headers, + map):
$(cat "$tmp/d1")"
diff -u "$tmp/map" "$tmp/exported" >"$tmp/d2" || fail "the library exports other than the map (- map, + exported):
$(cat "$tmp/d2")"
diff -u "$tmp/map_versioned" "$tmp/exported_versioned" >"$tmp/d3" || fail "the library exports functions in other versions than the map's nodes (- map, + exported):
$(cat "$tmp/d3")"
# (_.stapsdt.base: the SDT probes' hidden, shared anchor, not a name of ours)
nm -g --defined-only "$archive" | awk 'NF == 3 {print $3}' | grep -v -e '^procctl_' -e '^_\.stapsdt\.base$' |
	sort -u >"$tmp/unprefixed" || true
[ ! -s "$tmp/unprefixed" ] || fail "$(basename "$archive") defines globals without the procctl_ prefix: $(cat "$tmp/unprefixed")"
echo "abi: $(basename "$archive") defines no global without the procctl_ prefix"
echo "abi: $soname exports the $(wc -l <"$tmp/map") functions of the public headers, in the map's nodes ($(awk '{ n[$2]++ }
	END { while ((getline line <f) > 0) { split(line, a, " "); printf "%s%s %d", sep, a[1], n[a[1]]; sep = ", " } }' f="$tmp/nodes" "$tmp/map_syms")), and nothing else"

[ $# -ge 4 ] || exit 0
baseline=$4
# The baseline's functions and their versions (NAME NODE).
sed -n "s/^ *<elf-symbol name='\([^']*\)' version='\([^']*\)'.* is-defined='yes'.*/\1 \2/p" "$baseline" >"$tmp/base_syms"
[ -s "$tmp/base_syms" ] || fail "no versioned symbol in $(basename "$baseline")"
awk -v base="$(basename "$baseline")" '
	FILENAME == ARGV[1] { idx[$1] = FNR; names[FNR] = $1; next }
	FILENAME == ARGV[2] { based[$1] = $2
		if (!($2 in idx)) { if (!told[$2]++) print "node " $2 " of " base " is not in the map: a program built against it asks for it"; bad = 1 }
		else if (idx[$2] > newest) newest = idx[$2]
		next }
	bad { next }
	($1 in based) && based[$1] != $2 {
		print $1 " is in node " $2 ", but " base " has it in " based[$1] " (a program built against it asks for " $1 "@" based[$1] ")"; next }
	!($1 in based) && idx[$2] <= newest {
		print $1 " is not in " base " but in node " $2 ", which " base " has (its newest: " names[newest] "): a function added goes in a new node named after its release, PROCCTL_AGENT_X.Y { global: " $1 "; } " names[newest] "; (scripts/abi-baseline.sh takes it in, in the same commit)" }
	' "$tmp/nodes" "$tmp/base_syms" "$tmp/map_syms" >"$tmp/d4"
[ ! -s "$tmp/d4" ] || fail "the map's nodes against the baseline:
$(cat "$tmp/d4")"
echo "abi: the baseline's functions are in the nodes it has them in, functions added since in newer nodes"
[ "${5:-}" != versions-only ] || exit 0
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
