#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The procctl API's checks, with the buf that scripts/install-peers.sh
# installs from npm:
# - buf lint (STANDARD and COMMENTS rules, proto/buf.yaml), and a clean build;
# - buf breaking (FILE rules) against proto/procctl-v1.image.json, the
#   API as released (buf build --exclude-source-info): a change that
#   breaks a client of procctl.v1 fails here. An intended one means a new
#   package (procctl.v2), not a new baseline;
# - that the check can fail: a copy of the API with an RPC removed and a
#   field's type changed must be refused, for those two reasons.
# Usage: proto_lint.sh REPO
set -eu
repo=$1
buf=$repo/test/peers/node_modules/.bin/buf
if [ ! -x "$buf" ]; then
	echo "proto_lint: no $buf: run scripts/install-peers.sh (make test does)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77 # skipped
fi
baseline=$repo/proto/procctl-v1.image.json
cd "$repo/proto"
"$buf" lint
"$buf" build -o /dev/null
"$buf" breaking --against "$baseline"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/procctl-proto.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -r "$repo/proto/." "$tmp/"
sed -i '/^  rpc GetProcess(/d; s/^  int32 pid = 1;/  int64 pid = 1;/' "$tmp/procctl/v1/node.proto"
if (cd "$tmp" && "$buf" breaking --against "$baseline") >"$tmp/out" 2>&1; then
	echo "proto_lint: buf breaking passed an API without GetProcess" >&2
	exit 1
fi
grep -q 'RPC "GetProcess" on service "NodeService" was deleted' "$tmp/out" || { cat "$tmp/out" >&2; exit 1; }
grep -q 'changed type from "int32" to "int64"' "$tmp/out" || { cat "$tmp/out" >&2; exit 1; }
echo "proto_lint: buf $("$buf" --version): lint (STANDARD, COMMENTS), build and breaking (FILE, against $(basename "$baseline")) clean; an incompatible copy refused"
