#!/usr/bin/python3
"""playbooks/ role pathwarden_reconcile with real ansible-playbook against the real lab.

usage: ansible_role_lab_test.py PATHWARDEN
The lab (tests/lab: QEMU guest, knfsd NAS, pvesim) must be up; the guest starts in the seed's
trap (an NFSv4.2 mount through the NAS's old 1 GbE address). Then, with
examples/lab/controller-settings for pvesim and the guest:
1. the trap policy (examples/lab/trap: move the mount to the 10 GbE address with NFSv4.2; here
   without the second probe of the restored state) fails the play: pathwarden exits 4, the failure names the policy, rolled-back, wrong-path and the
   trunking diagnosis; the guest's fstab and mounts are as before;
2. check mode with the seed's fix (policies/, --policy movies-10g) reports changed (drift) and
   changes nothing: fstab bytes, mounts and the Proxmox config digest are the same;
3. a real run converges: changed, not failed, verdict verified, the fstab has vers=3, net1 has
   queues=8;
4. a second run reports not changed (converged) and writes nothing to Proxmox.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lab"))
from pw_script import test_main  # noqa: E402
from role_run import run_role  # noqa: E402
from pwlab import lab, pvesim, scenarios  # noqa: E402
from pwlab import topology as topo  # noqa: E402

FIX = {"pathwarden_reconcile_policy_paths": [os.path.join(ROOT, "policies")],
       "pathwarden_reconcile_policy_names": ["movies-10g"]}
# The demo's trap policy, without the second probe after the rollback (this test checks the
# restored guest itself; tests/reconcile covers verify_restored).
with open(os.path.join(ROOT, "examples", "lab", "trap", "movies-v42.yaml")) as f:
    TRAP_POLICY = f.read() + "  rollback: {verify_restored: false}\n"


def step(name, started=[time.monotonic()]):
    """Progress on stdout (CTest keeps it): what runs, and the time since the test began."""
    print(f"[{time.monotonic() - started[0]:6.0f}s] {name}", flush=True)


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def settings():
    out = subprocess.run([os.path.join(ROOT, "examples", "lab", "controller-settings"),
                          tempfile.mkdtemp(prefix="pw-role-lab-")], stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def guest_state():
    g = lab.Guest()
    fstab = g.run("cat /etc/fstab").stdout
    mounts = sorted(line.split()[1] + " " + line.split()[3]
                    for line in g.run("grep ' nfs' /proc/mounts || true").stdout.splitlines())
    return {"fstab_sha256": hashlib.sha256(fstab.encode()).hexdigest(), "fstab": fstab, "mounts": mounts}


def reset_lab():
    """net1 as the lab made it (no queues=) and the guest in the seed's trap."""
    api = pvesim.api()
    want = topo.guest_vm_config()["net1"]
    if api.config()["net1"] != want:
        api.set_config({"net1": want})
    lab.Guest().helper("apply", json.dumps(scenarios.scenario("trunk-trap")))


def only_policy(step, run):
    report = run.report
    check(report.get("schema") == "pathwarden-report/v1" and len(report.get("policies", [])) == 1,
          f"{step}: the role exposed no report of one policy: {json.dumps(report)[:1500]}\n{run}")
    return report["policies"][0]


def main(binary):
    binary = os.path.abspath(binary)
    step("reset the lab to the seed's trap")
    reset_lab()
    config = settings()
    trap_dir = tempfile.mkdtemp(prefix="pw-role-trap-")
    with open(os.path.join(trap_dir, "movies-v42.yaml"), "w") as f:
        f.write(TRAP_POLICY)
    try:
        # 1. A change that fails verification fails the play, with the policy's story.
        before = guest_state()
        step("1. the trap policy: rolled back")
        r = run_role(binary, config, {"pathwarden_reconcile_policy_paths": [trap_dir]})
        check(r.rc != 0 and r.stats.get("failures") == 1, f"trap: the play did not fail: {r}")
        p = only_policy("trap", r)
        check(p["verdict"] == "rolled-back" and r.report["exit_code"] == 4, f"trap: {json.dumps(p)[:1500]}")
        msg = r.failure
        check(isinstance(msg, list) and msg[0].startswith("pathwarden exited 4"), f"trap failure message: {msg}")
        line = next((m for m in msg if m.startswith("movies-10g: rolled-back (verification: wrong-path)")), None)
        check(line is not None and "diagnosis: trunked" in line and "remedies: pin vers=3" in line,
              f"trap failure names the policy, verdict, diagnosis and remedies: {msg}")
        after = guest_state()
        check(after["fstab_sha256"] == before["fstab_sha256"] and after["mounts"] == before["mounts"],
              f"trap: the guest was not restored:\n{before}\n{after}")

        # 2. Check mode: drift is "changed", nothing changes.
        digest = pvesim.api().config()["digest"]
        step("2. check mode: drift, nothing changed")
        r = run_role(binary, config, FIX, check=True)
        check(r.rc == 0 and r.stats.get("failures") == 0 and r.stats.get("changed", 0) >= 1,
              f"check mode: want changed and not failed: {r}")
        p = only_policy("check mode", r)
        check(r.report["mode"] == "check" and p["verdict"] == "drift" and p["planned"] and not p["changes"],
              f"check mode report: {json.dumps(p)[:1500]}")
        now = guest_state()
        check(now["fstab_sha256"] == before["fstab_sha256"] and now["mounts"] == before["mounts"],
              f"check mode changed the guest:\n{before}\n{now}")
        check(pvesim.api().config()["digest"] == digest, "check mode wrote to Proxmox")

        # 3. A real run converges.
        step("3. real run: converges")
        r = run_role(binary, config, FIX)
        check(r.rc == 0 and r.stats.get("failures") == 0 and r.stats.get("changed", 0) >= 1,
              f"real run: want changed and not failed: {r}")
        p = only_policy("real run", r)
        check(p["verdict"] == "verified" and p["changed"] and r.report["exit_code"] == 2, f"real run: {json.dumps(p)[:1500]}")
        state = guest_state()
        check(any(m.startswith("/mnt/movies ") and "vers=3" in m and "nconnect=8" in m for m in state["mounts"]),
              f"mounts after the real run: {state['mounts']}")
        check("queues=8" in pvesim.api().config()["net1"], "net1 has no queues=8")

        # 4. Converged: not changed, nothing written.
        digest = pvesim.api().config()["digest"]
        step("4. again: converged, not changed")
        r = run_role(binary, config, FIX)
        check(r.rc == 0 and r.stats.get("failures") == 0 and r.stats.get("changed") == 0,
              f"second run: want ok and not changed: {r}")
        check(only_policy("second run", r)["verdict"] == "converged", f"second run: {json.dumps(r.report)[:1500]}")
        check(pvesim.api().config()["digest"] == digest, "the second run wrote to Proxmox")
        check(guest_state()["fstab_sha256"] == state["fstab_sha256"], "the second run changed the fstab")
    finally:
        step("reset the lab")
        reset_lab()
    step("ok ansible role on the lab")


if __name__ == "__main__":
    test_main(main, __doc__, 1)
