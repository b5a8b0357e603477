#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make test: the three builds, then every build type (test-builds), each
# run whatever the others did, and a summary of each at the end: its tests
# passed, failed and skipped, each one that did not pass, and how long the
# tree took (its build and its tests). Exit 0 only
# if all passed; under CI=true, a skip anywhere fails (what was not run
# was not checked).
# Usage: scripts/test-all.sh [MAKE]
set -u
MAKE=${1:-make}
cd "$(dirname "$0")/.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
status=0
# The build types' builds (compiling, no test) go on beside the three
# trees at the lowest priority: they take the time the cores would idle
# while the trees' tests wait on processes, not the tests' own. Their
# tests run last (test-builds, its builds done by then).
nice -n 19 $MAKE --no-print-directory build-types </dev/null >"$logs/build-types.log" 2>&1 &
types=$!
for b in gcc asan tsan builds; do
	[ "$b" != builds ] || wait "$types" || true # a failed build fails again in test-builds, said there
	# The output goes on as it comes; a copy is kept for the summary. No
	# test reads the terminal: run in the background, one that did would be
	# stopped (SIGTTIN) with ctest, its timeout never firing.
	start=$(date +%s)
	{ $MAKE --no-print-directory test-$b </dev/null 2>&1; echo $? >"$logs/$b.rc"; } | tee "$logs/$b.log"
	echo $(($(date +%s) - start)) >"$logs/$b.secs"
	[ "$(cat "$logs/$b.rc")" -eq 0 ] || status=1
done
printf '\n==== make test: summary\n'
# A test's line: " 12/116 Test  #12: name ....   Passed  0.1 sec" (or
# ***Failed, ***Skipped, ***Timeout, ..., Not Run).
result='^ *[0-9]+/[0-9]+ +Test +#[0-9]+: '
for b in gcc asan tsan builds; do
	rc=$(cat "$logs/$b.rc")
	passed=$(grep -cE "$result.* Passed" "$logs/$b.log" || true)
	skipped=$(grep -cE "$result.*\*\*\*Skipped" "$logs/$b.log" || true)
	failed=$(($(grep -cE "$result" "$logs/$b.log" || true) - passed - skipped))
	verdict=passed
	[ "$rc" -eq 0 ] || verdict=FAILED
	# Under CI a skip is a failure: what was not run was not checked.
	if [ "$skipped" -gt 0 ] && [ "${CI:-}" = true ]; then
		verdict="FAILED (a skip fails under CI=true)"
		status=1
	fi
	secs=$(cat "$logs/$b.secs")
	if [ $((passed + failed + skipped)) -eq 0 ]; then
		printf 'test-%s: %s (no test ran: the build failed, see its output above), %d s\n' "$b" "$verdict" "$secs"
	else
		printf 'test-%s: %s (%d passed, %d failed, %d skipped), %d s\n' "$b" "$verdict" "$passed" "$failed" \
			"$skipped" "$secs"
	fi
	grep -E "$result" "$logs/$b.log" | grep -vE ' Passed' | sed -E "s|$result|    |; s| \.+ *|: |; s| +[0-9.]+ sec\$||"
done
exit $status
