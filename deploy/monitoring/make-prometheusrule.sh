#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Writes prometheusrule.yaml from rules.yml: the same groups under a PrometheusRule's spec, so
# the Prometheus operator and a plain Prometheus load one set of alerts.
#
#   make-prometheusrule.sh           rewrites prometheusrule.yaml
#   make-prometheusrule.sh --check   exits 1 if prometheusrule.yaml is not what it would write
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

render() {
  cat <<'HEADER'
# Generated from rules.yml by make-prometheusrule.sh: edit rules.yml, then run the script.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: mizarmp
  labels:
    app.kubernetes.io/part-of: mizarmp
spec:
HEADER
  # rules.yml's own header comment stays there; the groups are indented under spec.
  sed -n '/^groups:/,$p' "$HERE/rules.yml" | sed 's/^./  &/'
}

case ${1:-} in
  "") render >"$HERE/prometheusrule.yaml" ;;
  --check)
    if ! diff -u "$HERE/prometheusrule.yaml" <(render); then
      echo "prometheusrule.yaml is not rules.yml's: run deploy/monitoring/make-prometheusrule.sh"
      exit 1
    fi
    echo "ok: prometheusrule.yaml holds rules.yml's groups"
    ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
