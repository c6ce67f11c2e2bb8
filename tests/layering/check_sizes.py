#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""No product source file over 600 lines and no C++ function over 80: a file with one job, and a
function that does one thing, stay small enough to read whole.

Product code is every C++, Python and shell file outside tests/, bench/ and the generated code
(which the build makes and git does not hold). A file or function still longer is listed in
KNOWN_LONGER or LONG_FUNCTIONS with the length it has today: it may shrink, never grow, and a new
one may not join it. A function's length is counted as clang-tidy's readability-function-size
counts it (its closing brace's line less its opening brace's), over the braces of the source
with comments and literals taken out, which clang-format's layout makes reliable.

    check_sizes.py [ROOT]      exit 0 when every file keeps to its limit, 1 naming those that do not
    check_sizes.py --self-test
"""
import os
import re
import subprocess
import sys
import tempfile

LIMIT = 600
FUNCTION_LIMIT = 80
OUTSIDE_PRODUCT = ("tests/", "bench/")
EXTENSIONS = (".cc", ".h", ".py", ".sh")
# Longer than LIMIT today, each at most as long as it is now.
KNOWN_LONGER = {"mizarmp-client/client.cc": 958}
# Functions longer than FUNCTION_LIMIT today ("file:name"), each at most as long as it is now. A
# table (the configuration's keys) is data, not logic.
LONG_FUNCTIONS = {
    "cmd/mizarmp-addons/config.cc:Keys": 172,  # the table of every configuration key
    "cmd/mizarmp-mock/main.cc:Flags": 98,  # the table of the mock's flags
}


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


def without_comments_and_literals(text):
    """`text` with comments, strings and characters emptied, its lines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif text.startswith('R"', i) and re.match(r'R"[^(\s]*\(', text[i:]):
            delimiter = re.match(r'R"([^(\s]*)\(', text[i:]).group(1)
            end = text.find(")" + delimiter + '"', i)
            end = n if end < 0 else end + len(delimiter) + 2
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif text[i] in "\"'":
            quote, j = text[i], i + 1
            while j < n and text[j] != quote and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(quote * 2)
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


FUNCTION_HEAD = re.compile(r"\)\s*(?:const|override|final|noexcept|mutable|->[^;{]*|"
                           r"MZ_[A-Z_]+\([^)]*\)|\s)*$|\)\s*:\s*[^;]*$")


def functions(text):
    """(name, first line, length) of each function defined in C++ `text`, outermost only."""
    found, stack, line, head = [], [], 1, ""
    for c in without_comments_and_literals(text):
        if c == "\n":
            line += 1
        if c == "{":
            head = head.strip()
            if any(kind == "function" for kind, _, _ in stack):
                kind = "block"
            elif re.search(r"\b(namespace|class|struct|union|enum)\b[^;()]*$", head):
                kind = "scope"
            elif FUNCTION_HEAD.search(head):
                kind = "function"
            else:
                kind = "block"
            name = re.search(r"([~\w:]+)\s*\(", head)
            stack.append((kind, line, name.group(1) if name else "?"))
            head = ""
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    found.append((name, start, line - start))
            head = ""
        elif c == ";":
            head = ""
        else:
            head += c
    return found


def long_functions(root, files, known):
    """(file:name, lines, limit) of each C++ function longer than it may be."""
    found = []
    for name in files:
        path = os.path.join(root, name)
        if not name.endswith((".cc", ".h")) or not os.path.isfile(path):
            continue
        with open(path, errors="replace") as f:
            text = f.read()
        for function, _, count in functions(text):
            key = f"{name}:{function}"
            limit = known.get(key, FUNCTION_LIMIT)
            if count > limit:
                found.append((key, count, limit))
    return found


def check(root):
    files = product_files(root)
    found = over_limit(root, files, KNOWN_LONGER)
    for name, count, limit in found:
        why = ("longer than it was when listed in KNOWN_LONGER" if name in KNOWN_LONGER
               else f"over {LIMIT} lines")
        print(f"{name}: {count} lines, {why} (at most {limit}): split it by job")
    long = long_functions(root, files, LONG_FUNCTIONS)
    for name, count, limit in long:
        why = ("longer than it was when listed in LONG_FUNCTIONS" if name in LONG_FUNCTIONS
               else f"over {FUNCTION_LIMIT} lines")
        print(f"{name}: {count} lines, {why} (at most {limit}): "
              "give its steps functions of their own")
    if not found and not long:
        print(f"check_sizes: every product file and function keeps to its limit ({LIMIT} and "
              f"{FUNCTION_LIMIT} lines; {len(KNOWN_LONGER)} file(s), {len(LONG_FUNCTIONS)} "
              "function(s) listed longer)")
    return 1 if found or long else 0


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
    code = "\n".join([
        "// a comment with a { brace",
        "namespace n {",
        "struct S {",
        "  int Short() const { return 1; }",
        "};",
        "int Long(int a,",
        "         int b) {",
        '  const char* s = "}";',
        "  auto f = [] {",
        "  };",
    ] + ["  a += b;"] * 80 + ["  return a;", "}", "}  // namespace n", ""])
    got = functions(code)
    want = [("Short", 4, 0), ("Long", 7, 85)]
    if got != want:
        print(f"check_sizes self-test: functions {got}, want {want}")
        return 1
    print("check_sizes self-test: a long new file, a grown listed one and a long function "
          "are found")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return check(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
