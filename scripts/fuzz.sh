#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make fuzz: the open-ended search that `make test`'s fixed runs are not.
# Builds the libFuzzer targets (clang, ASan+UBSan, in build-asan) and runs
# each for FUZZ_SECONDS (default 60) from its seeds (fuzz/corpus/NAME) and whatever earlier
# runs found (build-asan/fuzz/found-NAME, kept between runs). A crash
# stops that target, its input is in build-asan/fuzz/crashes/; copy it into
# fuzz/corpus/NAME once fixed, so `make test` replays it for good.
# Usage: scripts/fuzz.sh [TARGET...]   (default: every fuzz target)
set -eu
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}
CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROCCTL_SANITIZE=address >/dev/null
targets=${*:-$(cd fuzz && ls fuzz_*.c | sed 's/\.c$//')}
# shellcheck disable=SC2086
cmake --build build-asan -j"$(nproc)" --target $targets
out=build-asan/fuzz
mkdir -p "$out/crashes"
failed=
for t in $targets; do
	name=${t#fuzz_}
	seeds=fuzz/corpus/$name
	mkdir -p "$out/found-$name"
	echo "== $t: $secs s"
	if ! "$out/$t" -max_total_time="$secs" -max_len=12000 -print_final_stats=1 \
		-artifact_prefix="$out/crashes/$name-" "$out/found-$name" "$seeds" 2>"$out/$t.log"; then
		tail -n 30 "$out/$t.log"
		failed="$failed $t"
	fi
	grep -E '^stat::(number_of_executed_units|new_units_added)' "$out/$t.log" || true
done
if [ -n "$failed" ]; then
	echo "fuzz: FOUND a failure in:$failed (inputs in $out/crashes/)" >&2
	exit 1
fi
echo "fuzz: nothing found in $secs s a target"
