#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make install as a packager runs it: into a DESTDIR, then used from there.
# Every file where it belongs; the programs run; the manual pages are roff
# that groff renders without a warning, with every flag of --help; the
# bash and zsh completions complete (complete.sh); nothing installed names the source
# or build tree; procctl-node.service and its config as the unit runs them;
# an agent (agent.c: a real region, attach, publish, ack)
# built against the installed package with pkg-config and with CMake's
# find_package(procctl), and the seed's process-side snippet with
# pkg-config's procctl (the header alone), each built and run; and
# libprocctl-cupti where it was built.
# Usage: run.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
tmp=$(mktemp -d /tmp/procctl-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "install: FAILED: $*" >&2
	exit 1
}

DESTDIR=$tmp/root cmake --install "$build" --prefix /usr/local >"$tmp/install.log" || fail "cmake --install: $(cat "$tmp/install.log")"
p=$tmp/root/usr/local
for f in bin/procctl sbin/procctl-node include/procctl.h include/procctl_agent.h include/procctl_arbiter.h \
	lib/libprocctl-agent.a lib/libprocctl-agent.so.1 lib/pkgconfig/procctl.pc lib/pkgconfig/procctl-agent.pc \
	lib/cmake/procctl/procctlConfig.cmake lib/cmake/procctl/procctlConfigVersion.cmake \
	lib/cmake/procctl/procctlTargets.cmake share/man/man1/procctl.1 share/man/man8/procctl-node.8 \
	share/doc/procctl/procctl-node.conf share/bash-completion/completions/procctl \
	share/bash-completion/completions/procctl-node share/zsh/site-functions/_procctl \
	share/zsh/site-functions/_procctl-node; do
	[ -f "$p/$f" ] || fail "$f was not installed"
done
! grep -rlF -e "$src" -e "$build" "$p/lib/pkgconfig" "$p/lib/cmake" || fail "an installed file names the source or build tree"
# libprocctl-cupti, where the CUDA toolkit was found: InitializeInjection
# its only export.
if [ -f "$build/gpu/cupti/libprocctl-cupti.so" ]; then
	[ -f "$p/lib/procctl/libprocctl-cupti.so" ] || fail "lib/procctl/libprocctl-cupti.so was not installed"
	[ "$(nm -D --defined-only "$p/lib/procctl/libprocctl-cupti.so" | awk '{ print $3 }')" = InitializeInjection ] ||
		fail "libprocctl-cupti.so exports more than InitializeInjection"
fi

# The programs, from where they were installed.
"$p/bin/procctl" version | grep -q '^procctl [0-9]' || fail "procctl version"
"$p/sbin/procctl-node" --version | grep -q '^procctl-node [0-9]' || fail "procctl-node --version"
"$p/sbin/procctl-node" --check-config --config "$p/share/doc/procctl/procctl-node.conf" >/dev/null ||
	fail "the installed example config"

# procctl-node.service: the installed programs and config, the chart's
# capabilities and no others, Type=notify with a watchdog; its exposure
# as systemd-analyze scores it (0 best, 10 worst) at most 2.5.
unit=$tmp/root/usr/local/lib/systemd/system/procctl-node.service
conf=$tmp/root/usr/local/etc/procctl/procctl-node.conf
[ -f "$unit" ] || fail "lib/systemd/system/procctl-node.service was not installed"
key() { sed -n "s/^$1=//p" "$unit"; }
[ "$(key ExecStart)" = "/usr/local/sbin/procctl-node --config /usr/local/etc/procctl/procctl-node.conf" ] ||
	fail "the unit's ExecStart: $(key ExecStart)"
[ "$(key Type)" = notify ] && [ "$(key NotifyAccess)" = main ] && [ -n "$(key WatchdogSec)" ] ||
	fail "the unit is not Type=notify with a watchdog"
[ "$(key ExecReload)" = '/bin/kill -HUP $MAINPID' ] || fail "the unit's ExecReload: $(key ExecReload)"
chart=$(sed -n 's/.*concat (list \(.*\)).*/\1/p' "$src/deploy/helm/procctl-node/templates/daemonset.yaml" | tr -d '"' |
	tr ' ' '\n' | sed '/^$/d; s/^/CAP_/' | sort | tr '\n' ' ')
caps=$(key CapabilityBoundingSet | tr ' ' '\n' | sort | tr '\n' ' ')
[ "$(echo "$chart" | wc -w)" -eq 5 ] && [ "$caps" = "$chart" ] || fail "the unit's capabilities ($caps), not the chart's ($chart)"
[ -z "$(key AmbientCapabilities)" ] || fail "ambient capabilities: $(key AmbientCapabilities)"
if command -v systemd-analyze >/dev/null 2>&1; then
	systemd-analyze security --offline=yes --no-pager "$unit" >"$tmp/security" 2>&1 || true
	score=$(sed -n 's/.*Overall exposure level for procctl-node.service: \([0-9.]*\).*/\1/p' "$tmp/security")
	[ -n "$score" ] || fail "systemd-analyze security: $(cat "$tmp/security")"
	awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }' || fail "the unit's exposure is $score, over 2.5: $(grep '✗' "$tmp/security")"
	echo "install: procctl-node.service exposure $score (systemd-analyze security)"
elif [ "${CI:-}" = true ]; then
	fail "no systemd-analyze (scripts/install-deps.sh installs systemd)"
fi
# Its config: the example with HTTP off (the sandbox has Unix sockets
# only), valid; an operator's edit survives another make install.
[ -f "$conf" ] || fail "etc/procctl/procctl-node.conf was not installed"
grep -qx 'http_listen =' "$conf" || fail "the installed config does not turn HTTP off"
"$p/sbin/procctl-node" --check-config --config "$conf" >/dev/null || fail "the installed config"
echo 'log_level = debug' >>"$conf"
DESTDIR=$tmp/root cmake --install "$build" --prefix /usr/local >"$tmp/install.log" || fail "cmake --install again"
grep -qx 'log_level = debug' "$conf" || fail "a second make install replaced the operator's config"
grep -q "Kept: $conf" "$tmp/install.log" || fail "the second make install did not say it kept the config"

# The manual pages: roff with a title line, rendered without warnings, as
# a reader sees them (groff, as man runs it; wide and unhyphenated, so a
# flag is never split) with NAME, SYNOPSIS and every flag the program's
# --help names (each command's too); no text line the formatter would take
# for a request and drop.
flags() { # the --flags in a program's help
	grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}
"$p/bin/procctl" --help >"$tmp/help.procctl"
for c in $("$p/bin/procctl" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p'); do
	"$p/bin/procctl" "$c" --help >>"$tmp/help.procctl" || fail "procctl $c --help"
done
"$p/sbin/procctl-node" --help >"$tmp/help.procctl-node"
for page in man1/procctl.1 man8/procctl-node.8; do
	prog=$(basename "${page%.*}")
	head -3 "$p/share/man/$page" | grep -q '^\.TH PROCCTL' || fail "$page: no .TH line"
	groff -man -Tutf8 -ww -z "$p/share/man/$page" 2>"$tmp/groff" || fail "$page: groff failed"
	[ ! -s "$tmp/groff" ] || fail "$page: $(cat "$tmp/groff")"
	! grep -nE "^(\.[^A-Za-z\\]|')" "$p/share/man/$page" || fail "$page: a text line starting with . or ' (a request to roff)"
	groff -man -Tascii -P-cbou -rLL=250n -rHY=0 "$p/share/man/$page" >"$tmp/page" 2>/dev/null
	[ "$(wc -l <"$tmp/page")" -gt 40 ] || fail "$page renders as $(wc -l <"$tmp/page") lines"
	for sec in NAME SYNOPSIS DESCRIPTION OPTIONS; do
		grep -q "^$sec" "$tmp/page" || fail "$page has no $sec section"
	done
	grep -A1 '^NAME' "$tmp/page" | grep -q "$prog - " || fail "$page: NAME does not name $prog"
	for f in $(flags <"$tmp/help.$prog"); do
		grep -qe "$f\b" "$tmp/page" || fail "$page does not document $f (in $prog's --help)"
	done
done

# The shell completions, as bash and zsh use them.
sh "$src/test/install/complete.sh" "$p" || fail "the shell completions"

# pkg-config: the agent, and the header alone.
export PKG_CONFIG_PATH="$p/lib/pkgconfig"
pkg-config --exists --print-errors 'procctl-agent >= 1.0' || fail "pkg-config procctl-agent"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags procctl-agent) -o "$tmp/agent-pc" "$src/test/install/agent.c" \
	$(pkg-config --libs procctl-agent) || fail "building an agent with pkg-config"
readelf -d "$tmp/agent-pc" | grep -q 'NEEDED.*\[libprocctl-agent\.so\.1\]' || fail "pkg-config's agent is not linked to libprocctl-agent.so.1"
LD_LIBRARY_PATH="$p/lib" "$tmp/agent-pc" "$tmp/locks-pc" || fail "the agent built with pkg-config"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags procctl-agent) -o "$tmp/agent-static" "$src/test/install/agent.c" \
	$(pkg-config --libs-only-L procctl-agent) -l:libprocctl-agent.a -pthread || fail "building an agent with the static library"
"$tmp/agent-static" "$tmp/locks-static" || fail "the agent linked statically"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags procctl) -o "$tmp/seed" "$src/test/seed/c_side.c" ||
	fail "the seed's C side with pkg-config procctl"
"$tmp/seed" >/dev/null || fail "the seed's C side"

# CMake: find_package(procctl) in a project of its own.
cmake -S "$src/test/install" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" \
	>"$tmp/cmake.log" 2>&1 || fail "find_package(procctl): $(cat "$tmp/cmake.log")"
cmake --build "$tmp/cmake" >"$tmp/cmake.log" 2>&1 || fail "building with CMake: $(cat "$tmp/cmake.log")"
"$tmp/cmake/agent" "$tmp/locks-cmake" || fail "the agent built with CMake"
echo "install: OK"
