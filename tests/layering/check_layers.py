#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""Fails when a source file includes across the layering DESIGN.md draws, or DESIGN.md drifts.

Every product folder may include only from the folders listed for it below (and from itself);
third-party headers that belong to one concept may only be included where that concept lives.
Run from anywhere: check_layers.py [REPO_ROOT]. Prints each violation as
"file:line: <folder> must not include <what> (allowed: ...)" and exits 1 when there is one.

check_layers.py --check-design DESIGN.md holds DESIGN.md to the tables below, so the two cannot
drift: its "folder | may include" table must equal ALLOWED, its "library | headers | only in"
table must equal LIBRARY_OWNERS (the headers column showing each library's pattern), and its
"library | Debian package" table must name every library of LIBRARY_OWNERS, with packages
scripts/install-deps.sh installs. Each difference is printed naming its row; exit 1
when there is one. --print-design-tables prints the first two tables as DESIGN.md has them
(the descriptions left to write).

check_layers.py --self-test shows that both checks catch each kind of violation.
"""
import os
import re
import sys
import tempfile

# layer -> the layers its files may include from. A layer is a folder; a subfolder named here
# (fence/etcd, fence/service, keyrotation/service) is a layer of its own, which splits a
# folder's thin service and transports from its core. "proto" stands for the generated gRPC headers (included by their .proto's path under proto/, e.g.
# "health.pb.h" or "fence/fence.grpc.pb.h": a generated header is proto's, whatever folder name
# it starts with).
ALLOWED = {
    "common": set(),
    "records": {"common"},
    "mizarmp-client": {"common"},
    "netns": {"common"},
    "ovsdb": {"common"},
    "endpoint": {"common"},
    "relay": {"common", "mizarmp-client", "addons"},
    "cni": {"common", "records", "mizarmp-client", "netns", "ovsdb"},
    "install": {"common", "cni"},
    "mock-server": {"common", "mizarmp-client", "netns", "ovsdb"},
    "addons": {"common", "endpoint", "proto"},
    "etcd": {"common", "proto"},
    # The fence logic, which no transport reaches; its etcd backends and its service are apart.
    "fence": {"common", "mizarmp-client", "netns", "records"},
    "fence/etcd": {"common", "etcd", "fence", "records"},
    "fence/service": {"common", "addons", "endpoint", "fence", "fence/etcd", "mizarmp-client",
                      "proto", "records"},
    # The LUKS rotation logic, which no transport reaches; its gRPC service is apart.
    "keyrotation": {"common"},
    "keyrotation/service": {"common", "addons", "keyrotation", "proto"},
    "ctl": {"common", "cni", "records", "netns", "mizarmp-client", "endpoint", "proto"},
    "cmd/mizarmp": {"common", "cni"},
    "cmd/mizarmp-mock": {"common", "mock-server"},
    "cmd/mizarmp-install": {"common", "install"},
    "cmd/mizarmpctl": {"common", "ctl", "endpoint"},
    "cmd/mizarmp-addons": {"common", "addons", "endpoint", "etcd", "fence/service", "keyrotation",
                           "keyrotation/service", "mizarmp-client", "proto", "relay"},
}
# Tests and benchmarks may include any product folder, but of cmd/ only the addons server's
# composed config (its unit test); nothing else includes a program's main folder.
TEST_ALLOWED_CMD = {"cmd/mizarmp-addons/config.h"}

# Third-party headers that belong to one concept: only these folders (and tests/, bench/) may
# include them. Each library is named as DESIGN.md's tables name it.
LIBRARY_OWNERS = [
    ("libnl", re.compile(r"^(netlink|linux/rtnetlink)"), {"netns"}),
    ("cpp-httplib", re.compile(r"^httplib\.h$"), {"mock-server"}),
    ("Boost", re.compile(r"^boost/"), {"mizarmp-client", "relay"}),
    ("SQLite", re.compile(r"^sqlite3\.h$"), {"fence"}),
    ("libnftables", re.compile(r"^nftables/"), {"fence"}),
    ("simdjson", re.compile(r"^simdjson\.h$"), {"mizarmp-client"}),
    ("libcryptsetup", re.compile(r"^libcryptsetup\.h$"), {"keyrotation"}),
    ("prometheus-cpp", re.compile(r"^prometheus/"), {"addons", "fence/service", "relay"}),
    ("gRPC C++", re.compile(r"^grpcpp/"),
     {"addons", "etcd", "fence/service", "keyrotation/service", "ctl", "cmd/mizarmp-addons"}),
    # abseil comes with gRPC; only the server's main() sets it up (its deadlock detector).
    ("abseil", re.compile(r"^absl/"), {"cmd/mizarmp-addons"}),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_SUFFIXES = (".h", ".cc")


def folder_of(rel_path):
    """The layer a repository-relative path belongs to, or None for files outside the map."""
    parts = rel_path.split("/")
    if parts[0] == "cmd" and len(parts) > 2:
        return "cmd/" + parts[1]
    if len(parts) > 2 and "/".join(parts[:2]) in ALLOWED:
        return "/".join(parts[:2])
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
    for _, pattern, owners in LIBRARY_OWNERS:
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


# ---------------------------------------------------------------------------- DESIGN.md's tables

LAYERING_COLUMNS = ("folder", "may include")
OWNERS_COLUMNS = ("library", "headers", "only in")
PACKAGES_COLUMNS = ("library", "debian package")
IN_BACKTICKS = re.compile(r"`([^`]+)`")


def table_cells(line):
    """A table row's cells; "\\|" is a "|" inside a cell (as GitHub's Markdown reads it)."""
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", inner)]


def escaped_pipes(text):
    return text.replace("|", "\\|")


def is_table_line(line):
    return line.lstrip().startswith("|")


def markdown_tables(text):
    """Every table of a Markdown text: (header cells, rows), a row being (line number, cells)."""
    lines = text.splitlines()
    tables = []
    i = 0
    while i + 1 < len(lines):
        separator = table_cells(lines[i + 1])
        if is_table_line(lines[i]) and all(re.fullmatch(r":?-+:?", c) for c in separator):
            rows = []
            j = i + 2
            while j < len(lines) and is_table_line(lines[j]):
                rows.append((j + 1, table_cells(lines[j])))
                j += 1
            tables.append(([c.lower() for c in table_cells(lines[i])], rows))
            i = j
        else:
            i += 1
    return tables


def find_table(tables, columns):
    """The rows of the one table whose first header cells are `columns`, or None."""
    found = [rows for header, rows in tables if tuple(header[:len(columns)]) == columns]
    return found[0] if len(found) == 1 else None


def names_in(cell):
    """The backticked names of a cell; "nothing" is the empty list."""
    return [] if cell == "nothing" else IN_BACKTICKS.findall(cell)


def plain(cell):
    return cell.strip().strip("`")


def listed(names):
    return ", ".join(f"`{n}`" for n in sorted(names)) or "nothing"


def check_layering_table(rows):
    problems = []
    seen = {}
    for line, cells in rows:
        folders = names_in(cells[0])
        if len(folders) != 1 or len(cells) < 2:
            problems.append(f"DESIGN.md:{line}: a row of the layering table must name one folder "
                            "in backticks and what it may include")
            continue
        folder, may_include = folders[0], set(names_in(cells[1]))
        if folder in seen:
            problems.append(f"DESIGN.md:{line}: folder `{folder}` has a second row")
            continue
        seen[folder] = line
        if folder not in ALLOWED:
            problems.append(f"DESIGN.md:{line}: folder `{folder}` is not a layer of "
                            "check_layers.py's ALLOWED")
        elif may_include != ALLOWED[folder]:
            problems.append(
                f"DESIGN.md:{line}: `{folder}` may include {listed(may_include)} in DESIGN.md but "
                f"{listed(ALLOWED[folder])} in check_layers.py's ALLOWED (DESIGN.md lacks "
                f"{listed(ALLOWED[folder] - may_include)}, has beyond it "
                f"{listed(may_include - ALLOWED[folder])})")
    for folder in ALLOWED:
        if folder not in seen:
            problems.append(f"DESIGN.md: the layering table has no row for `{folder}` "
                            f"(check_layers.py's ALLOWED: may include {listed(ALLOWED[folder])})")
    return problems


def check_owners_table(rows):
    problems = []
    owners_of = {name: (pattern, owners) for name, pattern, owners in LIBRARY_OWNERS}
    seen = set()
    for line, cells in rows:
        if len(cells) < 3:
            problems.append(f"DESIGN.md:{line}: a row of the library table needs the library, "
                            "its headers and the folders it is only in")
            continue
        name, headers, owners = plain(cells[0]), plain(cells[1]), set(names_in(cells[2]))
        seen.add(name)
        if name not in owners_of:
            problems.append(f"DESIGN.md:{line}: library {name!r} is not in check_layers.py's "
                            "LIBRARY_OWNERS")
            continue
        pattern, expected = owners_of[name]
        if headers != pattern.pattern:
            problems.append(f"DESIGN.md:{line}: {name}'s headers are `{headers}` in DESIGN.md but "
                            f"`{pattern.pattern}` in check_layers.py's LIBRARY_OWNERS")
        if owners != expected:
            problems.append(f"DESIGN.md:{line}: {name} is only in {listed(owners)} in DESIGN.md "
                            f"but {listed(expected)} in check_layers.py's LIBRARY_OWNERS")
    for name, _, owners in LIBRARY_OWNERS:
        if name not in seen:
            problems.append(f"DESIGN.md: the library table has no row for {name} "
                            f"(check_layers.py's LIBRARY_OWNERS: only in {listed(owners)})")
    return problems


def installs(install_script, package):
    return re.search(r"(?<![\w.+-])" + re.escape(package) + r"(?![\w.+-])", install_script)


def check_packages_table(rows, install_script):
    problems = []
    named = set()
    for line, cells in rows:
        name, packages = plain(cells[0]), names_in(cells[1]) if len(cells) > 1 else []
        named.add(name)
        if not packages:
            problems.append(f"DESIGN.md:{line}: {name} names no Debian package in backticks")
        for package in packages:
            if not installs(install_script, package):
                problems.append(f"DESIGN.md:{line}: {name}'s package `{package}` is not installed "
                                "by scripts/install-deps.sh")
    for name, _, _ in LIBRARY_OWNERS:
        if name not in named:
            problems.append(f"DESIGN.md: the Debian package table has no row for {name}, a "
                            "library of check_layers.py's LIBRARY_OWNERS")
    return problems


# DESIGN.md stays a design a newcomer reads in one sitting; history goes to docs/decisions/.
DESIGN_MAX_BYTES = 25000


def check_design(design_text, install_script):
    """Every difference between DESIGN.md's tables and this file's, one line each, and its size."""
    tables = markdown_tables(design_text)
    checks = [(LAYERING_COLUMNS, check_layering_table),
              (OWNERS_COLUMNS, check_owners_table),
              (PACKAGES_COLUMNS, lambda rows: check_packages_table(rows, install_script))]
    problems = []
    for columns, check in checks:
        rows = find_table(tables, columns)
        if rows is None:
            problems.append("DESIGN.md: no (or more than one) table headed "
                            f"| {' | '.join(columns)} |")
        else:
            problems += check(rows)
    size = len(design_text.encode("utf-8"))
    if size > DESIGN_MAX_BYTES:
        problems.append(f"DESIGN.md: {size} bytes, over the {DESIGN_MAX_BYTES} it may hold (move "
                        "history to docs/decisions/ and figures to bench/RESULTS.md)")
    return problems


def design_tables():
    """The layering and library tables as DESIGN.md has them, "what it is" left empty."""
    lines = ["| folder | may include | what it is |", "| --- | --- | --- |"]
    lines += [f"| `{folder}` | {listed(allowed)} | |"
              for folder, allowed in ALLOWED.items()]
    lines += ["", "| library | headers | only in |", "| --- | --- | --- |"]
    lines += [f"| {name} | `{escaped_pipes(pattern.pattern)}` | {listed(owners)} |"
              for name, pattern, owners in LIBRARY_OWNERS]
    return "\n".join(lines) + "\n"


def run_design_check(design_path):
    root = os.path.dirname(os.path.abspath(design_path))
    with open(design_path, encoding="utf-8") as f:
        design_text = f.read()
    with open(os.path.join(root, "scripts", "install-deps.sh"), encoding="utf-8") as f:
        install_script = f.read()
    problems = check_design(design_text, install_script)
    for p in problems:
        print(p)
    print(f"check_layers --check-design: {len(problems)} difference(s) between {design_path} "
          "and check_layers.py")
    return 1 if problems else 0


# ------------------------------------------------------------------------------------ self-test

def self_test_includes():
    """A tree with one violation of each kind, and one allowed include of each kind."""
    files = {
        "fence/bad.cc": '#include "cni/plugin.h"\n#include "addons/service.h"\n',
        "keyrotation/bad.cc": "#include <sqlite3.h>\n#include <libcryptsetup.h>\n",
        # The core must not reach its service, nor the service's transport; the service may
        # include the core.
        "keyrotation/core_bad.cc": '#include "keyrotation/service/rotation_service.h"\n'
                                   '#include <grpcpp/grpcpp.h>\n',
        "keyrotation/service/rotation_service.cc": '#include "keyrotation/rotator.h"\n'
                                                   '#include <grpcpp/grpcpp.h>\n',
        # The fence core reaches neither its service, nor gRPC, protobuf or Prometheus; its
        # etcd backends do not reach the service; the service may include all of them.
        "fence/plan.cc": '#include "fence/service/fence_service.h"\n#include <grpcpp/grpcpp.h>\n'
                         '#include "fence/fence.pb.h"\n#include <prometheus/counter.h>\n'
                         '#include "fence/cidrset.h"\n',
        "fence/etcd/store.cc": '#include "fence/service/publisher.h"\n#include "etcd/client.h"\n'
                               '#include "fence/store.h"\n',
        "fence/service/publisher.cc": '#include "fence/plan.h"\n#include "fence/etcd/backends.h"\n'
                              '#include <grpcpp/grpcpp.h>\n#include <prometheus/counter.h>\n',
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
    expected = ["common/bad.h:1:", "fence/bad.cc:1:", "fence/bad.cc:2:", "fence/etcd/store.cc:1:",
                "fence/plan.cc:1:", "fence/plan.cc:2:", "fence/plan.cc:3:", "fence/plan.cc:4:",
                "keyrotation/bad.cc:1:",
                "keyrotation/core_bad.cc:1:", "keyrotation/core_bad.cc:2:",
                "records/bad.cc:1:", "tests/unit/bad_test.cc:1:"]
    got = [p.split(" ")[0] for p in found]
    if got != expected:
        print("self-test FAILED: expected", expected, "got:", *found, sep="\n  ")
        return 1
    print(f"check_layers self-test: {len(found)} violations found, as planted")
    return 0


def faithful_design():
    """A DESIGN.md whose tables agree with this file, and the install script it names."""
    packages = "| library | Debian package | why |\n| --- | --- | --- |\n" + "".join(
        f"| {name} | `lib{i}-dev` | |\n" for i, (name, _, _) in enumerate(LIBRARY_OWNERS))
    install_script = " ".join(f"lib{i}-dev" for i in range(len(LIBRARY_OWNERS)))
    return "# design\n\n" + design_tables() + "\n" + packages, install_script


def self_test_design():
    """A faithful DESIGN.md passes; each planted drift is reported, naming what drifted."""
    text, script = faithful_design()
    if check_design(text, script):
        print("self-test FAILED: a faithful DESIGN.md was refused:",
              *check_design(text, script), sep="\n  ")
        return 1
    drifts = {
        "a folder lost an arrow": (
            text.replace("| `cni` | `common`, `mizarmp-client`, `netns`, `ovsdb`, `records` |",
                         "| `cni` | `common`, `mizarmp-client`, `netns`, `records` |"),
            script, "`cni` may include"),
        "a folder gained an arrow": (
            text.replace("| `records` | `common` |", "| `records` | `common`, `cni` |"),
            script, "has beyond it `cni`"),
        "a layer missing": (
            re.sub(r"\| `etcd` \|[^\n]*\n", "", text), script, "no row for `etcd`"),
        "a layer invented": (
            text.replace("| `common` | nothing | |", "| `common` | nothing | |\n"
                                                   "| `util` | `common` | |"),
            script, "folder `util` is not a layer"),
        "a library in one folder too few": (
            text.replace("`mizarmp-client`, `relay` |", "`mizarmp-client` |", 1),
            script, "Boost is only in `mizarmp-client` in DESIGN.md"),
        "a header pattern changed": (
            text.replace("`^boost/`", "`^boost/beast/`"), script, "Boost's headers"),
        "a library without its Debian package": (
            re.sub(r"\| abseil \| `lib\d+-dev` \| \|\n", "", text), script,
            "Debian package table has no row for abseil"),
        "a package install-deps.sh lacks": (
            text, script.replace("lib0-dev", ""), "`lib0-dev` is not installed"),
        "a design grown past its size": (
            text + "x" * DESIGN_MAX_BYTES, script, "over the 25000 it may hold"),
        "the layering table gone": (
            text.replace("| folder | may include |", "| dir | may include |"), script,
            "no (or more than one) table headed | folder | may include |"),
    }
    failed = 0
    for what, (drifted, drifted_script, expected) in drifts.items():
        found = check_design(drifted, drifted_script)
        if not any(expected in p for p in found):
            print(f"self-test FAILED: {what}: expected a line with {expected!r}, got:", *found,
                  sep="\n  ")
            failed += 1
    if failed:
        return 1
    print(f"check_layers self-test: {len(drifts)} drifted DESIGN.md tables refused, as planted")
    return 0


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test_includes() or self_test_design()
    if len(args) == 2 and args[0] == "--check-design":
        return run_design_check(args[1])
    if args == ["--print-design-tables"]:
        sys.stdout.write(design_tables())
        return 0
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), "..", ".."))
    files = sorted(source_files(root))
    problems = [p for rel in files for p in check_file(root, rel)]
    for p in problems:
        print(p)
    print(f"check_layers: {len(files)} files, {len(problems)} forbidden include(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
