#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make image: the procctl-node image, built from deploy/Dockerfile with
# podman as it is with any registry, here on a Debian bookworm base made
# on this machine (scripts/debian-base.sh --slim: minbase without docs,
# manuals and locales, as debian:bookworm-slim is made), since no
# registry may be reachable. Prints the image's size.
#   IMAGE    the tag (default localhost/procctl-node:VERSION)
#   BASE     use this local image as the base instead (not rebuilt)
#   MIRROR   the Debian archive (scripts/debian-base.sh)
# podman runs with runc (crun refuses some cgroup layouts), with rlimits
# a sandbox without CAP_SYS_RESOURCE can set, and with the host's network
# (apt-get inside the build reaches the same mirror as this machine).
# Usage: scripts/image.sh   (root; installs podman, runc, mmdebstrap first)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=$(sed -n 's/^project(procctl VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
IMAGE=${IMAGE:-localhost/procctl-node:$VERSION}
"$ROOT/scripts/install-deps.sh"
PODMAN="podman --runtime runc"
ULIMITS="--ulimit nofile=1024:1024 --ulimit nproc=4096:4096"

if [ -z "${BASE:-}" ]; then
	BASE=localhost/procctl-base:bookworm
	"$ROOT/scripts/debian-base.sh" "$BASE" --slim
fi

echo "image: $IMAGE from deploy/Dockerfile on $BASE" >&2
# shellcheck disable=SC2086 # the flags are words
$PODMAN build --quiet --pull=never --network host $ULIMITS --build-arg BASE="$BASE" \
	-f "$ROOT/deploy/Dockerfile" -t "$IMAGE" "$ROOT" >/dev/null
size=$($PODMAN image inspect --format '{{.Size}}' "$IMAGE")
base_size=$($PODMAN image inspect --format '{{.Size}}' "$BASE")
echo "image: $IMAGE: $((size / 1000000)) MB ($(((size - base_size) / 1000000)) MB over the base's $((base_size / 1000000)) MB)"
