#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every source file of the project carries its licence: an SPDX line
# (Apache-2.0) near its top. Data (fixtures, corpora, JSON, the ABI
# baseline core/libprocctl-agent.abi, which abidiff reads whole) and prose
# (Markdown) are not sources, nor are test/seed/*.inc: the seed README's
# snippets, kept verbatim (Apache-2.0 too), nor the files of debian/
# whose formats have no comments: changelog, source/format, and
# copyright, which says Apache-2.0 itself.
# Usage: spdx.sh SOURCE_DIR
set -eu
cd "$1"
if ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo "spdx: not a git checkout: nothing to list" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
missing=$(git ls-files | grep -vE '^(test/fixtures|fuzz/corpus|test/peers)/|\.(md|json|abi)$|^test/seed/.*\.inc$|^(LICENSE|\.gitignore|\.dockerignore)$|^debian/(changelog|source/format|copyright)$' |
	while read -r f; do
		head -3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || echo "$f"
	done)
if [ -n "$missing" ]; then
	echo "spdx: no SPDX-License-Identifier line in:" >&2
	echo "$missing" >&2
	exit 1
fi
[ -f LICENSE ] && grep -q 'Apache License' LICENSE && grep -q 'Version 2.0' LICENSE || { echo "spdx: LICENSE is not Apache-2.0" >&2; exit 1; }
grep -qx 'License: Apache-2.0' debian/copyright || { echo "spdx: debian/copyright does not say Apache-2.0" >&2; exit 1; }
echo "spdx: every source file says Apache-2.0"
