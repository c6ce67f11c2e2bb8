#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Installs every Debian package the build, the tests and the demo need.
#
# Idempotent: when every package is already installed it runs no apt command at all, so a
# re-run takes well under a second. Otherwise, as root: one `apt-get update`, then one
# `apt-get install -y --no-install-recommends` of the missing packages. Any failure stops it.
set -euo pipefail

# What each group is for (Debian 12 names).
PACKAGES=(
  # toolchain (lld: links each ~100 MB test and server binary about five times faster than ld)
  build-essential cmake pkg-config git lld
  # libraries the C++ code links
  nlohmann-json3-dev libnl-3-dev libnl-route-3-dev libcpp-httplib-dev libboost-dev
  libssl-dev openssl libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libcryptsetup-dev libnftables-dev libsqlite3-dev prometheus-cpp-dev libsimdjson-dev
  # tests: googletest, LUKS tooling, an independent gRPC client
  libgtest-dev libgmock-dev cryptsetup-bin python3 python3-grpcio python3-grpc-tools
  # network namespaces, links and pings in tests and the demo
  iproute2 iputils-ping procps nftables
  # the etcd fence store's tests and benchmarks: a real etcd cluster on loopback and etcdctl
  etcd-server etcd-client
  # Open vSwitch for the ovsdb library's tests and the mock's OVS agent (tests/ovs.cmake):
  # ovsdb-server, ovs-vswitchd (userspace datapath), ovs-vsctl, ovsdb-tool and the schema
  openvswitch-switch
  # the podman end-to-end test and the demo: runtime, reference CNI plugins (portmap needs
  # iptables), the static busybox the offline test image is made of, curl for the controller
  podman runc conmon containernetworking-plugins iptables busybox-static curl ca-certificates
  # kubelet's path (tests/integration/cri_test.cc): containerd's CRI service runs the plugin
  containerd
  # deploy/'s offline validation (tests/deploy): node runs the validator, npm ci installs its
  # pinned packages from tests/deploy/package-lock.json (npm itself: see ensure_npm below)
  nodejs
  # the Debian packages and their test (tests/package): cpack's DEB generator finds binaries with
  # file and computes Depends with dpkg-shlibdeps (dpkg-dev); systemd-analyze verify and
  # systemd-tmpfiles (systemd)
  dpkg-dev file systemd
  # deploy/monitoring/'s tests (tests/monitoring.cmake): promtool checks and unit-tests the alert
  # rules and parses the dashboard's queries; the checker reads the rule files with PyYAML (on a
  # systemd host the package also starts prometheus.service on :9090, which no test needs)
  prometheus python3-yaml
  # lintian: the package test (tests/package) fails on any error or warning it reports on the
  # two .deb files (it pulls in man-db, whose `man` the test reads the manual pages with)
  lintian
  # the packages under a booted systemd (tests/package/booted_test.sh): a Debian 12 root from
  # the archive, booted by systemd-nspawn
  debootstrap systemd-container
  # the fuzz build (scripts/fuzz.sh): clang, and the compiler-rt runtimes -fsanitize=fuzzer,
  # address and undefined link (libFuzzer itself is in libclang-rt-14-dev; clang-14 only
  # recommends it, and recommends are not installed)
  clang-14 libclang-rt-14-dev
)

# Commands that may come from elsewhere on a machine, where the Debian package would conflict
# with what provides them, so they cannot simply be listed above; each installed only when the
# command is missing:
#   npm      comes inside NodeSource's nodejs package, and as a package of its own with Debian's
#   kubectl  deploy/'s validation renders the kustomization with it (tests/deploy); a machine
#            may have one of another origin (its package owns /usr/bin/kubectl), which serves
#            as well as Debian's kubernetes-client
apt_updated=false
ensure_command() {  # COMMAND DEBIAN_PACKAGE
  command -v "$1" >/dev/null && return 0
  echo "install-deps: no $1; installing Debian's $2"
  export DEBIAN_FRONTEND=noninteractive
  $apt_updated || apt-get update
  apt_updated=true
  apt-get install -y --no-install-recommends "$2"
}
ensure_commands() {
  ensure_command npm npm
  ensure_command kubectl kubernetes-client
}

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != ii* ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  ensure_commands
  exit 0
fi

echo "install-deps: missing ${#missing[@]} package(s): ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: ERROR: must run as root to install them (apt-get)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt_updated=true
apt-get install -y --no-install-recommends "${missing[@]}"

# Verify: apt-get can exit 0 yet leave a package half-configured.
still=()
for pkg in "${missing[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
  [[ "$status" == ii* ]] || still+=("$pkg")
done
if [[ ${#still[@]} -ne 0 ]]; then
  echo "install-deps: ERROR: still not installed after apt-get: ${still[*]}" >&2
  exit 1
fi
echo "install-deps: installed ${missing[*]}"
ensure_commands
