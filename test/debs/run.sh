#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Debian packages on a host run by systemd (issue 40), for real: built
# from this tree and judged by lintian (scripts/debs.sh), then installed
# with apt-get (dependencies from the archive) in a podman container whose
# PID 1 is systemd 252 (a bookworm minbase with systemd, made here by
# scripts/debian-base.sh), with the capabilities a host's root has for
# the daemon and its sandbox. There, as an operator would:
#   systemctl start reaches active (running) through READY=1; an echo
#   client is attached; `procctl publish --wait` by a member of the group
#   procctl is APPLIED, by another user refused; systemctl reload reads
#   the config again (SIGHUP); systemctl restart and an upgrade: the new
#   daemon takes over with no config flap in the client; a SIGSTOPped daemon is
#   restarted by the watchdog; systemctl stop hands off within the stop
#   timeout; systemd-analyze security scores at most 2.5; apt-get remove
#   keeps the config; apt-get purge removes what the packages added. Then docs/hosts.md's commands, run
#   there as its reader runs them.
# Every wait is bounded. Skipped (77) without root or podman, failed under
# CI=true.
# Usage: run.sh REPO ECHO_CLIENT
set -eu
repo=$1
echo_client=$2
skip() {
	echo "debs: $*" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (podman runs systemd as a host's PID 1)"
command -v podman >/dev/null 2>&1 || skip "no podman (scripts/install-deps.sh installs it)"
PODMAN="podman --runtime runc"
BASE=localhost/procctl-systemd:bookworm
tmp=$(mktemp -d /tmp/procctl-debs.XXXXXX)
name=procctl-debs-$$
# Whatever ends it (ctest's timeout is a SIGTERM), the container goes.
trap '$PODMAN rm -f -t 0 "$name" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
fail() {
	echo "debs: FAILED: $*" >&2
	$PODMAN exec "$name" journalctl -u procctl-node --no-pager -n 40 >&2 2>/dev/null || true
	exit 1
}
say() {
	echo "debs: $*"
}
# In the container, bounded.
inside() {
	timeout 180 $PODMAN exec "$name" "$@"
}
# Wait (at most $1 s) until the command after it succeeds in the container.
until_in() {
	n=$(($1 * 5))
	shift
	while ! inside "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.2
	done
}
prop() { # the unit's property
	inside systemctl show procctl-node -p "$1" --value
}

"$repo/scripts/debs.sh" "$tmp/debs" >/dev/null || fail "the packages (scripts/debs.sh)"
say "built, lintian clean: $(cd "$tmp/debs" && ls ./*.deb | grep -v dbgsym | tr '\n' ' ')"
"$repo/scripts/debian-base.sh" "$BASE" --include systemd,systemd-sysv,dbus || fail "the base image"

# A host's root: the chart's five capabilities for the daemon, SYS_ADMIN
# and NET_ADMIN for systemd's sandboxing (namespaces), no seccomp profile
# of the runtime's (the unit brings its own).
$PODMAN run -d --name "$name" --systemd=always --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
	--cap-add SYS_PTRACE,PERFMON,CHECKPOINT_RESTORE,DAC_READ_SEARCH,IPC_LOCK,SYS_ADMIN,NET_ADMIN \
	--security-opt seccomp=unconfined "$BASE" /sbin/init >/dev/null || fail "podman run"
until_in 60 sh -c 'case $(systemctl is-system-running) in running|degraded) exit 0;; esac; exit 1' ||
	fail "systemd did not come up: $(inside systemctl is-system-running)"
say "systemd $(inside systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') is PID 1: $(inside systemctl is-system-running)"

inside mkdir /tmp/debs
for f in "$tmp"/debs/*.deb; do
	case $f in *dbgsym*) continue ;; esac
	$PODMAN cp "$f" "$name:/tmp/debs/" || fail "podman cp $f"
done
$PODMAN cp "$echo_client" "$name:/usr/local/bin/echo-client" || fail "podman cp echo-client"
inside sh -c 'apt-get update -q >/tmp/apt.log 2>&1 && cd /tmp/debs &&
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./*.deb >>/tmp/apt.log 2>&1' ||
	fail "apt-get install ./*.deb: $(inside tail -20 /tmp/apt.log)"
say "apt-get install ./*.deb: $(inside dpkg-query -W -f '${Package} ' procctl-node procctl libprocctl-agent1 libprocctl-agent-dev)"
inside systemd-analyze verify --man=no /lib/systemd/system/procctl-node.service || fail "systemd-analyze verify"
[ "$(inside systemctl is-enabled procctl-node)" = enabled ] || fail "the package did not enable procctl-node.service"
inside getent group procctl >/dev/null || fail "postinst made no group procctl"

# An echo client, started while no daemon runs: the start's first scan
# finds it (without SYS_ADMIN, which the unit does not grant, uprobes are
# refused on Linux 6.16+ and new processes wait for a rescan).
inside systemctl stop procctl-node
inside systemd-run --quiet --unit=echo-client /usr/local/bin/echo-client --consumer echo || fail "systemd-run echo-client"
until_in 10 sh -c 'journalctl -u echo-client -o cat | grep -q "^event=started"' || fail "the echo client did not start"
echo_pid=$(inside systemctl show echo-client -p MainPID --value)

# start: active (running) once READY=1 came (Type=notify: systemctl start
# returns then); the status it sent; the socket, group procctl, 0660.
inside systemctl start procctl-node || fail "systemctl start"
state="$(prop ActiveState)/$(prop SubState) $(prop Type) status=$(prop StatusText)"
[ "$state" = "active/running notify status=serving" ] || fail "after systemctl start: $state"
[ "$(inside stat -c '%a %U %G' /run/procctl/node.sock)" = "660 root procctl" ] ||
	fail "the socket: $(inside stat -c '%a %U %G' /run/procctl/node.sock)"
say "systemctl start: $state, /run/procctl/node.sock 0660 root:procctl"
# Its descriptors: the soft limit raised to the hard one (setrlimit is
# prlimit64, which the unit's system call filter lets through).
limits=$(inside awk '/^Max open files/ { print $4 " " $5 }' "/proc/$(prop MainPID)/limits")
[ "${limits% *}" = "${limits#* }" ] && [ "${limits% *}" -gt "$(prop LimitNOFILESoft)" ] ||
	fail "the daemon's descriptors: soft and hard limits $limits, the unit's soft $(prop LimitNOFILESoft)"
say "its descriptors: $limits (soft raised to hard; the unit gives it $(prop LimitNOFILESoft) soft)"
until_in 20 sh -c "procctl ps --consumer echo | grep -qw $echo_pid" || fail "the echo client ($echo_pid) was not attached"
say "the echo client ($echo_pid) is attached"

# A member of procctl publishes and waits: APPLIED. Another user: refused.
inside useradd -M -G procctl alice
inside useradd -M bob
out=$(inside runuser -u alice -- procctl publish --consumer echo --data level=debug --wait 2>&1) ||
	fail "alice (group procctl): procctl publish --wait: $out"
echo "$out" | grep -q APPLIED || fail "alice's publish: not APPLIED: $out"
out=$(inside runuser -u bob -- procctl publish --consumer echo --data level=bob --wait 2>&1) &&
	fail "bob (not in procctl) published: $out"
echo "$out" | grep -q 'permission denied' || fail "bob's refusal does not say why: $out"
inside sh -c 'journalctl -u echo-client -o cat | grep -q "event=applied .*payload=level=debug"' || fail "the client did not apply alice's config"
inside sh -c 'journalctl -u echo-client -o cat | grep -q "payload=level=bob"' && fail "the client applied bob's config"
say "procctl publish --wait: alice (group procctl) APPLIED; bob refused ($(echo "$out" | head -1))"

# reload: SIGHUP, the config file read again (as it was: unchanged),
# the same daemon.
pid=$(prop MainPID)
inside systemctl reload procctl-node || fail "systemctl reload"
until_in 10 sh -c "journalctl _PID=$pid -o cat | grep -q 'event=config_unchanged file=/etc/procctl/procctl-node.conf'" ||
	fail "systemctl reload: the config was not read again"
inside sh -c "journalctl _PID=$pid -o cat | grep -q 'event=reload_asked .*signal=SIGHUP'" ||
	fail "systemctl reload: no SIGHUP"
[ "$(prop MainPID)" = "$pid" ] || fail "systemctl reload restarted the daemon"
say "systemctl reload: SIGHUP, the file read again (config_unchanged), the same daemon ($pid)"

# restart: the new daemon takes over; the client keeps its config
# throughout: nothing applied, cleared or expired after the restart.
# took_over OLD_PID WHAT: after WHAT (done), a new daemon serves the
# client, OLD_PID handed off, and the client saw no change since line
# $seen of its journal. The new pid in $new.
took_over() {
	new=$(prop MainPID)
	[ "$new" != "$1" ] || fail "$2: the same daemon"
	until_in 20 sh -c "procctl ps --consumer echo | grep -qw $echo_pid" || fail "$2: the new daemon did not attach the client"
	inside sh -c "journalctl _PID=$1 -o cat | grep -q 'event=handed_off mode=hand-off'" || fail "$2: the old daemon did not hand off"
	flap=$(inside sh -c "journalctl -u echo-client -o cat | tail -n +$((seen + 1)) | grep -E 'event=(applied|cleared|lease|rejected)'" || true)
	[ -z "$flap" ] || fail "$2: the client's config flapped: $flap"
	say "$2: $1 handed off, $new took over, the client's config unchanged"
}
inside runuser -u alice -- procctl desired set --consumer echo --data level=kept --wait >/dev/null || fail "procctl desired set"
until_in 10 sh -c 'journalctl -u echo-client -o cat | grep -q "payload=level=kept"' || fail "the desired config was not applied"
seen=$(inside sh -c 'journalctl -u echo-client -o cat | wc -l')
inside systemctl restart procctl-node || fail "systemctl restart"
took_over "$pid" "systemctl restart"
# An upgrade is the same: the package's postinst restarts the service (a
# reinstall of this version stands in for a newer one).
inside sh -c 'cd /tmp/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall ./procctl-node_*.deb >/tmp/re.log 2>&1' ||
	fail "apt-get install --reinstall: $(inside tail -20 /tmp/re.log)"
took_over "$new" "an upgrade (apt-get install --reinstall)"

# The watchdog: a stopped daemon sends no WATCHDOG=1; systemd kills it
# (SIGABRT, then SIGKILL after TimeoutAbortSec) and starts another.
restarts=$(prop NRestarts)
inside kill -STOP "$new"
until_in 60 sh -c "[ \$(systemctl show procctl-node -p NRestarts --value) -gt $restarts ] &&
	[ \$(systemctl show procctl-node -p ActiveState --value) = active ]" || fail "the stopped daemon was not restarted"
inside sh -c "journalctl -u procctl-node -o cat | grep -q 'Watchdog timeout'" || fail "no watchdog timeout in the journal"
after=$(prop MainPID)
say "the watchdog: $new (SIGSTOPped) killed, $after started (NRestarts $(prop NRestarts))"

# stop: a hand-off, done before TimeoutStopSec.
t0=$(date +%s%N)
inside systemctl stop procctl-node || fail "systemctl stop"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$(prop Result)" = success ] && [ "$(prop ExecMainStatus)" = 0 ] ||
	fail "systemctl stop: Result=$(prop Result) status=$(prop ExecMainStatus)"
inside sh -c "journalctl _PID=$after -o cat | grep -q 'event=handed_off mode=hand-off'" || fail "the stop did not hand off"
say "systemctl stop: handed off in $ms ms (TimeoutStopSec $(prop TimeoutStopUSec))"

# The exposure, as systemd-analyze scores the running system's unit.
inside systemctl start procctl-node
inside systemd-analyze security --no-pager procctl-node >"$tmp/security" 2>&1 || true
score=$(sed -n 's/.*Overall exposure level for procctl-node.service: \([0-9.]*\).*/\1/p' "$tmp/security")
[ -n "$score" ] || fail "systemd-analyze security: $(cat "$tmp/security")"
awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }' || fail "exposure $score, over 2.5: $(grep '✗' "$tmp/security")"
say "systemd-analyze security procctl-node: $score; left exposed:"
grep '✗' "$tmp/security" | sed 's/  */ /g; s/^/debs:   /'

# remove: the service stopped and gone, its config kept (a conffile).
inside systemctl stop echo-client
inside sh -c 'DEBIAN_FRONTEND=noninteractive apt-get remove -y -q procctl-node >/tmp/remove.log 2>&1' ||
	fail "apt-get remove: $(inside tail -20 /tmp/remove.log)"
inside systemctl is-active procctl-node >/dev/null 2>&1 && fail "procctl-node still runs after apt-get remove"
inside test -f /etc/procctl/procctl-node.conf || fail "apt-get remove took the config"
inside test ! -e /lib/systemd/system/procctl-node.service || fail "apt-get remove left the unit"
say "apt-get remove: the service stopped and gone, /etc/procctl/procctl-node.conf kept"

# purge: nothing the packages added is left (the users went first: a
# group with members is kept).
inside userdel alice
inside userdel bob
inside sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q procctl-node procctl libprocctl-agent-dev libprocctl-agent1 >/tmp/purge.log 2>&1' ||
	fail "apt-get purge: $(inside tail -20 /tmp/purge.log)"
for p in /etc/procctl /var/lib/procctl /run/procctl /lib/systemd/system/procctl-node.service \
	/lib/systemd/system/procctl-node.service.d /etc/systemd/system/multi-user.target.wants/procctl-node.service \
	/usr/sbin/procctl-node /usr/bin/procctl /usr/include/procctl.h; do
	inside test ! -e "$p" || fail "apt-get purge left $p"
done
inside getent group procctl >/dev/null && fail "apt-get purge left the group procctl"
left=$(inside dpkg-query -W -f '${Package} ${Status}\n' 'procctl*' 'libprocctl*' 2>/dev/null | grep -v 'not-installed' || true)
[ -z "$left" ] || fail "apt-get purge left packages: $left"
inside systemctl is-active procctl-node >/dev/null 2>&1 && fail "procctl-node still runs after the purge"
say "apt-get purge: the packages, /etc/procctl, /var/lib/procctl, /run/procctl, the unit and the group are gone"

# A group procctl the host had before: used, said so, and kept by a purge.
inside groupadd --gid 4242 procctl
inside sh -c 'cd /tmp/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./procctl-node_*.deb ./libprocctl-agent1_*.deb >/tmp/apt2.log 2>&1' ||
	fail "apt-get install procctl-node beside a group of the host's: $(inside tail -20 /tmp/apt2.log)"
inside grep -q "procctl-node: the group procctl (gid 4242) was there already" /tmp/apt2.log ||
	fail "postinst did not say it used the host's group: $(inside tail -20 /tmp/apt2.log)"
inside sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q procctl-node libprocctl-agent1 >/tmp/purge2.log 2>&1' ||
	fail "apt-get purge: $(inside tail -20 /tmp/purge2.log)"
[ "$(inside getent group procctl | cut -d: -f3)" = 4242 ] || fail "apt-get purge took the host's group procctl"
inside grep -q "procctl-node: the group procctl was there before the package: kept" /tmp/purge2.log ||
	fail "postrm did not say it kept the host's group: $(inside tail -20 /tmp/purge2.log)"
inside groupdel procctl
say "a group procctl of the host's: used (said so), kept by the purge"

# docs/hosts.md as its reader runs it, on this host, bare again: every
# ```sh block in order as one session (bash -euo pipefail -x, a clean
# environment), as root in the directory of the .deb files.
mkdir "$tmp/page"
awk -v dir="$tmp/page" -v page=docs/hosts.md -f "$repo/test/docblocks.awk" "$repo/docs/hosts.md" || fail "docs/hosts.md's fences"
cat "$tmp"/page/*.sh >"$tmp/session.sh"
$PODMAN cp "$tmp/session.sh" "$name:/tmp/session.sh" || fail "podman cp session.sh"
timeout 300 $PODMAN exec -w /tmp/debs "$name" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root TERM=dumb bash -euo pipefail -x /tmp/session.sh >"$tmp/session.log" 2>&1 ||
	fail "docs/hosts.md's commands: $(tail -40 "$tmp/session.log")"
say "docs/hosts.md: its $(ls "$tmp"/page/*.sh | wc -l) blocks of commands ran on the host"
say OK
