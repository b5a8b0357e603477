#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# rules.sh - procctl's Prometheus rules (deploy/prometheus/procctl-rules.yml)
# with Debian's promtool: they load (check rules), and each alert fires on
# the series of procctl-rules.test.yml that should fire it, with its
# annotations as written there, and not on their near misses (test rules).
# Usage: rules.sh SOURCE_DIR
set -eu
dir=$1/deploy/prometheus
if ! command -v promtool >/dev/null 2>&1; then
	echo "rules: no promtool (Debian's prometheus: scripts/install-deps.sh installs it)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
promtool check rules "$dir/procctl-rules.yml"
cd "$dir"
promtool test rules procctl-rules.test.yml
