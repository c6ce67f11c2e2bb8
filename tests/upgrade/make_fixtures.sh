#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Writes this build's upgrade fixture (make_fixtures.py says what it holds) into OUT_DIR:
#   bash tests/upgrade/make_fixtures.sh BIN_DIR OUT_DIR
# BIN_DIR holds mizarmp-mock and mizarmp-addons of the release the fixture stands for; run it
# from that release's tree, once, and commit OUT_DIR as tests/upgrade/fixtures/<release>/ so
# that every later release is tested against it. Needs Debian's etcd-server and
# python3-grpcio/python3-grpc-tools; the etcd cluster (client ports from
# MIZARMP_FIXTURE_ETCD_PORT, default 23790) and every temporary file are removed afterwards.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BIN_DIR OUT_DIR" >&2
  exit 2
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin_dir=$(realpath "$1")
out_dir=$2
work=$(mktemp -d /tmp/mzfixture.XXXXXX)

# shellcheck source=SCRIPTDIR/../../scripts/etcd_local.sh
source "$repo/scripts/etcd_local.sh"
cleanup() {
  mz_etcd_stop
  rm -rf "$work"
}
trap cleanup EXIT

mz_etcd_start "$work/etcd" "${MIZARMP_FIXTURE_ETCD_PORT:-23790}"
MIZARMP_BIN_DIR=$bin_dir MIZARMP_PROTO_DIR=$repo/proto PYTHONDONTWRITEBYTECODE=1 \
  /usr/bin/python3 "$repo/tests/upgrade/make_fixtures.py" --etcd "$MZ_ETCD_ENDPOINTS" \
  --out "$out_dir"
echo "make_fixtures: wrote $out_dir/{fence.db,etcd.json,manifest.json}"
