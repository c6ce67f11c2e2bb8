#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Builds the CRI test's sandbox image offline: a Docker image archive (the `docker save` layout,
# which `ctr images import` reads) with one layer holding the static pause program at /pause.
#
#   tests/cri/make_pause_image.sh PAUSE_BINARY OUTPUT_TAR IMAGE_REFERENCE
#
# The archive is reproducible: the layer's entries have fixed owners, modes and times.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 PAUSE_BINARY OUTPUT_TAR IMAGE_REFERENCE" >&2
  exit 2
fi
pause=$1
output=$2
reference=$3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

reproducible_tar() { # DIR OUT: every entry of DIR, root-owned, time 0, sorted
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$1" -cf "$2" .
}

mkdir -p "$work/rootfs" "$work/archive"
install -m 0755 "$pause" "$work/rootfs/pause"
reproducible_tar "$work/rootfs" "$work/archive/layer.tar"
diff_id=$(sha256sum "$work/archive/layer.tar" | cut -d' ' -f1)

cat >"$work/config.json" <<JSON
{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:$diff_id"]},"history":[{"created_by":"tests/cri/make_pause_image.sh"}]}
JSON
config_id=$(sha256sum "$work/config.json" | cut -d' ' -f1)
mv "$work/config.json" "$work/archive/$config_id.json"

cat >"$work/archive/manifest.json" <<JSON
[{"Config":"$config_id.json","RepoTags":["$reference"],"Layers":["layer.tar"]}]
JSON
reproducible_tar "$work/archive" "$output.tmp"
mv "$output.tmp" "$output"
