#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The Debian packages under a booted systemd: what package_test.sh cannot see on a host whose
# PID 1 is not systemd. A Debian 12 root made by debootstrap from Debian's archive (systemd,
# dbus and the packages' run-time dependencies: the container has no network) boots with
# systemd as PID 1 under systemd-nspawn. In it:
#   1. the previous release's packages install, and mizarmp-addons@controller and @node start
#      and answer Probe; a fence is stored;
#   2. the upgrade to this build restarts both (their main PIDs change), and the fence is still
#      listed;
#   3. the node unit's privileges (capabilities, namespaces, address families, system calls) let
#      it put the fence set into a pod's network namespace;
#   4. `systemctl stop` ends both cleanly (result "success");
#   5. `apt-get purge` removes the programs, the units and the configuration.
# The previous release is this build packaged again with a lower version, as in package_test.sh.
#
#   tests/package/booted_test.sh BUILD_DIR VERSION
#
# The root is made once per set of dependencies and kept as a tarball under
# $MIZARMP_TEST_CACHE (default /var/cache/mizarmp-tests): about 5 minutes the first time, seconds
# after. Needs root, debootstrap, systemd-nspawn and cpack: without them it prints why and exits
# 77 (ctest: skipped), except under CI=true where that is a failure.
set -uo pipefail

BUILD_DIR=${1:?usage: $0 BUILD_DIR VERSION}
VERSION=${2:?usage: $0 BUILD_DIR VERSION}
CACHE=${MIZARMP_TEST_CACHE:-/var/cache/mizarmp-tests}
UNITS=(mizarmp-addons@controller mizarmp-addons@node)
CONTROLLER=unix:///run/mizarmp/controller/csi-addons.sock

WORK=""
NSPAWN_PID=""
LEADER=""
TEST_NAME="booted systemd test"
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

log() { echo "booted: $*"; }
fail() {
  echo "FAIL: $*"
  if [[ -n "$LEADER" ]]; then
    echo "----- the container's journal (last 40 lines) -----"
    inside journalctl --no-pager -n 40 2>&1
  fi
  local f
  for f in "$WORK"/*.log; do
    [[ -s "$f" ]] || continue
    echo "----- $(basename "$f") (last 20 lines) -----"
    tail -n 20 "$f"
  done
  echo "booted systemd test: $PASSED passed, 1 failed"
  exit 1
}

# A command in every namespace of the booted container.
inside() { nsenter -t "$LEADER" -a "$@"; }
# apt-get in the container: it has no network, so every dependency is in the root already.
inside_apt() { inside env DEBIAN_FRONTEND=noninteractive apt-get -q -y "$@"; }
main_pid() { inside systemctl show -p MainPID --value "$1"; }
# The container's paths of the .debs in its /debs/DIR (expanded on the host, which has no /debs).
debs_in() {
  local deb
  for deb in "$WORK/root/debs/$1"/*.deb; do echo "${deb#"$WORK/root"}"; done
}

cleanup() {
  local rc=$?
  # nspawn asks the container's systemd to power off on SIGTERM.
  [[ -n "$NSPAWN_PID" ]] && stop_process "$NSPAWN_PID"
  [[ -n "$WORK" ]] && rm -rf "$WORK"
  exit "$rc"
}

# The first URI of the host's Debian archive, as apt is configured (deb822 or one-line form).
debian_mirror() {
  local uri
  uri=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
    head -n1)
  [[ -z "$uri" ]] && uri=$(sed -n 's/^deb \+\(http[^ ]*\/debian\) .*/\1/p' /etc/apt/sources.list 2>/dev/null |
    head -n1)
  echo "${uri:-http://deb.debian.org/debian}"
}

# The root's tarball for these packages' dependencies (its path on stdout): made once, then
# reused.
root_tarball() {
  local includes=$1 key tarball made
  key=$(echo "$includes" | sha256sum | cut -c1-16)
  tarball="$CACHE/bookworm-systemd-$key.tar"
  if [[ ! -f "$tarball" ]]; then
    log "debootstrap of a Debian 12 root with $includes (once; cached as $tarball)" >&2
    made="$WORK/made-root"
    # The archive can fail a download now and then (a mirror mid-sync): three tries.
    local try
    for try in 1 2 3; do
      rm -rf "$made"
      debootstrap --variant=minbase --include="$includes" bookworm "$made" "$(debian_mirror)" \
        >"$WORK/debootstrap.log" 2>&1 && break
      [[ $try == 3 ]] && fail "debootstrap (3 tries)"
      log "debootstrap failed (try $try): $(tail -n 1 "$WORK/debootstrap.log")" >&2
    done
    [[ -d "$CACHE" ]] || mkdir -m 0700 "$CACHE" || fail "cannot make $CACHE"
    tar -C "$made" -cf "$tarball.tmp" . || fail "cannot keep $tarball"
    mv "$tarball.tmp" "$tarball" || fail "cannot keep $tarball"
    rm -rf "$made"
  fi
  echo "$tarball"
}

# --- capability -------------------------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || cannot_run "needs root"
for tool in debootstrap systemd-nspawn nsenter cpack dpkg-deb; do
  command -v "$tool" >/dev/null 2>&1 || cannot_run "'$tool' is not installed"
done
[[ -f "$BUILD_DIR/CPackConfig.cmake" ]] || fail "$BUILD_DIR has no CPackConfig.cmake (build it first)"
WORK=$(mktemp -d /var/tmp/mizarmp-booted.XXXXXX)
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the packages and the root ------------------------------------------------------------------
PREV_VERSION="${VERSION}~prev1"
log "cpack: $VERSION and $PREV_VERSION"
cpack --config "$BUILD_DIR/CPackConfig.cmake" -B "$WORK/debs" >"$WORK/cpack.log" 2>&1 || fail "cpack"
cpack --config "$BUILD_DIR/CPackConfig.cmake" -B "$WORK/prev-debs" \
  -D "CPACK_PACKAGE_VERSION=$PREV_VERSION" -D "CPACK_DEBIAN_PACKAGE_VERSION=$PREV_VERSION" \
  >"$WORK/cpack-prev.log" 2>&1 || fail "cpack of the previous release"
addons_deb=("$WORK"/debs/mizarmp-addons_*.deb)
[[ -f "${addons_deb[0]}" ]] || fail "cpack made no mizarmp-addons package"
deps=$(dpkg-deb -f "${addons_deb[0]}" Depends | tr ',' '\n' | sed -E 's/\(.*\)//; s/[[:space:]]//g' |
  grep -v '^$' | sort -u | paste -sd, -)
tarball=$(root_tarball "systemd,systemd-sysv,dbus,nftables,iproute2,$deps") || exit 1
mkdir "$WORK/root" || fail "cannot make $WORK/root"
tar -C "$WORK/root" -xf "$tarball" || fail "cannot unpack $tarball"
mkdir "$WORK/root/debs" || fail "cannot make the root's /debs"
cp -r "$WORK/debs" "$WORK/prev-debs" "$WORK/root/debs/" || fail "cannot copy the packages into the root"

# --- boot -----------------------------------------------------------------------------------------
# The host has no system bus: --register=no --keep-unit keep nspawn from asking machined for one.
log "systemd-nspawn --boot"
systemd-nspawn -D "$WORK/root" --boot --register=no --keep-unit --private-network --console=pipe \
  >"$WORK/console.log" 2>&1 &
NSPAWN_PID=$!
for ((i = 0; i < 600; i++)); do
  kill -0 "$NSPAWN_PID" 2>/dev/null || fail "systemd-nspawn exited"
  LEADER=$(pgrep -P "$NSPAWN_PID" -x systemd | head -n1)
  [[ -n "$LEADER" ]] && break
  sleep 0.1
done
[[ -n "$LEADER" ]] || fail "no systemd in the container after 60 s"
# Its manager answers once its private socket is up; then --wait blocks until the boot is done.
for ((i = 0; i < 600; i++)); do
  inside test -S /run/systemd/private && break
  sleep 0.1
done
state=$(timeout 120 nsenter -t "$LEADER" -a systemctl is-system-running --wait 2>&1)
[[ "$state" == running ]] ||
  fail "the container's systemd is '$state': $(inside systemctl --failed --no-legend 2>&1)"
pass "systemd is PID 1 in the container and running, with no failed unit"

# --- 1. install the previous release, start, Probe, a fence ---------------------------------------
mapfile -t prev_debs < <(debs_in prev-debs)
inside_apt install "${prev_debs[@]}" >"$WORK/install-prev.log" 2>&1 || fail "installing $PREV_VERSION"
inside systemctl start "${UNITS[@]}" || fail "systemctl start ${UNITS[*]}"
for unit in "${UNITS[@]}"; do
  [[ $(inside systemctl is-active "$unit") == active ]] || fail "$unit is not active"
done
pass "${UNITS[*]} started"
for mode in controller node; do
  probe=""
  for ((i = 0; i < 100; i++)); do
    probe=$(inside mizarmpctl probe --endpoint "unix:///run/mizarmp/$mode/csi-addons.sock" -o json 2>&1)
    [[ "$probe" == *'"ready"'* ]] && break
    sleep 0.1
  done
  [[ "$probe" == *'"ready"'* ]] || fail "the $mode's Probe: $probe"
  pass "the $mode answers Probe"
done
# Mizar-MP is not there: the fence is stored, and the answer says so.
fenced=$(inside mizarmpctl fence 10.99.0.0/24 --endpoint "$CONTROLLER" 2>&1)
[[ "$fenced" == *"is stored"* ]] || fail "fence: $fenced"
pass "a fence is stored"

# --- 2. the upgrade restarts both; the fence stays ------------------------------------------------
declare -A before=()
for unit in "${UNITS[@]}"; do before[$unit]=$(main_pid "$unit"); done
mapfile -t debs < <(debs_in debs)
inside_apt install "${debs[@]}" >"$WORK/install.log" 2>&1 || fail "upgrading to $VERSION"
for unit in "${UNITS[@]}"; do
  after=$(main_pid "$unit")
  [[ $(inside systemctl is-active "$unit") == active && "$after" != 0 && "$after" != "${before[$unit]}" ]] ||
    fail "$unit after the upgrade: $(inside systemctl is-active "$unit"), PID ${before[$unit]} -> $after"
  pass "the upgrade restarted $unit (PID ${before[$unit]} -> $after)"
done
listed=$(inside mizarmpctl fences --endpoint "$CONTROLLER" 2>&1)
[[ "$listed" == *"10.99.0.0/24"* ]] || fail "the fence after the upgrade: $listed"
pass "the fence survived the upgrade"

# --- 3. the node unit's privileges are enough for the fence set -----------------------------------
# As the agent does for each pod (fence/pod_filters.h): enter a network namespace and put a table
# there, under the node unit's own restrictions.
unit_property() { inside systemctl show -p "$1" --value mizarmp-addons@node; }
caps=$(unit_property CapabilityBoundingSet)
inside ip netns add mzunitprobe || fail "ip netns add"
inside systemd-run --quiet --wait --pipe -p CapabilityBoundingSet="$caps" -p NoNewPrivileges=yes \
  -p RestrictNamespaces="$(unit_property RestrictNamespaces)" \
  -p RestrictAddressFamilies="$(unit_property RestrictAddressFamilies)" \
  -p SystemCallFilter=@system-service -p SystemCallErrorNumber=EPERM \
  nsenter --net=/run/netns/mzunitprobe nft -f - <<<'add table inet mizarmp_unit_probe
delete table inet mizarmp_unit_probe' >"$WORK/nft.log" 2>&1 ||
  fail "a pod's nftables under the node unit's privileges ($caps): $(cat "$WORK/nft.log")"
inside ip netns delete mzunitprobe
pass "the node unit's privileges ($caps) put a table into a pod's namespace"

# --- 4. stop ---------------------------------------------------------------------------------------
inside systemctl stop "${UNITS[@]}" || fail "systemctl stop"
for unit in "${UNITS[@]}"; do
  result=$(inside systemctl show -p Result --value "$unit")
  [[ "$result" == success && $(inside systemctl is-active "$unit") != active ]] ||
    fail "$unit after stop: result $result"
done
pass "systemctl stop ended both cleanly"

# --- 5. purge --------------------------------------------------------------------------------------
inside_apt purge mizarmp-addons mizarmp >"$WORK/purge.log" 2>&1 || fail "apt-get purge"
for path in /usr/bin/mizarmp-addons /usr/bin/mizarmpctl /opt/cni/bin/mizarmp \
  /lib/systemd/system/mizarmp-addons@.service /etc/mizarmp/mizarmp-addons-controller.json \
  /etc/mizarmp/mizarmp-addons-node.json; do
  [[ ! -e "$WORK/root$path" ]] || fail "purge left $path"
done
[[ $(inside systemctl show -p LoadState --value mizarmp-addons@controller) == not-found ]] ||
  fail "the unit is still known after the purge"
pass "purge removed the programs, the units and the configuration"

echo "booted systemd test: $PASSED passed, 0 failed"
