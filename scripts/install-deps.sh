#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Install, with apt-get, the Debian packages procctl needs that are missing.
# Idempotent: when everything is present it only checks and exits 0.
# Usage: scripts/install-deps.sh [--check]   (--check: list what is missing, exit 1 if any)
set -eu

# Build and test dependencies (README.md, "Requirements"), each with what
# needs it; the text after '#' is dropped.
PKGS=$(sed 's/#.*//' <<'EOF'
build-essential      # gcc, make
cmake
pkg-config
clang                # the ASan+UBSan, libFuzzer and TSan builds
libclang-rt-dev
libcmocka-dev        # the unit tests
binutils             # readelf (the probe note's test)
abigail-tools        # abidiff: libprocctl-agent.so's ABI against its baseline (test/abi.sh)
spin                 # the arbiter's model (test/model)
libgrpc-dev          # procctl-node and the CLI: gRPC C core
libprotobuf-c-dev    # ... protobuf-c
protobuf-c-compiler
protobuf-compiler    # protoc: the descriptor set reflection serves
openssl              # test certificates (mTLS)
libmicrohttpd-dev    # procctl-node's HTTP endpoint
libjansson-dev       # ... its JSON
libcurl4-openssl-dev # ... its client of the Kubernetes API (kubernetes_api)
prometheus           # promtool checks /metrics and the alert rules; the server runs them
gdb                  # the slow-turn test holds the daemon's event loop at a breakpoint
tmux                 # procctl top, tested in a terminal
curl                 # the demo and the sessions of README.md and docs/ (test/docs.sh)
iproute2             # those sessions' network namespace
unzip                # helm, from its npm package (install-peers.sh)
yamllint             # the chart's renderings
go-md2man            # the manual pages, from docs/*.md
groff-base           # ... checked by the install test
zsh                  # ... as are the shell completions (bash's too)
podman               # make image and the image test: the real image, run as the chart says
runc                 # ... its runtime (crun refuses some cgroup layouts)
netavark             # ... the pod's own network, as a pod has
aardvark-dns
iptables
mmdebstrap           # ... the Debian base, made here (no registry needed)
systemd              # systemd-analyze: procctl-node.service's exposure (the install test)
debhelper            # the Debian packages (scripts/debs.sh: dpkg-buildpackage, dh)
lintian              # ... judged
EOF
)

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

# npm installs the test-only peers (scripts/install-peers.sh); Debian's when
# the machine has none of its own.
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"

if [ -z "$missing" ]; then
	exit 0
fi
if [ "${1:-}" = "--check" ]; then
	echo "missing:$missing"
	exit 1
fi

echo "install-deps: installing:$missing" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "install-deps: need root (or sudo) to install:$missing" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
