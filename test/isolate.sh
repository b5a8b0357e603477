#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Run a test command (or the demo) in pid and mount namespaces of its own (as root):
# what it scans in /proc is its own processes alone, so procctl processes
# and daemons running beside it (another test, a demo, a real node agent)
# neither show up in its counts nor get attached by it; and whatever it
# started dies with it, even when it fails or times out. sh stays pid 1 of
# the namespace: when it ends, the kernel kills the rest.
# Not root: the command runs as it is, and says so once.
# Usage: isolate.sh COMMAND [ARG...]
set -eu
if [ "$(id -u)" -ne 0 ]; then
	echo "isolate.sh: not root, running without a pid namespace: other procctl processes may show up" >&2
	exec "$@"
fi
# With PROCCTL_TEST_TIMEOUT (seconds), the command is killed past it
# (SIGTERM, SIGKILL 5 s later) from inside: sh then ends, and with it, at
# once, every process of the namespace. ctest's own timeout comes later
# and is slow on a large tree (it stops each process, then walks /proc for
# its children: 13 minutes for a farm of 2,500 under load).
export PROCCTL_TEST_TIMEOUT="${PROCCTL_TEST_TIMEOUT:-}"
exec unshare --pid --fork --kill-child --mount-proc --propagation private sh -c '
	[ -n "$PROCCTL_TEST_TIMEOUT" ] || { "$@"; exit $?; }
	timeout --foreground -k 5 "$PROCCTL_TEST_TIMEOUT" "$@"
	r=$?
	[ $r -ne 124 ] || echo "isolate.sh: $1 killed after its $PROCCTL_TEST_TIMEOUT s (PROCCTL_TEST_TIMEOUT)" >&2
	[ $r -ne 137 ] || echo "isolate.sh: $1 killed by SIGKILL (past its $PROCCTL_TEST_TIMEOUT s and 5 more?)" >&2
	exit $r' sh "$@"
