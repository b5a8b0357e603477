#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# doc_links.sh - every relative link of README.md and docs/*.md points at a
# file or directory of the repository, and a link to a section of a
# Markdown page (page.md#section, or #section within the page) at one of
# its headings, by GitHub's rule: lower case, punctuation dropped, a space
# a hyphen, -1, -2, ... for a repeated heading. Fenced blocks and inline
# code are not text; links to other sites are not followed.
#
# Usage: test/doc_links.sh SOURCE_DIR
set -eu
ROOT=$(cd "${1:?usage: doc_links.sh SOURCE_DIR}" && pwd)
cd "$ROOT"
T=$(mktemp -d /tmp/procctl-links.XXXXXX)
trap 'rm -rf "$T"' EXIT

# The anchors of a page, one a line.
anchors() {
	LC_ALL=C awk '
		/^```/ { fence = !fence; next }
		fence || !/^#+ / { next }
		{
			s = $0
			sub(/^#+ +/, "", s)
			s = tolower(s)
			gsub(/[^a-z0-9 _-]/, "", s)
			gsub(/ /, "-", s)
			if (s in seen) { seen[s]++; print s "-" seen[s] } else { seen[s] = 0; print s }
		}
	' "$1"
}

bad=0
n=0
for page in README.md docs/*.md; do
	dir=$(dirname "$page")
	# Each link as LINE TARGET: outside fences, inline code spans removed.
	LC_ALL=C awk '
		/^```/ { fence = !fence; next }
		fence { next }
		{
			s = $0
			gsub(/`[^`]*`/, "", s)
			while (match(s, /\]\([^) ]+\)/)) {
				print NR, substr(s, RSTART + 2, RLENGTH - 3)
				s = substr(s, RSTART + RLENGTH)
			}
		}
	' "$page" >"$T/links"
	while read -r line target; do
		case $target in
		http://* | https://* | mailto:*) continue ;;
		esac
		n=$((n + 1))
		file=${target%%#*}
		frag=
		case $target in *'#'*) frag=${target#*#} ;; esac
		if [ -z "$file" ]; then
			path=$page
		else
			path=$dir/$file
		fi
		if [ ! -e "$path" ]; then
			echo "doc_links: $page:$line: $target: no such file ($path)" >&2
			bad=1
			continue
		fi
		if [ -n "$frag" ]; then
			case $path in
			*.md)
				anchors "$path" | grep -qxF -- "$frag" || {
					echo "doc_links: $page:$line: $target: $path has no heading #$frag" >&2
					bad=1
				}
				;;
			*)
				echo "doc_links: $page:$line: $target: a section of a file that is not Markdown" >&2
				bad=1
				;;
			esac
		fi
	done <"$T/links"
done
[ "$n" -gt 0 ] || { echo "doc_links: no relative link found (is the parser broken?)" >&2; exit 1; }
[ "$bad" = 0 ] || exit 1
echo "doc_links: $n relative links, each to a file and heading that exist"
