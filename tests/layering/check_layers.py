#!/usr/bin/env python3
"""Fails when a source file includes across the layering DESIGN.md draws.

Every product folder may include only from the folders listed for it below (and from itself);
third-party headers that belong to one concept may only be included where that concept lives.
Run from anywhere: check_layers.py [REPO_ROOT]. Prints each violation as
"file:line: <folder> must not include <what> (allowed: ...)" and exits 1 when there is one.
check_layers.py --self-test shows that the check catches each kind of violation.
"""
import os
import re
import sys
import tempfile

# folder -> the project folders its files may include from. "proto" stands for the generated
# gRPC headers (included by their .proto's path under proto/, e.g. "health.pb.h" or
# "fence/fence.grpc.pb.h": a generated header is proto's, whatever folder name it starts with).
ALLOWED = {
    "common": set(),
    "records": {"common"},
    "mizarmp-client": {"common"},
    "netns": {"common"},
    "ovsdb": {"common"},
    "relay": {"common", "mizarmp-client", "addons"},
    "cni": {"common", "records", "mizarmp-client", "netns", "ovsdb"},
    "install": {"common", "cni"},
    "mock-server": {"common", "mizarmp-client", "netns", "ovsdb"},
    "addons": {"common", "mizarmp-client", "proto"},
    "etcd": {"common", "proto"},
    "fence": {"common", "addons", "etcd", "records", "mizarmp-client", "proto"},
    "keyrotation": {"common", "addons", "proto"},
    "ctl": {"common", "cni", "records", "netns", "mizarmp-client", "addons", "proto"},
    "cmd/mizarmp": {"common", "cni"},
    "cmd/mizarmp-mock": {"common", "mock-server"},
    "cmd/mizarmp-install": {"common", "install"},
    "cmd/mizarmpctl": {"common", "ctl", "addons"},
    "cmd/mizarmp-addons": {"common", "addons", "etcd", "fence", "keyrotation", "mizarmp-client", "proto",
                           "relay"},
}
# Tests and benchmarks may include any product folder, but of cmd/ only the addons server's
# composed config (its unit test); nothing else includes a program's main folder.
TEST_ALLOWED_CMD = {"cmd/mizarmp-addons/config.h"}

# Third-party headers that belong to one concept: only these folders (and tests/, bench/) may
# include them.
LIBRARY_OWNERS = [
    (re.compile(r"^(netlink|linux/rtnetlink)"), {"netns"}),
    (re.compile(r"^httplib\.h$"), {"mock-server"}),
    (re.compile(r"^boost/"), {"mizarmp-client", "relay"}),
    (re.compile(r"^sqlite3\.h$"), {"fence"}),
    (re.compile(r"^simdjson\.h$"), {"mizarmp-client"}),
    (re.compile(r"^libcryptsetup\.h$"), {"keyrotation"}),
    (re.compile(r"^prometheus/"), {"addons", "fence", "relay"}),
    (re.compile(r"^grpcpp/"), {"addons", "etcd", "fence", "keyrotation", "ctl", "cmd/mizarmp-addons"}),
    # abseil comes with gRPC; only the server's main() sets it up (its deadlock detector).
    (re.compile(r"^absl/"), {"cmd/mizarmp-addons"}),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_SUFFIXES = (".h", ".cc")


def folder_of(rel_path):
    """The layer a repository-relative path belongs to, or None for files outside the map."""
    parts = rel_path.split("/")
    if parts[0] == "cmd" and len(parts) > 2:
        return "cmd/" + parts[1]
    if parts[0] in ALLOWED:
        return parts[0]
    if parts[0] in ("tests", "bench"):
        return parts[0]
    return None


def included_folder(target):
    if target.endswith(".pb.h"):
        return "proto"
    return folder_of(target)


def check_file(root, rel_path):
    layer = folder_of(rel_path)
    problems = []
    with open(os.path.join(root, rel_path), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            quoted, target = m.group(1) == '"', m.group(2)
            where = f"{rel_path}:{number}"
            if quoted:
                problems += check_project_include(where, layer, target)
            else:
                problems += check_library_include(where, layer, target)
    return problems


def check_project_include(where, layer, target):
    other = included_folder(target)
    if other is None or other == layer:
        return []
    if layer in ("tests", "bench"):
        if other.startswith("cmd/") and target not in TEST_ALLOWED_CMD:
            return [f"{where}: {layer} must not include {target} (a program's main folder)"]
        return []
    allowed = ALLOWED[layer]
    if other in allowed:
        return []
    return [f"{where}: {layer} must not include {target} "
            f"(allowed: {', '.join(sorted(allowed)) or 'nothing'})"]


def check_library_include(where, layer, target):
    if layer in ("tests", "bench"):
        return []
    for pattern, owners in LIBRARY_OWNERS:
        if pattern.search(target) and layer not in owners:
            return [f"{where}: {layer} must not include <{target}> "
                    f"(only {', '.join(sorted(owners))})"]
    return []


def source_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
        for name in filenames:
            if name.endswith(SOURCE_SUFFIXES):
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                if folder_of(rel) is not None:
                    yield rel


def self_test():
    """A tree with one violation of each kind, and one allowed include of each kind."""
    files = {
        "fence/bad.cc": '#include "cni/plugin.h"\n#include "addons/service.h"\n',
        "keyrotation/bad.cc": "#include <sqlite3.h>\n#include <libcryptsetup.h>\n",
        "common/bad.h": '#include "records/records.h"\n',
        # A generated header under a folder named like a layer is proto's, not that layer's.
        "addons/ok.cc": '#include "fence/fence.grpc.pb.h"\n#include "identity/identity.pb.h"\n',
        "records/bad.cc": '#include "identity/identity.pb.h"\n',
        "tests/unit/bad_test.cc": '#include "cmd/mizarmp-addons/main.cc"\n'
                                  '#include "cmd/mizarmp-addons/config.h"\n',
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        found = [p for rel in sorted(source_files(root)) for p in check_file(root, rel)]
    expected = ["common/bad.h:1:", "fence/bad.cc:1:", "keyrotation/bad.cc:1:",
                "records/bad.cc:1:", "tests/unit/bad_test.cc:1:"]
    got = [p.split(" ")[0] for p in found]
    if got != expected:
        print("self-test FAILED: expected", expected, "got:", *found, sep="\n  ")
        return 1
    print(f"check_layers self-test: {len(found)} violations found, as planted")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    files = sorted(source_files(root))
    problems = [p for rel in files for p in check_file(root, rel)]
    for p in problems:
        print(p)
    print(f"check_layers: {len(files)} files, {len(problems)} forbidden include(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
