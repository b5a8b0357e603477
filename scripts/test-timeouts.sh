#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# ctest's timeout and cost of each test, measured: from the output of a
# make test (every tree), each test's slowest run times five, at least
# 120 s, and that slowest run as its COST (ctest -j starts the costliest
# first, on a fresh clone too), as test/timeouts.cmake (which each folder that registers tests includes
# last). Run it
# after a make test on the 2-core machine, when a test is added or grows.
# PREVIOUS (the file as it was) keeps each test's slowest run of before
# where that was slower, and the tests this log has no pass of.
# Usage: scripts/test-timeouts.sh MAKE_TEST_LOG [PREVIOUS] >test/timeouts.new
set -eu
log=$1
prev=${2:-}
[ -r "$log" ] && { [ -z "$prev" ] || [ -r "$prev" ]; } ||
	{ echo "usage: scripts/test-timeouts.sh MAKE_TEST_LOG [PREVIOUS]" >&2; exit 2; }
cat <<EOT
# SPDX-License-Identifier: Apache-2.0
# Each test's ctest timeout: its slowest run in a make test (the gcc, ASan,
# TSan and build-type trees, tests side by side) times five, at least
# 120 s; and its COST, that slowest run's seconds, so that ctest -j starts
# the longest first even without a past run's times. Measured, not
# guessed: made by scripts/test-timeouts.sh from a make test's output
# ($(date -u +%Y-%m-%d), $(nproc) cores). Included by each folder that
# registers tests, after them; a test not here keeps the timeout it was
# registered with.
# isolate.sh kills a test 15 s before ctest would (PROCCTL_TEST_TIMEOUT).
macro(procctl_timeout name seconds slowest)
  if(TEST \${name})
    math(EXPR _inside "\${seconds} - 15")
    set_tests_properties(\${name} PROPERTIES TIMEOUT \${seconds} COST \${slowest})
    set_property(TEST \${name} APPEND PROPERTY ENVIRONMENT "PROCCTL_TEST_TIMEOUT=\${_inside}")
  endif()
endmacro()
EOT
{
	grep -E '^ *[0-9]+/[0-9]+ +Test +#[0-9]+: [^ ]+ \.* *Passed +[0-9.]+ sec$' "$log" |
		sed -E 's/^.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\1 \2/'
	# The slowest runs an earlier file kept, where slower than this log's.
	[ -z "$prev" ] || sed -nE 's/^procctl_timeout\(([^ ]+) [0-9]+ ([0-9.]+)\)$/\1 \2/p' "$prev"
} | sort -k1,1 -k2,2nr | awk '!seen[$1]++ { t = int($2 * 5 + 0.999); if (t < 120) t = 120; printf "procctl_timeout(%s %d %s)\n", $1, t, $2 }'
