#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bundle.sh - what run.sh needs on a GPU machine that has none of it: the
# GPU programs, token-agent, procctl-node and procctl from a build made
# here, at the paths run.sh finds them under a build folder, without their
# debug sections, and in lib/ the shared libraries procctl-node and procctl
# load that a bare machine lacks (gRPC, protobuf-c, libmicrohttpd, jansson
# and theirs; not glibc's own or the C++ runtime, nor the CUDA driver or
# CUPTI: the GPU programs use the machine's). The programs need glibc 2.34
# or later; the libraries glibc 2.36 (Debian 12's) or later. About 27 MB.
#
# Usage: bundle.sh BUILD_DIR OUT_DIR   (then, there: run.sh OUT_DIR LOGS)
# For the device tool: bundle.sh build .gpu-bundle (ignored by git), then
# a run carrying .gpu-bundle: sh spike/pcsampling/run.sh .gpu-bundle
# /tmp/pcs; tar czf $OUT/logs.tgz -C /tmp pcs; cp /tmp/pcs/summary.txt $OUT
set -eu
B=${1:?usage: bundle.sh BUILD_DIR OUT_DIR}
O=${2:?usage: bundle.sh BUILD_DIR OUT_DIR}
rm -rf "$O"
mkdir -p "$O/lib"
for f in spike/pcsampling/pcs-sampler examples/pcsamp examples/token-agent clients/procctl gpu/cupti/libprocctl-cupti.so \
	gpu/gpu-busy procctl-node; do
	[ -e "$B/$f" ] || { echo "bundle.sh: $B/$f is not built (the CUDA toolkit and PROCCTL_NODE=ON are needed)" >&2; exit 1; }
	mkdir -p "$O/$(dirname "$f")"
	strip --strip-debug -o "$O/$f" "$B/$f"
done
ldd "$B/procctl-node" "$B/clients/procctl" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
	grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
	while read -r l; do strip --strip-debug -o "$O/lib/$(basename "$l")" "$l"; done
du -sh "$O"
