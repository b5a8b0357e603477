#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The image test: make image (scripts/image.sh), then test/image/*.test.js
# under node's test runner, with the peers scripts/install-peers.sh
# installs. Not in pid and mount namespaces of its own as the node tests
# are: the pod has the host's pid namespace (hostPID), and its clients are
# the host's processes; unique consumer names, host paths and container
# names keep it apart from anything else running. Skipped (77) without
# root or podman, failed under CI=true.
# Usage: run.sh REPO
set -eu
repo=$1
skip() {
	echo "image: $*" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (podman runs the pod as the kubelet would)"
command -v podman >/dev/null 2>&1 || skip "no podman (scripts/install-deps.sh installs it)"
command -v node >/dev/null 2>&1 || skip "no node"
"$repo/scripts/install-peers.sh" >/dev/null || skip "the peers could not be installed"
version=$(sed -n 's/^project(procctl VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
export PROCCTL_IMAGE="localhost/procctl-node:$version"
IMAGE=$PROCCTL_IMAGE "$repo/scripts/image.sh"
peers=$repo/test/peers/node_modules
export NODE_PATH="$peers" PROTO_DIR="$repo/proto" BUF="$peers/.bin/buf"
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/procctl-imagetest.XXXXXX")
chmod 755 "$TMPDIR" # nobody's clients run from under it
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
node --test --test-reporter=spec --test-concurrency=1 --test-timeout=600000 "$repo"/test/image/*.test.js
