#!/bin/sh
# Run one test/node/*.test.js file under node's test runner, with the
# peers that scripts/install-peers.sh installs from npm (@grpc/grpc-js,
# @grpc/proto-loader, buf). The binaries' paths come from ctest.
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
exec node --test --test-reporter=spec "$2"
