#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make test: the three builds, then every build type (test-builds), each
# run whatever the others did, and a summary of each at the end (its
# ctest result line and failed tests). Exit 0 only if all passed.
# Usage: scripts/test-all.sh [MAKE]
set -u
MAKE=${1:-make}
cd "$(dirname "$0")/.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
status=0
for b in gcc asan tsan builds; do
	# The output goes on as it comes; a copy is kept for the summary.
	{ $MAKE --no-print-directory test-$b 2>&1; echo $? >"$logs/$b.rc"; } | tee "$logs/$b.log"
	[ "$(cat "$logs/$b.rc")" -eq 0 ] || status=1
done
printf '\n==== make test: summary\n'
for b in gcc asan tsan builds; do
	rc=$(cat "$logs/$b.rc")
	line=$(grep -E '^[0-9]+% tests passed' "$logs/$b.log" | tail -1)
	[ -n "$line" ] || line="no test ran (the build failed: see its output above)"
	printf 'test-%s: %s (%s)\n' "$b" "$([ "$rc" -eq 0 ] && echo passed || echo FAILED)" "$line"
	sed -n '/^The following tests FAILED:/,/^[^	 ]/p' "$logs/$b.log" | grep -E '^[[:space:]]+[0-9]+ - ' | sed 's/^[[:space:]]*/    /'
done
exit $status
