#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""GitOps: a report records the git commit of the policy directory and whether it was dirty.

usage: policies_revision_test.py PATHWARDEN PVESIM
Runs the real `pathwarden reconcile --check --output json` against pvesim on loopback, with the
policies in a git checkout made by the test, and compares the report's `policies_revision` and
`policies_dirty` with what git says: a clean checkout, an edited policy, a commit of the edit, a
policy directory that is a subdirectory of the checkout, an untracked file, and a directory that
is not a checkout at all. The guest is unreachable (pwtest.offline_controller): the run
fails fast on the guest side and still reports.
"""
import json
import os
import subprocess
import tempfile

from pwtest.offline_controller import PVESIM_ARGS, STATE, OfflineController, write_policy
from pwtest.pvesim_process import Pvesim
from pwtest.script import check, test_main


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=pw test", "-c", "user.email=pw@test.invalid", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True).stdout.strip()


def report(ctl, policies):
    proc = ctl.run("reconcile", "--check", "--output", "json", policies)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"no JSON report (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def main(binary, pvesim):
    with tempfile.TemporaryDirectory(prefix="pw-gitops-") as work, Pvesim(pvesim, STATE, PVESIM_ARGS) as sim:
        ctl = OfflineController(binary, sim, work)
        repo = os.path.join(work, "policies")
        policy = write_policy(os.path.join(repo, "site-a"))
        git(repo, "init", "-q")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "movies over the 10 GbE link")
        first = git(repo, "rev-parse", "HEAD")

        r = report(ctl, repo)
        check(r["format"] == "pathwarden-report" and [p["policy"] for p in r["policies"]] == ["movies"],
              f"report of the checkout: {json.dumps(r)[:1500]}")
        check(r["policies_revision"] == first and r["policies_dirty"] is False,
              f"clean checkout: revision {r['policies_revision']!r} dirty {r['policies_dirty']}, want {first} clean")

        with open(policy, "a") as f:
            f.write("# edited, not committed\n")
        r = report(ctl, repo)
        check(r["policies_revision"] == first and r["policies_dirty"] is True,
              f"edited policy: {r['policies_revision']!r} dirty {r['policies_dirty']}, want {first} dirty")

        git(repo, "commit", "-q", "-am", "comment")
        second = git(repo, "rev-parse", "HEAD")
        check(second != first, "the commit made a new revision")
        r = report(ctl, repo)
        check(r["policies_revision"] == second and r["policies_dirty"] is False,
              f"after the commit: {r['policies_revision']!r} dirty {r['policies_dirty']}, want {second} clean")

        # The policy directory may be a subdirectory of the checkout.
        r = report(ctl, os.path.join(repo, "site-a"))
        check(r["policies_revision"] == second and r["policies_dirty"]
              is False, f"subdirectory: {r['policies_revision']!r}")

        with open(os.path.join(repo, "site-a", "notes.txt"), "w") as f:
            f.write("untracked\n")
        r = report(ctl, repo)
        check(r["policies_dirty"] is True, "an untracked file makes the tree dirty")

        plain = os.path.join(work, "plain")
        write_policy(plain)
        r = report(ctl, plain)
        check(r["policies_revision"] == "" and r["policies_dirty"] is False,
              f"not a checkout: {r['policies_revision']!r} dirty {r['policies_dirty']}")
    print("ok policies_revision")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
