#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# node.sh - run.sh's experiments under procctl-node (each daemon and
# program under a time limit; about 80 s in all):
#
#   8 node-2, node-3   two, then three pcsamp under procctl-node's [arbiter
#                      gpu-pc-sampling] (kind 2, the GPU's UUID, hold 2 s),
#                      14 s, with a witness: holds, samples and CUPTI errors
#                      of each, the hand-off gaps against release + acquire,
#                      /metrics' hold, blocked and hand-offs for the GPU
#   9 inject           three gpu-busy (no procctl, no CUPTI in it) with
#                      CUDA_INJECTION64_PATH=libprocctl-cupti.so under the
#                      same arbiter, 14 s: procctl state of each (turns,
#                      samples, CUPTI errors, top functions); the daemon's
#                      granted and released events
#  10 idle             gpu-busy alone, then with the library and never
#                      granted (no daemon), 5 s each: kernels per second
#
# Logs in OUT/node-N/, OUT/inject/ and OUT/idle/; figures appended to
# OUT/summary.txt. Usage: node.sh BUILD_DIR OUT_DIR UUID (BUILD_DIR a build
# or bundle.sh's folder, whose lib/ procctl-node and procctl load).
set -u
B=${1:?usage: node.sh BUILD_DIR OUT_DIR UUID}
OUT=${2:?usage: node.sh BUILD_DIR OUT_DIR UUID}
UUID=${3:?usage: node.sh BUILD_DIR OUT_DIR UUID}
P=$B/clients
E=$B/examples
NL=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} # the daemon's and the CLI's libraries
exec 3>>"$OUT/summary.txt"
say() { printf '%s\n' "$*" | tee -a /dev/fd/3; }
. "$(dirname "$0")/holds.sh"
port=19591

# procctl-node in folder $1 with the GPU's arbiter, for 50 s at most:
# node=its pid (timeout's), sock=its socket.
start_node() {
	mkdir -p "$1"
	printf '[arbiter gpu-pc-sampling]\nkind = 2\nconsumer = pcsamp\nhold_ms = 2000\nprocess_bound = true\nresources = %s\n' \
		"$UUID" >"$1/node.conf"
	sock=$1/node.sock
	port=$((port + 1))
	env LD_LIBRARY_PATH="$NL" timeout -k 10 50 "$B/procctl-node" --config "$1/node.conf" --grpc-listen "unix:$sock" \
		--lock-dir "$1/locks" --state-dir "$1/state" --rescan-ms 500 --http-listen "127.0.0.1:$port" \
		--consumers pcsamp >"$1/node.log" 2>&1 &
	node=$!
	i=0
	while [ ! -S "$sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
}

# /metrics into $1, and the GPU's resource lines said.
metrics() {
	python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=5).read().decode())" \
		>"$1" 2>&1
	say "metrics: $(grep -E "^procctl_resource_(hold|blocked|pending_release)_seconds_total|^procctl_resource_handoffs_total" "$1" |
		grep "$UUID" | sed 's/{.*}//' | tr '\n' ' ')"
}

# The gaps, in ms, from each released event to the next granted one in a
# daemon log.
gaps() {
	grep -E 'event=(granted|released) kind=gpu-pc-sampling' "$1" | sed 's/^ts=\([^ ]*\) .*event=\([a-z]*\) .*/\1 \2/' |
		python3 -c "
import sys, datetime
last = None
out = []
for line in sys.stdin:
    ts, ev = line.split()
    t = datetime.datetime.fromisoformat(ts.replace('Z', '+00:00')).timestamp() * 1e3
    if ev == 'released':
        last = t
    elif last is not None:
        out.append('%.1f' % (t - last))
        last = None
print(' '.join(out))"
}

for n in 2 3; do
	say "== 8 node-$n (procctl-node [arbiter], hold 2 s, $n pcsamp, 14 s)"
	d=$OUT/node-$n
	start_node "$d"
	pcsamp_start $n "$d"
	sleep 14
	metrics "$d/metrics.txt"
	kill -TERM $pids 2>/dev/null
	sleep 2
	kill -TERM $node 2>/dev/null
	wait
	pcsamp_said "$d"
	say "daemon released to granted (ms): $(gaps "$d/node.log")"
done

say "== 9 inject (three gpu-busy with libprocctl-cupti under procctl-node, 14 s)"
d=$OUT/inject
start_node "$d"
pids=
for i in 0 1 2; do
	CUDA_INJECTION64_PATH=$B/gpu/cupti/libprocctl-cupti.so timeout -k 10 35 "$B/gpu/gpu-busy" >"$d/busy-$i.log" 2>&1 &
	pids="$pids $!"
done
sleep 13
for p in $(pgrep -f "^$B/gpu/gpu-busy"); do
	env LD_LIBRARY_PATH="$NL" timeout 10 "$P/procctl" --socket "$sock" state "$p" >"$d/state-$p.txt" 2>&1
done
metrics "$d/metrics.txt"
sleep 1
kill -TERM $pids 2>/dev/null
sleep 2
kill -TERM $node 2>/dev/null
wait
for f in "$d"/state-*.txt; do
	say "$(basename "$f" .txt): $(grep -E '^(sampling|cupti):' "$f" | tr -s ' ' | tr '\n' ' ')"
	say "  top: $(grep '^function:' "$f" | head -3 | sed 's/^function: *//' | tr '\n' ';')"
done
for f in "$d"/busy-*.log; do say "$(basename "$f"): $(grep -E '^event=done|procctl-cupti' "$f" | tr '\n' ' ')"; done
say "daemon released to granted (ms): $(gaps "$d/node.log")"

say "== 10 idle (gpu-busy alone, then with the library never granted, 5 s each)"
d=$OUT/idle
mkdir -p "$d"
timeout -k 10 30 "$B/gpu/gpu-busy" --seconds 5 >"$d/alone.log" 2>&1
CUDA_INJECTION64_PATH=$B/gpu/cupti/libprocctl-cupti.so PROCCTL_CUPTI_CONSUMER=pcsidle \
	timeout -k 10 30 "$B/gpu/gpu-busy" --seconds 5 >"$d/library.log" 2>&1
say "kernels in 5 s: alone $(grep -o 'kernels=[0-9]*' "$d/alone.log"), with the library $(grep -o 'kernels=[0-9]*' "$d/library.log")"
