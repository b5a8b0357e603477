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
exec unshare --pid --fork --kill-child --mount-proc --propagation private sh -c '"$@"; exit $?' sh "$@"
