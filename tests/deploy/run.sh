#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The deploy/ validation tests (tests/deploy.cmake):
#
#   run.sh npm-ci MODULES_DIR   installs the validator's packages from the committed lock file
#                               into MODULES_DIR (once per lock file; needs the npm registry)
#   run.sh valid MODULES_DIR    deploy/ and deploy/examples/ validate
#   run.sh broken MODULES_DIR   tests/deploy/broken/ and broken-kustomization/ are refused, each
#                               planted mistake named
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MODE=${1:?usage: $0 npm-ci|valid|broken MODULES_DIR}
MODULES=${2:?}

validate() { NODE_PATH="$MODULES/node_modules" node "$HERE/validate.cjs" "$@"; }

case $MODE in
  npm-ci)
    mkdir -p "$MODULES"
    if cmp -s "$HERE/package-lock.json" "$MODULES/package-lock.json" && [[ -d "$MODULES/node_modules" ]]; then
      echo "npm ci: $MODULES is up to date with the lock file"
      exit 0
    fi
    cp "$HERE/package.json" "$HERE/package-lock.json" "$MODULES/"
    (cd "$MODULES" && npm ci --ignore-scripts --no-audit --no-fund)
    ;;
  valid)
    cd "$ROOT" && validate deploy deploy/examples deploy/monitoring
    ;;
  broken)
    out=$(cd "$ROOT" && validate tests/deploy/broken tests/deploy/broken-kustomization)
    rc=$?
    echo "$out"
    [[ $rc -eq 1 ]] || { echo "FAIL: the validator exited $rc on broken manifests, not 1"; exit 1; }
    for expected in "missing.yaml: no such file or directory" "container imageless: no image" \
      "containerPort: must be integer" \
      "matchLabels app=broken is not a pod label" "mounts undeclared volume undeclared" \
      '$(NODE_NAEM)' "no ServiceAccount nobody" "no ConfigMap absent" "conflist: not JSON" \
      "/spec/fenceState: must be equal to one of the allowed values" \
      "unknown kind example.com/v1 Unknown" "localhost/not-used names no container image" \
      "dials /csi/other.sock, but the server's endpoint is unix:///csi/mizarmp/csi-addons.sock" \
      "socket /csi/other.sock is on no volume both containers mount at one path" \
      "runs as uid 0, the server as uid 65534" \
      "/spec/provisioner: other.example.com is no driver name of the server configs" \
      "/spec/podMetricsEndpoints/0: must have required property 'port'" \
      "PodMonitor/broken-selector: /spec/selector: selects no pod of the set" \
      "Deployment/broken-socket has no port named metrics" \
      "Deployment/broken-recreate: /spec/strategy: Recreate stops all 2 replicas at once" \
      "maxUnavailable: 100% lets 3 of 3 replicas go at once (at most 1)" \
      "Deployment/broken-recreate: /spec/template/metadata/labels: no PodDisruptionBudget selects" \
      "PodDisruptionBudget/broken-rollout: lets 2 of its 3 pods be evicted at once (at most 1)" \
      "PodDisruptionBudget/broken-stuck: lets 0 of its 2 pods be evicted at once: a drain" \
      "DaemonSet/broken-ondelete: /spec/updateStrategy/type: OnDelete: a new template reaches" \
      "DaemonSet/broken-surge: /spec/updateStrategy/rollingUpdate/maxSurge: 1: a new hostNetwork"; do
      grep -qF -- "$expected" <<<"$out" || { echo "FAIL: no problem reported for: $expected"; exit 1; }
    done
    echo "ok: every planted mistake was named"
    ;;
  *)
    echo "unknown mode $MODE" >&2
    exit 2
    ;;
esac
