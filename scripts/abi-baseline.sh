#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Write core/libprocctl-agent.abi, the ABI baseline test/abi.sh compares
# libprocctl-agent.so with (abidw, Debian's abigail-tools): the public
# headers' types only, without locations, the build's paths made relative.
# Run it only with the SONAME bumped in the same change (an incompatible
# change), or for a compatible one (functions added, in their release's
# version node of core/libprocctl-agent.map) that abi.sh reports. It
# records each function's node: abi.sh then keeps them there.
# Usage: abi-baseline.sh [BUILD_DIR]   (default build, a gcc build)
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
lib=$build/libprocctl-agent.so.1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/procctl-abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp "$repo/procctl.h" "$repo/include/procctl_agent.h" "$repo/include/procctl_arbiter.h" "$tmp/"
abidw --headers-dir "$tmp" --drop-private-types --no-corpus-path --no-show-locs --out-file "$tmp/abi" "$lib"
# (abidiff reads nothing before <abi-corpus>: no SPDX line, as in a .json.)
sed -e "s|path='$repo/|path='|g" -e "s|comp-dir-path='$build'|comp-dir-path='build'|g" "$tmp/abi" \
	>"$repo/core/libprocctl-agent.abi"
echo "abi-baseline: core/libprocctl-agent.abi from $lib"
