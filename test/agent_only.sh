#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# agent_only.sh - the PROCCTL_NODE=OFF build (what a machine with nothing
# but libc and the kernel builds: procctl.h, libprocctl-agent, the example
# clients and agents, and the GPU programs where the CUDA toolkit is):
# configured with pkg-config made unfindable, so nothing of the daemon's
# (gRPC, protobuf-c, libmicrohttpd, jansson, cmocka) can be asked for, and
# every program it builds checked to load none of those libraries.
# Usage: agent_only.sh SOURCE_DIR
set -eu
src=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/procctl-agent-only.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cmake -S "$src" -B "$dir" -DPROCCTL_NODE=OFF -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=TRUE >"$dir/configure.log" 2>&1 ||
	{ cat "$dir/configure.log" >&2; echo "agent_only: the PROCCTL_NODE=OFF configure failed" >&2; exit 1; }
cmake --build "$dir" -j2 >"$dir/build.log" 2>&1 || { tail -40 "$dir/build.log" >&2; exit 1; }
built=0
for want in echo-client echo-agent token-client token-agent libprocctl-agent.a; do
	[ -n "$(find "$dir" -name "$want" -type f)" ] || { echo "agent_only: $want not built" >&2; exit 1; }
done
for f in $(find "$dir" -type f -perm -u+x ! -name '*.so*' ! -name '*.sh'); do
	readelf -h "$f" >/dev/null 2>&1 || continue
	built=$((built + 1))
	if readelf -d "$f" | grep -E 'NEEDED.*(grpc|gpr|protobuf|microhttpd|jansson|cmocka)'; then
		echo "agent_only: $f loads a library of the daemon's" >&2
		exit 1
	fi
done
for f in procctl-node procctl; do
	[ -z "$(find "$dir" -name "$f" -type f)" ] || { echo "agent_only: $f was built with PROCCTL_NODE=OFF" >&2; exit 1; }
done
echo "agent_only: $built programs, none of them loading the daemon's libraries"
grep -q 'GPU programs' "$dir/configure.log" && grep 'procctl: ' "$dir/configure.log"
exit 0
