#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/ role pathwarden_reconcile with real ansible-playbook, without the lab.

usage: ansible_role_test.py PATHWARDEN PVESIM
Against pvesim on loopback with an unreachable guest (pwtest.offline_controller), which pathwarden
reports as unobserved (could not observe, exit 6):
- a run fails, naming the policy and why it could not be observed, and still exposes the report as
  the fact pathwarden_reconcile_report;
- check mode passes --check (the report's mode is "check") and still runs the command;
- exit 3 (drift that could not be acted on; a stand-in binary replays a real report with that
  verdict) is ok, and pathwarden_reconcile_fail_on_blocked turns it into a failure naming the
  policy and its error;
- exit 1 (an unknown policy name) fails with pathwarden's message;
- a policy name with quotes, $(...) and spaces reaches pathwarden as one argument;
- template markers in the report's text (a policy directory named with {{ }}) are never evaluated.
The lab test (ansible_role_lab_test.py) covers changed, converged and rolled back on a real guest.
"""
import json
import os
import tempfile

from pwtest.offline_controller import PVESIM_ARGS, STATE, OfflineController, write_policy
from pwtest.pvesim_process import Pvesim
from pwtest.role_run import run_role
from pwtest.script import check, test_main


def main(binary, pvesim):
    binary = os.path.abspath(binary)
    with tempfile.TemporaryDirectory(prefix="pw-role-offline-") as work, Pvesim(pvesim, STATE, PVESIM_ARGS) as sim:
        policies = os.path.join(work, "policies")
        write_policy(policies)
        ctl = OfflineController(binary, sim, work, policies_dir=policies)

        def role(extra=None, check_mode=False):
            return run_role(binary, ctl.settings, extra, check=check_mode, env=ctl.env)

        r = role()
        check(r.rc != 0 and r.stats.get("failures") == 1 and r.stats.get("changed") == 0, f"plain run: {r}")
        msg = r.failure
        check(isinstance(msg, list)
              and msg[0].startswith("pathwarden exited 6: a guest or the Proxmox API did not answer")
              and any(line.startswith("movies: unobserved: could not observe guest media-vm") and "unreachable" in line
                      for line in msg), f"failure message: {msg}")
        check(r.report.get("format") == "pathwarden-report" and r.report["mode"] == "reconcile"
              and r.report["policies"][0]["verdict"] == "unobserved", f"report fact: {r.report}")

        r = role(check_mode=True)
        check(r.rc != 0 and r.report.get("mode") == "check", f"check mode did not run 'reconcile --check': {r}")

        # Exit 3 needs a guest that answers; the role's contract is the exit code and the report, so
        # a stand-in replays pathwarden's own report with a precondition-failed policy.
        blocked = dict(r.report, mode="reconcile", exit_code=3)
        blocked["policies"] = [dict(blocked["policies"][0], verdict="precondition-failed",
                                    errors=["VM 301 is locked (backup); wait for the backup/migration to finish"])]
        canned = os.path.join(work, "blocked.json")
        with open(canned, "w") as f:
            json.dump(blocked, f)
        stand_in = os.path.join(work, "pathwarden-blocked")
        with open(stand_in, "w") as f:
            f.write(f"#!/bin/sh\ncat '{canned}'\nexit 3\n")
        os.chmod(stand_in, 0o755)
        r = run_role(binary, ctl.settings, {"pathwarden_reconcile_binary": stand_in}, env=ctl.env)
        check(r.rc == 0 and r.stats.get("failures") == 0 and r.stats.get("changed") == 0, f"exit 3 run: {r}")
        # Blocked drift is not green in silence: the module warns, naming the policy and why.
        warnings = r.task("Run pathwarden reconcile").get("warnings") or []
        check(any("pathwarden exited 3" in w and "movies: VM 301 is locked (backup)" in w for w in warnings),
              f"exit 3 run: no warning naming the blocked policy: {warnings}")
        r = run_role(binary, ctl.settings, {"pathwarden_reconcile_binary": stand_in,
                                            "pathwarden_reconcile_fail_on_blocked": True}, env=ctl.env)
        check(r.rc != 0 and r.stats.get("failures") == 1, f"fail_on_blocked: {r}")
        msg = r.failure
        check(isinstance(msg, list) and msg[0].startswith("pathwarden exited 3")
              and any(line.startswith("movies: precondition-failed: VM 301 is locked") for line in msg),
              f"failure message: {msg}")

        r = role({"pathwarden_reconcile_policy_names": ["movies", "no-such-policy"]})
        check(r.rc != 0 and r.stats.get("failures") == 1, f"unknown policy: {r}")
        failure = "\n".join(r.failure or [])
        check("pathwarden exited 1" in failure and "no policy named 'no-such-policy'" in failure,
              f"exit 1 message: {r.failure}")

        # Operator input reaches pathwarden as one argv word: no shell, no splitting.
        hostile = "x' \" $(id) ; y --check"
        r = role({"pathwarden_reconcile_policy_names": [hostile], "pathwarden_reconcile_policy_paths": [policies]})
        check(r.rc != 0 and f"no policy named '{hostile}'" in "\n".join(r.failure or []),
              f"a policy name was not passed through verbatim: {r.failure}")

        # Text from pathwarden's report (here the policy file's path) is data to Ansible: template
        # markers in it are shown, never evaluated, in the role's messages and in the fact
        # (the settings name the directory: the path never passes through Ansible's variables).
        marked_work = os.path.join(work, "marked")
        os.makedirs(marked_work)
        marked = os.path.join(marked_work, "p{{ lookup('env','HOME') }}")
        write_policy(marked)
        marked_ctl = OfflineController(binary, sim, marked_work, policies_dir=marked)
        r = run_role(binary, marked_ctl.settings, {"pathwarden_reconcile_fail_on_blocked": True}, env=marked_ctl.env)
        shown = str(r.task("Show each policy's outcome").get("results", [{}])[0].get("msg"))
        check(marked in shown and r.report["policies"][0]["source"].startswith(marked),
              f"report text was templated: {shown}\n{r}")
        check(r.failure and r.failure[0].startswith("pathwarden exited 6"), f"marked run: {r}")
    print("ok ansible role (offline)")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
