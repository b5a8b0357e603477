#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# buf lint (STANDARD rules, proto/buf.yaml) of the procctl API, with the
# buf that scripts/install-peers.sh installs from npm.
# Usage: proto_lint.sh REPO
set -eu
repo=$1
buf=$repo/test/peers/node_modules/.bin/buf
if [ ! -x "$buf" ]; then
	echo "proto_lint: no $buf: run scripts/install-peers.sh (make test does)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77 # skipped
fi
cd "$repo/proto"
"$buf" lint
"$buf" build -o /dev/null
echo "proto_lint: buf $("$buf" --version): lint (STANDARD) and build clean"
