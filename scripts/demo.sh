#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make demo: the single-host demo, on the agent core, then on procctl-node.
# Echo: two echo clients; agent A owns the node lock, publishes, reads acks
# and state; agent B waits passive; A hands off, B takes over with no flap
# in the clients; B uninstalls on exit and the clients go back to defaults.
# Token: three token clients want one exclusive resource; the token agent
# rotates it among them, and a stopped holder blocks it (never two holders)
# until it runs again and confirms its release.
# procctl-node: the daemon with echo and token clients, driven with the
# procctl command line: ps, publish to one and to all, state, watch while
# a client exits, the token resource rotating and a stopped holder
# blocking it (in `procctl resources` and /metrics), a hand-off at the end.
# Every step is checked; exit 0 only if all of them did what they said.
set -eu
BIN=${BIN:-build/examples}
CLI=${CLI:-build/clients/procctl}
NODE=${NODE:-build/procctl-node}
work=$(mktemp -d /tmp/procctl-demo.XXXXXX)
pids=""
# state PID: its state's letter (R, S, T, Z...), or nothing once it is
# gone (the shell may reap it while this reads).
state() { sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null || :; }
# alive PID: PID has not ended (a zombie, ended but not yet waited for, has).
alive() {
	s=$(state "$1")
	[ -n "$s" ] && [ "$s" != Z ]
}
# gone PID...: 10 s at most for each to end (each was told to); one that
# does not is named, with where each of its threads is stuck, and
# killed: 1, else 0.
gone() {
	i=0 stuck=0
	for p; do
		while alive "$p" && [ $i -lt 200 ]; do
			i=$((i + 1))
			sleep 0.05
		done
	done
	for p; do
		alive "$p" || continue
		printf 'demo: pid %s (%s) has not ended in 10 s (%s); its threads:\n' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)" \
			"$(grep TracerPid "/proc/$p/status" 2>/dev/null)" >&2
		for task in /proc/$p/task/*; do
			printf '  %s %s %s\n' "${task##*/}" "$(sed -n 's/^State:\t//p' "$task/status")" "$(cat "$task/wchan")" >&2
			sed 's/^/    /' "$task/stack" >&2 2>/dev/null || true
		done
		kill -KILL "$p"
		stuck=1
	done
	return $stuck
}
# stop PID...: SIGTERM to each, then gone; every one waited for.
stop() {
	# A stopped one dies of SIGTERM only once continued; one that runs is
	# sent no SIGCONT: it discards a pending SIGSTOP, the one a sanitizer's
	# leak check at exit stops the process with (it then waits for ever).
	for p; do
		kill "$p" 2>/dev/null || continue
		[ "$(state "$p")" != T ] || kill -CONT "$p" 2>/dev/null || true
	done
	gone "$@" && r=0 || r=1
	wait 2>/dev/null || true
	return $r
}
# cleanup: what is still running stopped (a stuck one fails the demo).
cleanup() {
	rc=$?
	trap - EXIT INT TERM
	# shellcheck disable=SC2086 # the pids, one word each
	stop $pids || rc=1
	rm -rf "$work"
	[ "$rc" -ne 0 ] || printf '\ndemo: OK\n'
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step() { printf '\n==> %s\n' "$*"; }
fail() { printf 'demo: FAILED: %s\n' "$*" >&2; exit 1; }
# count FILE PATTERN: how many lines of FILE match (0 while FILE does not
# exist yet: a background program may not have opened its log).
count() { grep -c -- "$2" "$1" 2>/dev/null || :; }
# wait_for FILE PATTERN [COUNT]: until PATTERN occurs COUNT times (10 s)
wait_for() {
	i=0
	while n=$(count "$1" "$2") && [ "${n:-0}" -lt "${3:-1}" ]; do
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
b_shown=$(wc -l <"$work/b.log")
grep -q "owner=0" "$work/b.log" || fail "B was not passive"

step "SIGTERM to A: it hands off (RELEASED); B takes the lock at once and publishes"
kill -TERM "$a"
gone "$a" || fail "agent A did not stop"
wait "$a" || true
wait_for "$work/b.log" "event=ownership consumer=echo held=1"
wait_for "$work/b.log" "ack=applied" 2
tail -n +$((b_shown + 1)) "$work/b.log" | sed 's/^/    /' # what B did after the hand-off
wait_for "$work/c1.log" "payload=config-from-B"
if grep -q "event=lease state=expired\|event=cleared" "$work/c1.log" "$work/c2.log"; then
	fail "a client saw a flap during the hand-off"
fi
echo "    no client saw a lease expiry or a cleared config during the hand-off"

step "SIGTERM to B (--uninstall-on-exit): one UNINSTALL write, the clients revert at once"
kill -TERM "$b"
gone "$b" || fail "agent B did not stop"
wait "$b" || true
wait_for "$work/c1.log" "event=cleared"
wait_for "$work/c2.log" "event=lease state=expired"

step "what the clients applied, in their own words"
echo "  client 1:"; show "$work/c1.log"
echo "  client 2:"; show "$work/c2.log"

stop "$c1" "$c2" || fail "the echo clients did not stop"
pids=""

# holder_lines: the token agent's "event=holder" lines with a holder
holder_lines() { n=$(count "$work/t.log" "event=holder .* pid=[1-9]") && echo "${n:-0}"; }
# turn: "PID LINES", the last holder and how many holder lines: from one
# read of the log, so that a hand-off between two reads cannot pair a
# holder with the count after it.
turn() {
	grep "event=holder .* pid=[1-9]" "$work/t.log" | sed -n 's/.* pid=\([0-9]*\) .*/\1/p' |
		awk '{ p = $1 } END { print p + 0, NR }'
}

step "three token clients want resource 1:0 (kind 1, the all-zero id); the token agent grants it to one at a time, 200 ms each"
for i in 1 2 3; do
	"$BIN/token-client" --witness "$work/witness" >"$work/t$i.log" 2>&1 & pids="$pids $!"
done
for i in 1 2 3; do # their regions made: the agent's first scan finds all three
	wait_for "$work/t$i.log" event=started
done
"$BIN/token-agent" --lock-dir "$work/locks" --hold 200 >"$work/t.log" 2>"$work/t.err" & t=$!; pids="$pids $t"
wait_for "$work/t.log" "event=holder .* pid=[1-9]" 6
show "$work/t.log"

step "SIGSTOP the holder: its turn ends, but nobody else gets resource 1:0 until it confirms"
tries=0
while :; do # stop it, and make sure it was still the holder when stopped
	now=$(turn)
	holder=${now% *} before=${now#* }
	[ "$holder" -gt 0 ] || fail "no holder"
	kill -STOP "$holder"
	sleep 0.05
	[ "$(turn)" != "$now" ] || break
	kill -CONT "$holder"
	tries=$((tries + 1))
	[ $tries -lt 20 ] || fail "could not stop the holder while it held resource 1:0"
done
sleep 1
[ "$(holder_lines)" = "$before" ] || fail "resource 1:0 moved while its holder was stopped"
echo "    pid $holder stopped while holding: 1 s without a hand-off (blocked, not given twice)"
kill -CONT "$holder"
wait_for "$work/t.log" "event=holder .* pid=[1-9]" $((before + 2))
echo "    pid $holder continued, saw the revocation, released; the rotation goes on:"
tail -2 "$work/t.log" | sed 's/^/    /'

step "SIGTERM to the token agent: per-resource totals, then a hand-off"
kill -TERM "$t"
gone "$t" || fail "the token agent did not stop"
wait "$t" || true
grep "event=summary" "$work/t.log" | sed 's/^/    /'
grep -q "event=summary .*blocked_ms=[1-9]" "$work/t.log" || fail "the stop was not accounted as blocked"
echo "    each client's own account (its status bytes: examples/token/token_schema.h, read back by the agent):"
grep "event=client_status" "$work/t.log" | sed 's/^/    /'
[ "$(grep -c "event=client_status .*turns=[1-9].* hold_ms=200$" "$work/t.log")" -eq 3 ] ||
	fail "not every client applied the agent's config and reported its turns"
# shellcheck disable=SC2086
stop $pids || fail "the token clients did not stop"
pids=""

step "the witness: each client's own log of when it used resource 1:0"
! grep -q "^X" "$work/witness" || fail "the kernel saw two holders at once"
# In time order, a start (S) always follows an end (E): never two at once.
sort -k3,3n "$work/witness" | awk '
	$1 == "S" { if (holding) { bad = 1 } holding = 1; n++ }
	$1 == "E" { holding = 0 }
	END { printf "    %d turns, %s\n", n, bad ? "OVERLAP" : "no two holders at any time"; exit bad }' ||
	fail "two holders at once"

# ---- procctl-node and the procctl command line --------------------------

P="$CLI --socket $work/node.sock"
# HTTP on DEMO_HTTP_PORT, or on a port the kernel picks (0): the daemon's
# listening line names it, so a demo beside this one never takes it.
port=${DEMO_HTTP_PORT:-0}
metric() { curl -s "http://$HTTP/metrics" | grep "^$1" || true; }
# ps_count N: until procctl ps lists N processes (10 s)
ps_count() {
	i=0
	while [ "$($P ps 2>/dev/null | tail -n +2 | grep -c .)" -lt "$1" ]; do
		i=$((i + 1))
		[ $i -le 200 ] || fail "procctl ps did not list $1 processes"
		sleep 0.05
	done
}
# node_start: the daemon, serving (10 s), HTTP on $port; HTTP is where
# its listening line says it listens.
node_start() {
	"$NODE" --config "$work/node.conf" --grpc-listen "unix:$work/node.sock" --lock-dir "$work/nlocks" \
		--state-dir "$work/state" --rescan-ms 200 --http-listen "127.0.0.1:$port" >"$work/node.log" 2>&1 & node=$!
	pids="$pids $node"
	i=0
	while ! $P health >/dev/null 2>&1 || ! grep -q "event=listening addr=http://" "$work/node.log"; do
		kill -0 "$node" 2>/dev/null || fail "procctl-node did not start: $(tail -n 3 "$work/node.log")"
		i=$((i + 1))
		[ $i -le 200 ] || fail "procctl-node did not serve within 10 s"
		sleep 0.05
	done
	HTTP=$(sed -n 's/.*event=listening addr=http:\/\/\([^ ]*\) .*/\1/p' "$work/node.log" | head -n 1)
}

step "procctl-node: the node daemon (gRPC on $work/node.sock, HTTP on 127.0.0.1), one [arbiter gpu] for the token clients"
printf '[arbiter gpu]\nkind = 1\nconsumer = token\nhold_ms = 200\nresources = 00000000-0000-0000-0000-000000000000\n' >"$work/node.conf"
node_start
echo "    serving; HTTP on $HTTP"
"$BIN/echo-client" >"$work/n1.log" 2>&1 & n1=$!; pids="$pids $n1"
"$BIN/echo-client" >"$work/n2.log" 2>&1 & n2=$!; pids="$pids $n2"
for i in 1 2; do
	"$BIN/token-client" --witness "$work/nwitness" >"$work/nt$i.log" 2>&1 & pids="$pids $!"
done
ps_count 4

step "procctl ps: what the daemon attached"
$P ps | sed 's/^/    /'

step "procctl publish --pid $n1 --wait: one client, and its ack"
$P publish --pid "$n1" --data "for one" --wait | sed 's/^/    /'
wait_for "$work/n1.log" "payload=for one"

step "procctl publish --consumer echo --wait: every echo client"
$P publish --consumer echo --data "for all" --wait | sed 's/^/    /'
wait_for "$work/n1.log" "payload=for all"
wait_for "$work/n2.log" "payload=for all"

step "procctl state $n1: the state block, read from the client's own memory"
$P state "$n1" | sed 's/^/    /'
$P state "$n1" | grep -q "mode=config" || fail "client 1 does not report its config"

step "procctl watch: the events while client 2 exits"
$P watch --consumer echo --count 2 >"$work/watch.log" 2>&1 & w=$!
wait_for "$work/watch.log" snapshot
kill -TERM "$n2"
gone "$w" || fail "the watch did not end"
wait "$w" || fail "the watch did not see the exit"
show "$work/watch.log"
grep -q "detached .*pid=$n2 reason=EXITED" "$work/watch.log" || fail "no detached event for client 2"

step "procctl resources: the gpu rotating between the two token clients"
i=0
until $P -o json resources | grep -q '"handoffs":"[2-9]'; do
	i=$((i + 1))
	[ $i -le 200 ] || fail "the gpu did not rotate"
	sleep 0.05
done
$P resources | sed 's/^/    /'

step "SIGSTOP the holder: the gpu is blocked, and the blocked time grows"
# gpu_turn: "PID HANDOFFS" of the gpu, from one answer (two calls could
# straddle a hand-off and pair the old holder with the new count).
gpu_turn() {
	$P -o json resources | sed -n 's/.*"holder":{"pid":\([0-9]*\).*"handoffs":"\([0-9]*\)".*/\1 \2/p'
}
tries=0
while :; do # stop it, and make sure it was still the holder when stopped
	now=$(gpu_turn)
	holder=${now% *}
	[ "${holder:-0}" -gt 0 ] || fail "no holder"
	kill -STOP "$holder"
	sleep 0.05
	[ "$(gpu_turn)" != "$now" ] || break
	kill -CONT "$holder"
	tries=$((tries + 1))
	[ $tries -lt 20 ] || fail "could not stop the gpu's holder while it held it"
done
sleep 1
$P resources | sed 's/^/    /'
metric procctl_resource_blocked_seconds_total | sed 's/^/    /'
[ "$($P -o json resources | sed 's/.*"holder":{"pid":\([0-9]*\).*/\1/')" = "$holder" ] ||
	fail "the gpu moved while its holder was stopped"
metric procctl_resource_blocked_seconds_total | grep -q ' 0\.[0-9]*[1-9]\| [1-9]' || fail "no blocked time in /metrics"
kill -CONT "$holder"

step "SIGTERM to procctl-node: a hand-off; the echo client keeps its config"
kill -TERM "$node"
gone "$node" || fail "procctl-node did not stop"
wait "$node" || fail "procctl-node did not stop cleanly"
grep "event=stopping" "$work/node.log" | sed 's/^/    /'
if grep -q "event=lease state=expired\|event=cleared" "$work/n1.log"; then
	fail "client 1 saw its config go"
fi
! grep -q "^X" "$work/nwitness" || fail "the kernel saw two token holders at once"
