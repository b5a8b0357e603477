#!/bin/sh
# make demo: the single-host demo on the agent core (no daemon yet).
# Echo: two echo clients; agent A owns the node lock, publishes, reads acks
# and state; agent B waits passive; A hands off, B takes over with no flap
# in the clients; B uninstalls on exit and the clients go back to defaults.
# Token: three token clients want one exclusive resource; the token agent
# rotates it among them, and a stopped holder blocks it (never two holders)
# until it runs again and confirms its release.
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

# holder_lines: the token agent's "event=holder" lines with a holder
holder_lines() { grep -c "event=holder .* pid=[1-9]" "$work/t.log" 2>/dev/null || true; }

step "three token clients want gpu:0; the token agent grants it to one at a time, 200 ms each"
for i in 1 2 3; do
	"$BIN/token-client" --witness "$work/witness" >"$work/t$i.log" 2>&1 & pids="$pids $!"
done
"$BIN/token-agent" --lock-dir "$work/locks" --hold 200 >"$work/t.log" 2>"$work/t.err" & t=$!; pids="$pids $t"
wait_for "$work/t.log" "event=holder .* pid=[1-9]" 6
show "$work/t.log"

step "SIGSTOP the holder: its turn ends, but nobody else gets gpu:0 until it confirms"
current() { grep "event=holder .* pid=[1-9]" "$work/t.log" | tail -1 | sed 's/.* pid=\([0-9]*\) .*/\1/'; }
tries=0
while :; do # stop it, and make sure it was still the holder when stopped
	holder=$(current)
	before=$(holder_lines)
	kill -STOP "$holder"
	sleep 0.05
	[ "$(current)" != "$holder" ] || [ "$(holder_lines)" != "$before" ] || break
	kill -CONT "$holder"
	tries=$((tries + 1))
	[ $tries -lt 20 ] || fail "could not stop the holder while it held gpu:0"
done
sleep 1
[ "$(holder_lines)" = "$before" ] || fail "gpu:0 moved while its holder was stopped"
echo "    pid $holder stopped while holding: 1 s without a hand-off (blocked, not given twice)"
kill -CONT "$holder"
wait_for "$work/t.log" "event=holder .* pid=[1-9]" $((before + 2))
echo "    pid $holder continued, saw the revocation, released; the rotation goes on:"
tail -2 "$work/t.log" | sed 's/^/    /'

step "SIGTERM to the token agent: per-resource totals, then a hand-off"
kill -TERM "$t"
wait "$t" || true
grep "event=summary" "$work/t.log" | sed 's/^/    /'
grep -q "event=summary .*blocked_ms=[1-9]" "$work/t.log" || fail "the stop was not accounted as blocked"
for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=""

step "the witness: each client's own log of when it used gpu:0"
! grep -q "^X" "$work/witness" || fail "the kernel saw two holders at once"
# In time order, a start (S) always follows an end (E): never two at once.
sort -k3,3n "$work/witness" | awk '
	$1 == "S" { if (holding) { bad = 1 } holding = 1; n++ }
	$1 == "E" { holding = 0 }
	END { printf "    %d turns, %s\n", n, bad ? "OVERLAP" : "no two holders at any time"; exit bad }' ||
	fail "two holders at once"

printf '\ndemo: OK\n'
