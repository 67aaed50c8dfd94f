#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every policy example in the docs, validated by the real `pathwarden validate` (issue 16, item 5).

Where the examples come from: the whole of docs/mounts.md (the Compose, systemd and autofs mounts,
the commit-latency figure, what mount options do) and of policies/README.md. Each fenced ```yaml block
there that is a policy (it says `kind: StoragePath` or `apiVersion: pathwarden/v1` and is not a
`kind: Controller`) is written, as shown, to NAME.yaml (NAME: its metadata.name) in a fresh
temporary directory and validated on its own. Its first lines say what must come out:

  # refused: LINE:COL: MESSAGE   exit 1, and the output has `NAME.yaml:LINE:COL: MESSAGE...`
                                 (MESSAGE is the start of the problem; one line per problem;
                                 no other problem may be reported)
  # note: LINE:COL: MESSAGE      exit 0, and the output has `NAME.yaml:LINE:COL: note: MESSAGE...`
                                 (no other note may be printed)
  (neither)                      exit 0 with `ok: 1 storage path policy` and no note at all

LINE counts the block's own lines from 1, the marker lines included. Other yaml blocks (a Compose
file, controller settings) are not policies and are left alone. The test also fails when the
section is gone, when an expected field or owner has no example any more, or when a marker is
malformed, so an example cannot go stale unnoticed. (The README keeps a short section on these
mounts that links to docs/mounts.md.)

usage: policy_examples_test.py PATHWARDEN
"""
import os
import re
import subprocess
import tempfile

from pwtest.paths import ROOT
from pwtest.script import check, test_main

YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```$", re.S | re.M)
MARKER = re.compile(r"^# (refused|note): (\d+):(\d+): (.+)$")
NAME = re.compile(r"^  name: (\S+)$", re.M)

# What the docs must keep showing (issue 16): an example per owner and per new field.
MUST_SHOW = {
    "docs/mounts.md": ["owner: compose", "owner: systemd", "owner: autofs", "compose: {project:", "commit_cycles:",
                       "min_commit_rate:", "direction: write", "# refused:", "# note:"],
    "policies/README.md": ["owner: compose", "owner: systemd", "compose: {project:", "commit_cycles:",
                           "min_commit_rate:"],
}


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def policy_blocks(source, text):
    out = []
    for m in YAML_BLOCK.finditer(text):
        block = m.group(1)
        is_policy = "kind: StoragePath" in block or "apiVersion: pathwarden/v1" in block
        if not is_policy or "kind: Controller" in block:
            continue
        line = text.count("\n", 0, m.start()) + 2  # the block's first line in its file
        out.append((f"{source}:{line}", block))
    return out


def expectations(where, block):
    """(kind, line, col, message) for each marker line at the top of the block."""
    found = []
    for line in block.splitlines():
        if not line.startswith("# refused:") and not line.startswith("# note:"):
            break
        m = MARKER.match(line)
        check(m is not None, f"{where}: malformed marker '{line}' (want '# refused|note: LINE:COL: MESSAGE')")
        found.append((m.group(1), int(m.group(2)), int(m.group(3)), m.group(4).rstrip(" .…")))
    kinds = {k for k, *_ in found}
    check(len(kinds) <= 1, f"{where}: a block is either refused or noted, not both")
    return found


def validate(pathwarden, where, block, workdir):
    names = NAME.findall(block)
    check(len(names) == 1, f"{where}: the example needs exactly one metadata.name (found {names})")
    d = tempfile.mkdtemp(dir=workdir)
    fname = f"{names[0]}.yaml"
    path = os.path.join(d, fname)
    with open(path, "w") as f:
        f.write(block)
    r = subprocess.run([pathwarden, "validate", path], capture_output=True, text=True, timeout=60)
    out = (r.stdout + r.stderr).replace(path, fname)
    lines = out.splitlines()
    shown = f"{where}: pathwarden validate exited {r.returncode}:\n{out}"
    check(not re.search(r"AddressSanitizer|runtime error|internal error|terminate called", out), f"crash: {shown}")
    expect = expectations(where, block)
    problems = [out_line for out_line in lines if re.match(rf"^{re.escape(fname)}:\d+:\d+: (?!note: )", out_line)]
    notes = [out_line for out_line in lines if re.match(rf"^{re.escape(fname)}:\d+:\d+: note: ", out_line)]
    if expect and expect[0][0] == "refused":
        check(r.returncode == 1, f"the example should be refused, but: {shown}")
        for _, line, col, message in expect:
            want = f"{fname}:{line}:{col}: {message}"
            check(any(out_line.startswith(want) for out_line in problems), f"missing '{want}' in {shown}")
        check(len(problems) == len(expect), f"{len(problems)} problems, the marker lists {len(expect)}: {shown}")
        return "refused"
    check(r.returncode == 0, f"the example should be valid, but: {shown}")
    check("ok: 1 storage path policy" in lines, f"no 'ok: 1 storage path policy': {shown}")
    for _, line, col, message in expect:
        want = f"{fname}:{line}:{col}: note: {message}"
        check(any(out_line.startswith(want) for out_line in notes), f"missing '{want}' in {shown}")
    check(len(notes) == len(expect), f"{len(notes)} notes, the marker lists {len(expect)}: {shown}")
    return "noted" if expect else "valid"


def main(pathwarden):
    sources = {"docs/mounts.md": read("docs/mounts.md"), "policies/README.md": read("policies/README.md")}
    for source, must in MUST_SHOW.items():
        shown = "\n".join(b for _, b in policy_blocks(source, sources[source]))
        for what in must:
            check(what in shown, f"{source}: no policy example with '{what}' any more")
    counts = {}
    with tempfile.TemporaryDirectory() as work:
        for source, text in sources.items():
            for where, block in policy_blocks(source, text):
                result = validate(pathwarden, where, block, work)
                counts[result] = counts.get(result, 0) + 1
                print(f"ok   {where} ({result})")
    print(f"{sum(counts.values())} examples: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    check(counts.get("refused", 0) >= 2 and counts.get("valid", 0) >= 6, f"too few examples found: {counts}")


if __name__ == "__main__":
    test_main(main, __doc__, 1)
