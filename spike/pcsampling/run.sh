#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run.sh - every PC sampling experiment, on a machine with a GPU, in one
# go (about three and a half minutes; every program under a time limit,
# so under eight even if each hangs): the spike's (sampler), procctl's
# (pcsamp under token-agent and procctl-node) and libprocctl-cupti's in
# unmodified programs (node.sh). Each run's log goes to OUT/NAME.log, and OUT/summary.txt
# has the figures FINDINGS.md quotes, computed from the logs here.
#
#   1 alone            one sampler, 5 s: samples per second (the baseline)
#   2 second           A samples; B enables while A runs (at 3 s), stops,
#                      retries disable and enable, and exits; A goes on;
#                      then C, a new process, samples
#   3 handover         A stops and disables, B enables and starts, then A
#                      again: the samples in each window and the gap
#   4 b-first          B first, then A, as in 2 with the roles swapped
#   5 killed           A SIGKILLed while it samples; then D samples
#   6 procctl-2, -3    two, then three pcsamp under token-agent (hold 2 s),
#                      with a witness: turns, samples per hold, CUPTI errors,
#                      the hand-off gap against release + acquire
#   7 start/stop       the sampler with start/stop control alone
#   8-10               node.sh: pcsamp under procctl-node; libprocctl-cupti
#                      in three gpu-busy; gpu-busy with it never granted
#
# Usage: run.sh BUILD_DIR OUT_DIR   (BUILD_DIR: a cmake build with the GPU
# programs, or bundle.sh's folder of them for a machine without gRPC and
# the rest; without procctl-node built, 8-10 are skipped). Off a GPU
# machine, test/cudastub's stand-ins first on LD_LIBRARY_PATH (and
# STANDIN_DIR a folder for their locks) run it all, as a rehearsal.
set -u
B=${1:?usage: run.sh BUILD_DIR OUT_DIR}
OUT=${2:?usage: run.sh BUILD_DIR OUT_DIR}
S=$B/spike/pcsampling/pcs-sampler
E=$B/examples
mkdir -p "$OUT"
: >"$OUT/summary.txt"
exec 3>>"$OUT/summary.txt" # appending, as tee -a does: ">&3" writes must not overwrite its lines
say() { printf '%s\n' "$*" | tee -a /dev/fd/3; }
. "$(dirname "$0")/holds.sh"
# Every program runs under "timeout -k 10 SECONDS" (TERM, then KILL 10 s
# later): a hung CUPTI call costs its limit, not the run. Run directly, never
# in a shell function: "cmd &" then has $! = timeout's pid, and timeout
# passes a TERM sent to it on to the program.

say "# $(date -u +%FT%TZ) $(uname -r)"
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader >"$OUT/gpu.txt" 2>&1
say "gpu: $(cat "$OUT/gpu.txt")"
say "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
# libcupti.so.13 and libcuda.so.1 where the RUNPATH and the system do not
# find them (appended: what LD_LIBRARY_PATH already names comes first;
# never a stubs folder).
ldd "$S" >"$OUT/ldd.txt" 2>&1
if grep -q 'libcupti.*not found' "$OUT/ldd.txt"; then
	c=$(ls /usr/local/cuda/lib64/libcupti.so.13 /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13 \
		/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13 /usr/local/cuda/lib/libcupti.so.13 2>/dev/null | head -1)
	[ -n "$c" ] || c=$(find /usr /opt -name libcupti.so.13 2>/dev/null | grep -v /stubs/ | head -1)
	[ -n "$c" ] && LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(dirname "$c")
fi
if grep -q 'libcuda\.so\.1.*not found' "$OUT/ldd.txt"; then
	for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
		[ -e "$d/libcuda.so.1" ] && { LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; break; }
	done
fi
[ -n "${LD_LIBRARY_PATH:-}" ] && export LD_LIBRARY_PATH
ldd "$S" >"$OUT/ldd.txt" 2>&1
ls /usr/local/cuda/lib64/libcupti.so* /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* 2>/dev/null | head -3 >"$OUT/cupti.txt"
say "cupti: $(tr '\n' ' ' <"$OUT/cupti.txt")"
say "libs: $(grep -E 'libcuda|libcupti' "$OUT/ldd.txt" | tr -s ' \t\n' ' ')"
if ! timeout -k 10 60 "$S" --run-ms 1 >"$OUT/probe.log" 2>&1; then
	say "the sampler does not run here (going on, each run will say why):"; cat "$OUT/probe.log" >&3
fi

# Samples per second of a log's lines for NAME between FROM and TO ms.
rate() { awk -v n="$2" -v a="$3" -v b="$4" '
	$0 ~ "name="n" phase=" { split($1, t, "="); if (t[2] + 0 >= a + 0 && t[2] + 0 < b + 0) { for (i = 2; i <= NF; i++) if ($i ~ /^samples=/) { split($i, s, "="); sum += s[2] } } }
	END { printf "%.0f", sum / ((b - a) / 1000) }' "$1"; }
# The results of one name's calls, in order.
calls() { grep "name=$2 call=" "$1" | awk '{ printf "%s %s %s %s\n", $1, $3, $4, $5 }'; }
errors() { grep -oE '(result|get)=CUPTI_ERROR_[A-Z_]*' "$1" | sort | uniq -c | tr '\n' ';'; }

say "== 1 alone"
timeout -k 10 30 "$S" --name A --at 0:sample --at 5000:unsample >"$OUT/1-alone.log" 2>&1
say "A samples/s 1-5 s: $(rate "$OUT/1-alone.log" A 1000 5000)"
calls "$OUT/1-alone.log" A >&3

say "== 2 second (B enables at 3 s while A samples)"
timeout -k 10 45 "$S" --name A --at 0:sample --at 16000:unsample >"$OUT/2-second-A.log" 2>&1 &
a=$!
sleep 3
timeout -k 10 30 "$S" --name B --at 0:sample --at 3000:unsample --at 4000:enable --at 4000:configure --at 4000:start \
	--at 6000:unsample >"$OUT/2-second-B.log" 2>&1
sleep 1
timeout -k 10 30 "$S" --name C --at 0:sample --at 3000:unsample >"$OUT/2-second-C.log" 2>&1
wait $a
say "A samples/s before B (1-3 s): $(rate "$OUT/2-second-A.log" A 1000 3000); while B (3.5-10 s): $(rate "$OUT/2-second-A.log" A 3500 10000); after B (11-12 s): $(rate "$OUT/2-second-A.log" A 11000 12000); with C (12.5-15 s): $(rate "$OUT/2-second-A.log" A 12500 15000)"
say "B samples/s (0.5-3 s): $(rate "$OUT/2-second-B.log" B 500 3000); after its retry (4.5-6 s): $(rate "$OUT/2-second-B.log" B 4500 6000)"
say "C samples/s (0.5-3 s): $(rate "$OUT/2-second-C.log" C 500 3000)"
for n in A B C; do say "$n errors: $(errors "$OUT/2-second-$n.log")"; done
calls "$OUT/2-second-B.log" B >&3

say "== 3 handover (A 0-3 s, B 3-6 s, A 6-9 s)"
timeout -k 10 40 "$S" --name A --at 0:sample --at 3000:unsample --at 6200:sample --at 9000:unsample >"$OUT/3-handover-A.log" 2>&1 &
a=$!
sleep 3.1
timeout -k 10 30 "$S" --name B --at 0:sample --at 2800:unsample >"$OUT/3-handover-B.log" 2>&1
wait $a
say "A 1-3 s: $(rate "$OUT/3-handover-A.log" A 1000 3000)/s; B 0.5-2.5 s: $(rate "$OUT/3-handover-B.log" B 500 2500)/s; A again 7-9 s: $(rate "$OUT/3-handover-A.log" A 7000 9000)/s"
calls "$OUT/3-handover-A.log" A >&3
calls "$OUT/3-handover-B.log" B >&3

say "== 4 b-first (B samples; A enables at 3 s)"
timeout -k 10 40 "$S" --name B --at 0:sample --at 10000:unsample >"$OUT/4-bfirst-B.log" 2>&1 &
b=$!
sleep 3
timeout -k 10 30 "$S" --name A --at 0:sample --at 3000:unsample >"$OUT/4-bfirst-A.log" 2>&1
wait $b
say "B before A: $(rate "$OUT/4-bfirst-B.log" B 1000 3000)/s; while A: $(rate "$OUT/4-bfirst-B.log" B 3500 6000)/s; after A: $(rate "$OUT/4-bfirst-B.log" B 7000 10000)/s; A: $(rate "$OUT/4-bfirst-A.log" A 500 3000)/s"
for n in A B; do say "$n errors: $(errors "$OUT/4-bfirst-$n.log")"; done

say "== 5 killed (A SIGKILLed while sampling at 3 s; D from 4 s)"
# Not under timeout: $! must be the sampler itself, for the SIGKILL.
"$S" --name A --at 0:sample --at 60000:unsample >"$OUT/5-killed-A.log" 2>&1 &
a=$!
sleep 3
kill -9 $a 2>/dev/null
wait $a 2>/dev/null
sleep 1
timeout -k 10 30 "$S" --name D --at 0:sample --at 3000:unsample >"$OUT/5-killed-D.log" 2>&1
say "A before the kill: $(rate "$OUT/5-killed-A.log" A 1000 3000)/s; D after: $(rate "$OUT/5-killed-D.log" D 500 3000)/s; D errors: $(errors "$OUT/5-killed-D.log")"

uuid=$(cat "$OUT/probe.log" "$OUT/1-alone.log" 2>/dev/null | grep -o 'uuid=[0-9a-f-]*' | head -1 | cut -d= -f2)
for n in 2 3; do
	say "== 6 procctl-$n (token-agent, hold 2 s, $n pcsamp, 14 s)"
	if [ -z "$uuid" ]; then
		say "skipped: no GPU uuid from the sampler"
		continue
	fi
	d=$OUT/procctl-$n
	mkdir -p "$d"
	timeout -k 10 40 "$E/token-agent" --consumer pcsamp --kind 2 --id "$uuid" --hold 2000 --rescan 500 --lock-dir "$d/locks" \
		>"$d/agent.log" 2>&1 &
	ag=$! # --rescan 500: a pcsamp reaches procctl_init after its CUDA set-up, past the
	      # agent's first scan; its hello finds it at once where perf uprobes work,
	      # and where they do not (gVisor has no perf) a rescan (default 60 s) does
	pcsamp_start $n "$d"
	sleep 14
	kill -TERM $pids 2>/dev/null
	sleep 2
	kill -TERM $ag 2>/dev/null
	wait
	pcsamp_said "$d"
	grep '^event=summary' "$d/agent.log" >&3
done
say "== 7 start/stop mode alone (sampler --start-stop: Start and Stop ranges, drained at each Stop)"
timeout -k 10 30 "$S" --name A --start-stop --at 0:sample --at 2000:stop --at 2000:getdata --at 2500:start --at 4500:unsample \
	>"$OUT/7-startstop.log" 2>&1
calls "$OUT/7-startstop.log" A >&3
if [ -z "$uuid" ] || [ ! -x "$B/procctl-node" ]; then
	say "== 8-10 skipped: $([ -z "$uuid" ] && echo "no GPU uuid from the sampler" || echo "no procctl-node in $B")"
else
	sh "$(dirname "$0")/node.sh" "$B" "$OUT" "$uuid"
fi
say "== done $(date -u +%FT%TZ)"
