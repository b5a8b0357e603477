#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# voice.sh - where the proto's comments, docs/api.md, procctl(1) and the
# CLI's help state the same rule, they state it alike: for each rule
# below, what each place says (a precedence chain, or the status code a
# case gets) is found in every place that states it, and is the same in
# all. A rule reworded in one place and not the other fails here.
# Usage: voice.sh SOURCE_DIR PROCCTL
set -eu
src=$1
cli=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/procctl-voice.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Each place as one line of words: comment markers and line breaks gone.
flat() {
	sed -E 's|^[[:space:]]*//+||' | tr '\n' ' ' | tr -s ' '
}
flat <"$src/proto/procctl/v1/node.proto" >"$tmp/proto"
flat <"$src/docs/api.md" >"$tmp/api"
flat <"$src/docs/procctl.1.md" >"$tmp/man"
"$cli" desired --help | flat >"$tmp/help"
fail=0
# rule NAME PLACE 'EXTENDED REGEX' [PLACE 'REGEX']...: what the regex's
# first group matches in its place (the last place it matches).
rule() {
	name=$1
	shift
	first=""
	bad=0
	while [ $# -gt 0 ]; do
		said=$(sed -nE "s/.*$2.*/\1/p" "$tmp/$1")
		if [ -z "$said" ]; then
			echo "voice: $name: $1 does not say it (/$2/)"
			bad=1
		elif [ -z "$first" ]; then
			first=$said
			where=$1
		elif [ "$said" != "$first" ]; then
			echo "voice: $name: $where says '$first', $1 says '$said'"
			bad=1
		fi
		shift 2
	done
	if [ "$bad" = 1 ]; then
		fail=1
	else
		echo "voice: $name: '$first' wherever it is said"
	fi
}
rule precedence \
	proto '(pid over container over pod( over [a-z ]+)? over consumer)' \
	api '(pid over container over pod( over [a-z ]+)? over consumer)' \
	man '(pid over container over pod( over [a-z ]+)? over consumer)' \
	help '(pid over container over pod( over [a-z ]+)? over consumer)'
rule watch_by_pod \
	proto 'Not for WatchEvents \(([A-Z_]+)' \
	api 'WatchEvents refuses them \(([A-Z_]+)\)'
rule pod_without_kubernetes \
	proto 'kubernetes_api \(([A-Z_]+) without\)' \
	api 'without it they are ([A-Z_]+)'
rule container_prefix_of_several \
	proto ' ([A-Z_]+) when it begins the IDs of several' \
	api ' ([A-Z_]+) when it begins several'
rule waitack_unpublished \
	proto 'or one above the last, is ([A-Z_]+)' \
	api 'a Publish or Clear returned; another is ([A-Z_]+)'
exit $fail
