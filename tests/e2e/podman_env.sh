# shellcheck shell=bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Helpers shared by tests/e2e/podman_e2e.sh and scripts/demo.sh: an isolated podman (its own
# storage, run dir, tmp dir, containers.conf and CNI config dir, all under one temp dir, so the
# user's podman state is never touched), an offline busybox image, and small HTTP/JSON helpers.
# Source it; it defines functions and variables and sets no shell options.
#
# After mz_podman_init WORKDIR PLUGIN_DIR...:
#   MZ_PODMAN          an executable wrapper: podman with every flag listed below (and in
#                      docs/decisions/2026-11-24-real-runtimes-in-tests.md) plus the isolated
#                      storage (usable under `timeout`)
#   mz_podman ARGS...  the same as a function
#   MZ_CNI_CONF_DIR    where NAME.conflist files go (podman's --cni-config-dir)
#   MZ_IMAGE           the busybox image
#   mz_podman_cleanup  removes every container of this podman, unmounts and deletes its dir
#
# podman 4.3.1 on Debian 12 here (runc, cgroup v1, no systemd) needs:
# - --ulimit nofile/nproc (or default_ulimits): podman's default nofile is above the hard limit
#   and runc fails with "error setting rlimits for ready process: operation not permitted";
# - --cgroup-manager cgroupfs, --events-backend file (no systemd/journald);
# - --network-backend cni; CNI configs up to cniVersion 1.0.0;
# - cni_plugin_dirs in a containers.conf named by CONTAINERS_CONF to use build/bin without
#   installing (and /usr/lib/cni for portmap); --cni-config-dir for the network configs;
# - --root/--runroot/--tmpdir keep its state away from the user's podman. Still global:
#   libcni's result cache /var/lib/cni/results/<net>-<container id>-<ifname> (removed on DEL)
#   and the image blob-info cache under /var/lib/containers/cache;
# - the vfs storage driver: no overlay mounts to leak when a test is killed (the image is 2 MB);
# - the image holds busybox-static's binary: the dynamic busybox would find no libc in it;
# - cleanup uses `podman rm -a -f` and removes the directory (no `system reset`).

MZ_IMAGE="localhost/mizarmp-busybox:e2e"
MZ_PODMAN_DIR=""
MZ_CNI_CONF_DIR=""
MZ_PODMAN=""

# Prints why podman cannot run here, or nothing when it can.
mz_podman_unavailable_reason() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "not root (podman's CNI backend and network namespaces need root)"
    return
  fi
  local tool
  for tool in podman runc ip curl; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "'$tool' is not installed (scripts/install-deps.sh installs it)"
      return
    fi
  done
  if [[ -z "$(mz_busybox_path)" ]]; then
    echo "Debian's busybox-static is not installed (scripts/install-deps.sh installs it)"
    return
  fi
}

# The static busybox from the busybox-static package (the dynamic one from the `busybox` package
# would not run in an image that holds no libc).
mz_busybox_path() {
  local p
  p=$(dpkg-query -L busybox-static 2>/dev/null | grep -E '/bin/busybox$' | head -n1 || true)
  if [[ -n "$p" && -x "$p" ]]; then
    echo "$p"
  fi
}

# The python used for JSON parsing: the system one (only the standard library is used).
mz_python() {
  if [[ -x /usr/bin/python3 ]]; then
    /usr/bin/python3 "$@"
  else
    python3 "$@"
  fi
}

mz_podman() {
  "$MZ_PODMAN" "$@"
}

# mz_podman_init WORKDIR PLUGIN_DIR...: lays out WORKDIR/podman, writes the wrapper and
# containers.conf (plugins searched in the PLUGIN_DIRs), imports the busybox image.
mz_podman_init() {
  local workdir=$1
  shift
  MZ_PODMAN_DIR="$workdir/podman"
  MZ_CNI_CONF_DIR="$MZ_PODMAN_DIR/cni-conf"
  MZ_PODMAN="$MZ_PODMAN_DIR/podman"
  mkdir -p "$MZ_PODMAN_DIR"/{storage,run,tmp,image} "$MZ_CNI_CONF_DIR" || return 1

  local dirs="" d
  for d in "$@"; do
    dirs+="${dirs:+, }\"$d\""
  done
  # default_ulimits: podman's default nofile (1048576) is above the hard limit on these machines,
  # and runc then fails with "error setting rlimits for ready process: operation not permitted".
  cat >"$MZ_PODMAN_DIR/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
tmp_dir = "$MZ_PODMAN_DIR/tmp"

[network]
network_backend = "cni"
cni_plugin_dirs = [$dirs]
network_config_dir = "$MZ_CNI_CONF_DIR"
EOF

  {
    echo '#!/bin/sh'
    echo "# podman isolated under $MZ_PODMAN_DIR (see tests/e2e/podman_env.sh)"
    echo "CONTAINERS_CONF='$MZ_PODMAN_DIR/containers.conf' exec podman \\"
    echo "  --root '$MZ_PODMAN_DIR/storage' --runroot '$MZ_PODMAN_DIR/run' --storage-driver vfs \\"
    echo "  --tmpdir '$MZ_PODMAN_DIR/tmp' --events-backend file \\"
    echo "  --runtime runc --cgroup-manager cgroupfs --network-backend cni \\"
    echo "  --cni-config-dir '$MZ_CNI_CONF_DIR' \"\$@\""
  } >"$MZ_PODMAN"
  chmod +x "$MZ_PODMAN"

  # The image: /bin/busybox plus one symlink per applet (sh, ip, ping, sleep, ...).
  local busybox rootfs="$MZ_PODMAN_DIR/image/rootfs" applet
  busybox=$(mz_busybox_path)
  if [[ -z "$busybox" ]]; then
    echo "busybox-static is not installed" >&2
    return 1
  fi
  mkdir -p "$rootfs/bin" "$rootfs/tmp" || return 1
  cp "$busybox" "$rootfs/bin/busybox" || return 1
  for applet in $("$busybox" --list); do
    [[ "$applet" == busybox ]] || ln -sf busybox "$rootfs/bin/$applet"
  done
  tar -C "$rootfs" -cf "$MZ_PODMAN_DIR/image/busybox.tar" . || return 1
  mz_podman import --quiet "$MZ_PODMAN_DIR/image/busybox.tar" "$MZ_IMAGE" >/dev/null || return 1
}

# Removes every container of the isolated podman, then its whole directory. Safe to call twice.
mz_podman_cleanup() {
  [[ -n "$MZ_PODMAN_DIR" && -d "$MZ_PODMAN_DIR" ]] || return 0
  if [[ -x "$MZ_PODMAN" ]]; then
    timeout 120 "$MZ_PODMAN" rm -a -f -t 0 >/dev/null 2>&1 || true
  fi
  # Anything podman left mounted under the directory (shm, secrets), deepest first.
  local m
  for m in $(awk -v d="$MZ_PODMAN_DIR" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  rm -rf "$MZ_PODMAN_DIR"
  MZ_PODMAN_DIR=""
  MZ_PODMAN=""
}

# mz_install_by_image IMAGE HOST_DIR TEMPLATE HOST_ID: runs the installer image (scripts/images.sh)
# as the installer DaemonSet's init container does: HOST_DIR/opt/cni/bin and HOST_DIR/etc/cni/net.d
# mounted where the DaemonSet mounts the host's, TEMPLATE where its ConfigMap goes. Its output
# goes to stderr.
mz_install_by_image() {
  local image=$1 host=$2 template=$3 host_id=$4
  mkdir -p "$host/opt/cni/bin" "$host/etc/cni/net.d" || return 1
  mz_podman run --rm --network none \
    -v "$host/opt/cni/bin:/host/opt/cni/bin" -v "$host/etc/cni/net.d:/host/etc/cni/net.d" \
    -v "$template:/etc/mizarmp/10-mizarmp.conflist:ro" \
    "$image" install --from /opt/mizarmp/cni --bin-dir /host/opt/cni/bin \
    --conflist /etc/mizarmp/10-mizarmp.conflist --conf-dir /host/etc/cni/net.d --host-id "$host_id" >&2
}

# mz_write_conflist SRC DST MPURL STATE_DIR HOST_ID [LOG_LEVEL]: copies the conflist SRC to DST
# with the mizarmp plugin's mpurl, stateDir and hostId (and logLevel) replaced.
mz_write_conflist() {
  mz_python - "$@" <<'PYEOF'
import json, sys
src, dst, url, state, host = sys.argv[1:6]
level = sys.argv[6] if len(sys.argv) > 6 else ""
with open(src) as f:
    conf = json.load(f)
plugin = next(p for p in conf["plugins"] if p.get("type") == "mizarmp")
plugin["mpurl"] = url
plugin["stateDir"] = state
plugin["hostId"] = host
if level:
    plugin["logLevel"] = level
with open(dst, "w") as f:
    json.dump(conf, f, indent=2)
    f.write("\n")
PYEOF
}

# mz_http METHOD URL [BODY]: prints the body; fails on a transport error or a non-2xx status.
mz_http() {
  local method=$1 url=$2 body=${3:-}
  if [[ -n "$body" ]]; then
    curl -sS --fail-with-body --max-time 10 -X "$method" -H 'Content-Type: application/json' \
      --data "$body" "$url"
  else
    curl -sS --fail-with-body --max-time 10 -X "$method" "$url"
  fi
}

# mz_json EXPR < json: evaluates a python expression over the parsed document `d` and prints it
# (a list one item a line, None as nothing, booleans as true/false).
mz_json() {
  mz_python -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
if v is None:
    pass
elif isinstance(v, (list, tuple)):
    for x in v:
        print(x)
elif isinstance(v, bool):
    print("true" if v else "false")
else:
    print(v)
' "$1"
}

# mz_wait_for_file PATH SECONDS: waits until PATH exists and is not empty.
mz_wait_for_file() {
  local path=$1 deadline=$((SECONDS + $2))
  while [[ ! -s "$path" ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}
