#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""One table of exit codes: the binary's (report::kExitCodes, printed by `reconcile --help`) and
every place that restates it say the same codes with the same words: the man page's EXIT
STATUS, README.md's table, the systemd unit's header and examples/systemd/README.md, the
collection's module (EXIT_MEANINGS) and role (pathwarden_reconcile_exit_meanings). Also: the
unit's SuccessExitStatus is the table's successes other than 0.
Usage: exit_codes_test.py PATHWARDEN SOURCE_DIR
"""
import ast
import re
import subprocess
import sys

import yaml

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def main():
    binary, root = sys.argv[1], sys.argv[2]
    helptext = subprocess.run([binary, "reconcile", "--help"], check=True, capture_output=True, text=True).stdout
    block = helptext.split("Exit codes", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    table = {}
    for line in block:
        m = re.match(r"^  (\d+|128\+N) +(.*)$", line)
        check(m is not None, f"reconcile --help: not a code line: {line!r}")
        if m:
            table[m.group(1)] = m.group(2)
    check(list(table) == ["0", "1", "2", "3", "4", "5", "6", "7", "128+N"], f"help's codes: {list(table)}")

    man = subprocess.run([binary, "--help-man"], check=True, capture_output=True, text=True).stdout
    section = man.split(".SH EXIT STATUS\n", 1)[1].split("\n.SH ", 1)[0]
    pairs = re.findall(r"\.TP\n\.B (\S+)\n(.*)$", section, re.M)
    man_table = {code.replace("\\", ""): text.replace("\\-", "-").replace("\\(aq", "'") for code, text in pairs}
    check(man_table == table, f"man page EXIT STATUS differs from the help:\n{man_table}\n{table}")

    with open(f"{root}/README.md", encoding="utf-8") as f:
        readme = f.read().split("## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d+|128\+N) \| (.*) \|$", readme, re.M))
    check(rows == table, f"README's exit codes differ from the help:\n{rows}\n{table}")

    with open(f"{root}/examples/systemd/pathwarden.service", encoding="utf-8") as f:
        unit = f.read()
    header = dict(re.findall(r"^#   (\d+|128\+N) +(.*?)(?:  \[success\])?$", unit, re.M))
    check(header == table, f"the unit's header differs from the help:\n{header}\n{table}")
    successes = set(re.findall(r"^#   (\d+) .*\[success\]$", unit, re.M))
    declared = set(re.search(r"^SuccessExitStatus=(.*)$", unit, re.M).group(1).split())
    check(successes == {"0"} | declared, f"SuccessExitStatus {declared} against the header's successes {successes}")

    with open(f"{root}/examples/systemd/README.md", encoding="utf-8") as f:
        unit_readme = dict(re.findall(r"^\| (\d) \| ([^|]*) \| .* \|$", f.read(), re.M))
    check(unit_readme == {k: v for k, v in table.items() if k.isdigit()},
          f"examples/systemd/README.md differs from the help:\n{unit_readme}")

    collection = f"{root}/playbooks/collections/ansible_collections/pathwarden/pathwarden"
    with open(f"{collection}/plugins/modules/reconcile.py", encoding="utf-8") as f:
        tree = ast.parse(f.read())
    meanings = next(ast.literal_eval(n.value) for n in tree.body
                    if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "EXIT_MEANINGS")
    check({str(k): v for k, v in meanings.items()} == {k: v for k, v in table.items() if k.isdigit()},
          f"the module's EXIT_MEANINGS differ from the help:\n{meanings}")
    with open(f"{collection}/roles/pathwarden_reconcile/vars/main.yml", encoding="utf-8") as f:
        role = yaml.safe_load(f)["pathwarden_reconcile_exit_meanings"]
    check({str(k): v for k, v in role.items()} == {k: v for k, v in table.items() if k.isdigit()},
          f"the role's exit meanings differ from the help:\n{role}")

    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"exit codes: {len(table)} codes, the same words in 7 places")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
