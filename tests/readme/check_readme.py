#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""Fails when README.md shows a command line one of the project's programs would not accept.

Every invocation of mizarmpctl, mizarmp-addons, mizarmp-mock or mizarmp-install that README.md
shows (in a fenced code block, or as an inline code span that starts with the program's name) is
held to what that program's own --help prints: its subcommand must be one the help lists, each
flag one the help lists, and a flag the help shows with a value must be given one. An inline
span holding only a flag ("`--strict`") is held to the program its line names, or, when the line
names none or several, to all of them together; a flag of another program (kubelet's, etcd's)
passes only on a line that names that program.

  check_readme.py README.md --program NAME=PATH ...
  check_readme.py --self-test README.md --program NAME=PATH ...

Prints each problem as "README.md:LINE: ..." and exits 1 when there is one. The self-test
plants one mistake of each kind in a copy of the README and fails unless each is reported.
"""
import os
import re
import shlex
import subprocess
import sys

# Programs whose first argument is a subcommand; the others take flags only.
WITH_SUBCOMMANDS = {"mizarmpctl", "mizarmp-install"}
# Flags README may show for programs that are not ours, with the program each belongs to.
FOREIGN_FLAGS = {"--root-dir": "kubelet", "--auto-compaction-retention": "etcd"}
# Shell words that end one command and may start another.
COMMAND_SEPARATORS = {";", "&&", "||", "|", "&"}
FLAG_LINE = re.compile(r"^\s*(-{1,2}[A-Za-z0-9][\w-]*)(?: ([^\s]+))?(?:\s{2,}|$)", re.M)


class Help:
    """What one program's --help says it accepts."""

    def __init__(self, name, text):
        self.name = name
        self.text = text
        # flag -> the value name its help line shows ("" for a switch)
        self.flags = {m.group(1): m.group(2) or "" for m in FLAG_LINE.finditer(text)}
        # The usage lines: from "usage:" to the first blank line ("[-o table|json]", "--version").
        usage = re.search(r"^usage:.*?(?=\n\s*\n|\Z)", text, re.M | re.S)
        self.usage = usage.group(0) if usage else ""

    def knows_flag(self, flag):
        """A flag of a flag line, or one the usage lines show; --help is every program's. Prose
        elsewhere in the help may name other programs' flags, so it does not count."""
        return flag in self.flags or flag in ("--help", "-h") or re.search(
            r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", self.usage) is not None

    def takes_value(self, flag):
        return bool(self.flags.get(flag))

    def knows_subcommand(self, word):
        """Listed as a command: an indented line starting with it ("  gc [--dry-run]   runs"),
        a line starting with it and two spaces ("wait     sleeps"), or after the program's
        name ("usage: mizarmp-install install")."""
        w = re.escape(word)
        listed = r"^(?: +" + w + r" | *" + w + r"  )"
        after_name = re.escape(self.name) + r" " + w + r"(?![\w-])"
        return re.search(listed, self.text, re.M) or re.search(after_name, self.text)


def read_help(name, path):
    done = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} --help exited {done.returncode}: {done.stderr.strip()}")
    return Help(name, done.stdout + done.stderr)


def shell_words(text):
    """The words of a shell line, comments dropped and ;, &&, | as words of their own."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def commands_of(words):
    """Each simple command of a line's words, without leading VAR=value assignments."""
    command = []
    for word in words + [";"]:
        if word in COMMAND_SEPARATORS:
            while command and re.match(r"^[A-Za-z_]\w*=", command[0]):
                command.pop(0)
            if command:
                yield command
            command = []
        else:
            command.append(word)


def check_invocation(where, help_, args):
    """The problems of one invocation: `args` are the words after the program's name."""
    problems = []
    shown = f"{help_.name} {' '.join(args)}".strip()
    rest = list(args)
    if help_.name in WITH_SUBCOMMANDS and rest and not rest[0].startswith("-"):
        if not help_.knows_subcommand(rest[0]):
            problems.append(f"{where}: `{shown}`: {help_.name} has no subcommand {rest[0]!r} "
                            "(not in its --help)")
        rest = rest[1:]
    takes_arguments = help_.name in WITH_SUBCOMMANDS
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if not word.startswith("-") or word == "-":
            if not takes_arguments:
                problems.append(f"{where}: `{shown}`: {help_.name} takes flags only, "
                                f"not {word!r}")
            continue
        flag, has_inline_value = word.split("=", 1)[0], "=" in word
        if not help_.knows_flag(flag):
            problems.append(f"{where}: `{shown}`: {help_.name} has no flag {flag} "
                            "(not in its --help)")
        elif help_.takes_value(flag) and not has_inline_value:
            if i >= len(rest) or rest[i].startswith("-"):
                problems.append(f"{where}: `{shown}`: {flag} needs a value "
                                f"({help_.flags[flag]})")
            i += 1
    return problems


def program_of(word, helps):
    return helps.get(os.path.basename(word))


def check_shell_text(where, text, helps):
    """The problems of a shell line, and how many invocations of the programs it holds."""
    try:
        words = shell_words(text)
    except ValueError as e:
        return [f"{where}: cannot read `{text}` as a shell line: {e}"], 0
    problems = []
    invocations = 0
    for command in commands_of(words):
        help_ = program_of(command[0], helps)
        if help_ is not None:
            invocations += 1
            problems += check_invocation(where, help_, command[1:])
    return problems, invocations


def names_on(line, helps):
    return [name for name in helps
            if re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w@-])", line)]


def check_lone_flag(where, line, span, helps):
    """A span holding a flag without its program: held to the program its line names."""
    flag = span.split()[0].split("=", 1)[0]
    named = names_on(line, helps)
    candidates = [helps[named[0]]] if len(named) == 1 else list(helps.values())
    if any(h.knows_flag(flag) for h in candidates):
        return []
    owner = FOREIGN_FLAGS.get(flag)
    if owner is not None and re.search(r"\b" + re.escape(owner) + r"\b", line):
        return []
    whose = named[0] if len(named) == 1 else "any of " + ", ".join(sorted(helps))
    return [f"{where}: `{span}`: no flag {flag} in the --help of {whose}"]


INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def check_readme(text, helps, name="README.md"):
    """Every problem of the README's invocations, and how many invocations and flags it held."""
    problems = []
    checked = 0
    fence_language = None  # None: outside a fenced block
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{name}:{number}"
        fence = re.match(r"^\s*```(\w*)", line)
        if fence:
            fence_language = fence.group(1) if fence_language is None else None
            continue
        if fence_language is not None:
            if fence_language != "json":
                found, invocations = check_shell_text(where, line, helps)
                problems += found
                checked += invocations
            continue
        for span in INLINE_CODE.findall(line):
            if span.startswith("--"):
                problems += check_lone_flag(where, line, span, helps)
                checked += 1
            elif span.split() and program_of(span.split()[0], helps) is not None:
                found, invocations = check_shell_text(where, span, helps)
                problems += found
                checked += invocations
    return problems, checked


# Each planted mistake: (what, a function of the README text, what the report must say).
def replaced_once(text, old, new):
    if old not in text:
        raise RuntimeError(f"README.md no longer shows {old!r}: plant the mistake elsewhere")
    return text.replace(old, new, 1)


SELF_TEST_PLANTS = [
    ("a flag mizarmpctl lacks, in a code block",
     lambda t: replaced_once(t, "mizarmpctl fences --endpoint $E",
                              "mizarmpctl fences --endpoint $E --all-nodes"),
     "mizarmpctl has no flag --all-nodes"),
    ("a misspelt flag, in a code block",
     lambda t: replaced_once(t, "mizarmpctl gc --dry-run", "mizarmpctl gc --dryrun"),
     "mizarmpctl has no flag --dryrun"),
    ("a subcommand mizarmpctl lacks",
     lambda t: replaced_once(t, "mizarmpctl stale ", "mizarmpctl orphans "),
     "mizarmpctl has no subcommand 'orphans'"),
    ("a flag without its value",
     lambda t: replaced_once(t, "mizarmpctl probe --endpoint $E", "mizarmpctl probe --endpoint"),
     "--endpoint needs a value"),
    ("a flag mizarmp-mock lacks, inline on its row",
     lambda t: replaced_once(t, "`--agent-ovsdb PATH`", "`--agent-ovs PATH`"),
     "no flag --agent-ovs in the --help of mizarmp-mock"),
    ("an inline invocation with a flag mizarmp-addons lacks",
     lambda t: t + "\nRun `mizarmp-addons --config-dir /etc/mizarmp` to start it.\n",
     "mizarmp-addons has no flag --config-dir"),
    ("a subcommand mizarmp-install lacks, in a code block",
     lambda t: t + "\n```sh\nmizarmp-install uninstall --bin-dir /opt/cni/bin\n```\n",
     "mizarmp-install has no subcommand 'uninstall'"),
    ("an argument a program of flags only would refuse",
     lambda t: t + "\n```sh\nmizarmp-mock --strict alcor\n```\n",
     "mizarmp-mock takes flags only, not 'alcor'"),
    ("a foreign flag on a line that does not name its program",
     lambda t: t + "\nSet `--root-dir` where it runs elsewhere.\n",
     "no flag --root-dir"),
]


def self_test(readme_text, helps):
    failed = 0
    for what, plant, expected in SELF_TEST_PLANTS:
        try:
            planted = plant(readme_text)
        except RuntimeError as e:
            print(f"self-test FAILED: {what}: {e}")
            failed += 1
            continue
        found, _ = check_readme(planted, helps)
        if not any(expected in p for p in found):
            print(f"self-test FAILED: {what}: expected a line with {expected!r}, got:", *found,
                  sep="\n  ")
            failed += 1
    if failed:
        return 1
    print(f"check_readme self-test: {len(SELF_TEST_PLANTS)} planted mistakes reported, as planted")
    return 0


def parse_args(argv):
    self_testing = argv[:1] == ["--self-test"]
    args = argv[1:] if self_testing else argv
    if not args or args[0].startswith("-"):
        raise SystemExit(__doc__)
    readme, programs = args[0], {}
    rest = args[1:]
    while rest:
        if rest[0] != "--program" or len(rest) < 2 or "=" not in rest[1]:
            raise SystemExit(f"check_readme.py: expected --program NAME=PATH, got {rest[0]!r}")
        name, path = rest[1].split("=", 1)
        programs[name] = path
        rest = rest[2:]
    if not programs:
        raise SystemExit("check_readme.py: name the programs with --program NAME=PATH")
    return self_testing, readme, programs


def main():
    self_testing, readme, programs = parse_args(sys.argv[1:])
    helps = {name: read_help(name, path) for name, path in programs.items()}
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    if self_testing:
        return self_test(text, helps)
    problems, checked = check_readme(text, helps, readme)
    for p in problems:
        print(p)
    print(f"check_readme: {checked} invocation(s) and flag(s) of "
          f"{', '.join(sorted(helps))} in {readme}, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
