#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# check.sh - verify arbiter.pml with SPIN, exhaustively.
# Usage: check.sh WORKDIR [NAME]   (NAME: one of the checks below, each its
# own ctest test so that they run side by side; none: all, one by one)
#
#   safety   3 holders: never two users at once
#   live0-2  3 holders, weak fairness, holders that take a grant up within
#            the hold time: each uses the resource infinitely often
# and the checks that must fail (so the properties can fail at all):
#   BROKEN_REGRANT, BROKEN_STALE break safety (2 holders suffice);
#   without FAIR_HOLDERS a holder can starve (2 holders).
# Prints states, depth and seconds for each run.
set -eu

src=$(cd "$(dirname "$0")" && pwd)/arbiter.pml
work=${1:?usage: check.sh WORKDIR}
fail=0

# run NAME EXPECT(ok|error) HOLDERS PROPERTY [spin -D flags...]
run() {
	name=$1 expect=$2 n=$3 prop=$4
	shift 4
	d=$work/$name
	rm -rf "$d"
	mkdir -p "$d"
	cp "$src" "$d/"
	fair="" cflags="-DCOLLAPSE"
	if [ "$prop" != safety ]; then
		fair="-f" cflags="$cflags -DNFAIR=3"
	fi
	start=$(date +%s)
	(cd "$d" && spin -DN="$n" "$@" -a arbiter.pml >spin.log 2>&1) || {
		echo "$name: spin -a failed"
		cat "$d/spin.log"
		fail=1
		return
	}
	# pan.c is generated: its warnings are not ours
	(cd "$d" && cc -O2 -w $cflags -o pan pan.c) || {
		echo "$name: cc pan.c failed"
		fail=1
		return
	}
	(cd "$d" && ./pan -a $fair -m20000000 -N "$prop" >pan.log 2>&1) || true
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$d/pan.log")
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$d/pan.log")
	depth=$(sed -n 's/.*depth reached \([0-9]*\),.*/\1/p' "$d/pan.log")
	secs=$(($(date +%s) - start))
	got=error
	[ "$errors" = 0 ] && got=ok
	if [ -z "$errors" ] || grep -q "max search depth too small\|out of memory" "$d/pan.log"; then
		got=incomplete
	fi
	echo "$name: $got (expected $expect), $states states, depth $depth, ${secs}s"
	if [ "$got" != "$expect" ]; then
		fail=1
		cat "$d/pan.log"
	fi
}

only=${2:-}
check() {
	if [ -z "$only" ] || [ "$only" = "$1" ]; then
		ran=1
		run "$@"
	fi
}
ran=0
check safety ok 3 safety
check live0 ok 3 live0 -DFAIR_HOLDERS
check live1 ok 3 live1 -DFAIR_HOLDERS
check live2 ok 3 live2 -DFAIR_HOLDERS
check broken_regrant error 2 safety -DBROKEN_REGRANT
check broken_stale error 2 safety -DBROKEN_STALE
check unfair_starves error 2 live0
if [ "$ran" = 0 ]; then
	echo "check.sh: no check named '$only'" >&2
	exit 2
fi
exit $fail
