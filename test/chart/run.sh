#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run.sh - the procctl-node chart (deploy/helm/procctl-node) with a real
# helm: `helm lint --strict` of the default values and of each
# ci/*-values.yaml; each rendering through yamllint, every object
# validated against its Kubernetes schema (validate.mjs), and the config
# the chart renders, with the flags its DaemonSet passes, accepted by
# `procctl-node --check-config`, so the chart
# and the daemon cannot drift apart; the ProcessConfig CRD the file it is
# rendered from and a structural schema (structural.mjs); values of a
# wrong type or an unknown key, a TCP listener without its TLS Secret,
# and ProcessConfigs without the Kubernetes API, refused.
# Usage: test/chart/run.sh PROCCTL_NODE
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NODE_BIN=${1:?usage: run.sh PROCCTL_NODE}
CHART=$ROOT/deploy/helm/procctl-node
PEERS=$ROOT/test/peers
HELM=$PEERS/bin/helm
skip() {
	echo "chart: $*" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
}
command -v node >/dev/null 2>&1 || skip "no node"
command -v yamllint >/dev/null 2>&1 || skip "no yamllint (scripts/install-deps.sh installs it)"
"$ROOT/scripts/install-peers.sh" >/dev/null || skip "the peers could not be installed"
W=$(mktemp -d /tmp/procctl-chart.XXXXXX)
trap 'rm -rf "$W"' EXIT
export HELM_CACHE_HOME=$W/cache HELM_CONFIG_HOME=$W/config HELM_DATA_HOME=$W/data

fail() {
	echo "chart: FAIL: $*" >&2
	exit 1
}

n=0
for values in "" "$CHART"/ci/*-values.yaml; do
	n=$((n + 1))
	name=${values:+$(basename "$values" .yaml)}
	name=${name:-defaults}
	set -- ${values:+-f "$values"}
	echo "## $name"
	"$HELM" lint --strict "$CHART" "$@" || fail "$name: helm lint --strict"
	"$HELM" template procctl-node "$CHART" --namespace procctl "$@" >"$W/$name.yaml" || fail "$name: helm template"
	yamllint -s -c "$ROOT/test/chart/yamllint.yaml" "$W/$name.yaml" || fail "$name: yamllint"
	node "$ROOT/test/chart/validate.mjs" "$PEERS" "$W/$name.yaml" "$W/$name.conf" \
		$([ "$name" = defaults ] && echo --defaults) || fail "$name: an object is not valid"
	# shellcheck disable=SC2046 # one flag a line, as the DaemonSet gives them
	(IFS='
' && set -f && "$NODE_BIN" --check-config --config "$W/$name.conf" $(cat "$W/$name.conf.args")) ||
		fail "$name: procctl-node refuses the config and flags the chart rendered"
done
[ "$n" -ge 6 ] || fail "expected the defaults and five ci/*-values.yaml, got $n"

# A threshold of the values reaches its rule.
grep -A3 'alert: ProcctlResourceBlocked$' "$W/monitors-values.yaml" | grep -q 'for: 2m$' ||
	fail "prometheusRule.thresholds.blockedFor (2m in ci/monitors-values.yaml) is not the rule's for"
grep -A1 'alert: ProcctlNodeMemoryHigh$' "$W/monitors-values.yaml" | grep -q '} > 858993459$' ||
	fail "ProcctlNodeMemoryHigh's threshold is not 0.8 of resources.limits.memory (1Gi in ci/monitors-values.yaml)"
# ... of a limit with a fraction, and of one in bytes from a values file (a float there)
printf 'prometheusRule:\n  enabled: true\nresources:\n  limits:\n    memory: 268435456\n' >"$W/bytes.yaml"
for v in "--set resources.limits.memory=1.5Gi 1288490188" "-f $W/bytes.yaml 214748364"; do
	set -- $v
	"$HELM" template t "$CHART" --set prometheusRule.enabled=true "$1" "$2" --show-only templates/prometheusrule.yaml |
		grep -A1 'alert: ProcctlNodeMemoryHigh$' | grep -q "} > $3\$" || fail "ProcctlNodeMemoryHigh with $1 $2: not > $3"
done

# The plain rules file is the chart's rules with their default thresholds.
HELM=$HELM "$ROOT/scripts/monitoring.sh" "$W/rules.yml" >/dev/null || fail "scripts/monitoring.sh"
cmp -s "$W/rules.yml" "$ROOT/deploy/prometheus/procctl-rules.yml" ||
	fail "deploy/prometheus/procctl-rules.yml is not the chart's rules: run scripts/monitoring.sh"

# What the schema and the templates must refuse, each for its own reason.
refused() {
	what=$1
	why=$2
	shift 2
	if "$HELM" lint --strict "$CHART" "$@" >"$W/out" 2>&1 && "$HELM" template t "$CHART" "$@" >>"$W/out" 2>&1; then
		cat "$W/out"
		fail "accepted: $what ($*)"
	fi
	"$HELM" template t "$CHART" "$@" >>"$W/out" 2>&1 || true
	grep -q -- "$why" "$W/out" || { cat "$W/out"; fail "$what: refused, but not for '$why'"; }
	echo "refused as it should: $what"
}
refused "a memory limit the rules cannot read" "the rules read a number, or one with Ki" \
	--set prometheusRule.enabled=true --set resources.limits.memory=500m
D0='config.desired[0]'
D1='config.desired[1]'
refused "a string for a boolean" "hostPID: Invalid type" --set hostPID=yes
refused "a string for a number" "config.leaseMs: Invalid type" --set config.leaseMs=fast
refused "a typo in a key" "Additional property hostPid" --set hostPid=true
refused "an unknown config key" "Additional property lease " --set config.lease=5000
refused "a lease under the daemon's floor" "config.leaseMs: Must be greater than or equal to 10" --set config.leaseMs=1
refused "an update that can neither surge nor take a pod down" "maxUnavailable and maxSurge cannot both be 0" --set updateStrategy.maxUnavailable=0
refused "a bad consumer name" "config.consumers.0: Does not match pattern" --set 'config.consumers[0]=Echo'
refused "TCP without its TLS Secret" "grpc.tcp.tlsSecretName: the TCP listener needs mTLS" --set grpc.tcp.enabled=true
refused "a desired config with data twice" "Must validate one and only one schema" --set "$D0.name=a" \
	--set "$D0.consumer=echo" --set "$D0.data=x" --set "$D0.dataBase64=eA=="
refused "a desired config with no data" "Must validate one and only one schema" --set "$D0.name=a" --set "$D0.consumer=echo"
refused "a desired config of spaces" "config.desired.0.data: Does not match pattern" --set "$D0.name=a" \
	--set "$D0.consumer=echo" --set "$D0.data=  "
refused "a pod UID that is not one" "config.desired.0.pod: Does not match pattern" --set "$D0.name=a" \
	--set "$D0.consumer=echo" --set "$D0.data=x" --set "$D0.pod=My-Pod"
refused "two desired configs for one selector" "b has the selector of a" --set "$D0.name=a" --set "$D0.consumer=echo" \
	--set "$D0.data=x" --set "$D1.name=b" --set "$D1.consumer=echo" --set "$D1.data=y"
refused "a desired config by namespace without the watch of the API" "namespace and labelSelector need kubernetes.enabled" \
	--set kubernetes.enabled=false --set "$D0.name=a" --set "$D0.consumer=echo" --set "$D0.data=x" --set "$D0.namespace=shop"
refused "a label selector over lines" "config.desired.0.labelSelector: Does not match pattern" --set "$D0.name=a" \
	--set "$D0.consumer=echo" --set "$D0.data=x" --set-string "$D0.labelSelector=app=web
x=y"
refused "an arbiter for a consumer not served" "consumer token is not one of config.consumers" \
	--set 'config.consumers={echo}' --set 'config.arbiters[0].name=gpu' --set 'config.arbiters[0].kind=1' \
	--set 'config.arbiters[0].consumer=token'
refused "two arbiters of one kind" "config.arbiters: kind 1 twice" --set 'config.arbiters[0].name=gpu' \
	--set 'config.arbiters[0].kind=1' --set 'config.arbiters[0].consumer=token' --set 'config.arbiters[1].name=fpga' \
	--set 'config.arbiters[1].kind=1' --set 'config.arbiters[1].consumer=token'
refused "an arbiter without its kind's number" "kind is required" --set 'config.arbiters[0].name=gpu' \
	--set 'config.arbiters[0].consumer=token'
refused "a resource id of 36 hex digits" "resources.0: Does not match pattern" --set 'config.arbiters[0].name=gpu' \
	--set 'config.arbiters[0].kind=1' \
	--set 'config.arbiters[0].consumer=token' --set 'config.arbiters[0].resources={00112233445566778899aabbccddeeff0011}'
refused "an image digest that is not a sha256 one" "image.digest: Does not match pattern" --set image.digest=latest
refused "a probe period of 0" "livenessProbe.periodSeconds: Must be greater than or equal to 1" --set livenessProbe.periodSeconds=0
refused "a monitor scheme that is none" "serviceMonitor.scheme" --set serviceMonitor.scheme=ftp
refused "a rule threshold that is not a duration" "prometheusRule.thresholds.blockedFor: Does not match pattern" \
	--set prometheusRule.thresholds.blockedFor=soon
refused "an extra volume mount without its path" "mountPath is required" --set 'extraVolumeMounts[0].name=x'
refused "an image pull policy that is none" "image.pullPolicy: image.pullPolicy must be one of" --set image.pullPolicy=Sometimes
refused "ProcessConfigs without the watch of the API" "kubernetes.processConfigs.enabled needs kubernetes.enabled" \
	--set kubernetes.enabled=false --set kubernetes.processConfigs.enabled=true
refused "a typo in the ProcessConfigs switch" "Additional property enable " --set kubernetes.processConfigs.enable=true
refused "a string for the ProcessConfigs switch" "kubernetes.processConfigs.enabled: Invalid type" \
	--set-string kubernetes.processConfigs.enabled=true
echo "chart: every check passed"
