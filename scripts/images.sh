#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Builds the two container images of a Kubernetes deployment (deploy/) with podman, offline: both
# start FROM scratch, so no registry is needed.
#
#   bash scripts/images.sh [BIN_DIR] [TAG]
#
#   localhost/mizarmp-cni:TAG     the installer DaemonSet's image: /usr/bin/mizarmp-install (its
#                                 entry point) and the plugin to install, /opt/mizarmp/cni/mizarmp,
#                                 both static executables; /etc/mizarmp/10-mizarmp.conflist is the
#                                 default template (conf/mizarmp.conflist; deploy/ mounts its own).
#                                 The reference plugins the conflist chains (portmap, bandwidth) are
#                                 the node's own, as kubelet's CNI packages install them.
#   localhost/mizarmp-addons:TAG  mizarmp-addons (/usr/bin, the entry point, reading
#                                 /etc/mizarmp/mizarmp-addons.json) with exactly the shared
#                                 libraries the dynamic loader resolves for it on this machine
#                                 (`ldd`), at the same paths: Debian's gRPC, protobuf, abseil,
#                                 OpenSSL, SQLite, libcryptsetup and simdjson, and nothing else.
#
# BIN_DIR defaults to build/bin, TAG to the project version (CMakeLists.txt). PODMAN (default
# `podman`) is the podman command, so tests can use an isolated storage (tests/e2e/podman_env.sh).
# Prints the two image names. Needs the Release or RelWithDebInfo build (static plugin); the
# executables are stripped in the images (the build keeps the debug info).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${1:-$ROOT/build/bin}
TAG=${2:-$(sed -n 's/^project(mizarmp VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")}
PODMAN=${PODMAN:-podman}
CNI_IMAGE=localhost/mizarmp-cni:$TAG
ADDONS_IMAGE=localhost/mizarmp-addons:$TAG

die() { echo "scripts/images.sh: $*" >&2; exit 1; }

for binary in mizarmp mizarmp-install mizarmp-addons; do
  [[ -x "$BIN_DIR/$binary" ]] || die "$BIN_DIR/$binary not found (build first: scripts/build.sh)"
done
for binary in mizarmp mizarmp-install; do
  # An image FROM scratch has no libc: the installer and the plugin it installs must be static.
  ldd "$BIN_DIR/$binary" >/dev/null 2>&1 && die "$BIN_DIR/$binary is not a static executable"
done

CONTEXT=$(mktemp -d /tmp/mizarmp-images.XXXX)
trap 'rm -rf "$CONTEXT"' EXIT

# copy_with_libraries BINARY ROOTFS: BINARY into ROOTFS/usr/bin and every library ldd resolves
# for it (the dynamic loader included) at the same path under ROOTFS.
copy_with_libraries() {
  local binary=$1 rootfs=$2 lib
  install -D -s -m 0755 "$binary" "$rootfs/usr/bin/$(basename "$binary")"
  # "libx.so.1 => /lib/.../libx.so.1 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)".
  for lib in $(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    install -D -m 0755 "$(readlink -f "$lib")" "$rootfs$lib"
  done
  # A library ldd could not resolve would fail at start in the image: refuse to build it.
  if ldd "$binary" | grep -q "not found"; then
    die "$(basename "$binary"): unresolved libraries: $(ldd "$binary" | grep 'not found' | tr -s ' \t' ' ')"
  fi
}

# build_image NAME CONTEXT_DIR: the Containerfile in CONTEXT_DIR, tagged NAME.
build_image() {
  "$PODMAN" build --quiet --pull=never --tag "$1" --file "$2/Containerfile" "$2" >/dev/null ||
    die "podman build of $1 failed"
  echo "$1"
}

version_label() {
  echo "LABEL org.opencontainers.image.version=\"$TAG\" org.opencontainers.image.revision=\"$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)\""
}

# ---------------------------------------------------------------- the installer (mizarmp-cni)
cni=$CONTEXT/cni
install -D -s -m 0755 "$BIN_DIR/mizarmp-install" "$cni/rootfs/usr/bin/mizarmp-install"
install -D -s -m 0755 "$BIN_DIR/mizarmp" "$cni/rootfs/opt/mizarmp/cni/mizarmp"
install -D -m 0644 "$ROOT/conf/mizarmp.conflist" "$cni/rootfs/etc/mizarmp/10-mizarmp.conflist"
cat >"$cni/Containerfile" <<EOF
FROM scratch
COPY rootfs/ /
$(version_label)
ENTRYPOINT ["/usr/bin/mizarmp-install"]
CMD ["wait"]
EOF
build_image "$CNI_IMAGE" "$cni"

# ---------------------------------------------------------------- mizarmp-addons
addons=$CONTEXT/addons
copy_with_libraries "$BIN_DIR/mizarmp-addons" "$addons/rootfs"
# Where the server keeps its socket, fence store and key store; /tmp for libraries that want it.
mkdir -p "$addons/rootfs/etc/mizarmp" "$addons/rootfs/run/mizarmp" "$addons/rootfs/var/lib/mizarmp"
install -d -m 1777 "$addons/rootfs/tmp"
cat >"$addons/Containerfile" <<EOF
FROM scratch
COPY rootfs/ /
$(version_label)
ENTRYPOINT ["/usr/bin/mizarmp-addons"]
CMD ["--config", "/etc/mizarmp/mizarmp-addons.json"]
EOF
build_image "$ADDONS_IMAGE" "$addons"
