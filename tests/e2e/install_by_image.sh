#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Installs the plugin into a host directory the way a Kubernetes node gets it: builds the images
# (scripts/images.sh) in an isolated podman, runs the installer image against HOST_DIR with
# TEMPLATE as its conflist (tests/e2e/podman_env.sh mz_install_by_image), removes the podman
# state again. For tests that then run the installed plugin (tests/integration/cri_test.cc).
#
#   tests/e2e/install_by_image.sh BIN_DIR HOST_DIR TEMPLATE HOST_ID
#
# Afterwards HOST_DIR/opt/cni/bin/mizarmp and HOST_DIR/etc/cni/net.d/10-mizarmp.conflist exist.
# Exit 0 on success, 1 with the reason on stderr.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=podman_env.sh
source "$HERE/podman_env.sh"

BIN_DIR=${1:?usage: $0 BIN_DIR HOST_DIR TEMPLATE HOST_ID}
HOST_DIR=${2:?}
TEMPLATE=${3:?}
HOST_ID=${4:?}

reason=$(mz_podman_unavailable_reason)
[[ -z "$reason" ]] || { echo "install_by_image: $reason" >&2; exit 1; }
WORK=$(mktemp -d /tmp/mizarmp-install-by-image.XXXX)
trap 'mz_podman_cleanup; rm -rf "$WORK"' EXIT

mz_podman_init "$WORK" /usr/lib/cni >"$WORK/init.log" 2>&1 ||
  { cat "$WORK/init.log" >&2; exit 1; }
PODMAN=$MZ_PODMAN bash "$ROOT/scripts/images.sh" "$BIN_DIR" install-test >/dev/null || exit 1
mz_install_by_image localhost/mizarmp-cni:install-test "$HOST_DIR" "$TEMPLATE" "$HOST_ID"
