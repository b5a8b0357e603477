#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Write deploy/prometheus/procctl-rules.yml: the chart's alert and
# recording rules (deploy/helm/procctl-node/files/rules.yaml) rendered with
# the chart's default thresholds, as a plain Prometheus rules file for a
# Prometheus without the operator. The chart test (test/chart/run.sh)
# renders it again and fails when the committed file differs.
# Usage: monitoring.sh [OUT [HELM_ARGS...]]   (OUT: default
# deploy/prometheus/procctl-rules.yml; HELM_ARGS: other thresholds, e.g.
# --set prometheusRule.thresholds.blockedFor=5s, as the end-to-end test
# sets them)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/deploy/prometheus/procctl-rules.yml}
[ $# -eq 0 ] || shift
HELM=${HELM:-$ROOT/test/peers/bin/helm}
[ -x "$HELM" ] || "$ROOT/scripts/install-peers.sh" >/dev/null
tmp=$(mktemp -d "${TMPDIR:-/tmp}/procctl-monitoring.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
HELM_CACHE_HOME=$tmp HELM_CONFIG_HOME=$tmp HELM_DATA_HOME=$tmp \
	"$HELM" template procctl-node "$ROOT/deploy/helm/procctl-node" --set prometheusRule.enabled=true "$@" \
	--show-only templates/prometheusrule.yaml >"$tmp/rule.yaml"
{
	echo "# SPDX-License-Identifier: Apache-2.0"
	echo "# procctl's alert and recording rules, with the chart's default thresholds"
	echo "# (written by scripts/monitoring.sh from deploy/helm/procctl-node/files/rules.yaml:"
	echo "# change that file, not this one). Runbook: docs/alerts.md."
	# The PrometheusRule's spec, one level of indentation less.
	sed -n '/^spec:$/,$p' "$tmp/rule.yaml" | sed '1d; s/^  //'
} >"$OUT"
echo "monitoring: $OUT"
