#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# procctl-node's files call only downward, file by file (layering.sh holds
# the folders to their README.md's; this holds the files inside them). A
# file calls another when its object uses a symbol the other's defines
# (nm); the calls make no circle (tsort finds none). A circle fails with
# each of its calls named by the symbols it uses.
# Usage: calls.sh OBJECTS (one argument: procctl-node's objects, ';' between)
set -eu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/procctl-calls.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/defs"
: >"$tmp/uses"
n=0
IFS=';'
for o in $1; do
	f=${o#*.dir/}
	f=${f#server/}
	f=${f%.o}
	nm --defined-only "$o" | awk -v f="$f" 'NF == 3 && $2 ~ /^[TDBRC]$/ { print $3, f }' >>"$tmp/defs"
	nm -u "$o" | awk -v f="$f" '{ print $2, f }' >>"$tmp/uses"
	n=$((n + 1))
done
unset IFS
[ "$n" -gt 1 ] || { echo "calls: no objects given" >&2; exit 1; }
sort -o "$tmp/defs" "$tmp/defs"
sort -o "$tmp/uses" "$tmp/uses"
# symbol, the file that uses it, the file that defines it
join "$tmp/uses" "$tmp/defs" | awk '$2 != $3' >"$tmp/calls"
awk '{ print $2, $3 }' "$tmp/calls" | sort -u >"$tmp/pairs"
if ! tsort "$tmp/pairs" >/dev/null 2>"$tmp/loop"; then
	echo "calls: procctl-node's files call in a circle:" >&2
	sed -n 's/^tsort: //p' "$tmp/loop" | grep -v "input contains a loop" | sort -u >"$tmp/members" || true
	cat "$tmp/members" >&2
	awk 'NR == FNR { in_loop[$1] = 1; next } in_loop[$2] && in_loop[$3] { print "  " $2 " -> " $3 ": " $1 }' \
		"$tmp/members" "$tmp/calls" >&2
	exit 1
fi
echo "calls: $n files of procctl-node, $(wc -l <"$tmp/pairs") calls between them, none in a circle"
