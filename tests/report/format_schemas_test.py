#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Plan files and JSON reports as the real binary writes them, against their JSON Schemas
(src/plan/plan.schema.json, src/report/report.schema.json), with Debian's python3-jsonschema.

usage: format_schemas_test.py PATHWARDEN PVESIM
- `pathwarden --version` names the version and the git commit the binary was built from;
- with pvesim and the recorded lab guest (pwtest.stand_in: no guest, no network namespace):
  `plan --out` writes a plan of format_version 1.x with pathwarden_version, valid against the plan
  schema; a copy claiming format_version 2.0 is refused by `apply`, naming both versions, and
  changes nothing; `apply` of the plan writes a report (--report-file and --output json) valid
  against the report schema whose changes[] are structured (set-nic with the netN strings before
  and after, set-channels, change-fstab with the fstab line after, each with its text);
  `report --input` reads it back into the HTML page; `status` keeps working on the stored entry;
  `reconcile --check` reports the drift as structured planned[] (the fstab line and the netN
  string before and after), valid against the schema too;
- with the guest unreachable (pwtest.offline_controller): the unobserved report is valid too;
- old files are still read: the format 1 report of tests/report/data (changes as strings) by
  `report --input`; a report claiming format_version 3.0 is refused with a clear message.
"""
import copy
import json
import os
import re
import subprocess
import tempfile

import jsonschema  # Debian's python3-jsonschema

from pwtest import policies
from pwtest.offline_controller import PVESIM_ARGS, STATE, OfflineController, write_policy
from pwtest.paths import ROOT
from pwtest.pvesim_process import Pvesim
from pwtest.script import check, test_main
from pwtest.stand_in import NET1, STAND_IN_STATE, guest_runs, stand_in_controller

PLAN_SCHEMA = os.path.join(ROOT, "src", "plan", "plan.schema.json")
REPORT_SCHEMA = os.path.join(ROOT, "src", "report", "report.schema.json")
V1_REPORT = os.path.join(ROOT, "tests", "report", "data", "trunking-and-fix.json")


def validator(path):
    with open(path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def valid(v, document, what):
    errors = sorted(v.iter_errors(document), key=lambda e: list(e.absolute_path))
    check(not errors, f"{what} does not match its schema:\n" +
          "\n".join(f"  {'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10]))


def main(binary, pvesim):
    binary = os.path.abspath(binary)
    plan_schema, report_schema = validator(PLAN_SCHEMA), validator(REPORT_SCHEMA)
    # The validators do reject: a report without format_version, a string among structured changes.
    check(not report_schema.is_valid({"format": "pathwarden-report"}), "the report schema accepts anything")

    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.fullmatch(r"pathwarden (\d+\.\d+\.\d+) \(commit ([0-9a-f]{7,}(-dirty)?|unknown)\)\n", out)
    check(m, f"--version: {out!r}")
    version = m.group(1)
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    check(m.group(2) == "unknown" or head.startswith(m.group(2).removesuffix("-dirty")) or not head,
          f"--version names commit {m.group(2)}, the checkout is at {head}")

    with tempfile.TemporaryDirectory(prefix="pw-schemas-") as work, Pvesim(pvesim, STAND_IN_STATE, PVESIM_ARGS) as sim:
        ctl = stand_in_controller(binary, sim, work)
        pol = os.path.join(work, "policies")
        policies.write(pol, "movies.yaml", policies.seed_fix("movies-10g", 101, "media-vm", queues=8))

        plan_file = os.path.join(work, "plan.json")
        r = ctl.run("plan", pol, "--out", plan_file)
        check(r.returncode == 3 and os.path.exists(plan_file), f"plan: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        with open(plan_file) as f:
            plan = json.load(f)
        valid(plan_schema, plan, "the plan file")
        check(plan["format"] == "pathwarden-plan" and re.fullmatch(r"1\.\d+", plan["format_version"])
              and plan["pathwarden_version"] == version and plan["version"] == 1, f"plan header: {plan}")
        check([s["kind"] for s in plan["policies"][0]["steps"]]
              == ["set-nic", "set-channels", "change-fstab", "prove-path"],
              f"planned steps: {plan['policies'][0]['steps']}")

        # A check's report says the drift as data: planned[] structured, the fstab line before and after.
        r = ctl.run("reconcile", pol, "--check", "--output", "json")
        check(r.returncode == 3, f"reconcile --check: exit {r.returncode}\n{r.stderr}")
        checked = json.loads(r.stdout)
        valid(report_schema, checked, "the check report")
        planned = {c["action"]: c for c in checked["policies"][0]["planned"]}
        check(checked["policies"][0]["verdict"] == "drift" and not checked["policies"][0]["changes"]
              and sorted(planned) == ["change-fstab", "prove-path", "set-channels", "set-nic"],
              f"check's planned: {planned}")
        check(planned["set-nic"]["before"] == NET1 and planned["set-nic"]["after"] == NET1 + ",queues=8",
              f"planned set-nic: {planned['set-nic']}")
        fstab = planned["change-fstab"]
        # The recorded guest's line is already the policy's: the step re-makes the mount with it.
        check(" /mnt/movies nfs " in (fstab["before"] or "") and fstab["after"] == fstab["before"]
              and "nconnect=8" in fstab["after"] and fstab["text"] == "re-make the mount /mnt/movies",
              f"planned change-fstab: {fstab}")

        # A plan of a major this pathwarden does not know is refused before anything is done.
        newer = dict(copy.deepcopy(plan), format_version="2.0", pathwarden_version="9.0.0")
        newer_file = os.path.join(work, "plan-2.0.json")
        with open(newer_file, "w") as f:
            json.dump(newer, f)
        before = len(guest_runs(ctl))
        r = ctl.run("apply", newer_file)
        check(r.returncode == 1 and "plan format_version 2.0 (written by pathwarden 9.0.0) is not one this pathwarden"
              f" ({version}) reads: it reads 1.x" in r.stderr, f"apply of a 2.0 plan: exit {r.returncode}\n{r.stderr}")
        check(len(guest_runs(ctl)) == before and sim.guest(101)[
              "config"]["net1"] == NET1, "a refused plan changed something")

        # An edited plan is refused whole by its seal (issue 39), before anything is touched: a
        # backup path moved to /tmp (its directory would be chmodded), a line added to the new fstab.
        for what, edit in (("backup_path", lambda st: st.update(backup_path="/tmp")),
                           ("new_content", lambda st: st.update(new_content=st["new_content"] + "evil /etc nfs\n"))):
            edited = copy.deepcopy(plan)
            edit(next(st for st in edited["policies"][0]["steps"] if st["kind"] == "change-fstab"))
            edited_file = os.path.join(work, f"plan-edited-{what}.json")
            with open(edited_file, "w") as f:
                json.dump(edited, f)
            r = ctl.run("apply", edited_file)
            check(r.returncode == 1 and "the plan's 'seal' does not match its content" in r.stderr,
                  f"apply of a plan with {what} edited: exit {r.returncode}\n{r.stderr}")
            check(len(guest_runs(ctl)) == before and sim.guest(101)["config"]["net1"] == NET1,
                  f"a plan with {what} edited changed something")
        unsealed = {k: v for k, v in plan.items() if k != "seal"}
        unsealed_file = os.path.join(work, "plan-unsealed.json")
        with open(unsealed_file, "w") as f:
            json.dump(unsealed, f)
        r = ctl.run("apply", unsealed_file)
        check(r.returncode == 1 and "the plan has no seal" in r.stderr, f"apply of an unsealed plan: {r.stderr}")

        report_file = os.path.join(work, "report.json")
        r = ctl.run("apply", plan_file, "--output", "json", "--report-file", report_file)
        check(r.returncode == 2, f"apply: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        printed = json.loads(r.stdout)
        with open(report_file) as f:
            report = json.load(f)
        check(printed == report, "--output json and --report-file differ")
        valid(report_schema, report, "the apply report")
        check(report["format"] == "pathwarden-report" and report["format_version"] == "3.6"
              and report["pathwarden_version"] == version and report["schema"] == "pathwarden-report/v3",
              f"report header: "
              f"{ {k: report.get(k) for k in ('format', 'format_version', 'pathwarden_version', 'schema')} }")
        p = report["policies"][0]
        changes = {c["action"]: c for c in p["changes"]}
        check(p["verdict"] == "verified" and p["changed"] is True
              and sorted(changes) == ["change-fstab", "set-channels", "set-nic"],
              f"changes: {p['changes']}")
        nic = changes["set-nic"]
        check(nic["target"] == "VM 101 net1" and nic["before"] == NET1 and nic["after"] == NET1 + ",queues=8"
              and "queues" in nic["text"], f"set-nic change: {nic}")
        check(changes["set-channels"]["after"] == "8" and changes["set-channels"]
              ["text"], f"set-channels: {changes['set-channels']}")
        fstab = changes["change-fstab"]
        check(fstab["target"] == "media-vm /mnt/movies" and " /mnt/movies nfs " in (fstab["after"] or "")
              and "nconnect=8" in fstab["after"], f"change-fstab: {fstab}")

        # Read back: the page of this run, and the stored entries `status` and `report` read.
        html = os.path.join(work, "run.html")
        r = ctl.run("report", "--input", report_file, "--html", html)
        check(r.returncode == 0, f"report --input: exit {r.returncode}\n{r.stderr}")
        with open(html) as f:
            page = f.read()
        check(nic["text"] in page and "+ " + NET1 + ",queues=8" in page,
              "the page lacks the change and its after value")
        r = ctl.run("report", "--html", os.path.join(work, "status.html"))
        check(r.returncode == 0, f"report of the stored results: exit {r.returncode}\n{r.stderr}")

        # A report of a major this pathwarden does not know is refused, saying which.
        future = dict(report, format_version="4.0", pathwarden_version="7.0.0")
        future_file = os.path.join(work, "report-4.0.json")
        with open(future_file, "w") as f:
            json.dump(future, f)
        r = ctl.run("report", "--input", future_file, "--html", os.path.join(work, "future.html"))
        check(r.returncode == 1
              and f"report format_version 4.0 is not one this pathwarden ({version}) reads: it reads 3.x, "
              "2.x, and format 1; the report was written by pathwarden 7.0.0" in r.stderr,
              f"report of format 4.0: exit {r.returncode}\n{r.stderr}")

        # Format 1 (changes as strings) is still read.
        old_html = os.path.join(work, "v1.html")
        r = ctl.run("report", "--input", V1_REPORT, "--html", old_html)
        check(r.returncode == 0, f"report --input of a format 1 report: exit {r.returncode}\n{r.stderr}")
        with open(old_html) as f:
            check("set net1 queues=8 (hot-plug the NIC)" in f.read(), "the format 1 report's change is not on the page")

    # A run that could not observe its guest: verification null, no changes, errors.
    with tempfile.TemporaryDirectory(prefix="pw-schemas-offline-") as work, Pvesim(pvesim, STATE, PVESIM_ARGS) as sim:
        pol = os.path.join(work, "policies")
        write_policy(pol)
        ctl = OfflineController(binary, sim, work, policies_dir=pol)
        r = ctl.run("reconcile", "--output", "json")
        check(r.returncode == 6, f"offline reconcile: exit {r.returncode}\n{r.stderr}")
        report = json.loads(r.stdout)
        valid(report_schema, report, "the unobserved report")
        check(report["policies"][0]["verdict"] == "unobserved", f"offline report: {report['policies']}")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
