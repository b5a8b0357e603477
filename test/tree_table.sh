#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# docs/internals.md's source-tree table matches the tree to the file.
# A row names a folder (| path/ | ... |) and, in backticks, what lies
# under it: a file by its name (`node.c`) or its path from the row's
# folder (`cli/args.c`), a subfolder with its slash (`cudastub/`).
#   - Every source file a row names (by its ending: .c .h .cu .js .sh
#     .map .conf .proto .awk) lies under its folder (or, named with a
#     slash, is that path from the top), and every subfolder it names is
#     one.
#   - In the folders of the product's code (core/, arbiter/, include/,
#     rpc/, gpu/, clients/, examples/, and server/ with each of its
#     folders), every .c, .h, .cu, .js and .map file git tracks is named
#     in the row of the nearest folder above it that has one (a header
#     foo.h may be named by its foo.c): a file added without its line in
#     the table fails here.
# Usage: tree_table.sh SOURCE_DIR
set -eu
cd "$1"
doc=docs/internals.md
fail=0
say() {
	echo "tree_table: $*" >&2
	fail=1
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/procctl-tree.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The rows, "folder<TAB>text", between the table's heading and the next.
awk '/^## The source tree/ {on = 1; next} /^## / {on = 0}
	on && /^\| [^ |]+\/ \|/ {p = $2; sub(/^\| [^|]*\| /, ""); print p "\t" $0}' "$doc" >"$tmp/rows"
[ -s "$tmp/rows" ] || { echo "tree_table: no folder rows under '## The source tree' in $doc" >&2; exit 1; }
cut -f1 "$tmp/rows" >"$tmp/dirs"
git ls-files >"$tmp/files"
# Each row's names, one "folder<TAB>name" a line.
while IFS='	' read -r dir text; do
	printf '%s\n' "$text" | grep -oE '`[A-Za-z0-9_.+/-]+`' | tr -d '`' | sed "s#^#$dir	#"
done <"$tmp/rows" >"$tmp/names"
while IFS='	' read -r dir name; do
	case $name in
	*/) [ -d "$dir$name" ] || say "$doc, row $dir: $name is no folder of $dir" ;;
	*.c | *.h | *.cu | *.js | *.sh | *.map | *.conf | *.proto | *.awk)
		case $name in
		*/*) [ -f "$dir$name" ] || [ -f "$name" ] || say "$doc, row $dir: neither $dir$name nor $name is a file" ;;
		*) grep -q "^$dir\(.*/\)\?$name\$" "$tmp/files" || say "$doc, row $dir: no $name under $dir" ;;
		esac ;;
	esac
done <"$tmp/names"
# The product's code, to the file.
for top in core/ arbiter/ include/ rpc/ gpu/ clients/ examples/ server/; do
	[ -d "$top" ] || continue
	for f in $(grep -E "^$top.*\.(c|h|cu|js|map)\$" "$tmp/files"); do
		# The nearest folder above f with a row.
		d=${f%/*}/
		while ! grep -qxF "$d" "$tmp/dirs"; do
			[ "$d" != "$top" ] || { d=; break; }
			d=${d%/*/}/
		done
		[ -n "$d" ] || { say "$doc has no row for $top (where $f is)"; continue; }
		rel=${f#"$d"}
		# A header is named with its .c: foo.c is the module foo.
		twin=${rel%.h}.c
		grep -qxF "$d	$rel" "$tmp/names" || grep -qxF "$d	${rel##*/}" "$tmp/names" ||
			grep -qxF "$d	$twin" "$tmp/names" || grep -qxF "$d	${twin##*/}" "$tmp/names" ||
			say "$doc, row $d: $f is in the tree, not in the table"
	done
done
[ "$fail" -eq 0 ] || exit 1
echo "tree_table: $(wc -l <"$tmp/rows") folders in $doc; what it names is there, and every source file of the product's folders is named"
