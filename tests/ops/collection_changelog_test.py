#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's changelog (playbooks/collection-changelog, antsibull-changelog's format):
1. `check` on the repository: the fragments are well formed and CHANGELOG.rst is generated from
   changelogs/ (an edit to either without the other fails here);
2. on a copy, `release --date` folds every fragment into changelog.yaml under galaxy.yml's
   version, removes the fragments, and CHANGELOG.rst then heads that version as released;
3. a fragment that is no YAML, or names an unknown section, is refused with file:line:col.
usage: collection_changelog_test.py
"""
import os
import re
import shutil
import subprocess
import tempfile

import yaml

from pwtest.paths import ROOT
from pwtest.script import check, test_main

TOOL = os.path.join(ROOT, "playbooks", "collection-changelog")
REL = os.path.join("collections", "ansible_collections", "pathwarden", "pathwarden")


def run(tool, *args):
    return subprocess.run(["/usr/bin/python3", tool, *args], capture_output=True, text=True)


def main():
    r = run(TOOL, "check")
    check(r.returncode == 0 and "CHANGELOG.rst up to date" in r.stdout, f"check: {r.stdout}{r.stderr}")
    print(f"ok   {r.stdout.strip()}")

    with tempfile.TemporaryDirectory(prefix="pw-changelog-") as tmp:
        shutil.copy(TOOL, tmp)
        shutil.copytree(os.path.join(ROOT, "playbooks", REL), os.path.join(tmp, REL))
        tool, collection = os.path.join(tmp, "collection-changelog"), os.path.join(tmp, REL)
        notes = os.path.join(collection, "changelogs", "fragments")
        pending = sorted(f for f in os.listdir(notes) if f.endswith(".yml"))
        with open(os.path.join(collection, "galaxy.yml")) as f:
            version = str(yaml.safe_load(f)["version"])
        check(pending, "no fragment to release")
        r = run(tool, "release", "--date", "2026-12-24")
        check(r.returncode == 0, f"release: {r.stderr}")
        with open(os.path.join(collection, "changelogs", "changelog.yaml")) as f:
            released = yaml.safe_load(f)["releases"].get(version, {})
        check(released.get("release_date") == "2026-12-24" and released.get("fragments") == pending
              and released.get("changes", {}).get("bugfixes"), f"changelog.yaml {version}: {released}")
        check(not [f for f in os.listdir(notes) if f.endswith(".yml")], "the released fragments stayed")
        with open(os.path.join(collection, "CHANGELOG.rst")) as f:
            text = f.read()
        check(f"\nv{version}\n" in text and "unreleased" not in text, f"CHANGELOG.rst after release:\n{text[:600]}")
        r = run(tool, "release")
        check(r.returncode != 0 and f"{version} is released already" in r.stderr, f"second release: {r.stderr}")
        print(f"ok   release {version}: {len(pending)} fragments folded in, CHANGELOG.rst heads v{version}")

        with open(os.path.join(notes, "broken.yml"), "w") as f:
            f.write("bugfixes:\n  - reconcile - a fix\n  here: no\n")
        with open(os.path.join(notes, "unknown.yml"), "w") as f:
            f.write("bug_fixes:\n  - a fix\n")
        r = run(tool, "check")
        check(r.returncode == 1 and re.search(r"^changelogs/broken.yml:3:\d+: ", r.stderr, re.M)
              and "changelogs/unknown.yml: unknown section 'bug_fixes'" in r.stderr, f"bad fragments: {r.stderr}")
        print("ok   bad fragments refused with file:line:col")


if __name__ == "__main__":
    test_main(main, __doc__, 0)
