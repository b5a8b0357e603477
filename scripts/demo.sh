#!/bin/sh
# make demo: the single-host echo demo on the agent core (no daemon yet).
# Two echo clients; agent A owns the node lock, publishes, reads acks and
# state; agent B waits passive; A hands off, B takes over with no flap in
# the clients; B uninstalls on exit and the clients go back to defaults.
# Every step is checked; exit 0 only if all of them did what they said.
set -eu
BIN=${BIN:-build/clients}
work=$(mktemp -d /tmp/procctl-demo.XXXXXX)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

step() { printf '\n==> %s\n' "$*"; }
fail() { printf 'demo: FAILED: %s\n' "$*" >&2; exit 1; }
# wait_for FILE PATTERN [COUNT]: until PATTERN occurs COUNT times (10 s)
wait_for() {
	i=0
	while [ "$(grep -c -- "$2" "$1" 2>/dev/null || true)" -lt "${3:-1}" ]; do
		i=$((i + 1))
		[ $i -le 200 ] || fail "no '$2' in $1 after 10 s"
		sleep 0.05
	done
}
show() { sed 's/^/    /' "$1"; }

step "starting two echo clients (each creates a sealed memfd procctl:echo-v1)"
"$BIN/echo-client" >"$work/c1.log" 2>&1 & c1=$!; pids="$pids $c1"
"$BIN/echo-client" >"$work/c2.log" 2>&1 & c2=$!; pids="$pids $c2"
wait_for "$work/c1.log" event=started
wait_for "$work/c2.log" event=started
ls -l /proc/$c1/fd 2>/dev/null | grep memfd:procctl | sed 's/^/    /' || true

step "agent A: takes the node lock, attaches, publishes, waits for the acks"
"$BIN/echo-agent" --lock-dir "$work/locks" --lease 2000 --config "config-from-A" \
	>"$work/a.log" 2>"$work/a.err" & a=$!; pids="$pids $a"
wait_for "$work/a.log" "ack=applied" 2
show "$work/a.log"
wait_for "$work/c1.log" "payload=config-from-A"
wait_for "$work/c2.log" "payload=config-from-A"

step "agent B: the lock is taken, so it attaches read-only (passive) and reads the state"
"$BIN/echo-agent" --lock-dir "$work/locks" --lease 2000 --config "config-from-B" --uninstall-on-exit \
	>"$work/b.log" 2>"$work/b.err" & b=$!; pids="$pids $b"
wait_for "$work/b.log" "event=state" 2
show "$work/b.log"
grep -q "owner=0" "$work/b.log" || fail "B was not passive"

step "SIGTERM to A: it hands off (RELEASED); B takes the lock at once and publishes"
kill -TERM "$a"
wait "$a" || true
wait_for "$work/b.log" "event=ownership consumer=echo held=1"
wait_for "$work/b.log" "ack=applied" 2
show "$work/b.log"
wait_for "$work/c1.log" "payload=config-from-B"
if grep -q "event=lease state=expired\|event=cleared" "$work/c1.log" "$work/c2.log"; then
	fail "a client saw a flap during the hand-off"
fi
echo "    no client saw a lease expiry or a cleared config during the hand-off"

step "SIGTERM to B (--uninstall-on-exit): one UNINSTALL write, the clients revert at once"
kill -TERM "$b"
wait "$b" || true
wait_for "$work/c1.log" "event=cleared"
wait_for "$work/c2.log" "event=lease state=expired"

step "what the clients applied, in their own words"
echo "  client 1:"; show "$work/c1.log"
echo "  client 2:"; show "$work/c2.log"

kill -TERM "$c1" "$c2"
wait "$c1" "$c2" || true
pids=""
printf '\ndemo: OK\n'
