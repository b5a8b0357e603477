#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Debian packages that hold the shared libraries the given programs
# load (ldd), one a line: what the image's runtime stage installs, and
# nothing else (deploy/Dockerfile). Fails if a library is not found or
# belongs to no package.
# Usage: deploy/runtime-packages.sh PROGRAM...
set -eu
libs=$(for p in "$@"; do
	if ldd "$p" | grep -q 'not found'; then
		ldd "$p" >&2
		echo "runtime-packages: $p: a library is not found" >&2
		exit 1
	fi
	ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | sort -u)
for l in $libs; do
	# A merged /usr: the package may name either path.
	for q in "$l" "${l#/usr}" "/usr$l" "$(readlink -f "$l")"; do
		if pkg=$(dpkg-query -S "$q" 2>/dev/null); then
			echo "$pkg" | sed -n '1s/^\([^:]*\)[:,].*/\1/p'
			continue 2
		fi
	done
	echo "runtime-packages: $l belongs to no package" >&2
	exit 1
done | sort -u
