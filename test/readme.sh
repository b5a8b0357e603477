#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# readme.sh - run README.md as a newcomer would: every ```sh block in
# order, as one shell session, and every ```c block compiled (the first,
# the process side, also run, so the walkthrough's daemon must find it and
# its publish --wait must have its ack).
#
# The session runs as root in new mount, network and pid namespaces: /run
# and /var/lib are private tmpfs there, so procctl-node runs on its
# embedded defaults (/run/procctl/node.sock, 127.0.0.1:9464,
# /var/lib/procctl) without touching the host's, and sees only the
# processes of the session. The repository is seen through a scratch
# directory whose build/ is BUILD_DIR.
#
# Fences other than sh, c and text fail the test (a command the test would
# not see); `make`, `make demo` and `make test` are the only lines not run
# here (make test is CI itself, make demo's script is the demo test).
#
# Usage: test/readme.sh BUILD_DIR
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:?usage: readme.sh BUILD_DIR}" && pwd)

if [ "$(id -u)" != 0 ]; then
	echo "readme: needs root (namespaces, the daemon's defaults)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi

W=$(mktemp -d /tmp/procctl-readme.XXXXXX)
trap 'rm -rf "$W"' EXIT
for f in "$ROOT"/* "$ROOT"/.[!.]*; do
	[ -e "$f" ] || continue
	[ "$(basename "$f")" = build ] || ln -s "$f" "$W/"
done
ln -s "$BUILD" "$W/build"
mkdir "$W/.readme"

awk -v dir="$W/.readme" '
	/^```/ {
		if (fence) {
			if (out != "") close(out)
			fence = 0; out = ""
			next
		}
		fence = 1
		lang = substr($0, 4)
		if (lang == "sh" || lang == "c") {
			n++
			out = sprintf("%s/%02d.%s", dir, n, lang)
			if (lang == "sh")
				printf "echo \"## README.md line %d\"\n", NR + 1 > out
		} else if (lang != "text") {
			printf "readme: README.md line %d: a ```%s block (only sh, c and text)\n", NR, lang > "/dev/stderr"
			bad = 1
		}
		next
	}
	fence && out ~ /\.sh$/ && /^make( demo| test)?( |$)/ { print ": " $0 > out; next }
	fence && out ~ /\.sh$/ && /^make/ {
		printf "readme: README.md line %d: %s is run by no test\n", NR, $0 > "/dev/stderr"
		bad = 1
	}
	fence && out != "" { print > out }
	END {
		if (fence) { print "readme: README.md ends inside a fence" > "/dev/stderr"; bad = 1 }
		exit bad
	}
' "$ROOT/README.md"

CFLAGS="-std=c11 -O1 -Wall -Wextra -Werror -I$ROOT -I$ROOT/core -I$ROOT/arbiter"
first=
for c in "$W"/.readme/*.c; do
	echo "## compiling $(basename "$c") of README.md"
	cc $CFLAGS -o "${c%.c}" "$c" "$BUILD/libprocctl-agent.a" -lpthread
	[ -n "$first" ] || first=${c%.c}
done
[ -n "$first" ] || { echo "readme: no C block" >&2; exit 1; }

cat "$W"/.readme/*.sh >"$W/.readme/session"
"$ROOT/scripts/install-peers.sh" >/dev/null

# The session: the process side's program first (so the daemon's first scan
# finds it beside the walkthrough's echo client), then every sh block.
fail() {
	echo "readme: FAIL: $*" >&2
	exit 1
}
cd "$W"
status=0
unshare --mount --net --pid --fork --mount-proc --propagation private sh -eu -c '
	ip link set lo up
	mount -t tmpfs tmpfs /run
	mount -t tmpfs tmpfs /var/lib
	"$1" &
	echo "$!" >.readme/snippet.pid
	PATH=$PWD/test/peers/node_modules/.bin:$PATH HELM_CACHE_HOME=/run/helm HELM_CONFIG_HOME=/run/helm HELM_DATA_HOME=/run/helm bash -euo pipefail -x .readme/session
' readme "$first" >"$W/.readme/log" 2>&1 || status=$?
cat "$W/.readme/log"
[ "$status" = 0 ] || fail "the session failed (exit $status)"

snip=$(cat "$W/.readme/snippet.pid")
grep -q "^$snip .*echo" "$W/.readme/log" || fail "procctl ps did not list the README's C program (pid $snip)"
grep -q "^$snip .*APPLIED" "$W/.readme/log" || fail "the README's C program did not ack the publish"
echo "readme: every command of README.md ran"
