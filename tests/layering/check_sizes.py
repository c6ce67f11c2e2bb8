#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""No product source file over 600 lines: a file with one job stays small enough to read whole.

Product code is every C++, Python and shell file outside tests/, bench/ and the generated code
(which the build makes and git does not hold). A file still longer is listed in KNOWN_LONGER
with the length it has today: it may shrink, never grow, and a new file may not join it.

    check_sizes.py [ROOT]      exit 0 when every file keeps to its limit, 1 naming those that do not
    check_sizes.py --self-test
"""
import os
import subprocess
import sys
import tempfile

LIMIT = 600
OUTSIDE_PRODUCT = ("tests/", "bench/")
EXTENSIONS = (".cc", ".h", ".py", ".sh")
# Longer than LIMIT today, each at most as long as it is now.
KNOWN_LONGER = {"mizarmp-client/client.cc": 958}


def tracked_files(root):
    """The files git holds, or, outside a git checkout, every file but the build trees'."""
    listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if listed.returncode == 0:
        return listed.stdout.split()
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith((".", "build"))]
        found += [os.path.relpath(os.path.join(folder, n), root) for n in names]
    return found


def product_files(root):
    return [f for f in tracked_files(root)
            if f.endswith(EXTENSIONS) and not f.startswith(OUTSIDE_PRODUCT)]


def lines_of(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def over_limit(root, files, known):
    """(file, lines, limit) of each file longer than it may be."""
    found = []
    for name in files:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue  # deleted in the work tree, still in the index
        limit = known.get(name, LIMIT)
        count = lines_of(path)
        if count > limit:
            found.append((name, count, limit))
    return found


def check(root):
    found = over_limit(root, product_files(root), KNOWN_LONGER)
    for name, count, limit in found:
        why = ("longer than it was when listed in KNOWN_LONGER" if name in KNOWN_LONGER
               else f"over {LIMIT} lines")
        print(f"{name}: {count} lines, {why} (at most {limit}): split it by job")
    if not found:
        print(f"check_sizes: every product file keeps to its limit ({LIMIT} lines, "
              f"{len(KNOWN_LONGER)} listed longer)")
    return 1 if found else 0


def self_test():
    """The check finds a long new file and a listed file that grew, and passes the rest."""
    with tempfile.TemporaryDirectory() as root:
        def write(name, count):
            path = os.path.join(root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("x\n" * count)
        write("fence/short.cc", LIMIT)
        write("fence/long.cc", LIMIT + 1)
        write("common/listed.cc", 700)
        write("common/grown.cc", 701)
        write("tests/huge_test.cc", 5000)
        files = ["fence/short.cc", "fence/long.cc", "common/listed.cc", "common/grown.cc"]
        found = over_limit(root, files, {"common/listed.cc": 700, "common/grown.cc": 700})
        want = [("fence/long.cc", LIMIT + 1, LIMIT), ("common/grown.cc", 701, 700)]
        if found != want:
            print(f"check_sizes self-test: found {found}, want {want}")
            return 1
    print("check_sizes self-test: a long new file and a grown listed one are found")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return check(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
