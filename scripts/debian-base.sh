#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A Debian bookworm image made on this machine with mmdebstrap and
# imported into podman, since no registry may be reachable: minbase, /usr
# merged by a hook (not the usrmerge package and its perl). Nothing is
# done when IMAGE exists.
#   --slim        without what debian:bookworm-slim leaves out as well:
#                 docs but the copyrights, manuals, locales
#   --include P   these packages too (comma-separated: systemd,dbus)
#   MIRROR        the Debian archive (default: the first of this machine's
#                 apt sources, else http://deb.debian.org/debian); the
#                 security archive is MIRROR-security on the same host
# Usage: scripts/debian-base.sh IMAGE [--slim] [--include P,...]   (root)
set -eu
image=$1
shift
slim=0
include=""
while [ $# -gt 0 ]; do
	case $1 in
	--slim) slim=1 ;;
	--include) include=$2 && shift ;;
	*) echo "debian-base: unknown argument $1" >&2 && exit 2 ;;
	esac
	shift
done
PODMAN="podman --runtime runc"
$PODMAN image exists "$image" && exit 0
if [ -z "${MIRROR:-}" ]; then
	MIRROR=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p; s/^deb  *\(\[[^]]*\] *\)\{0,1\}\(http[^ ]*\) *bookworm .*/\2/p' \
		/etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | grep -v security | head -n 1)
	MIRROR=${MIRROR:-http://deb.debian.org/debian}
fi
MIRROR=${MIRROR%/}
tmp=$(mktemp -d /tmp/procctl-base.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "debian-base: $image, bookworm minbase${include:+ with $include} from $MIRROR" >&2
set -- --quiet --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
[ -z "$include" ] || set -- "$@" --include="$include"
[ "$slim" = 0 ] || set -- "$@" \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/groff/*' \
	--dpkgopt='path-exclude=/usr/share/lintian/*'
mmdebstrap "$@" bookworm "$tmp/base.tar" \
	"deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
	"deb $MIRROR-security bookworm-security main"
$PODMAN import --quiet "$tmp/base.tar" "$image" >/dev/null
