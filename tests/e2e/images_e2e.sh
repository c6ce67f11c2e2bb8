#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The container images of deploy/ (scripts/images.sh), built offline with an isolated podman:
#
#   tests/e2e/images_e2e.sh BIN_DIR
#
#   1. the installer image, run as the installer DaemonSet's init container runs it against
#      temporary host directories, replaces a plugin that is executing at that moment: the running
#      process goes on, the installed file is the image's plugin whole (it answers VERSION), the
#      conflist carries this node's hostId, and no temp file is left;
#   2. the mizarmp-addons image starts with only what it carries (a scratch image and the
#      libraries ldd resolved), prints its version and serves its socket in node mode.
# Needs root and podman: exits 77 (skipped) without them, fails under CI=true.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=podman_env.sh
source "$HERE/podman_env.sh"

BIN_DIR=${1:?usage: $0 BIN_DIR}
BIN_DIR=$(cd "$BIN_DIR" && pwd)
TAG=e2e
WORK=""
OLD_PLUGIN_PID=""

fail() {
  echo "FAIL: $*"
  [[ -n "$WORK" && -s "$WORK/podman.err" ]] && tail -n 40 "$WORK/podman.err"
  exit 1
}

cleanup() {
  [[ -n "$OLD_PLUGIN_PID" ]] && kill -9 "$OLD_PLUGIN_PID" 2>/dev/null
  mz_podman_cleanup
  [[ -n "$WORK" ]] && rm -rf "$WORK"
}
trap cleanup EXIT

reason=$(mz_podman_unavailable_reason)
if [[ -n "$reason" ]]; then
  [[ "${CI:-}" == "true" ]] && fail "podman required in CI but unavailable: $reason"
  echo "SKIP: $reason"
  exit 77
fi

WORK=$(mktemp -d /tmp/mizarmp-images-e2e.XXXX)
mz_podman_init "$WORK" /usr/lib/cni >"$WORK/podman.err" 2>&1 || fail "isolated podman setup"
PODMAN=$MZ_PODMAN bash "$ROOT/scripts/images.sh" "$BIN_DIR" "$TAG" >"$WORK/images.out" \
  2>>"$WORK/podman.err" || fail "scripts/images.sh"
echo "images: $(tr '\n' ' ' <"$WORK/images.out")"

# ------------------------------------------------------------------ 1. the installer image
HOST=$WORK/host
mkdir -p "$HOST/opt/cni/bin" "$HOST/etc/cni/net.d"
cp /bin/sleep "$HOST/opt/cni/bin/mizarmp"  # the "old plugin", running during the install
"$HOST/opt/cni/bin/mizarmp" 300 &
OLD_PLUGIN_PID=$!

mz_install_by_image "localhost/mizarmp-cni:$TAG" "$HOST" "$ROOT/conf/mizarmp.conflist" node-e2e \
  2>"$WORK/install.log" || { cat "$WORK/install.log"; fail "the installer image's install"; }

kill -0 "$OLD_PLUGIN_PID" 2>/dev/null || fail "the running old plugin was disturbed by the install"
version=$(env -i CNI_COMMAND=VERSION "$HOST/opt/cni/bin/mizarmp" </dev/null) ||
  fail "the installed plugin does not answer VERSION"
[[ "$version" == *supportedVersions* ]] || fail "the installed plugin's VERSION: $version"
[[ "$(ls -A "$HOST/opt/cni/bin")" == "mizarmp" ]] ||
  fail "the plugin dir holds more than the plugin: $(ls -A "$HOST/opt/cni/bin" | tr '\n' ' ')"
conflist=$HOST/etc/cni/net.d/10-mizarmp.conflist
[[ "$(mz_json '[p.get("hostId") for p in d["plugins"] if p["type"] == "mizarmp"][0]' <"$conflist")" == node-e2e ]] ||
  fail "the conflist's hostId is not node-e2e: $(cat "$conflist")"
[[ "$(stat -c %a "$conflist")" == 644 ]] || fail "conflist mode $(stat -c %a "$conflist")"
echo "ok 1: the installer image replaced a running plugin and wrote the conflist for node-e2e"

# ------------------------------------------------------------------ 2. the mizarmp-addons image
out=$(mz_podman run --rm --network none "localhost/mizarmp-addons:$TAG" --version 2>&1) ||
  fail "mizarmp-addons --version in its image: $out"
[[ "$out" == "mizarmp-addons "* ]] || fail "mizarmp-addons --version printed: $out"

SOCKDIR=$WORK/sock
mkdir -m 0700 "$SOCKDIR"
mz_podman run -d --name addons-e2e --network none -v "$SOCKDIR:/csi" \
  "localhost/mizarmp-addons:$TAG" --mode node --endpoint unix:///csi/csi-addons.sock \
  --key-store-dir /var/lib/mizarmp/keys --host-id node-e2e >/dev/null 2>>"$WORK/podman.err" ||
  fail "starting mizarmp-addons in its image"
for _ in $(seq 100); do
  [[ -S "$SOCKDIR/csi-addons.sock" ]] && break
  sleep 0.1
done
[[ -S "$SOCKDIR/csi-addons.sock" ]] ||
  fail "mizarmp-addons in its image serves no socket: $(mz_podman logs addons-e2e 2>&1 | tail -n 20)"
[[ "$(mz_podman inspect -f '{{.State.Running}}' addons-e2e)" == true ]] ||
  fail "mizarmp-addons exited: $(mz_podman logs addons-e2e 2>&1 | tail -n 20)"
echo "ok 2: the mizarmp-addons image prints '$out' and serves its socket in node mode"
echo "images e2e: 2 passed"
