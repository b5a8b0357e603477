#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The installed shell completions, used as a shell uses them: bash's
# function called with the words typed so far (COMP_WORDS, COMP_CWORD),
# zsh's with words and CURRENT (its compadd and _files stood in for:
# they print what would be offered). Every flag of each program's --help
# is offered; what a command does not take is not.
# Usage: complete.sh PREFIX (an installed tree: bin, sbin, share)
set -eu
p=$1
bashc=$p/share/bash-completion/completions
zshc=$p/share/zsh/site-functions
fail() {
	echo "complete: FAILED: $*" >&2
	exit 1
}
for f in "$bashc/procctl" "$bashc/procctl-node" "$zshc/_procctl" "$zshc/_procctl-node"; do
	[ -f "$f" ] || fail "$f was not installed"
done
head -1 "$zshc/_procctl" | grep -qx '#compdef procctl' || fail "_procctl: no #compdef line"
head -1 "$zshc/_procctl-node" | grep -qx '#compdef procctl-node' || fail "_procctl-node: no #compdef line"

# bash: what is offered for the words (the last is the one completed).
offer_bash() { # FILE FUNCTION WORD...
	file=$1 fn=$2
	shift 2
	bash -c '. "$1"; fn=$2; shift 2; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); "$fn"; printf "%s\n" "${COMPREPLY[@]}"' \
		sh "$file" "$fn" "$@"
}
# zsh: the same (sourced, as outside compinit: it registers itself with
# compdef, and the function is called as compinit would).
offer_zsh() { # FILE WORD...
	file=$1
	shift
	zsh -f -c 'compadd() { [[ $1 == -- ]] && shift; print -l -- "$@" }
		_files() { print -- "(files $*)" }
		compset() { return 0 }
		compdef() { [[ $1 == _${2//-/_} ]] || print -- "(compdef $*)" }
		file=$1; shift; words=("$@"); CURRENT=$#; . "$file"; _${words[1]//-/_}' zsh "$file" "$@"
}
has() { # WHAT LIST...
	what=$1
	shift
	printf '%s\n' "$@" | grep -qxF -- "$what"
}
expect() { # 1|0 WHAT SHELL-WORDS...
	want=$1 what=$2
	shift 2
	case $1 in
	procctl) out=$(offer_bash "$bashc/procctl" _procctl "$@") zout=$(offer_zsh "$zshc/_procctl" "$@") ;;
	*) out=$(offer_bash "$bashc/procctl-node" _procctl_node "$@") zout=$(offer_zsh "$zshc/_procctl-node" "$@") ;;
	esac
	for sh in bash zsh; do
		[ $sh = bash ] && got=$out || got=$zout
		if has "$what" $got; then is=1; else is=0; fi
		[ "$is" = "$want" ] || fail "$sh: '$*': $what $([ "$want" = 1 ] && echo "not offered" || echo "offered") (got: $(echo $got))"
	done
}

expect 1 publish procctl pub
expect 1 completion procctl --timeout 5s co
expect 1 --wait procctl publish --consumer echo --w
expect 0 --wait procctl ps --w
expect 1 --for procctl --timeout=5s watch --f
# as bash splits them: --timeout=5s at '=', HOST:PORT at ':'
out=$(offer_bash "$bashc/procctl" _procctl procctl --timeout = 5s watch --f)
has --for $out || fail "bash: --timeout = 5s watch --f: --for not offered (got: $out)"
out=$(offer_bash "$bashc/procctl" _procctl procctl --server 10.0.0.1 : 9443 --plaintext pu)
has publish $out || fail "bash: --server 10.0.0.1 : 9443 pu: publish not offered (got: $out)"
out=$(offer_bash "$bashc/procctl" _procctl procctl --server = 10.0.0.1 : 9443 desired '')
has ls $out || fail "bash: --server = 10.0.0.1 : 9443 desired: ls not offered (got: $out)"
out=$(offer_bash "$bashc/procctl" _procctl procctl --server 10.0.0.1 :)
[ -z "$out" ] || fail "bash: a port after ':' is typed, nothing offered (got: $out)"
expect 1 rm procctl desired ''
expect 1 zsh procctl completion ''
expect 1 json procctl -o ''
expect 1 table procctl --output ''
expect 1 publish procctl help ''
expect 1 --lease-ms procctl-node --lease
expect 1 debug procctl-node --log-level ''
expect 1 false procctl-node --hello ''
# a file name, after --file VALUE and --file=VALUE (bash splits it at '=')
mkdir -p "$p/cfgdir"
: >"$p/cfgdir/node.conf"
out=$(offer_bash "$bashc/procctl-node" _procctl_node procctl-node --config "$p/cfgdir/no")
has "$p/cfgdir/node.conf" $out || fail "bash: --config FILE offers no file name (got: $out)"
out=$(offer_bash "$bashc/procctl-node" _procctl_node procctl-node --config = "$p/cfgdir/no")
has "$p/cfgdir/node.conf" $out || fail "bash: --config=FILE offers no file name (got: $out)"
out=$(offer_zsh "$zshc/_procctl" procctl --output=)
has json $out || fail "zsh: --output=: json not offered (got: $out)"
out=$(offer_zsh "$zshc/_procctl" procctl publish --file "x")
printf '%s\n' "$out" | grep -qxF '(files )' || fail "zsh: --file FILE completes no file name (got: $out)"

# Every flag of --help is offered.
for prog in procctl procctl-node; do
	bin=$p/bin/$prog
	[ -x "$bin" ] || bin=$p/sbin/$prog
	fn=_$(echo $prog | tr - _)
	offered=$(offer_bash "$bashc/$prog" "$fn" "$prog" --)
	zoffered=$(offer_zsh "$zshc/_$prog" "$prog" --)
	for f in $("$bin" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
		has "$f" $offered || fail "bash: $prog $f (in --help) is not offered"
		has "$f" $zoffered || fail "zsh: $prog $f (in --help) is not offered"
	done
done
echo "complete: bash and zsh completions OK"
