#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# procctl.h in every language mode it promises: gcc and clang as C11, C17
# and C2x; g++ and clang++ as C++17 and C++20; -Wall -Wextra -Werror
# -pedantic; also PROCCTL_STATIC, and the #error a misordered include gets.
# Usage: header_matrix.sh SOURCE_DIR WORK_DIR
set -eu
src=$1
out=$2
mkdir -p "$out"
flags="-Wall -Wextra -Werror -pedantic -I$src"
pass=0
fail=0

run() { # name, command...
	name=$1
	shift
	if "$@" >"$out/$name.log" 2>&1; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $name"
		cat "$out/$name.log"
	fi
}

build_and_run() { # name, compiler, lang, std
	run "$1" sh -c "$2 -x $3 -std=$4 $flags -c $src/test/header_compile.c -o $out/$1-a.o &&
		$2 -x $3 -std=$4 $flags -c $src/test/header_decl.c -o $out/$1-b.o &&
		$2 $out/$1-a.o $out/$1-b.o -o $out/$1 && $out/$1 &&
		$2 -x $3 -std=$4 $flags -DPROCCTL_STATIC -c $src/test/header_compile.c -o $out/$1-s.o"
}

for cc in gcc clang; do
	for std in c11 c17 c2x; do
		build_and_run "$cc-$std" "$cc" c "$std"
	done
done
for cxx in g++ clang++; do
	for std in c++17 c++20; do
		build_and_run "$cxx-$std" "$cxx" c++ "$std"
	done
done

# A system header before the implementation, without _GNU_SOURCE: a clear
# #error, not a pile of implicit declarations.
printf '#include <stdio.h>\n#define PROCCTL_IMPLEMENTATION\n#include "procctl.h"\n' >"$out/misordered.c"
if gcc -std=c11 -I"$src" -c "$out/misordered.c" -o "$out/misordered.o" 2>"$out/misordered.log"; then
	fail=$((fail + 1))
	echo "FAIL: misordered include compiled"
elif grep -q 'include it before any system header' "$out/misordered.log"; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL: misordered include: unexpected error"
	cat "$out/misordered.log"
fi

echo "header_matrix: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
