#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# docs.sh - run one page of the documentation as a reader would: every
# ```sh block in order, as one shell session, and every ```c block
# compiled (ctest `readme` for README.md, `doc_<name>` for docs/<name>.md).
#
# The session is what a reader in a fresh root shell at the repository's
# root gets: `env -i` with PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:
# /usr/bin:/sbin:/bin, a scratch HOME and TERM=dumb, nothing else; a PATH
# entry or variable it needs, the page must set. It runs under bash -euo
# pipefail -x (a command that fails ends it), within a time limit, as root
# in new mount, network and pid namespaces: /run and /var/lib are private
# tmpfs there, so procctl-node runs on its embedded defaults
# (/run/procctl/node.sock, 127.0.0.1:9464, /var/lib/procctl) without
# touching the host's, and sees only the processes of the session, which
# all end with it; only the package database, /var/lib/dpkg, is the
# host's, read-only (what is installed: building the Debian packages). The repository is seen through an overlay whose build/
# is BUILD_DIR: what a page writes there stays in the session's scratch. A page that starts a daemon shows how, and stops it.
# A manual page (docs/NAME.N.md) is read where the programs are installed:
# its session has this build installed over /usr/local (in its own mount
# namespace), as `make install` would.
#
# A ```c block is compiled with -Wall -Wextra -Werror against
# libprocctl-agent.a, linked when it has a main; one whose first line names
# a file (`/* example.c: ... */`) is also saved under that name in the
# scratch repository, for the page's commands to build and run as the
# reader does after saving it.
#
# Fences other than sh, c and text, and fences not at the start of a line
# or of ~~~, fail the test (a command the test would not see); `make`, `make demo` and `make test` are the only lines not run
# here (make test is CI itself, make demo's script is the demo test). After
# the session, the page's own checks (below) look at its output for what
# the page says happens but no exit status shows. A page whose commands
# take something as given that it says in words (procctl(1)'s EXAMPLES: a
# daemon running) has that made first, by a premise below.
#
# Usage: test/docs.sh PAGE BUILD_DIR   (PAGE: README.md, docs/api.md, ...)
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PAGE=${1:?usage: docs.sh PAGE BUILD_DIR}
BUILD=$(cd "${2:?usage: docs.sh PAGE BUILD_DIR}" && pwd)
LIMIT=${PROCCTL_DOC_TIMEOUT:-240} # seconds for the whole session
[ -f "$ROOT/$PAGE" ] || { echo "docs: $PAGE: no such page" >&2; exit 1; }

W=$(mktemp -d /tmp/procctl-doc.XXXXXX)
trap 'rm -rf "$W"' EXIT
# The repository the session sees, $W/repo: in its mount namespace, an
# overlay of this tree with BUILD over its build/, both written in
# $W/up (what the runner adds: the C blocks saved as files), so that
# nothing a page does there reaches the tree or the build.
mkdir -p "$W/repo" "$W/home" "$W/doc" "$W/dpkg" "$W/up/repo" "$W/up/build" "$W/work/repo" "$W/work/build"

awk -v dir="$W/doc" -v page="$PAGE" -f "$ROOT/test/docblocks.awk" "$ROOT/$PAGE"
# docs/hosts.md is read on a host run by systemd: its commands run in
# ctest debs (test/debs/run.sh), in a container with systemd as PID 1.
if [ "$PAGE" = docs/hosts.md ]; then
	echo "docs: $PAGE: its fences are sound; its commands run on a systemd host (ctest debs)"
	exit 0
fi

set -- "$W"/doc/*.sh
[ -e "$1" ] && has_sh=1 || has_sh=
set -- "$W"/doc/*.c
[ -e "$1" ] && has_c=1 || has_c=
if [ -z "$has_sh$has_c" ]; then
	echo "docs: $PAGE has no command and no C block (its fences are sound)"
	exit 0
fi

# The C blocks: a program is linked, anything else compiled alone.
CFLAGS="-std=c11 -O1 -Wall -Wextra -Werror -I$ROOT -I$ROOT/include -I$ROOT/examples/token"
if [ -n "$has_c" ]; then
	for c in "$W"/doc/*.c; do
		echo "## compiling $(basename "$c") of $PAGE"
		if grep -q '^int main(' "$c"; then
			cc $CFLAGS -o "${c%.c}" "$c" "$BUILD/libprocctl-agent.a" -lpthread
		else
			cc $CFLAGS -c -o "${c%.c}.o" "$c"
		fi
		if [ -f "${c%.c}.name" ]; then
			cp "$c" "$W/up/repo/$(cat "${c%.c}.name")"
		fi
	done
fi
if [ -z "$has_sh" ]; then
	echo "docs: every C block of $PAGE compiled"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "docs: $PAGE: needs root (namespaces, the daemon's defaults)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi

# What a page's commands take as given, where it says so: procctl(1)'s
# EXAMPLES begin "With procctl-node running and a process of consumer echo
# attached", so its session has them (the daemon installed, as for any
# manual page; the echo client from this build).
case $PAGE in
docs/procctl.1.md)
	cat >"$W/doc/00.sh" <<-'EOT'
	echo "## the premise of the EXAMPLES: procctl-node running, a process of consumer echo"
	build/examples/echo-client --consumer echo >/dev/null &
	procctl-node 2>/dev/null &
	EOT
	;;
# docs/kubernetes.md's ProcessConfig walk-through runs on "a cluster where
# the chart runs": its session has one, of one node. The API server is
# the tests' stand-in (test/node/kubeapi.js: objects validated by the CRD's
# schema, server-side apply, Events), without the CRD until the page
# applies it; kubectl's ~/.kube/config points to it with a token; this
# node's procctl-node runs with the chart's flags, and pod shop/web-0
# (app=web) runs a process of consumer echo in its kubelet-named cgroup
# (the cgroups it uses are listed in .walkthrough-cgroups, removed after
# when empty: kubepods.slice too, when another test made it and left
# while this one was in it; the last to leave removes it).
docs/kubernetes.md)
	cat >"$W/doc/00.sh" <<-'EOT'
	echo "## the premise of the walk-through: a cluster of one node, pod shop/web-0 running a process of consumer echo"
	K=$(mktemp -d)
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=kube-ca \
		-keyout "$K/ca.key" -out "$K/ca.crt" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kubernetes \
		-keyout "$K/api.key" -out "$K/api.csr" 2>/dev/null
	printf 'subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' >"$K/ext"
	openssl x509 -req -in "$K/api.csr" -CA "$K/ca.crt" -CAkey "$K/ca.key" -CAcreateserial -days 1 -extfile "$K/ext" \
		-out "$K/api.crt" 2>/dev/null
	echo walkthrough-token >"$K/token"
	POD_UID=$(cat /proc/sys/kernel/random/uuid)
	CID=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
	printf '[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"shop","uid":"%s","labels":{"app":"web"}},"spec":{"nodeName":"node-a","containers":[{"name":"app","image":"app:1"}]},"status":{"phase":"Running","containerStatuses":[{"name":"app","containerID":"containerd://%s","image":"app:1","imageID":"","ready":true,"restartCount":0,"started":true}]}}]' \
		"$POD_UID" "$CID" >"$K/objects.json"
	KUBEAPI_HOST=127.0.0.1 KUBEAPI_NO_CRD=1 NODE_PATH=$PWD/test/peers/node_modules \
		node test/node/kubeapi.js 6443 "$K/api.crt" "$K/api.key" walkthrough-token "$K/objects.json" "$K/ctl.sock" >"$K/api.log" 2>&1 &
	timeout 20 sh -c "until grep -q '^listening ' '$K/api.log'; do sleep 0.1; done"
	mkdir -p ~/.kube
	printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority: %s\nusers:\n- name: u\n  user:\n    token: walkthrough-token\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n' \
		"$K/ca.crt" >~/.kube/config
	V2=$(findmnt -t cgroup2 -n -o TARGET | head -n 1)
	CG=$V2/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod$(echo "$POD_UID" | tr - _).slice
	for d in "$V2/kubepods.slice" "$V2/kubepods.slice/kubepods-besteffort.slice" "$CG" "$CG/cri-containerd-$CID.scope"; do
		[ -d "$d" ] || mkdir "$d"
		echo "$d" >>.walkthrough-cgroups
	done
	(echo "$BASHPID" >"$CG/cri-containerd-$CID.scope/cgroup.procs" && exec build/examples/echo-client --consumer echo >/dev/null) &
	build/procctl-node --kubernetes-api https://127.0.0.1:6443 --kubernetes-node node-a --kubernetes-token-file "$K/token" \
		--kubernetes-ca-file "$K/ca.crt" --kubernetes-processconfigs true 2>"$K/node.log" &
	timeout 20 sh -c 'until build/clients/procctl ps --consumer echo 2>/dev/null | grep -q " shop/web-0"; do sleep 0.1; done' ||
		{ build/clients/procctl ps; cat "$K/node.log" "$K/api.log"; exit 1; }
	EOT
	;;
esac
# docs/gpu.md's commands run libprocctl-cupti and gpu-busy, built where
# the CUDA toolkit is found: elsewhere there is nothing to run them with.
if [ "$PAGE" = docs/gpu.md ] && [ ! -f "$BUILD/gpu/cupti/libprocctl-cupti.so" ]; then
	echo "docs: $PAGE: this build has no libprocctl-cupti (no CUDA toolkit): skipped"
	[ "${CI:-}" = true ] && exit 1 # CI runs every page
	exit 77
fi
cat "$W"/doc/*.sh >"$W/doc/session"
echo 'echo "## the end of the session"' >>"$W/doc/session"
# The npm peers are fetched here, where the network is: a page's own
# scripts/install-peers.sh then finds them there and does nothing (the
# session has no network).
if grep -q 'scripts/install-peers\.sh' "$W/doc/session"; then
	"$ROOT/scripts/install-peers.sh" >/dev/null
fi

# A manual page's reader has the programs installed: for docs/NAME.N.md
# this build is installed (make install's files) over /usr/local, in the
# session's mount namespace only.
stage=
case $PAGE in
docs/*.[1-8].md)
	stage=$W/stage
	DESTDIR=$stage cmake --install "$BUILD" --prefix /usr/local >/dev/null
	;;
esac

fail() {
	echo "docs: $PAGE: FAIL: $*" >&2
	exit 1
}
LOG=$W/doc/log
status=0
start=$(date +%s)
timeout -k 5 "$LIMIT" unshare --mount --net --pid --kill-child --mount-proc --propagation private sh -eu -c '
	ip link set lo up
	mount -t tmpfs tmpfs /run
	mount --bind /var/lib/dpkg "$6/dpkg"
	mount -t tmpfs tmpfs /var/lib
	mkdir /var/lib/dpkg
	mount --bind "$6/dpkg" /var/lib/dpkg
	mount -o remount,bind,ro /var/lib/dpkg
	[ -z "$3" ] || mount -t overlay overlay -o "lowerdir=$3/usr/local:/usr/local" /usr/local
	mount -t overlay overlay -o "lowerdir=$4,upperdir=$6/up/repo,workdir=$6/work/repo" "$6/repo"
	mkdir -p "$6/repo/build"
	mount -t overlay overlay -o "lowerdir=$5,upperdir=$6/up/build,workdir=$6/work/build" "$6/repo/build"
	cd "$6/repo"
	env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$1" TERM=dumb \
		bash -euo pipefail -x "$2"
' docs "$W/home" "$W/doc/session" "$stage" "$ROOT" "$BUILD" "$W" >"$LOG" 2>&1 </dev/null || status=$?
cat "$LOG"
if [ "$status" != 0 ] && [ $(($(date +%s) - start)) -ge "$LIMIT" ]; then
	fail "the session ran out of its $LIMIT s"
fi
# The cgroups a premise made, the deepest first (EBUSY while the
# session's processes are still exiting; one another test made meanwhile
# below it keeps it).
if [ -f "$W/up/repo/.walkthrough-cgroups" ]; then
	tac "$W/up/repo/.walkthrough-cgroups" | while read -r d; do
		timeout 10 sh -c "while [ -d '$d' ] && ! rmdir '$d' 2>/dev/null; do [ -n \"\$(ls -d '$d'/*/ 2>/dev/null)\" ] && exit 0; sleep 0.1; done" || true
	done
fi
[ "$status" = 0 ] || fail "the session failed (exit $status)"
grep -q '^## the end of the session$' "$LOG" || fail "the session did not run to its end"

# The page's own checks, on the session's output ($1: the pid of the
# process the page started as PID, from the trace).
pid_of() {
	sed -n "s/^+ $1=\([0-9][0-9]*\)\$/\1/p" "$LOG" | head -n 1
}
saw() {
	grep -Eq -- "$1" "$LOG" || fail "$2"
}
listed_and_applied() { # PID: the process the page started, of consumer echo
	pid=$(pid_of PID)
	[ -n "$pid" ] || fail "the session set no PID"
	saw "^$pid +echo " "procctl ps did not list the process the page started (pid $pid)"
	saw "^$pid .*APPLIED" "the process the page started (pid $pid) did not ack the publish"
}
case $PAGE in
README.md)
	listed_and_applied
	;;
docs/process-side.md)
	listed_and_applied
	saw '^acked: +[0-9]+ APPLIED' "procctl state did not show the program's ack"
	saw '^data: +ok$' "procctl state did not show the status the program set"
	;;
docs/daemon.md)
	saw '^procctl-node: configuration valid$' "--check-config did not find the example config valid"
	saw '^[0-9]+ attached$' "the process started after the daemon was not attached"
	saw '^procctl_processes\{consumer="echo",ownership="owned"\} 1$' "/metrics did not count the echo client"
	saw '"code":"PERMISSION_DENIED"' "a JSON view answered without the key"
	saw 'event=handed_off' "the daemon did not hand its processes off"
	saw '^no daemon: procctl exits 1$' "procctl reached a daemon after the stop"
	saw '^\{"ackedGeneration":"[0-9]+","ackResult":' "the JSON view did not answer with the key"
	;;
docs/api.md)
	saw '"status": "PUBLISH_STATUS_APPLIED"' "buf curl's Publish was not applied"
	saw '"ackResult":"ACK_RESULT_APPLIED"' "procctl -o json state showed no applied ack"
	saw ' snapshot +processes=1 ' "procctl watch did not start with the snapshot"
	;;
docs/alerts.md)
	saw '^  SUCCESS$' "promtool test rules did not pass"
	saw '^procctl_resource_release_pending_age_seconds\{kind="gpu",resource="00000000-0000-0000-0000-000000000000"\} [1-9]' \
		"the stopped holder's revocation did not wait for its release"
	;;
docs/kubernetes.md)
	saw '^    data = level=debug$' "the chart did not render the desired config"
	saw '^processconfig\.procctl\.io/web-tuning condition met$' "node-a's status entry did not say Applied"
	saw '^web-tuning +echo +1 +[0-9]+s$' "kubectl get did not show the object's columns"
	saw '^[0-9]+ +echo +1 .* 2 +2 +APPLIED +shop/web-0/app$' "the pod's process did not apply the ProcessConfig"
	saw '^    Reason: +Applied$' "kubectl describe did not show node-a's entry"
	saw '^[0-9]+ +echo +1 .* 3 +3 +APPLIED +shop/web-0/app$' "the delete did not clear the pod's process"
	;;
docs/gpu.md)
	saw '^sampling: +turns=[1-9][0-9]* held=[0-9.]+s samples=[1-9][0-9]* ' "procctl state showed no hold with samples"
	saw '^cupti: +errors=0$' "procctl state showed CUPTI errors"
	saw '^function: +[1-9][0-9]* busy$' "procctl state did not show the busy kernel as a top function"
	;;
docs/procctl.1.md)
	saw '^[0-9]+ +echo +1 ' "procctl ps did not list the echo client"
	saw '^[0-9]+ +[0-9a-f]{16} +[0-9]+ +APPLIED ' "the echo client did not ack the publish"
	saw '^removed revision [0-9]+ \(--consumer echo --schema 1, 10 bytes\)$' "desired rm did not say what it removed"
	saw '^\+\+ complete -F _procctl procctl$' "the completion script was not sourced"
	;;
esac
echo "docs: every command of $PAGE ran"
