#!/usr/bin/python3
"""examples/awx: the configuration playbook's module arguments and workflow graph, and the shard
playbook end to end on localhost.

usage: awx_examples_test.py PATHWARDEN PVESIM
1. configure.yml (collection awx.awx, bundled with Debian's ansible) is run task by task
   (--start-at-task) against a closed port on 127.0.0.1: each awx.awx module validates its
   arguments with its own argument spec first and only then fails to connect. So every task must
   fail with a connection error, never with an argument error; a copy with a misspelt option must
   fail with "Unsupported parameters" (the check can tell the two apart). The workflows' nodes as
   the modules received them form the intended graph: per shard a check node leading to the
   approval node (which waits for all of them) leading to every reconcile node, job types
   check/run, every referenced identifier defined.
2. pathwarden-shard.yml runs on localhost (become off) with pvesim and an unreachable guest
   (pwtest.offline_controller): it checks out a local policy repository at the revision AWX would pass
   (awx_project_revision), runs the role on the shard's directory, and the report records exactly
   that commit; in check mode the checkout still follows the revision and pathwarden runs --check.
   The guest never answers, so every run ends "could not observe" (exit 6) and the job fails.
"""
import json
import os
import shutil
import subprocess
import tempfile

from pwtest.offline_controller import PVESIM_ARGS, STATE, OfflineController, closed_loopback_port, write_policy
from pwtest.paths import ROOT
from pwtest.pvesim_process import Pvesim
from pwtest.role_run import RoleRun
from pwtest.script import check, test_main

AWX = os.path.join(ROOT, "examples", "awx")

CONFIGURE_TASKS = ["Project with the policies and the pathwarden playbooks", "Inventory of the controller hosts",
                   "Controller hosts", "Job template per shard", "Workflow reconciling every shard",
                   "Workflow checking, approving and reconciling every shard", "Hourly schedule of the unattended workflow"]
PASSWORD = "pw-test-controller-password-7f3a"  # distinctive: no_log masks it wherever it appears


def run_configure(playbook, start_at):
    env = dict(os.environ, CONTROLLER_HOST=f"https://127.0.0.1:{closed_loopback_port()}", CONTROLLER_USERNAME="admin",
               CONTROLLER_PASSWORD=PASSWORD, CONTROLLER_VERIFY_SSL="true",
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_NOCOLOR="1", no_proxy="*")
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(k, None)
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", playbook, "-e", "@" + os.path.join(AWX, "shards.yml"),
                           "--start-at-task", start_at], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, env=env)
    run = RoleRun(proc)
    tasks = run.out["plays"][0]["tasks"]
    check(tasks, f"{start_at}: no task ran:\n{proc.stderr[-1500:]}")
    failed = tasks[-1]
    host = failed["hosts"]["localhost"]
    name = failed["task"]["name"]
    # A loop's messages are per item.
    msgs = [r.get("msg", "") for r in host["results"]] if "results" in host else [host.get("msg", "")]
    return name, host, msgs


def check_configure():
    for task in CONFIGURE_TASKS:
        name, host, msgs = run_configure(os.path.join(AWX, "configure.yml"), task)
        check(name == task, f"--start-at-task {task!r} stopped at {name!r}: {msgs}")
        check(host.get("failed") and all("Connection refused" in m for m in msgs),
              f"{task}: want only connection errors (arguments valid), got {msgs}")
        if task.startswith("Workflow"):
            check_workflow(task, host["invocation"]["module_args"]["workflow_nodes"])
    # The same check catches a wrong option.
    with tempfile.TemporaryDirectory(prefix="pw-awx-") as tmp:
        bad = os.path.join(tmp, "configure.yml")
        with open(os.path.join(AWX, "configure.yml")) as f:
            text = f.read()
        with open(bad, "w") as f:
            f.write(text.replace("        scm_clean: true\n", "        scm_clean: true\n        scm_cleaned: true\n"))
        _, _, msgs = run_configure(bad, CONFIGURE_TASKS[0])
        check("Unsupported parameters" in msgs[0] and "scm_cleaned" in msgs[0], f"a misspelt option was not caught: {msgs}")


def check_workflow(task, nodes):
    with open(os.path.join(AWX, "shards.yml")) as f:
        import yaml  # Debian's python3-yaml, a dependency of ansible
        shards = [s["name"] for s in yaml.safe_load(f)["pathwarden_awx_shards"]]
    by_id = {n["identifier"]: n for n in nodes}
    check(len(by_id) == len(nodes), f"{task}: duplicate identifiers")
    for n in nodes:
        for kind, targets in n.get("related", {}).items():
            for t in targets:
                check(t["identifier"] in by_id, f"{task}: {n['identifier']} {kind} → unknown {t['identifier']}")
    run_ids = {f"reconcile {s}" for s in shards}
    for s in shards:
        r = by_id.get(f"reconcile {s}")
        check(r and r["job_type"] == "run" and r["unified_job_template"] == {
            "name": f"pathwarden {s}", "type": "job_template", "organization": {"name": "Default"}}, f"{task}: node of {s}: {r}")
    if task == "Workflow reconciling every shard":
        check(set(by_id) == run_ids and not any(n.get("related") for n in nodes),
              f"{task}: want one independent reconcile node per shard: {sorted(by_id)}")
        return
    approve = by_id.get("approve")
    check(approve and approve["unified_job_template"]["type"] == "workflow_approval"
          and approve["all_parents_must_converge"] is True
          and {t["identifier"] for t in approve["related"]["success_nodes"]} == run_ids,
          f"{task}: approval node: {approve}")
    for s in shards:
        c = by_id.get(f"check {s}")
        check(c and c["job_type"] == "check" and c["related"] == {"success_nodes": [{"identifier": "approve"}]},
              f"{task}: check node of {s}: {c}")
    check(set(by_id) == run_ids | {f"check {s}" for s in shards} | {"approve"}, f"{task}: nodes {sorted(by_id)}")


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=pw test", "-c", "user.email=pw@test.invalid", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=True).stdout.strip()


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

        # Without a host the play runs nowhere (never on every controller at once).
        r = run_shard(ctl, work, {k: v for k, v in shard.items()} | {"pathwarden_controller_hosts": "no_controller_host_given"})
        check(r.rc == 0 and not r.stats, f"a shard without its host ran somewhere: {r}")


def main(binary, pvesim):
    check(shutil.which("ansible-playbook"), "ansible-playbook is missing")
    check_configure()
    check_shard_playbook(os.path.abspath(binary), pvesim)
    print("ok awx examples")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
