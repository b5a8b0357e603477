#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The seed README's C, verbatim (c_side_top.inc + c_side.inc: "Using the C
# side"; holder_loop.inc: the holder loop), each wrapped in a main that
# defines what the snippet leaves to the application, compiled as C11 and
# C17 with gcc and clang and as C++17 and C++20 with g++ and clang++,
# -Wall -Wextra -Werror. Each C-side program runs without an agent
# (nothing new, lease expired, no grant usable); each holder runs under
# the token agent, with a token client wanting the same resource, until it
# has been granted it and has released it.
# C++ builds of the C side take -U_GNU_SOURCE: the snippet's first line
# defines _GNU_SOURCE, which g++ and clang++ predefine (a redefinition is
# an error under -Werror); that line is for C.
# Usage: run.sh SOURCE_DIR WORK_DIR TOKEN_AGENT TOKEN_CLIENT
set -eu
src=$1
out=$2
agent=$3
client=$4
mkdir -p "$out"
flags="-Wall -Wextra -Werror -I$src -I$src/test/seed"
status=0
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done' EXIT

fail() {
	echo "seed: FAILED: $*" >&2
	status=1
}

# holder BINARY NAME: granted and released under the token agent (20 s).
holder() {
	consumer=seed$$$2
	consumer=$(echo "$consumer" | tr -c 'a-z0-9\n' . | cut -c1-31)
	"$agent" --consumer "$consumer" --lock-dir "$out/locks-$2" --hold 100 --rescan 100 >"$out/$2-agent.log" 2>&1 &
	a=$!
	"$client" --consumer "$consumer" >"$out/$2-client.log" 2>&1 &
	c=$!
	pids="$a $c"
	timeout 20 "$1" "$consumer" >"$out/$2-holder.log" 2>&1 || true
	kill "$a" "$c" 2>/dev/null || true
	wait "$a" "$c" 2>/dev/null || true
	pids=""
	if grep -q '^event=acquired$' "$out/$2-holder.log" && grep -q '^event=released$' "$out/$2-holder.log" &&
		grep -q '^event=done$' "$out/$2-holder.log"; then
		echo "seed: $2: the holder loop was granted the resource and released it"
	else
		fail "$2: the holder loop was not granted and released: $(cat "$out/$2-holder.log")"
	fi
}

for build in gcc:c:c11 gcc:c:c17 clang:c:c11 clang:c:c17 g++:c++:c++17 g++:c++:c++20 clang++:c++:c++17 \
	clang++:c++:c++20; do
	cc=${build%%:*}
	rest=${build#*:}
	lang=${rest%%:*}
	std=${rest#*:}
	name=$(echo "$cc-$std" | tr + x)
	extra=""
	[ "$lang" = c++ ] && extra=-U_GNU_SOURCE
	# shellcheck disable=SC2086
	if ! $cc -x "$lang" -std="$std" $flags $extra "$src/test/seed/c_side.c" -o "$out/$name-c-side" \
		>"$out/$name-c-side.log" 2>&1; then
		fail "$name: the C side does not compile: $(cat "$out/$name-c-side.log")"
	elif ! "$out/$name-c-side"; then
		fail "$name: the C side without an agent"
	fi
	# shellcheck disable=SC2086
	if ! $cc -x "$lang" -std="$std" $flags "$src/test/seed/holder.c" -o "$out/$name-holder" \
		>"$out/$name-holder.log" 2>&1; then
		fail "$name: the holder loop does not compile: $(cat "$out/$name-holder.log")"
	else
		holder "$out/$name-holder" "$name"
	fi
done
exit $status
