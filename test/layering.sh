#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# procctl-node's folders call only downward. Each folder of server/ says
# in its README.md what it may call ("May call:" naming other folders);
# this checks that:
#   - every folder has that line, and the folders it names exist;
#   - the "may call" graph has no circle (tsort finds none);
#   - every #include in a folder of a header in another folder names a
#     folder it may call (main.c, at the top, may call every folder);
#   - a folder's private headers (*_int.h) are included only inside it
#     (and by the tests of that folder's internals, under test/).
# Usage: layering.sh SOURCE_DIR
set -eu
cd "$1/server"
fail=0
say() {
	echo "layering: $*" >&2
	fail=1
}
folders=
for d in */; do
	d=${d%/}
	[ -f "$d/README.md" ] || { say "server/$d has no README.md saying what it owns and may call"; continue; }
	folders="$folders $d"
done
pairs=$(mktemp "${TMPDIR:-/tmp}/procctl-layering.XXXXXX")
trap 'rm -f "$pairs" "$pairs.err"' EXIT
for d in $folders; do
	may=$(sed -n 's/^May call: *//p' "$d/README.md" | tr ',.' '  ')
	grep -q '^May call:' "$d/README.md" || say "server/$d/README.md has no 'May call:' line"
	echo "$d $d" >>"$pairs"
	allowed=" "
	for w in $may; do
		[ -d "$w" ] || continue
		allowed="$allowed$w "
		echo "$w $d" >>"$pairs"
	done
	# Each include of a header that lies in another folder of server/.
	for f in $(find "$d" -name '*.[ch]'); do
		for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\/[^"]*\)".*/\1/p' "$f"); do
			[ -f "$inc" ] || continue
			to=${inc%%/*}
			[ "$to" = "$d" ] && continue
			case $allowed in
			*" $to "*) ;;
			*) say "server/$f includes $inc: server/$d may call only$allowed(its README.md)" ;;
			esac
			case $inc in
			*_int.h) say "server/$f includes $inc, another folder's private header" ;;
			esac
		done
	done
done
# The declared graph: a circle is a floor that calls back up.
if ! tsort "$pairs" >/dev/null 2>"$pairs.err"; then
	say "the folders' 'May call:' lines make a circle: $(cat "$pairs.err")"
fi
# Private headers from outside their folder, anywhere in the daemon.
for f in $(find . -name '*.[ch]'); do
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*_int\.h\)".*/\1/p' "$f"); do
		case $inc in
		*/*) [ "${f#./}" != "${f#./"${inc%%/*}"/}" ] || say "server/${f#./} includes $inc, another folder's private header" ;;
		*) [ -f "$(dirname "$f")/$inc" ] || say "server/${f#./} includes $inc, not in its own folder" ;;
		esac
	done
done
[ "$fail" -eq 0 ] || exit 1
echo "layering: $(echo $folders | wc -w) folders of server/, each including only what its README.md says it may call, with no circle"
