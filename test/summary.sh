#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/test-all.sh's summary, on trees whose make is a stand-in that
# prints what ctest prints: each tree's tests counted passed, failed and
# skipped, each one not passed named; a failure fails make test; a skip
# fails it under CI=true only.
# Usage: summary.sh SOURCE_DIR
set -eu
src=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/procctl-summary.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "summary: $*" >&2
	cat "$tmp/out" >&2
	exit 1
}
# The stand-in make: test-gcc has a skip; test-asan fails, and
# test-builds' build does, when asked.
cat >"$tmp/make" <<'EOT'
#!/bin/sh
case $2 in
test-gcc)
	echo "  1/3 Test  #1: test_a ...........   Passed    0.10 sec"
	echo "  2/3 Test  #2: doc_gpu ..........***Skipped   0.01 sec"
	echo "  3/3 Test  #3: node_api .........   Passed    3.15 sec"
	echo "100% tests passed, 0 tests failed out of 3" ;;
test-asan)
	if [ -n "${ASAN_FAILS:-}" ]; then
		echo "  1/2 Test  #1: test_a ...........***Failed    0.10 sec"
		echo "  2/2 Test  #2: node_scale .......***Timeout 300.01 sec"
		echo "0% tests passed, 2 tests failed out of 2"
		exit 2
	fi
	echo "  1/1 Test  #1: test_a ...........   Passed    0.10 sec" ;;
test-tsan) echo "  1/1 Test  #1: test_a ...........   Passed    0.10 sec" ;;
test-builds)
	if [ -n "${BUILDS_FAIL:-}" ]; then
		echo "make: *** [build] Error 1"
		exit 2
	fi
	echo "  1/1 Test  #1: test_a ...........   Passed    0.10 sec" ;;
esac
EOT
chmod +x "$tmp/make"
run() {
	rc=0
	env "$@" sh "$src/scripts/test-all.sh" "$tmp/make" >"$tmp/out" 2>&1 || rc=$?
	sed -n '/^==== make test: summary/,$p' "$tmp/out" >"$tmp/summary.timed"
	# Each tree's line ends with its seconds: there, then set aside.
	grep -E '^test-' "$tmp/summary.timed" | grep -vqE ', [0-9]+ s$' && fail "a tree's line without its time"
	sed -E 's/, [0-9]+ s$//' "$tmp/summary.timed" >"$tmp/summary"
}
want() {
	grep -qxF -- "$1" "$tmp/summary" || fail "no line '$1' in the summary"
}

run CI=false
[ "$rc" -eq 0 ] || fail "exit $rc with every tree passed and a skip outside CI, want 0"
want "test-gcc: passed (2 passed, 0 failed, 1 skipped)"
want "    doc_gpu: ***Skipped"
want "test-asan: passed (1 passed, 0 failed, 0 skipped)"

run CI=true
[ "$rc" -eq 1 ] || fail "exit $rc with a skip under CI=true, want 1"
want "test-gcc: FAILED (a skip fails under CI=true) (2 passed, 0 failed, 1 skipped)"
want "test-tsan: passed (1 passed, 0 failed, 0 skipped)"

run CI=false ASAN_FAILS=1 BUILDS_FAIL=1
[ "$rc" -eq 1 ] || fail "exit $rc with a tree failed, want 1"
want "test-asan: FAILED (0 passed, 2 failed, 0 skipped)"
want "    test_a: ***Failed"
want "    node_scale: ***Timeout"
want "test-builds: FAILED (no test ran: the build failed, see its output above)"
echo "summary: make test's summary counts each tree's passed, failed and skipped tests, and a skip fails under CI=true"
