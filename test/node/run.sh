#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Run one test/node/*.test.js file under node's test runner, with the
# peers that scripts/install-peers.sh installs from npm (@grpc/grpc-js,
# @grpc/proto-loader, buf). The binaries' paths come from ctest.
#
# Each file runs in pid and mount namespaces of its own (as root, through
# ../isolate.sh): its daemons see only its own processes, and whatever it
# started dies with it, even when a test fails or times out. Its scratch directories live
# under a TMPDIR of its own, removed at the end. A test that hangs fails
# at --test-timeout (the harness then kills what is left): 10 s before
# isolate.sh's PROCCTL_TEST_TIMEOUT for the file (ctest's measured timeout
# less 15 s), or PROCCTL_TEST_TIMEOUT_MS (make soak sets it), else 300 s.
# Usage: run.sh REPO FILE
set -eu
repo=$1
peers=$repo/test/peers/node_modules
if ! command -v node >/dev/null 2>&1 || [ ! -d "$peers/@grpc/grpc-js" ]; then
	echo "node tests: no node, or no $peers/@grpc/grpc-js: run scripts/install-peers.sh (make test does)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77 # skipped
fi
export NODE_PATH="$peers" PROTO_DIR="$repo/proto" BUF="$peers/.bin/buf"
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/procctl-nodetest.XXXXXX")
chmod 755 "$TMPDIR" # the tests that run a daemon as nobody make their directories 0777
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
ms=300000
[ -z "${PROCCTL_TEST_TIMEOUT:-}" ] || ms=$(((PROCCTL_TEST_TIMEOUT - 10) * 1000))
set -- node --test --test-reporter=spec --test-timeout="${PROCCTL_TEST_TIMEOUT_MS:-$ms}" "$2"
status=0
sh "$repo/test/isolate.sh" "$@" || status=$?
exit $status
