#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The Debian packages as an operator uses them: built by cpack, lintian-clean (no error or warning
# but those the packages' overrides give a reason for), installed with apt-get, every file
# where README.md "Install" says, the unit accepted by systemd-analyze, the installed server
# answering Probe with the installed config, the installed plugin doing ADD/DEL through podman,
# then `apt-get purge` leaving nothing of ours but what an operator must keep; last, an upgrade
# from the previous release keeping an operator's config edit and the fences.
#
# The "previous release" is not built from an earlier commit: compiling one would not fit in
# CI's time. It is this build packaged a second time by cpack with a lower version, VERSION~prev1
# (dpkg orders "~" before the end of a version). So the upgrade checks what dpkg and the
# maintainer scripts do on an upgrade (conffiles, state, postinst's `configure OLD-VERSION`),
# not how this release's programs take an earlier release's files (tests/upgrade's fixtures
# check that for the fence store). Only this release's packages are linted: the previous
# release's stand for packages already shipped, which no change here can fix (their changelog
# entry even still names VERSION).
#
#   tests/package/package_test.sh BUILD_DIR VERSION PYTHON
#
# BUILD_DIR is a built normal build (its CPackConfig.cmake and bin/mizarmp-mock), VERSION the
# package version cpack must give both packages, PYTHON a python3 with grpcio and grpc_tools.
# Needs root, podman, apt-get and lintian: without them it prints why and exits 77 (ctest: skipped),
# except under CI=true where that is a failure. It refuses to run (same way) when either package
# is already installed: purging it would remove an operator's installation. Whatever happens, the
# trap purges what it installed and leaves the system paths as it found them.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../e2e/podman_env.sh
source "$ROOT/tests/e2e/podman_env.sh"
TEST_NAME="package test"
# shellcheck source=lib.sh
source "$HERE/lib.sh"

BUILD_DIR=${1:?usage: $0 BUILD_DIR VERSION PYTHON}
VERSION=${2:?usage: $0 BUILD_DIR VERSION PYTHON}
PYTHON=${3:?usage: $0 BUILD_DIR VERSION PYTHON}
PACKAGES=(mizarmp mizarmp-addons)

# Every file the packages install, as README.md "Install" lists them (directories aside).
PLUGIN_FILES=(
  /opt/cni/bin/mizarmp
  /usr/share/doc/mizarmp/examples/mizarmp.conf
  /usr/share/doc/mizarmp/examples/mizarmp.conflist
  /usr/lib/tmpfiles.d/mizarmp.conf
  /etc/logrotate.d/mizarmp
  /usr/share/doc/mizarmp/copyright
  /usr/share/doc/mizarmp/changelog.gz
  /usr/share/lintian/overrides/mizarmp
)
ADDONS_FILES=(
  /usr/bin/mizarmp-addons
  /usr/bin/mizarmpctl
  /etc/mizarmp/mizarmp-addons-controller.json
  /etc/mizarmp/mizarmp-addons-node.json
  /lib/systemd/system/mizarmp-addons@.service
  /lib/systemd/system/mizarmp-addons@node.service.d/node.conf
  /usr/lib/tmpfiles.d/mizarmp-addons.conf
  /etc/logrotate.d/mizarmp-addons
  /usr/share/man/man8/mizarmp-addons.8.gz
  /usr/share/man/man8/mizarmpctl.8.gz
  /usr/share/doc/mizarmp-addons/copyright
  /usr/share/doc/mizarmp-addons/changelog.gz
  /usr/share/lintian/overrides/mizarmp-addons
)
KEYS=/var/lib/mizarmp/keys
# System paths the packages or the installed server create; each is put back as it was.
SYSTEM_DIRS=(/etc/mizarmp /var/lib/mizarmp "$KEYS" /var/log/mizarmp /run/mizarmp /opt/cni)

WORK=""
NETNS=""
MOCK_PID=""
ADDONS_PID=""
LINTIAN_PID=""
PREV_CPACK_PID=""
INSTALLED=0
KEY_FILE=""
declare -A EXISTED=()

log() { echo "package: $*"; }

fail() {
  echo "FAIL: $*"
  local f
  for f in "$WORK"/*.log "$WORK"/*.err; do
    [[ -s "$f" ]] || continue
    echo "----- $(basename "$f") (last 30 lines) -----"
    tail -n 30 "$f"
  done
  echo "package test: $PASSED passed, 1 failed"
  exit 1
}


expect_eq() {
  [[ "$2" == "$3" ]] || fail "$1: got '$2', want '$3'"
  pass "$1 = $3"
}

apt_get() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 "$@"
}

installed_packages() {
  local p
  for p in "${PACKAGES[@]}"; do
    [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" == ?[ihUFWt]* ]] && echo "$p"
  done
}

# Puts the system directories back the way they were before the test: gone if they were absent
# (only when empty: nothing but ours is ever deleted; children first), there (0700) if they
# existed (parents first).
restore_system_dirs() {
  local i d
  for ((i = ${#SYSTEM_DIRS[@]} - 1; i >= 0; i--)); do
    d=${SYSTEM_DIRS[$i]}
    [[ -z "${EXISTED[$d]}" && -d "$d" ]] && rmdir "$d" 2>/dev/null
  done
  for d in "${SYSTEM_DIRS[@]}"; do
    [[ -n "${EXISTED[$d]}" && ! -d "$d" ]] && mkdir -m 0700 "$d"
  done
}

cleanup() {
  local rc=$?
  [[ -n "$ADDONS_PID" ]] && stop_process "$ADDONS_PID"
  [[ -n "$LINTIAN_PID" ]] && stop_process "$LINTIAN_PID"
  [[ -n "$PREV_CPACK_PID" ]] && stop_process "$PREV_CPACK_PID"
  mz_podman_cleanup
  [[ -n "$MOCK_PID" ]] && stop_process "$MOCK_PID"
  [[ -n "$NETNS" ]] && ip netns del "$NETNS" 2>/dev/null
  if ((INSTALLED)) && [[ -n "$(installed_packages)" ]]; then
    apt_get purge -y "${PACKAGES[@]}" >"$WORK/cleanup-purge.log" 2>&1
  fi
  [[ -n "$KEY_FILE" ]] && rm -f "$KEY_FILE"
  rm -f /run/mizarmp/{controller,node}/csi-addons.sock
  local d
  for d in /run/mizarmp/controller /run/mizarmp/node "$KEYS" /opt/cni/bin; do
    [[ -d "$d" ]] && rmdir "$d" 2>/dev/null
  done
  restore_system_dirs
  [[ -n "$WORK" ]] && rm -rf "$WORK"
  exit "$rc"
}

# --- capability -------------------------------------------------------------------------------
# One run at a time on this machine, whichever build dir it tests: the packages and the system
# paths are global. The lock is held on this script's own file, so nothing is left behind.
exec 9<"${BASH_SOURCE[0]}"
flock -w 300 9 || cannot_run "another run of this test held its lock for 5 minutes"
reason=$(mz_podman_unavailable_reason)
[[ -z "$reason" ]] || cannot_run "$reason"
for tool in apt-get dpkg-deb cpack lintian; do
  command -v "$tool" >/dev/null 2>&1 || cannot_run "'$tool' is not installed"
done
[[ -z "$(installed_packages)" ]] ||
  cannot_run "$(installed_packages | tr '\n' ' ')already installed: purging it would remove an operator's installation"
[[ -f "$BUILD_DIR/CPackConfig.cmake" && -x "$BUILD_DIR/bin/mizarmp-mock" ]] ||
  fail "$BUILD_DIR has no CPackConfig.cmake or bin/mizarmp-mock (build it first)"

for d in "${SYSTEM_DIRS[@]}"; do
  [[ -e "$d" ]] && EXISTED[$d]=1 || EXISTED[$d]=""
done
WORK=$(mktemp -d /tmp/mizarmp-pkg.XXXXXX)
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- 1. the packages ----------------------------------------------------------------------------
log "1. cpack into $WORK/debs"
cpack --config "$BUILD_DIR/CPackConfig.cmake" -B "$WORK/debs" >"$WORK/cpack.log" 2>&1 ||
  fail "cpack"
ARCH=$(dpkg --print-architecture)
for p in "${PACKAGES[@]}"; do
  deb="$WORK/debs/${p}_${VERSION}_${ARCH}.deb"
  [[ -f "$deb" ]] || fail "cpack made no $(basename "$deb"): $(ls "$WORK/debs")"
  expect_eq "$p: Version" "$(dpkg-deb -f "$deb" Version)" "$VERSION"
  log "$p: Depends: $(dpkg-deb -f "$deb" Depends)"
done
# dpkg orders builds by their commit count, whatever their hashes: the build before this one,
# and the first builds' "+g<commit>", are older even with the highest hash.
[[ "$VERSION" =~ ^([0-9.]+)\+git([0-9]+)\.[0-9a-f]+$ ]] || fail "version $VERSION is not R+gitN.COMMIT"
for older in "${BASH_REMATCH[1]}+git$((BASH_REMATCH[2] - 1)).ffffffffffff" "${BASH_REMATCH[1]}+gffffffffffff"; do
  dpkg --compare-versions "$older" lt "$VERSION" || fail "dpkg orders $older after $VERSION"
done
pass "dpkg orders earlier builds before $VERSION"
expect_eq "mizarmp-addons: Depends names libgrpc++" \
  "$(dpkg-deb -f "$WORK/debs/mizarmp-addons_${VERSION}_${ARCH}.deb" Depends | grep -o 'libgrpc++[0-9.]*' | head -n1 | cut -c1-9)" \
  "libgrpc++"
expect_eq "mizarmp-addons: conffiles" \
  "$(dpkg-deb --ctrl-tarfile "$WORK/debs/mizarmp-addons_${VERSION}_${ARCH}.deb" | tar -xO ./conffiles | sort | tr '\n' ' ')" \
  "/etc/logrotate.d/mizarmp-addons /etc/mizarmp/mizarmp-addons-controller.json /etc/mizarmp/mizarmp-addons-node.json "
expect_eq "mizarmp: conffiles" \
  "$(dpkg-deb --ctrl-tarfile "$WORK/debs/mizarmp_${VERSION}_${ARCH}.deb" | tar -xO ./conffiles)" \
  "/etc/logrotate.d/mizarmp"
# lintian reads the .deb files only: it runs while step 2 installs them, and is judged after.
lintian "$WORK"/debs/*.deb >"$WORK/lintian.log" 2>&1 &
LINTIAN_PID=$!
# The previous release's packages for step 7, made while steps 2 to 6 run, in a directory of
# their own (lintian reads debs/ only). cpack's -D wins over CPackConfig.cmake's version
# (cmake/packaging.cmake sets both variables).
PREV_VERSION="$VERSION~prev1"
cpack --config "$BUILD_DIR/CPackConfig.cmake" -B "$WORK/prev-debs" \
  -D "CPACK_PACKAGE_VERSION=$PREV_VERSION" -D "CPACK_DEBIAN_PACKAGE_VERSION=$PREV_VERSION" \
  >"$WORK/cpack-prev.log" 2>&1 &
PREV_CPACK_PID=$!

# expect_lintian_clean: no E: or W: line (an overridden tag prints none); lintian's own failure
# (a crash, an unreadable package) fails too.
expect_lintian_clean() {
  wait "$LINTIAN_PID"
  local rc=$?
  LINTIAN_PID=""
  local complaints
  complaints=$(grep -E '^[EW]: ' "$WORK/lintian.log")
  [[ -z "$complaints" ]] || fail "lintian:"$'\n'"$complaints"
  ((rc == 0)) || fail "lintian exited $rc: $(tail -n 5 "$WORK/lintian.log")"
  pass "lintian: no error or warning in either package"
}

# --- 2. install: every file where the README says, nothing else ---------------------------------
log "2. apt-get install"
INSTALLED=1
(cd "$WORK/debs" && apt_get install -y ./*.deb) >"$WORK/install.log" 2>&1 || fail "apt-get install"
listed_files() { dpkg -L "$1" | while read -r f; do [[ -f "$f" ]] && echo "$f"; done | sort; }
expect_eq "files of mizarmp" "$(listed_files mizarmp | tr '\n' ' ')" \
  "$(printf '%s\n' "${PLUGIN_FILES[@]}" | sort | tr '\n' ' ')"
expect_eq "files of mizarmp-addons" "$(listed_files mizarmp-addons | tr '\n' ' ')" \
  "$(printf '%s\n' "${ADDONS_FILES[@]}" | sort | tr '\n' ' ')"
expect_lintian_clean
# The manual pages are written from --help at build time: each names every flag --help does.
flags() { grep -oE -- '--[a-z][a-z-]*' | sort -u; }
for prog in mizarmp-addons mizarmpctl; do
  expect_eq "$prog: flags of --help missing from man $prog" \
    "$(comm -23 <("/usr/bin/$prog" --help | flags) <(MANWIDTH=200 man -P cat "$prog" | flags) | tr '\n' ' ')" ""
done
for f in /opt/cni/bin/mizarmp /usr/bin/mizarmp-addons /usr/bin/mizarmpctl; do
  [[ -x "$f" ]] || fail "$f is not executable"
done
expect_eq "mode of the server configs" \
  "$(stat -c %a /etc/mizarmp/mizarmp-addons-controller.json /etc/mizarmp/mizarmp-addons-node.json | sort -u)" 600
expect_eq "mode of /var/log/mizarmp (postinst's tmpfiles)" "$(stat -c %a /var/log/mizarmp)" 700
CNI_COMMAND=VERSION /opt/cni/bin/mizarmp </dev/null >"$WORK/version.out" 2>"$WORK/version.err" ||
  fail "the installed plugin's VERSION"
expect_eq "installed plugin: VERSION lists 1.0.0" \
  "$(mz_json '"1.0.0" in d["supportedVersions"]' <"$WORK/version.out")" true

# --- 3. the units -------------------------------------------------------------------------------
log "3. systemd-analyze verify"
if command -v systemd-analyze >/dev/null 2>&1; then
  # Each instance as a file of its own beside the node drop-in, in a scratch unit directory
  # (systemd-analyze adds the directory of the files it verifies to its search path).
  mkdir -p "$WORK/units"
  cp -r /lib/systemd/system/mizarmp-addons@node.service.d "$WORK/units/"
  for mode in controller node; do
    cp /lib/systemd/system/mizarmp-addons@.service "$WORK/units/mizarmp-addons@$mode.service"
    systemd-analyze verify "$WORK/units/mizarmp-addons@$mode.service" >"$WORK/verify-$mode.out" 2>&1
    verify_rc=$?
    cat "$WORK/verify-$mode.out"
    [[ $verify_rc -eq 0 && ! -s "$WORK/verify-$mode.out" ]] ||
      fail "systemd-analyze verify mizarmp-addons@$mode.service (rc $verify_rc)"
    pass "systemd-analyze verify mizarmp-addons@$mode.service: no complaint"
  done
else
  echo "SKIP (part): systemd-analyze is not installed (package systemd): units not verified"
fi

# --- 4. the installed server with the installed config answers Probe ---------------------------
log "4. mizarmp-mock and the installed mizarmp-addons"
SUFFIX=$(printf '%04x%04x' $(($$ & 0xffff)) $((RANDOM)))
NETNS="mzpkg-$SUFFIX"
ip netns add "$NETNS" || fail "ip netns add $NETNS"
ip -n "$NETNS" link set lo up
CIDR=10.247.0.0/24
GATEWAY=10.247.0.1
"$BUILD_DIR/bin/mizarmp-mock" --listen 127.0.0.1:0 --port-file "$WORK/mock.port" --agent \
  --bridge "mzpk$SUFFIX" --agent-netns "/run/netns/$NETNS" --cidr "$CIDR" --gateway "$GATEWAY" \
  --log-file "$WORK/mock.log" >"$WORK/mock.out" 2>"$WORK/mock.err" &
MOCK_PID=$!
mz_wait_for_file "$WORK/mock.port" 30 || fail "mizarmp-mock did not write its port file"
URL="http://127.0.0.1:$(cat "$WORK/mock.port")"

# The installed server's client: ask.py PYTHON_DIR STUBS_DIR ADDRESS COMMAND... prints one line
# per COMMAND: "probe" (Identity Probe until ready, 60 s at most: "ready", "not ready" or "no
# answer: CODE"), "fence=CIDR" (FenceClusterNetwork: "fenced"), "list" (ListClusterFence: the
# CIDRs). One process asks all of a server's questions: each process generates the stubs anew,
# which takes half a second.
cat >"$WORK/ask.py" <<'PYEOF'
import sys, time
sys.path.insert(0, sys.argv[1])
import grpc
import addons_client as ac
stubs = ac.generate_stubs(sys.argv[2])
address = sys.argv[3]


def probe():
    deadline = time.monotonic() + 60
    while True:
        # A new channel each try: one that found no socket yet would wait out gRPC's backoff.
        try:
            with grpc.insecure_channel(address) as ch:
                stub = stubs.identity_pb2_grpc.IdentityStub(ch)
                resp = stub.Probe(stubs.identity_pb2.ProbeRequest(), timeout=10)
                if resp.ready.value or time.monotonic() > deadline:
                    return "ready" if resp.ready.value else "not ready"
        except grpc.RpcError as err:
            if time.monotonic() > deadline:
                return f"no answer: {err.code()}"
        time.sleep(0.2)


def fence(cidr):
    with grpc.insecure_channel(address) as ch:
        stub = stubs.fence_pb2_grpc.FenceControllerStub(ch)
        stub.FenceClusterNetwork(stubs.fence_pb2.FenceClusterNetworkRequest(
            cidrs=[stubs.fence_pb2.CIDR(cidr=cidr)]), timeout=30)
    return "fenced"


def list_fences():
    with grpc.insecure_channel(address) as ch:
        stub = stubs.fence_pb2_grpc.FenceControllerStub(ch)
        listed = stub.ListClusterFence(stubs.fence_pb2.ListClusterFenceRequest(), timeout=30)
    return " ".join(c.cidr for c in listed.cidrs)


for command in sys.argv[4:]:
    name, _, argument = command.partition("=")
    if name == "probe":
        print(probe(), flush=True)
    elif name == "fence":
        print(fence(argument), flush=True)
    elif name == "list":
        print(list_fences(), flush=True)
    else:
        sys.exit(f"ask.py: unknown command {command!r}")
PYEOF

# start_installed_server MODE [FLAGS...]: the installed server with the installed config of
# MODE (and FLAGS), in the background.
start_installed_server() {
  local mode=$1
  shift
  /usr/bin/mizarmp-addons --config "/etc/mizarmp/mizarmp-addons-$mode.json" "$@" \
    >>"$WORK/addons-$mode.log" 2>&1 </dev/null &
  ADDONS_PID=$!
}

# ask_installed_server MODE COMMAND...: ask.py's answers over MODE's socket, in ANSWERS.
ANSWERS=()
ask_installed_server() {
  local mode=$1
  shift
  mapfile -t ANSWERS < <("$PYTHON" "$WORK/ask.py" "$ROOT/tests/python" "$WORK/stubs" \
    "unix:/run/mizarmp/$mode/csi-addons.sock" "$@" 2>"$WORK/ask-$mode.err")
}

# stop_installed_server MODE: SIGTERM, which must end it cleanly; its socket's directory goes.
stop_installed_server() {
  local mode=$1
  stop_process "$ADDONS_PID"
  ADDONS_PID=""
  expect_eq "$mode mode: the server's exit code after SIGTERM" "$STOPPED_RC" 0
  rmdir "/run/mizarmp/$mode" 2>/dev/null
}

# serve_and_probe MODE [FLAGS...]: the installed server with the installed config of MODE (and
# FLAGS) answers Probe ready, its socket's directory is private, and it exits cleanly.
serve_and_probe() {
  local mode=$1
  start_installed_server "$@"
  ask_installed_server "$mode" probe
  shift
  expect_eq "$mode mode: Probe of the installed server with the installed config $*" \
    "${ANSWERS[0]:-}" ready
  expect_eq "$mode mode: mode of the socket's directory" "$(stat -c %a "/run/mizarmp/$mode")" 700
  stop_installed_server "$mode"
}

# Only the controller URL differs from the installed configs.
serve_and_probe controller --mpurl "$URL"
serve_and_probe node
[[ -f /var/lib/mizarmp/fence.db ]] || fail "no fence store at /var/lib/mizarmp/fence.db"
pass "fence store at /var/lib/mizarmp/fence.db"

# --- 5. the installed plugin through podman ------------------------------------------------------
log "5. ADD/DEL through podman with /opt/cni/bin/mizarmp"
STATE="$WORK/state"
mkdir -p "$STATE" "$WORK/sync"
# Plugins only from /opt/cni/bin (ours) and /usr/lib/cni (portmap): the installed binary is
# the one podman runs.
mz_podman_init "$WORK" /opt/cni/bin /usr/lib/cni >"$WORK/podman-init.err" 2>&1 ||
  fail "podman setup / busybox image import"
NET=mizarmp
mz_write_conflist /usr/share/doc/mizarmp/examples/mizarmp.conflist \
  "$MZ_CNI_CONF_DIR/$NET.conflist" "$URL" "$STATE" "pkg-$SUFFIX" debug ||
  fail "the conflist from the installed example"
# Log where README.md says, which the packages' logrotate and purge know.
mz_python - "$MZ_CNI_CONF_DIR/$NET.conflist" <<'PYEOF' || fail "setting logFile"
import json, sys
with open(sys.argv[1]) as f:
    conf = json.load(f)
conf["plugins"][0]["logFile"] = "/var/log/mizarmp/mizarmp.log"
with open(sys.argv[1], "w") as f:
    json.dump(conf, f)
PYEOF
ports() { mz_http GET "$URL/project/3dda2801-d675-4688-a63f-dcda8d327f50/ports" | mz_json 'len(d["ports"])'; }
timeout 180 "$MZ_PODMAN" run --rm --name "pkg-$SUFFIX" --network "$NET" -v "$WORK/sync:/sync" \
  "$MZ_IMAGE" sh -c "ip -o -4 addr show dev eth0 > /sync/addr
    if ping -c 1 -W 3 $GATEWAY >/dev/null 2>&1; then echo ok; else echo failed; fi > /sync/ping" \
  >"$WORK/run.out" 2>"$WORK/run.err" || fail "podman run --rm"
ADDR=$(awk '{print $4}' "$WORK/sync/addr")
[[ "$ADDR" == 10.247.0.*/24 ]] || fail "the container's eth0: '$(cat "$WORK/sync/addr")'"
pass "ADD: the container's eth0 has $ADDR from $CIDR"
expect_eq "the container pings the gateway" "$(cat "$WORK/sync/ping")" ok
expect_eq "DEL: ports at the controller after the container left" "$(ports)" 0
expect_eq "DEL: attachment records left" "$(find "$STATE" -name '*.json' | wc -l)" 0
grep -q 'ADD' /var/log/mizarmp/mizarmp.log || fail "the plugin logged no ADD in /var/log/mizarmp/mizarmp.log"
expect_eq "mode of the plugin's log file" "$(stat -c %a /var/log/mizarmp/mizarmp.log)" 600

# --- 6. purge -----------------------------------------------------------------------------------
log "6. apt-get purge"
# A key store holding a key: the operator must keep it (the only copy of a LUKS passphrase).
[[ -d "$KEYS" ]] || mkdir -m 0700 "$KEYS"
KEY_FILE="$KEYS/mizarmp-package-test-$SUFFIX.json"
echo '{}' >"$KEY_FILE"
apt_get purge -y "${PACKAGES[@]}" >"$WORK/purge.log" 2>&1 || fail "apt-get purge"
INSTALLED=0
expect_eq "packages still known to dpkg" "$(installed_packages | wc -l)" 0
for f in "${PLUGIN_FILES[@]}" "${ADDONS_FILES[@]}" /var/lib/mizarmp/fence.db \
  /var/log/mizarmp/mizarmp.log; do
  [[ ! -e "$f" ]] || fail "$f is left after purge"
done
pass "no installed file, fence store or log file is left"
for d in /etc/mizarmp /var/log/mizarmp /opt/cni; do
  [[ -n "${EXISTED[$d]}" || ! -e "$d" ]] || fail "$d is left after purge: $(ls -A "$d")"
done
pass "/etc/mizarmp, /var/log/mizarmp and /opt/cni are gone (or were there before)"
[[ -f "$KEY_FILE" ]] || fail "purge removed a key store that holds a key"
grep -q 'keeping /var/lib/mizarmp/keys' "$WORK/purge.log" || fail "purge did not say it kept the key store"
pass "purge kept the key store holding a key, and said so"
left=$(ls -A /var/lib/mizarmp)
expect_eq "left in /var/lib/mizarmp" "$left" keys

# --- 7. upgrade from the previous release ------------------------------------------------------
log "7. the previous release ($PREV_VERSION), then apt-get install of $VERSION over it"
wait "$PREV_CPACK_PID"
prev_cpack_rc=$?
PREV_CPACK_PID=""
((prev_cpack_rc == 0)) || fail "cpack of the previous release exited $prev_cpack_rc"
for p in "${PACKAGES[@]}"; do
  deb="$WORK/prev-debs/${p}_${PREV_VERSION}_${ARCH}.deb"
  [[ -f "$deb" ]] || fail "cpack made no $(basename "$deb"): $(ls "$WORK/prev-debs")"
  expect_eq "$p (previous release): Version" "$(dpkg-deb -f "$deb" Version)" "$PREV_VERSION"
done
dpkg --compare-versions "$PREV_VERSION" lt "$VERSION" ||
  fail "dpkg does not order $PREV_VERSION before $VERSION"
pass "dpkg orders $PREV_VERSION before $VERSION"
INSTALLED=1
(cd "$WORK/prev-debs" && apt_get install -y ./*.deb) >"$WORK/install-prev.log" 2>&1 ||
  fail "apt-get install of the previous release"

# The edit README.md "Install" asks of an operator: the Mizar-MP controller's URL. With the
# shipped URL, where no Mizar-MP answers, the server is not ready, so a ready Probe after the
# upgrade shows the kept edit in use, not only in place.
CONTROLLER_CONF=/etc/mizarmp/mizarmp-addons-controller.json
sed -i "s|^\( *\"mpurl\": \)\"[^\"]*\"|\1\"$URL\"|" "$CONTROLLER_CONF"
grep -qF "\"mpurl\": \"$URL\"" "$CONTROLLER_CONF" || fail "the operator's edit of $CONTROLLER_CONF"
cp "$CONTROLLER_CONF" "$WORK/controller-edited.json"
FENCED=10.247.0.128/25
start_installed_server controller
ask_installed_server controller probe "fence=$FENCED" list
expect_eq "previous release, edited config: Probe" "${ANSWERS[0]:-}" ready
expect_eq "previous release: FenceClusterNetwork $FENCED" "${ANSWERS[1]:-}" fenced
expect_eq "previous release: ListClusterFence" "${ANSWERS[2]:-}" "$FENCED"
stop_installed_server controller
[[ -s /var/lib/mizarmp/fence.db ]] || fail "the previous release wrote no fence store"

# Non-interactive the way Debian's unattended-upgrades runs dpkg by default: without
# --force-confold or --force-confnew. With neither it does not answer dpkg's conffile question
# (an operator's edit of a file the new package also changes); it leaves such a package to be
# upgraded by hand. Here such a question fails the test: stdin is /dev/null, and dpkg stops
# with "end of file on stdin at conffile prompt". Both releases here ship the same conffile, so
# dpkg must keep the edit without asking. --debug=2 makes dpkg log each maintainer script's
# arguments.
(cd "$WORK/debs" && apt_get -o Dpkg::Options::=--debug=2 install -y ./*.deb) </dev/null \
  >"$WORK/upgrade.log" 2>&1 || fail "apt-get install of $VERSION over $PREV_VERSION"
# "The service keeps running" is checked only as far as a container without systemd as PID 1
# (`ps -p 1`) allows: no unit runs, and postinst skips its daemon-reload and try-restart (there
# is no /run/systemd/system), so nothing here shows that an instance running before the
# upgrade runs again after it. What is checked: every maintainer script succeeded (dpkg's
# status), postinst ran as an upgrade's (`configure OLD-VERSION`, the branch that restarts the
# running instances), and the upgraded server runs on the kept config and state.
for p in "${PACKAGES[@]}"; do
  expect_eq "$p after the upgrade: version and status" \
    "$(dpkg-query -W -f='${Version} ${Status}' "$p")" "$VERSION install ok installed"
  grep -qF "fork/exec /var/lib/dpkg/info/$p.postinst ( configure $PREV_VERSION )" \
    "$WORK/upgrade.log" || fail "$p: no 'postinst configure $PREV_VERSION' in the upgrade's log"
  pass "$p: postinst ran as 'configure $PREV_VERSION'"
done
diff "$WORK/controller-edited.json" "$CONTROLLER_CONF" >"$WORK/conffile-diff.out" ||
  fail "the upgrade changed the edited $CONTROLLER_CONF:"$'\n'"$(cat "$WORK/conffile-diff.out")"
pass "the upgrade kept the operator's edit of $CONTROLLER_CONF"
conffile_copies=$(find /etc/mizarmp /etc/logrotate.d -name '*mizarmp*.dpkg-*' | tr '\n' ' ')
expect_eq "dpkg's copies (.dpkg-new, -old, -dist) left beside our conffiles" "$conffile_copies" ""
[[ -s /var/lib/mizarmp/fence.db ]] || fail "the upgrade removed the fence store"
start_installed_server controller
ask_installed_server controller probe list
expect_eq "upgraded server, kept config: Probe" "${ANSWERS[0]:-}" ready
expect_eq "upgraded server, kept store: ListClusterFence" "${ANSWERS[1]:-}" "$FENCED"
stop_installed_server controller
apt_get purge -y "${PACKAGES[@]}" >"$WORK/purge-upgraded.log" 2>&1 ||
  fail "apt-get purge after the upgrade"
INSTALLED=0
expect_eq "packages still known to dpkg after the upgrade's purge" "$(installed_packages | wc -l)" 0

echo "package test: $PASSED passed, 0 failed"
