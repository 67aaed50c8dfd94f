#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Ansible collection pathwarden.pathwarden (playbooks/collections/ansible_collections/
pathwarden/pathwarden): built, installed offline, checked, and its module run against a stand-in.

usage: ansible_collection_test.py
1. `ansible-galaxy collection build` makes the tarball and `ansible-galaxy collection install
   --offline` installs it into a temporary directory; `ansible-doc` reads the installed module's
   documentation, with the attributes check_mode and diff_mode (support full) and platform.
2. `ansible-test sanity` on a copy of the collection, the tests that run offline (every sanity test
   whose requirements ansible-test would pip-install into a virtualenv needs the network, which
   this machine does not have); validate-modules and pep8 then run as ansible-test runs them, with
   its own scripts and settings and Debian's python3-voluptuous and python3-pycodestyle, with no
   ignore file (the module has the GPLv3 header). (ansible-lint --profile production over the
   collection is the CTest ops_ansible_lint.)
3. The installed module on localhost (connection local) with a stand-in for the pathwarden
   executable that logs its argv and prints a report (format 3.0, planned[] and changes[]
   structured; for `reconcile` and `apply`), exiting with the code each case chooses:
   - check mode passes --check; diff mode runs pathwarden once (never `plan`) and returns, in
     Ansible's diff format, the mount's fstab line, the netN string and the channels before and
     after, taken from the report: in check mode from planned[] of the policies with drift,
     otherwise from changes[] of those changed and verified; a re-made mount whose line stays
     (before == after) gives no fstab entry, a restart its own; a format 2.x report (planned[] as
     strings) gives no diff and no error, an unknown major a warning and no diff;
   - changed/failed per exit code as the role always had them: 0 ok, 2 changed, 3 changed in check
     mode and ok outside it (failed with fail_on_blocked), 1/4/5/6 failed with the exit code's
     meaning and one line per policy (verdict, errors, diagnosis, remedies), no report failed;
     changed wherever a policy of the report has changed: true (also one rolled back);
   - policies/selectors/nodes/hosts reach the argv as --policy/--selector/--node/--host, one
     argument each; plan_file runs `apply` (a planned policy left precondition-failed fails it as
     "not applied") with the saved plan's diff (the plan returned as `plan`, only there), and in
     check mode shows the saved plan's diff without running anything;
   - `ansible-playbook --check --diff` with the default callback prints the fstab and net1 lines.
"""
import glob
import json
import os
import shutil
import subprocess
import tempfile

import yaml

from pwtest.paths import ROOT
from pwtest.script import check, test_main

COLLECTION = os.path.join(ROOT, "playbooks", "collections", "ansible_collections", "pathwarden", "pathwarden")
PY = "/usr/bin/python3"

OLD_LINE = "192.0.2.2:/srv/nas/movies /mnt/movies nfs vers=4.2,_netdev 0 0"
NEW_LINE = "198.51.100.2:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0"
NET1_FROM = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr1"
NET1_TO = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr1,queues=8"
FSTAB_HEAD = "# /etc/fstab: static file system information.\nUUID=0a1b2c3d / ext4 errors=remount-ro 0 1\n"

# A saved plan (plan_file) as `pathwarden plan --output json` prints it (the seed's fix on the lab
# guest), and one policy without changes.
PLAN = {
    "format": "pathwarden-plan", "version": 1, "id": "7f3a9c2e1b4d", "created_at": "2026-11-30T02:00:00Z",
    "policies_revision": "d050152", "policies_dirty": False,
    "policies": [
        {"policy": "movies-10g", "source": "policies/movies-10g.yaml:4:1", "vm": {"node": "pve1", "vmid": 101},
         "host": "media-vm", "state": "changes", "blockers": [], "warnings": [], "notes": [], "remedy": [],
         "steps": [
             {"kind": "set-nic", "disruptive": True, "summary": "net1: queues 1 -> 8",
              "vm": {"node": "pve1", "vmid": 101}, "device": "net1", "from": NET1_FROM, "to": NET1_TO,
              "digest": "5c6d9f3b", "hotplug": True, "queues_from": None, "queues_to": 8, "restart_window": None},
             {"kind": "set-channels", "disruptive": False, "summary": "link2: combined 1 -> 8", "host": "media-vm",
              "mac": "bc:24:11:2a:3b:4c", "interface": "ens19", "from": 1, "to": 8},
             {"kind": "change-fstab", "disruptive": True, "summary": "/mnt/movies: vers=4.2 -> vers=3,nconnect=8",
              "host": "media-vm", "mount_point": "/mnt/movies", "old_content": FSTAB_HEAD + OLD_LINE + "\n",
              "new_content": (FSTAB_HEAD + "# Managed by pathwarden (policy movies-10g): vers=3 on purpose\n"
                              + NEW_LINE + "\n"),
              "backup_path": "/etc/fstab.pathwarden-7f3a", "activations": [], "inverse_activations": []},
             {"kind": "prove-path", "disruptive": False, "summary": "prove /mnt/movies runs over bc:24:11:2a:3b:4c",
              "host": "media-vm", "mount_point": "/mnt/movies"}]},
        {"policy": "postgres-data", "source": "policies/postgres-data.yaml:4:1", "vm": {"node": "pve1", "vmid": 102},
         "host": "docker-vm", "state": "converged", "steps": [], "blockers": [], "warnings": [], "notes": [],
         "remedy": []},
    ]}


# The same steps as the report's planned[] / changes[] (format 3): the mount's fstab line only.
def change(action, target, before, after, text):
    return {"action": action, "target": target, "before": before, "after": after, "text": text}


SET_NIC = change("set-nic", "VM 101 net1", NET1_FROM, NET1_TO,
                 "set net1 queues 1 → 8 (hot-plug: the NIC is re-plugged)")
SET_CHANNELS = change("set-channels", "media-vm ens19 combined channels", "1", "8",
                      "set ens19 combined channels to 8 in the guest")
CHANGE_FSTAB = change("change-fstab", "media-vm /mnt/movies", OLD_LINE, NEW_LINE,
                      "write the fstab entry of /mnt/movies and re-make the mount")
VERIFY = change("prove-path", "media-vm /mnt/movies", None, None, "prove /mnt/movies runs over bc:24:11:2a:3b:4c")
FIX = [SET_NIC, SET_CHANNELS, CHANGE_FSTAB, VERIFY]
# net1's queues pending until a restart, and a mount only re-made (its fstab line stays).
PENDING_NIC = change("set-nic", "VM 101 net1", NET1_FROM, NET1_TO, "set net1 queues 1 → 8 (pending until restart)")
RESTART = change("restart-vm", "VM 101", None, None, "reboot VM 101 through Proxmox to apply net1 queues=8")
REMOUNT = change("change-fstab", "media-vm /mnt/movies", NEW_LINE, NEW_LINE,
                 "re-make the mount /mnt/movies (mounted with nconnect=1, the fstab says nconnect=8)")
RESTART_REMOUNT = [PENDING_NIC, RESTART, SET_CHANNELS, REMOUNT, VERIFY]


def policy_report(name, verdict, changed=False, **extra):
    p = {"policy": name, "source": f"policies/{name}.yaml:4:1", "node": "pve1", "vmid": 101, "host": "media-vm",
         "verdict": verdict, "cause": None, "changed": changed, "planned": [], "changes": [], "rolled_back": [],
         "verification": None, "restored_checks": [], "warnings": [], "errors": [], "notes": [], "remedy": []}
    p.update(extra)
    return p


def report(mode, exit_code, movies, format_version="3.0"):
    major = format_version.split(".")[0]
    return {"format": "pathwarden-report", "format_version": format_version, "pathwarden_version": "1.4.0",
            "schema": f"pathwarden-report/v{major}", "run_id": "r1", "plan_id": None, "mode": mode,
            "started_at": "t0", "finished_at": "t1", "policies_revision": "d050152", "policies_dirty": False,
            "journal_left": False, "stopped_by": None, "exit_code": exit_code,
            "policies": [movies, policy_report("postgres-data", "converged")]}


ROLLED_BACK = policy_report("movies-10g", "rolled-back", True, cause="wrong-path",
                            changes=[SET_NIC], rolled_back=["net1 queues 8 -> 1"], planned=FIX,
                            verification={"summary": "the probe's bytes crossed link1",
                                          "diagnosis": "trunked onto the old link", "remedies": ["pin vers=3"]})
CASES = {
    # name: (exit code, report or None, check mode, diff, extra module args)
    "check_diff": (3, report("check", 3, policy_report("movies-10g", "drift", planned=FIX)), True, True, {}),
    "check_remount": (3, report("check", 3, policy_report("movies-10g", "drift", planned=RESTART_REMOUNT)),
                      True, True, {}),
    "check_v2": (3, report("check", 3, policy_report("movies-10g", "drift", planned=[p["text"] for p in FIX]),
                           format_version="2.1"), True, True, {}),
    "check_v9": (3, report("check", 3, policy_report("movies-10g", "drift", planned=FIX), format_version="9.0"),
                 True, True, {}),
    "check_nodiff": (3, report("check", 3, policy_report("movies-10g", "drift", planned=FIX)), True, False, {}),
    "converged": (0, report("reconcile", 0, policy_report("movies-10g", "converged")), False, True, {}),
    "verified": (2, report("reconcile", 2, policy_report("movies-10g", "verified", True, planned=FIX, changes=FIX)),
                 False, True, {}),
    "blocked": (3, report("reconcile", 3, policy_report("movies-10g", "precondition-failed",
                                                        errors=["VM 101 is locked"])),
                False, False, {}),
    "blocked_fail": (3, report("reconcile", 3, policy_report("movies-10g", "precondition-failed",
                                                             errors=["VM 101 is locked"])),
                     False, False, {"fail_on_blocked": True}),
    "blocked_check": (3, report("check", 3, policy_report("movies-10g", "precondition-failed",
                                                          errors=["VM 101 is locked"])),
                      True, False, {"fail_on_blocked": True}),
    "no_report": (1, None, False, False, {}),
    "diagnostics": (1, {"format": "pathwarden-diagnostics", "format_version": "1.0", "command": "reconcile",
                        "exit_code": 1, "diagnostics": [
                            {"severity": "error", "summary": "bad policy", "where": "policies/x.yaml:1:1"},
                            {"severity": "error", "summary": "1 problem(s) in the policies", "where": "policies",
                             "hint": "fix them"}]}, False, False, {}),
    "rolled_back": (4, report("reconcile", 4, ROLLED_BACK), False, True, {}),
    "rollback_failed": (5, report("reconcile", 5, policy_report("movies-10g", "rollback-failed", True,
                                                                errors=["net1 could not be restored"])),
                        False, False, {}),
    "unobserved": (6, report("reconcile", 6, policy_report("movies-10g", "unobserved",
                                                           errors=["could not observe guest media-vm: unreachable"])),
                   False, False, {}),
    "selected": (0, report("reconcile", 0, policy_report("movies-10g", "converged")), False, False,
                 {"policies": ["movies-*", "x' $(id) y"], "selectors": {"tier": "media"}, "nodes": ["pve1"],
                  "hosts": ["media-vm"], "paths": ["/srv/policies"], "report_file": "/tmp/r.json"}),
    "apply_stale": (3, report("apply", 3, policy_report(
                        "movies-10g", "precondition-failed",
                        errors=["the Proxmox config of VM 101 changed since the plan"])),
                    False, False, {"plan_file": "PLAN"}),
    "apply_verified": (2, report("apply", 2, policy_report("movies-10g", "verified", True, planned=FIX, changes=FIX)),
                       False, True, {"plan_file": "PLAN"}),
    "apply_check": (2, None, True, True, {"plan_file": "PLAN"}),
}

STAND_IN = """#!/usr/bin/python3
import json, os, sys
case = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(case, "calls.jsonl"), "a") as f:
    f.write(json.dumps(sys.argv) + "\\n")
command = next(a for a in sys.argv[1:] if not a.startswith("--"))
sys.stderr.write("stand-in: pathwarden " + command + "\\n")
if command == "plan":
    sys.stderr.write("stand-in: the module has no reason to run pathwarden plan\\n")
    sys.exit(1)
if os.path.exists(os.path.join(case, "report.json")):
    with open(os.path.join(case, "report.json")) as f:
        print(f.read())
else:
    sys.stderr.write("pathwarden reconcile: policies/x.yaml:1:1: bad policy\\n")
with open(os.path.join(case, "rc")) as f:
    sys.exit(int(f.read()))
"""


def run(cmd, **kw):
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900, **kw)


def build_and_install(work):
    out = os.path.join(work, "dist")
    r = run(["ansible-galaxy", "collection", "build", COLLECTION, "--output-path", out])
    tarballs = glob.glob(os.path.join(out, "pathwarden-pathwarden-*.tar.gz"))
    check(r.returncode == 0 and len(tarballs) == 1, f"collection build: {r.stdout}\n{r.stderr}")
    installed = os.path.join(work, "installed")
    r = run(["ansible-galaxy", "collection", "install", "--offline", "-p", installed, tarballs[0]])
    module = os.path.join(installed, "ansible_collections", "pathwarden",
                          "pathwarden", "plugins", "modules", "reconcile.py")
    role = os.path.join(installed, "ansible_collections", "pathwarden", "pathwarden",
                        "roles", "pathwarden_reconcile", "tasks", "main.yml")
    check(r.returncode == 0 and os.path.exists(module) and os.path.exists(role),
          f"collection install: {r.stdout}\n{r.stderr}")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=installed)
    r = run(["ansible-doc", "--json", "pathwarden.pathwarden.reconcile"], env=env)
    check(r.returncode == 0, f"ansible-doc: {r.stderr}")
    doc = json.loads(r.stdout)["pathwarden.pathwarden.reconcile"]["doc"]
    attrs = doc.get("attributes", {})
    check(attrs.get("check_mode", {}).get("support") == "full" and attrs.get("diff_mode", {}).get("support") == "full"
          and "platforms" in attrs.get("platform", {}) and attrs["check_mode"].get("description"),
          f"documented attributes: {attrs}")
    r = run(["ansible-doc", "--type", "role", "--json", "pathwarden.pathwarden.pathwarden_reconcile"], env=env)
    check(r.returncode == 0 and "pathwarden_reconcile_mode" in r.stdout, f"ansible-doc of the role: {r.stderr}")
    return installed


def galaxy_version():
    with open(os.path.join(COLLECTION, "galaxy.yml")) as f:
        return yaml.safe_load(f)["version"]


def sanity(work):
    copy_root = os.path.join(work, "sanity")
    tree = os.path.join(copy_root, "ansible_collections", "pathwarden", "pathwarden")
    shutil.copytree(COLLECTION, tree)
    offline = ["action-plugin-docs", "compile", "empty-init", "future-import-boilerplate", "ignores", "line-endings",
               "metaclass-boilerplate", "no-assert", "no-basestring", "no-dict-iteritems", "no-dict-iterkeys",
               "no-dict-itervalues", "no-get-exception", "no-illegal-filenames", "no-main-display", "no-smart-quotes",
               "no-unicode-literals", "replace-urlopen", "shebang", "symlinks", "use-argspec-type-path",
               "use-compat-six"]
    cmd = ["ansible-test", "sanity", "--local", "--python", "3.11", "--python-interpreter", PY, "--color", "no"]
    for t in offline:
        cmd += ["--test", t]
    r = run(cmd, cwd=tree)
    check(r.returncode == 0 and "ERROR" not in r.stdout + r.stderr,
          f"ansible-test sanity: {r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    # GPL-3.0-or-later with the header ansible-test expects: the collection ignores nothing.
    check(not os.path.exists(os.path.join(tree, "tests", "sanity")), "the collection carries sanity ignores again")
    ignored = set()
    sanity_root = "/usr/lib/python3/dist-packages/ansible_test/_util/controller/sanity"
    r = run([PY, os.path.join(sanity_root, "validate-modules", "validate.py"), "--format", "json", "--arg-spec",
             "--collection", "ansible_collections/pathwarden/pathwarden", "--collection-version", galaxy_version(),
             "plugins/modules/reconcile.py"],
            cwd=tree, env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=copy_root, PYTHONPATH=copy_root))
    found = json.loads(r.stdout) if r.stdout.strip().startswith("{") else None
    check(found is not None, f"validate-modules did not run: {r.stderr[-2000:]}")
    errors = [e for v in found.values() for e in v["errors"] if e["code"] not in ignored]
    check(not errors and not any(v["traces"] for v in found.values()),
          f"validate-modules: {json.dumps(found, indent=1)}")
    with open(os.path.join(sanity_root, "pep8", "current-ignore.txt")) as f:
        pep8_ignore = ",".join(line.strip() for line in f if line.strip())
    r = run([PY, "-m", "pycodestyle", "--max-line-length", "160", "--ignore", pep8_ignore,
             "plugins/modules/reconcile.py"], cwd=tree)
    check(r.returncode == 0, f"pep8: {r.stdout}{r.stderr}")


def write_case(work, name, rc, rep):
    case = os.path.join(work, "cases", name)
    os.makedirs(case)
    stand_in = os.path.join(case, "pathwarden")
    with open(stand_in, "w") as f:
        f.write(STAND_IN)
    os.chmod(stand_in, 0o755)
    with open(os.path.join(case, "rc"), "w") as f:
        f.write(str(rc))
    if rep is not None:
        with open(os.path.join(case, "report.json"), "w") as f:
            json.dump(rep, f)
    return case


def calls(case):
    path = os.path.join(case, "calls.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f]


def playbook(work, installed, tasks, extra_args=(), callback="ansible.posix.json"):
    path = os.path.join(work, f"play-{len(os.listdir(work))}.yml")
    with open(path, "w") as f:
        json.dump([{"name": "module cases", "hosts": "localhost", "gather_facts": False, "tasks": tasks}], f)
    inventory = os.path.join(work, "inventory.ini")
    with open(inventory, "w") as f:
        f.write(f"localhost ansible_connection=local ansible_python_interpreter={PY}\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=installed, ANSIBLE_STDOUT_CALLBACK=callback, ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=os.path.join(work, "ansible-local"), ANSIBLE_RETRY_FILES_ENABLED="0")
    return run(["ansible-playbook", "-i", inventory, path, *extra_args], env=env, cwd=work)


def module_cases(work, installed):
    plan_file = os.path.join(work, "saved-plan.json")
    with open(plan_file, "w") as f:
        json.dump(PLAN, f)
    tasks, dirs = [], {}
    for name, (rc, rep, check_mode, diff, args) in CASES.items():
        dirs[name] = write_case(work, name, rc, rep)
        module_args = {"binary": os.path.join(dirs[name], "pathwarden"), "config": "/etc/pw.yaml"}
        module_args.update({k: (plan_file if v == "PLAN" else v) for k, v in args.items()})
        tasks.append({"name": name, "pathwarden.pathwarden.reconcile": module_args, "check_mode": check_mode,
                      "diff": diff, "ignore_errors": True})
    r = playbook(work, installed, tasks)
    try:
        out = json.loads(r.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"ansible-playbook printed no JSON (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}")
    results = {t["task"]["name"]: t["hosts"]["localhost"] for t in out["plays"][0]["tasks"]}
    check(set(results) == set(CASES), f"tasks run: {sorted(results)}")

    def expect(name, changed, failed):
        res = results[name]
        check(bool(res.get("changed")) is changed and bool(res.get("failed")) is failed,
              f"{name}: want changed={changed} failed={failed}: {json.dumps(res)[:2500]}")
        return res

    def reconcile_argv(name):
        argvs = [a for a in calls(dirs[name]) if "reconcile" in a or "apply" in a]
        check(len(argvs) == 1, f"{name}: pathwarden reconcile/apply ran {len(argvs)} times: {calls(dirs[name])}")
        return argvs[0]

    def ran_once(name):
        """Diff mode observes once: one pathwarden run, never `plan`, and no plan returned."""
        argvs = calls(dirs[name])
        check(len(argvs) == 1 and "plan" not in argvs[0] and "plan" not in results[name],
              f"{name}: pathwarden ran {len(argvs)} times (want once, no plan): {argvs}")
        return argvs[0]

    def diff_format(name, diff):
        check(isinstance(diff, list)
              and all(set(d) == {"before_header", "after_header", "before", "after"} for d in diff),
              f"{name}: not Ansible's diff format: {diff}")
        return diff

    # Check mode + diff: reconcile --check only, the diff from its report's planned[].
    res = expect("check_diff", True, False)
    argv = ran_once("check_diff")
    check(argv[:6] == [argv[0], "--config=/etc/pw.yaml", "--log-level=info", "reconcile", "--output=json", "--no-color"]
          and "--check" in argv, f"reconcile argv: {argv}")
    diff = diff_format("check_diff", res.get("diff"))
    fstab = [d for d in diff if d["before_header"].startswith("media-vm:/etc/fstab")]
    check(len(fstab) == 1 and fstab[0]["before"] == OLD_LINE + "\n" and fstab[0]["after"] == NEW_LINE + "\n"
          and fstab[0]["before_header"] == fstab[0]["after_header"] == "media-vm:/etc/fstab (policy movies-10g)",
          f"fstab diff: {fstab}")
    net = [d for d in diff if "net1" in d["before_header"]]
    check(len(net) == 1 and net[0]["before"] == f"net1: {NET1_FROM}\n" and net[0]["after"] == f"net1: {NET1_TO}\n"
          and net[0]["before_header"] == "VM 101 on pve1: net1 (policy movies-10g)", f"net1 diff: {net}")
    check(any(d["before"] == "combined 1\n" and d["after"] == "combined 8\n" and "ens19" in d["before_header"]
              for d in diff),
          f"channels diff: {diff}")
    check(len(diff) == 3 and not any("power" in d["before_header"] for d in diff),
          f"check_diff: verify shows no diff: {diff}")
    check(res["report"]["mode"] == "check" and res["report"]["format_version"] == "3.0" and res["rc"] == 3,
          f"check_diff result: {res}")

    # A restart and a mount only re-made: the restart shown with why, no fstab entry (its line stays).
    res = expect("check_remount", True, False)
    ran_once("check_remount")
    diff = diff_format("check_remount", res.get("diff"))
    check(not any("/etc/fstab" in d["before_header"] for d in diff), f"re-made mount gave an fstab diff: {diff}")
    restart = [d for d in diff if d["before_header"] == "VM 101 on pve1: power (policy movies-10g)"]
    check(len(restart) == 1 and restart[0]["before"] == "running\n"
          and restart[0]["after"] == f"restarted ({RESTART['text']})\n", f"restart diff: {diff}")
    check(any(d["after"] == f"net1: {NET1_TO}\n" for d in diff) and len(diff) == 3, f"check_remount diff: {diff}")

    # Format 2.x: planned[] as strings gives no diff, and no error; an unknown major a warning.
    res = expect("check_v2", True, False)
    ran_once("check_v2")
    check(res.get("diff") == [] and res["report"]["policies"][0]["planned"][0].startswith("set net1"),
          f"format 2 report: {json.dumps(res)[:2500]}")
    res = expect("check_v9", True, False)
    ran_once("check_v9")
    check(res.get("diff") == [] and any("format_version 9.0" in w for w in res.get("warnings", [])),
          f"format 9 report: {json.dumps(res)[:2500]}")

    res = expect("check_nodiff", True, False)
    argvs = calls(dirs["check_nodiff"])
    check(len(argvs) == 1 and "reconcile" in argvs[0] and "--check" in argvs[0] and "diff" not in res,
          f"check mode without diff: {argvs} {res.get('diff')}")

    res = expect("converged", False, False)
    argv = ran_once("converged")
    check(not res.get("diff") and argv[3] == "reconcile" and "--check" not in argv,
          f"converged: {res.get('diff')}, {argv}")
    # A real run: the diff from changes[] of the policies changed and verified.
    res = expect("verified", True, False)
    argv = ran_once("verified")
    diff = diff_format("verified", res.get("diff"))
    check(argv[3] == "reconcile" and "--check" not in argv
          and any(d["before"] == OLD_LINE + "\n" and d["after"] == NEW_LINE + "\n" for d in diff)
          and any(d["after"] == f"net1: {NET1_TO}\n" for d in diff) and len(diff) == 3
          and res["report"]["policies"][0]["verdict"] == "verified", f"verified diff: {diff}")
    expect("blocked", False, False)
    res = expect("blocked_fail", False, True)
    check(res["failures"][0].startswith("pathwarden exited 3: drift found")
          and "movies-10g: precondition-failed: VM 101 is locked" in res["failures"],
          f"fail_on_blocked: {res['failures']}")
    expect("blocked_check", False, False)  # fail_on_blocked applies outside check mode only
    res = expect("no_report", False, True)
    check(res["msg"].startswith("pathwarden exited 1 (bad usage, or a bad policy or settings file) without a report: ")
          and "policies/x.yaml:1:1: bad policy" in res["msg"] and res["report"] == {}, f"no report: {res['msg']}")
    res = expect("diagnostics", False, True)
    usage = "pathwarden exited 1 (bad usage, or a bad policy or settings file): "
    check(res["failures"] == [usage + "policies/x.yaml:1:1: bad policy",
                              usage + "policies: 1 problem(s) in the policies (fix them)"],
          f"--output json's diagnostics document: {res['failures']}")
    # changed as the report's policy says (changes were made, then rolled back), as the role always had it
    res = expect("rolled_back", True, True)
    check(res["failures"][0] == ("pathwarden exited 4: a change failed verification and was rolled back (or kept "
                                 "inconclusive by the policy), or a path is wrong")
          and ("movies-10g: rolled-back (verification: wrong-path); diagnosis: trunked onto the old link; "
               "remedies: pin vers=3")
          in res["failures"] and res["msg"] == "\n".join(res["failures"]) and not res.get("diff")
          and res["report"]["exit_code"] == 4, f"rolled back: {res}")
    res = expect("rollback_failed", True, True)
    check(res["failures"][0].startswith("pathwarden exited 5: a rollback failed")
          and "movies-10g: rollback-failed: net1 could not be restored" in res["failures"],
          f"rollback failed: {res['failures']}")
    res = expect("unobserved", False, True)
    check(res["failures"][0].startswith("pathwarden exited 6: a guest or the Proxmox API did not answer")
          and any(f.startswith("movies-10g: unobserved: could not observe guest media-vm") for f in res["failures"]),
          f"unobserved: {res['failures']}")

    argv = reconcile_argv("selected")
    check(argv[3:] == ["reconcile", "--output=json", "--no-color", "--policy=movies-*", "--policy=x' $(id) y",
                       "--selector=tier=media", "--node=pve1", "--host=media-vm", "--report-file=/tmp/r.json", "--",
                       "/srv/policies"], f"selectors argv: {argv}")

    res = expect("apply_stale", False, True)
    argv = reconcile_argv("apply_stale")
    check(argv[3:] == ["apply", "--output=json", "--no-color", "--", plan_file], f"apply argv: {argv}")
    check(res["failures"][0].startswith("pathwarden exited 3: the saved plan was not applied")
          and res["failures"][1] == ("not applied: movies-10g; nothing was changed; "
                                     "launch the review again for a fresh plan"),
          f"stale apply: {res['failures']}")
    res = expect("apply_verified", True, False)
    check([a[3] for a in calls(dirs["apply_verified"])] == ["apply"] and res.get("plan", {}).get("id") == PLAN["id"]
          and any(NEW_LINE in d["after"] and FSTAB_HEAD in d["after"] for d in res.get("diff", [])),
          f"apply diff (the saved plan's): {res.get('diff')}")
    res = expect("apply_check", True, False)
    check(calls(dirs["apply_check"]) == [] and any(f"net1: {NET1_TO}" in d["after"] for d in res.get("diff", [])),
          f"apply in check mode ran pathwarden, or showed no diff: {calls(dirs['apply_check'])} {res}")

    # What an operator sees: ansible-playbook --check --diff with the default callback.
    case = write_case(work, "shown", 3, CASES["check_diff"][1])
    r = playbook(work, installed, [{"name": "Reconcile", "pathwarden.pathwarden.reconcile": {
        "binary": os.path.join(case, "pathwarden"), "config": "/etc/pw.yaml"}}], ["--check", "--diff"],
        callback="default")
    shown = r.stdout
    check(r.returncode == 0 and f"-{OLD_LINE}" in shown and f"+{NEW_LINE}" in shown and f"-net1: {NET1_FROM}" in shown
          and f"+net1: {NET1_TO}" in shown and "changed: [localhost]" in shown
          and "--- before: media-vm:/etc/fstab (policy movies-10g)" in shown,
          f"--check --diff output:\n{shown}\n{r.stderr}")
    check(len(calls(case)) == 1 and "--check" in calls(case)[0], f"--check not passed, or not once: {calls(case)}")


def main():
    for tool in ("ansible-galaxy", "ansible-doc", "ansible-playbook", "ansible-test"):
        check(shutil.which(tool), f"{tool} is missing")
    with tempfile.TemporaryDirectory(prefix="pw-collection-") as work:
        installed = build_and_install(work)
        sanity(work)
        plays = os.path.join(work, "plays")
        os.makedirs(plays)
        module_cases(plays, installed)
    print("ok ansible collection")


if __name__ == "__main__":
    test_main(main, __doc__, 0)
