#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""examples/awx: the configuration playbook's module arguments and workflow graph, and the shard
playbook end to end on localhost.

usage: awx_examples_test.py PATHWARDEN PVESIM
1. configure.yml (collection awx.awx, bundled with Debian's ansible) is run to its end (a copy
   with `ignore_errors: true` on the play) against a closed port on 127.0.0.1: each awx.awx module validates its
   arguments with its own argument spec first and only then fails to connect. So every task must
   fail with a connection error, never with an argument error; a copy with a misspelt option must
   fail with "Unsupported parameters" (the check can tell the two apart). The workflows' nodes as
   the modules received them form the intended graph: per shard a plan node leading to the
   approval node (which waits for all of them) leading to every apply node, every referenced
   identifier defined; the job templates the nodes name run the role's mode plan / apply (reconcile
   for the hourly workflow), in job type run, and only the reconcile template prompts for a job type.
2. pathwarden-shard.yml runs on localhost (become off) with pvesim and an unreachable guest
   (pwtest.offline_controller): it checks out a local policy repository at the revision AWX would pass
   (awx_project_revision), runs the role on the shard's directory, and the report records exactly
   that commit; in check mode the checkout still follows the revision and pathwarden runs --check.
   The guest never answers, so every run ends "could not observe" (exit 6) and the job fails; a
   plan job then keeps no plan.
3. The review workflow's two jobs, plan then apply, with pvesim and the recorded lab guest as
   tests/ops/guest_stand_in.py answers for it (spec.ansible.playbook_command): the plan job saves
   the plan (0600, in a 0700 directory, keyed by shard and awx_workflow_job_id), is "changed" and
   lists its steps, changes nothing, and removes plans past their age; the apply job applies that
   very plan (the report's plan_id; the VM's net1 gets queues=8, verified) and archives it, so a
   second apply fails. A plan overtaken by reality - the VM's Proxmox config or the guest's fstab
   edited between plan and apply - fails the apply job with pathwarden's stale message (exit 3)
   and nothing changes. Apply in check mode only shows the plan; apply without a plan, and plan or
   apply outside a workflow, fail saying why.
"""
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time

import yaml  # Debian's python3-yaml, a dependency of ansible

from pwtest import policies
from pwtest.offline_controller import PVESIM_ARGS, STATE, OfflineController, closed_loopback_port, write_policy
from pwtest.paths import ROOT
from pwtest.pvesim_process import Pvesim
from pwtest.stand_in import NET1, PLANNED, STAND_IN_STATE, guest_runs, stand_in_controller
from pwtest.role_run import RoleRun
from pwtest.script import check, test_main

AWX = os.path.join(ROOT, "examples", "awx")

CONFIGURE_TASKS = ["Project with the policies and the pathwarden playbooks", "Inventory of the controller hosts",
                   "Controller hosts", "Job template per shard", "Workflow reconciling every shard",
                   "Workflow planning, approving and applying every shard",
                   "Hourly schedule of the unattended workflow"]
PASSWORD = "pw-test-controller-password-7f3a"  # distinctive: no_log masks it wherever it appears


def run_configure(text, to_the_end=True):
    """Runs a copy of configure.yml (its text) once against a closed port, every task to the end:
    the copy only adds `ignore_errors: true` to the play, so each task still fails on its own
    (arguments first, then the connection) instead of ending the play. Returns
    [(task name, localhost's result, messages)] in the order the tasks ran. to_the_end=False: the
    copy as it is, so the play stops at its first failure."""
    marker = "  gather_facts: false\n"
    check(text.count(marker) == 1, "configure.yml's play no longer says 'gather_facts: false' once")
    with tempfile.TemporaryDirectory(prefix="pw-awx-") as tmp:
        playbook = os.path.join(tmp, "configure.yml")
        with open(playbook, "w") as f:
            f.write(text.replace(marker, marker + "  ignore_errors: true\n") if to_the_end else text)
        env = dict(os.environ, CONTROLLER_HOST=f"https://127.0.0.1:{closed_loopback_port()}",
                   CONTROLLER_USERNAME="admin", CONTROLLER_PASSWORD=PASSWORD, CONTROLLER_VERIFY_SSL="true",
                   ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_NOCOLOR="1", no_proxy="*")
        for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
            env.pop(k, None)
        proc = subprocess.run(["ansible-playbook", "-i", "localhost,", playbook,
                               "-e", "@" + os.path.join(AWX, "shards.yml")],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, env=env)
    run = RoleRun(proc)
    out = []
    for t in run.out["plays"][0]["tasks"]:
        host = t["hosts"]["localhost"]
        # A loop's messages are per item.
        msgs = [r.get("msg", "") for r in host["results"]] if "results" in host else [host.get("msg", "")]
        out.append((t["task"]["name"], host, msgs))
    check(out, f"no task ran:\n{proc.stderr[-1500:]}")
    return out


def check_configure():
    with open(os.path.join(AWX, "configure.yml")) as f:
        text = f.read()
    ran = run_configure(text)
    check([name for name, _, _ in ran] == CONFIGURE_TASKS, f"configure.yml's tasks: {[name for name, _, _ in ran]}")
    templates = {}
    for task, host, msgs in ran:
        check(host.get("failed") and all("Connection refused" in m for m in msgs),
              f"{task}: want only connection errors (arguments valid), got {msgs}")
        if task == "Job template per shard":
            templates = {r["invocation"]["module_args"]["name"]: r["invocation"]["module_args"]
                         for r in host["results"]}
        if task.startswith("Workflow"):
            check_workflow(task, host["invocation"]["module_args"]["workflow_nodes"], templates)
    # The same check catches a wrong option.
    _, _, msgs = run_configure(text.replace("        scm_clean: true\n",
                                            "        scm_clean: true\n        scm_cleaned: true\n"),
                               to_the_end=False)[0]
    check("Unsupported parameters" in msgs[0] and "scm_cleaned" in msgs[0], f"a misspelt option was not caught: {msgs}")


def check_workflow(task, nodes, templates):
    with open(os.path.join(AWX, "shards.yml")) as f:
        shards = [s["name"] for s in yaml.safe_load(f)["pathwarden_awx_shards"]]
    by_id = {n["identifier"]: n for n in nodes}
    check(len(by_id) == len(nodes), f"{task}: duplicate identifiers")
    for n in nodes:
        for kind, targets in n.get("related", {}).items():
            for t in targets:
                check(t["identifier"] in by_id, f"{task}: {n['identifier']} {kind} → unknown {t['identifier']}")

    def job_node(identifier, shard, suffix, mode):
        """The node runs the shard's job template of that mode, in job type run, with no other prompt."""
        n = by_id.get(identifier) or {}
        name = f"pathwarden {shard}{suffix}"
        check(n.get("unified_job_template")
              == {"name": name, "type": "job_template", "organization": {"name": "Default"}},
              f"{task}: node {identifier}: {n}")
        t = templates.get(name) or {}
        check(t.get("extra_vars", {}).get("pathwarden_reconcile_mode") == mode and t.get("job_type") == "run"
              and t["extra_vars"].get("pathwarden_shard_name") == shard
              and t.get("playbook") == "examples/awx/pathwarden-shard.yml"
              and t.get("ask_job_type_on_launch") is (mode == "reconcile") and not t.get("ask_variables_on_launch"),
              f"{task}: job template {name!r} of node {identifier}: {t}")
        # A node may give a job type only where its template prompts for one (AWX refuses it otherwise).
        check(n.get("job_type") == ("run" if mode == "reconcile" else None), f"{task}: node {identifier} job type: {n}")
        return n

    if task == "Workflow reconciling every shard":
        for s in shards:
            job_node(f"reconcile {s}", s, "", "reconcile")
        check(set(by_id) == {f"reconcile {s}" for s in shards} and not any(n.get("related") for n in nodes),
              f"{task}: want one independent reconcile node per shard: {sorted(by_id)}")
        return
    apply_ids = {f"apply {s}" for s in shards}
    approve = by_id.get("approve")
    check(approve and approve["unified_job_template"]["type"] == "workflow_approval"
          and approve["all_parents_must_converge"] is True
          and {t["identifier"] for t in approve["related"]["success_nodes"]} == apply_ids
          and set(approve["related"]) == {"success_nodes"},
          f"{task}: approval node: {approve}")
    for s in shards:
        p = job_node(f"plan {s}", s, " plan", "plan")
        check(p.get("related") == {"success_nodes": [{"identifier": "approve"}]}, f"{task}: plan node of {s}: {p}")
        a = job_node(f"apply {s}", s, " apply", "apply")
        check(not a.get("related"), f"{task}: the apply node of {s} leads somewhere: {a}")
    check(set(by_id) == apply_ids | {f"plan {s}" for s in shards} | {"approve"}, f"{task}: nodes {sorted(by_id)}")


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=pw test", "-c", "user.email=pw@test.invalid", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True).stdout.strip()


def run_shard(ctl, work, extra, check_mode=False):
    variables = {"pathwarden_controller_hosts": "localhost", "ansible_become": False,
                 "pathwarden_reconcile_binary": ctl.binary, "pathwarden_reconcile_config": ctl.settings}
    variables.update(extra)
    inventory = os.path.join(work, "controllers.ini")
    with open(inventory, "w") as f:
        f.write("localhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n")
    env = dict(ctl.env, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(AWX, "pathwarden-shard.yml"),
                           "-e", json.dumps(variables)] + (["--check"] if check_mode else []), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=900, env=env, cwd=work)
    return RoleRun(proc)


def check_shard_playbook(binary, pvesim):
    with tempfile.TemporaryDirectory(prefix="pw-awx-shard-") as work, Pvesim(pvesim, STATE, PVESIM_ARGS) as sim:
        ctl = OfflineController(binary, sim, work)
        origin = os.path.join(work, "origin")
        write_policy(os.path.join(origin, "policies", "cluster-a"))
        git(origin, "init", "-q", "-b", "main")
        git(origin, "add", ".")
        git(origin, "commit", "-q", "-m", "cluster-a: movies")
        first = git(origin, "rev-parse", "HEAD")
        with open(os.path.join(origin, "policies", "cluster-a", "movies.yaml"), "a") as f:
            f.write("# reviewed\n")
        git(origin, "commit", "-q", "-am", "review note")
        second = git(origin, "rev-parse", "HEAD")
        checkout = os.path.join(work, "checkout")
        shard = {"pathwarden_policy_repo": origin, "pathwarden_policy_branch": "main",
                 "pathwarden_policy_checkout": checkout, "pathwarden_shard_policies": "policies/cluster-a"}

        # AWX passes the revision it synced; the checkout and the report follow it.
        for revision in (first, second):
            r = run_shard(ctl, work, dict(shard, awx_project_revision=revision))
            # The guest cannot be reached: pathwarden could not observe it (exit 6), and the job fails.
            check(r.rc != 0 and r.stats.get("failures") == 1 and str(r.failure).find("pathwarden exited 6") >= 0,
                  f"shard run at {revision}: {r}")
            check(git(checkout, "rev-parse", "HEAD") == revision, f"checkout is not at {revision}")
            check(r.report.get("policies_revision") == revision and r.report["policies_dirty"] is False,
                  f"report records {r.report.get('policies_revision')!r}, want {revision}")
            check([p["policy"] for p in r.report["policies"]] == ["movies"], f"shard policies: {r.report}")

        r = run_shard(ctl, work, dict(shard, awx_project_revision=first), check_mode=True)
        check(r.rc != 0 and r.report.get("mode") == "check" and r.report["policies_revision"] == first
              and git(checkout, "rev-parse", "HEAD") == first, f"check mode shard run: {r}")

        # A plan job that could not observe the guest fails and keeps no plan to approve.
        plans = os.path.join(work, "plans")
        r = run_shard(ctl, work, dict(shard, awx_project_revision=first, pathwarden_reconcile_mode="plan",
                                      awx_workflow_job_id=1, pathwarden_shard_name="cluster-a",
                                      pathwarden_reconcile_plan_dir=plans))
        msg = r.task("Fail when a policy could not be observed, or is blocked").get("msg")
        check(r.rc != 0 and isinstance(msg, list)
              and msg[0].startswith("pathwarden exited 6: a guest or the Proxmox API did not answer")
              and any(line.startswith("movies: unobserved: ") for line in msg) and os.listdir(plans) == ["applied"],
              f"plan job without the guest: {r}\n{msg}\n{os.listdir(plans) if os.path.isdir(plans) else None}")

        # Without a host the play runs nowhere (never on every controller at once).
        r = run_shard(ctl, work, {k: v for k, v in shard.items()} | {
                      "pathwarden_controller_hosts": "no_controller_host_given"})
        check(r.rc == 0 and not r.stats, f"a shard without its host ran somewhere: {r}")


# The lab guest as tests/ops/guest_stand_in.py answers for it (pwtest.stand_in).


def failed_tasks(run):
    """Every failed task's name and message (RoleRun.failure knows the reconcile mode's only)."""
    return [(t["task"]["name"], t["hosts"]["localhost"].get("msg")) for play in run.out["plays"] for t in play["tasks"]
            if t["hosts"].get("localhost", {}).get("failed")]


def task_msgs(run, name):
    t = run.task(name)
    return [r.get("msg") for r in t["results"]] if "results" in t else [t.get("msg")]


def check_review_flow(binary, pvesim):
    with tempfile.TemporaryDirectory(prefix="pw-awx-review-") as work, \
            Pvesim(pvesim, STAND_IN_STATE, PVESIM_ARGS) as sim:
        ctl = stand_in_controller(binary, sim, work)
        origin = os.path.join(work, "origin")
        policies.write(os.path.join(origin, "policies", "cluster-a"), "movies-10g.yaml",
                       policies.seed_fix("movies-10g", 101, "media-vm", queues=8))
        git(origin, "init", "-q", "-b", "main")
        git(origin, "add", ".")
        git(origin, "commit", "-q", "-m", "cluster-a: movies over 10 GbE, 8 queues")
        revision = git(origin, "rev-parse", "HEAD")
        plans = os.path.join(work, "state", "plans")
        shard = {"pathwarden_policy_repo": origin, "pathwarden_policy_branch": "main", "awx_project_revision": revision,
                 "pathwarden_policy_checkout": os.path.join(work, "checkout"),
                 "pathwarden_shard_policies": "policies/cluster-a", "pathwarden_shard_name": "cluster-a",
                 "pathwarden_reconcile_plan_dir": plans}

        def job(workflow, mode, check_mode=False):
            v = dict(shard, pathwarden_reconcile_mode=mode)
            if workflow is not None:
                v["awx_workflow_job_id"] = workflow
            return run_shard(ctl, work, v, check_mode=check_mode)

        def saved(workflow, applied=False):
            return os.path.join(plans, *(["applied"] if applied else []), f"cluster-a.awx-workflow-{workflow}.json")

        def net1():
            return sim.guest(101)["config"]["net1"]

        # A plan left from a workflow never approved, 40 days ago: the next plan job removes it.
        os.makedirs(plans, mode=0o700)
        old = saved(7)
        with open(old, "w") as f:
            f.write("{}\n")
        long_ago = time.time() - 40 * 86400
        os.utime(old, (long_ago, long_ago))

        # The plan job: saved where the apply job of workflow 4711 looks, "changed", steps listed.
        r = job(4711, "plan")
        shown = r.task("Show each policy's plan").get("results", [{}])[0]
        # "changed" once, by the plan's task; the lines that show it are not (changed=1 in the recap).
        check(r.rc == 0 and r.stats.get("failures") == 0 and r.task("Run pathwarden plan").get("changed") is True
              and shown.get("changed") is False
              and "set net1 queues 1 → 8" in str(shown.get("msg"))
              and "verify with byte counters" in str(shown.get("msg")),
              f"plan job: {r}\n{failed_tasks(r)}\n{shown}")
        check(os.path.exists(saved(4711)), f"no plan saved as {saved(4711)}: {os.listdir(plans)}")
        check(stat.S_IMODE(os.stat(saved(4711)).st_mode) == 0o600 and stat.S_IMODE(os.stat(plans).st_mode) == 0o700,
              f"saved plan {oct(os.stat(saved(4711)).st_mode)}, "
              f"directory {oct(os.stat(plans).st_mode)}: want 0600 / 0700")
        with open(saved(4711)) as f:
            plan_text = f.read()
        plan = json.loads(plan_text)
        check(plan["format"] == "pathwarden-plan" and plan["policies_revision"] == revision
              and [p["state"] for p in plan["policies"]] == ["changes"]
              and [s["kind"] for s in plan["policies"][0]["steps"]] == PLANNED, f"saved plan: {plan_text[:1500]}")
        check(net1() == NET1 and guest_runs(ctl) == ["facts.yml"],
              f"the plan job changed something: {net1()}, {guest_runs(ctl)}")
        check(not os.path.exists(old), "a plan past its age was not removed")

        # Apply in check mode shows the plan and applies nothing.
        r = job(4711, "apply", check_mode=True)
        check(r.rc == 0 and r.task("Run pathwarden apply").get("skipped") is True and net1() == NET1
              and os.path.exists(saved(4711)) and plan["id"] in str(task_msgs(r, "Show the plan to apply")),
              f"apply in check mode: {r}\n{failed_tasks(r)}")

        # The apply job: exactly the saved plan, verified; then archived.
        before = len(guest_runs(ctl))
        r = job(4711, "apply")
        outcome = r.task("Show each policy's outcome").get("results", [{}])[0]
        check(r.rc == 0 and r.stats.get("failures") == 0 and r.report.get("mode") == "apply"
              and r.report.get("plan_id") == plan["id"] and [p["verdict"] for p in r.report["policies"]] == ["verified"]
              and r.task("Run pathwarden apply").get("changed") is True and outcome.get("changed") is False,
              f"apply job: {r}\n{failed_tasks(r)}\n{r.report}")
        check(net1() == NET1 + ",queues=8", f"net1 after the apply job: {net1()}")
        check({"channels.yml", "apply.yml", "probe.yml"} <= set(
            guest_runs(ctl)[before:]), f"guest playbooks: {guest_runs(ctl)}")
        check(r.task("Check out the policies at the job's revision").get("skipped") is True,
              "the apply job moved the checkout (it reads no policy: the plan holds them)")
        check(not os.path.exists(saved(4711)) and os.path.exists(saved(4711, applied=True)),
              f"the applied plan was not archived: {os.listdir(plans)}")
        with open(saved(4711, applied=True)) as f:
            check(f.read() == plan_text, "the archived plan is not the one saved")
        r = job(4711, "apply")
        check(r.rc != 0 and r.stats.get("failures") == 1
              and "was applied already" in str(task_msgs(r, "Fail when there is no saved plan")),
              f"a second apply of one plan: {r}")

        # Stale: the VM's config edited between review and apply. pathwarden refuses, nothing changes.
        sim.admin("PUT", "/pvesim/vms/101/config", {"net1": NET1})
        r = job(4712, "plan")
        check(r.rc == 0 and os.path.exists(saved(4712)), f"plan job 4712: {r}\n{failed_tasks(r)}")
        with open(saved(4712)) as f:
            stale_id = json.load(f)["id"]
        sim.admin("PUT", "/pvesim/vms/101/config", {"description": "edited by hand after the review"})
        before = len(guest_runs(ctl))
        r = job(4712, "apply")
        msg = r.failure
        check(r.rc != 0 and r.stats.get("failures") == 1 and isinstance(msg, list)
              and msg[0].startswith("pathwarden exited 3: the saved plan was not applied")
              and "not applied: movies-10g; nothing was changed" in msg[1]
              and "movies-10g: precondition-failed: the Proxmox config of VM 101 changed since the plan; "
                  "run 'pathwarden plan' again" in msg, f"stale apply (Proxmox): {r}")
        check(r.report.get("plan_id") == stale_id and r.report["policies"]
              [0]["changes"] == [], f"stale apply report: {r.report}")
        check(net1() == NET1 and guest_runs(ctl)[before:] == ["facts.yml"] and os.path.exists(saved(4712))
              and not os.path.exists(saved(4712, applied=True)),
              f"a stale apply changed something: {net1()}, {guest_runs(ctl)[before:]}, {os.listdir(plans)}")

        # Stale: the guest's fstab edited between review and apply.
        r = job(4713, "plan")
        check(r.rc == 0 and os.path.exists(saved(4713)), f"plan job 4713: {r}\n{failed_tasks(r)}")
        with open(os.path.join(ctl.guest, "fstab"), "a") as f:
            f.write("# edited by hand after the review\n")
        with open(os.path.join(ctl.guest, "fstab")) as f:
            edited = f.read()
        before = len(guest_runs(ctl))
        r = job(4713, "apply")
        msg = r.failure
        check(r.rc != 0 and isinstance(msg, list) and msg[0].startswith("pathwarden exited 3")
              and ("movies-10g: precondition-failed: the fstab of media-vm changed since the plan; "
                   "run 'pathwarden plan' again") in msg,
              f"stale apply (fstab): {r}")
        with open(os.path.join(ctl.guest, "fstab")) as f:
            check(f.read() == edited, "a stale apply wrote the fstab")
        check(net1() == NET1 and guest_runs(ctl)[before:] == [
              "facts.yml"], f"a stale apply changed something: {net1()}")

        # No plan saved for this workflow; and plan or apply outside a workflow.
        r = job(4714, "apply")
        check(r.rc != 0 and "no saved plan " + saved(4714) in str(task_msgs(r, "Fail when there is no saved plan")),
              f"apply without a plan: {r}")
        for mode in ("plan", "apply"):
            r = job(None, mode)
            t = r.task("Check that a plan or apply job runs in a workflow")
            check(r.rc != 0 and t.get("failed") and "runs only as a node of the workflow" in str(t.get("msg")),
                  f"{mode} outside a workflow: {r}")
        check(net1() == NET1, f"net1 changed: {net1()}")


def main(binary, pvesim):
    check(shutil.which("ansible-playbook"), "ansible-playbook is missing")
    check_configure()
    check_shard_playbook(os.path.abspath(binary), pvesim)
    check_review_flow(os.path.abspath(binary), pvesim)
    print("ok awx examples")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
