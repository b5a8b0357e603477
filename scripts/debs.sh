#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Debian packages (debian/), built from this tree with
# dpkg-buildpackage in a copy of it (the files git tracks or would: no
# build outputs), then judged by lintian: an error, or a warning that
# debian/*.lintian-overrides does not override with its reason, fails.
# Leaves in OUTDIR: procctl-node, procctl, libprocctl-agent1,
# libprocctl-agent-dev (and their -dbgsym), the .changes, lintian.txt.
# Usage: scripts/debs.sh OUTDIR   (installs debhelper and lintian first)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
out=$1
"$ROOT/scripts/install-deps.sh"
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/procctl" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir "$out/procctl"
(cd "$ROOT" && git ls-files -co --exclude-standard -z) >"$out/files"
(cd "$ROOT" && tar --null -T "$out/files" -cf "$out/tree.tar")
tar -xf "$out/tree.tar" -C "$out/procctl"
rm "$out/files" "$out/tree.tar"
version=$(sed -n 's/^project(procctl VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
deb=$(sed -n '1s/^procctl (\([^)]*\)).*/\1/p' "$ROOT/debian/changelog")
[ "$deb" = "$version" ] || { echo "debs: debian/changelog is at $deb, CMakeLists.txt at $version" >&2; exit 1; }
echo "debs: dpkg-buildpackage (build log: $out/build.log)" >&2
(cd "$out/procctl" && dpkg-buildpackage -us -uc -b -j"$(nproc)") >"$out/build.log" 2>&1 ||
	{ tail -40 "$out/build.log" >&2; exit 1; }
rm -rf "$out/procctl"
# Each tag at warning or above fails unless overridden (lintian exits 1);
# info and pedantic tags are listed for the reader. Above 1: lintian
# itself failed (no .changes, a crash), which fails too.
changes=$out/procctl_${version}_$(dpkg --print-architecture).changes
[ -f "$changes" ] || { echo "debs: no $changes" >&2; exit 1; }
rc=0
lintian --info --pedantic --display-level '>=pedantic' --show-overrides --fail-on error,warning "$changes" \
	>"$out/lintian.txt" 2>&1 || rc=$?
if [ "$rc" -gt 1 ]; then
	tail -20 "$out/lintian.txt" >&2
	echo "debs: lintian failed to run (exit $rc)" >&2
	exit 1
fi
if [ "$rc" = 1 ] || grep -E '^[EW]: ' "$out/lintian.txt" >&2; then
	echo "debs: lintian: the errors and warnings above (all of it: $out/lintian.txt)" >&2
	exit 1
fi
ls "$out"/*.deb
