#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""Gives every tracked C++, Python, shell and CMake file the project's licence header.

    python3 scripts/add_license_headers.py [--check]

The header (CONTRIBUTING.md, "Licence and file headers") is two comment lines put first, after
the lines that must stay first: a #! line, a Python coding line, shellcheck's file-wide
directives. A file that already has an SPDX line, or says it is generated, is left alone, so a
second run changes nothing. --check only lists the files that lack the header (exit 1 if any).
"""
import os
import re
import subprocess
import sys

HEADER = ("SPDX-License-Identifier: Apache-2.0", "Copyright The mizarmp Authors")
CXX_SUFFIXES = (".cc", ".h")
HASH_SUFFIXES = (".py", ".sh", ".cmake")
# Lines that must stay at the top: the interpreter, Python's coding declaration, and
# shellcheck directives written before any command (they apply to the whole file there).
KEEP_FIRST = re.compile(r"#!|#.*-\*-\s*coding[:=]|# shellcheck ")
LEAVE_ALONE = re.compile(r"SPDX-License-Identifier|do not edit|@generated", re.IGNORECASE)
LINES_LOOKED_AT = 5


def comment_prefix(path):
    """'//' or '#' for a file this script covers, None for any other file."""
    if path.endswith(CXX_SUFFIXES):
        return "//"
    if path.endswith(HASH_SUFFIXES) or os.path.basename(path) == "CMakeLists.txt":
        return "#"
    return None


def with_header(text, prefix):
    """TEXT with the header inserted, or None when the file is to be left alone."""
    lines = text.split("\n")
    if any(LEAVE_ALONE.search(line) for line in lines[:LINES_LOOKED_AT]):
        return None
    keep = 0
    while keep < len(lines) and KEEP_FIRST.match(lines[keep]):
        keep += 1
    header = [f"{prefix} {line}" for line in HEADER]
    return "\n".join(lines[:keep] + header + lines[keep:])


def tracked_files(root):
    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True)
    return [p for p in out.stdout.decode().split("\0") if p]


def main(argv):
    check_only = argv[1:] == ["--check"]
    if argv[1:] and not check_only:
        raise SystemExit(__doc__)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lacking = []
    for path in tracked_files(root):
        prefix = comment_prefix(path)
        full = os.path.join(root, path)
        if prefix is None or os.path.islink(full) or not os.path.isfile(full):
            continue
        with open(full, encoding="utf-8") as f:
            text = f.read()
        new_text = with_header(text, prefix)
        if new_text is None:
            continue
        lacking.append(path)
        if not check_only:
            with open(full, "w", encoding="utf-8") as f:
                f.write(new_text)
    verb = "lack" if check_only else "given"
    print(f"add_license_headers: {len(lacking)} file(s) {verb} the header")
    for path in lacking:
        print(f"  {path}")
    return 1 if check_only and lacking else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
