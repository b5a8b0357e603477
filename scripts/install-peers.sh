#!/bin/sh
# Install the test-only peers from the npm registry (test/peers/package.json,
# exact versions, locked by test/peers/package-lock.json) into
# test/peers/node_modules. Idempotent: does nothing when they are there.
# Usage: scripts/install-peers.sh
set -eu
cd "$(dirname "$0")/../test/peers"
if [ -x node_modules/.bin/buf ] && [ -d node_modules/@grpc/grpc-js ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	echo "install-peers: npm not found (scripts/install-deps.sh installs Debian's nodejs and npm)" >&2
	exit 1
fi
echo "install-peers: npm ci in test/peers" >&2
npm ci --no-audit --no-fund --loglevel=error
