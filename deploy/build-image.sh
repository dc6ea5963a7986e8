#!/bin/sh
# Build the raftka container image from the static binary.
#
#   deploy/build-image.sh                       # make build, then build raftka:dev
#   IMAGE=raftka:1.0 deploy/build-image.sh      # another tag
#   RAFTKA_BIN=path/to/raftka deploy/build-image.sh   # use a binary built elsewhere
#
# RAFTKA_BIN must be a static linux binary (CGO_ENABLED=0): the image has no
# libc to load anything else. The build context is a temporary directory
# holding only what the Dockerfile copies, so the checkout is never sent to
# the Docker daemon.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
image=${IMAGE:-raftka:dev}

if [ -z "${RAFTKA_BIN:-}" ]; then
	make -C "$root" build
	RAFTKA_BIN="$root/bin/raftka"
fi
if [ ! -x "$RAFTKA_BIN" ]; then
	echo "build-image.sh: $RAFTKA_BIN is not an executable file" >&2
	exit 1
fi

ctx=$(mktemp -d -t raftka-image.XXXXXX)
trap 'rm -rf "$ctx"' EXIT INT TERM
cp "$RAFTKA_BIN" "$ctx/raftka"
chmod 0755 "$ctx/raftka"
mkdir "$ctx/config" "$ctx/data"
cp "$here"/config/*.properties "$ctx/config/"
chmod 0644 "$ctx"/config/*.properties

docker build -f "$here/Dockerfile" -t "$image" "$ctx"
