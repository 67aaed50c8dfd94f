#!/usr/bin/python3
"""The reconcile engine on the real lab (QEMU guest, knfsd NAS, pvesim): the misrouted case.

usage: lab_reconcile_test.py PATHWARDEN misrouted
Runs the real `pathwarden` binary against pvesim and the lab guest over SSH, and checks the
outcome in the guest (fstab bytes) and in the report. The trap (trunked, rolled back) and the
seed's fix (verified, then converged) run once each in tests/ops/ansible_role_lab_test.py,
through the role operators schedule, with the assertions that used to be here.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lab"))
from pwlab import controller as ctl  # noqa: E402
from pwlab import lab, scenarios  # noqa: E402


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def pathwarden(binary, config, *args):
    proc = subprocess.run([binary, "--config", config, "--log-level", "trace", *args, "--output", "json"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1800)
    try:
        ctl.secret_never_leaks(config, proc.stdout + proc.stderr)
    except AssertionError as e:
        raise Failure(str(e))
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise Failure(f"pathwarden {' '.join(args)} printed no JSON (exit {proc.returncode}):\n"
                      f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.returncode, report, proc.stderr


def policy_dir(name, text):
    d = tempfile.mkdtemp(prefix=f"pw-{name}-")
    with open(os.path.join(d, f"{name}.yaml"), "w") as f:
        f.write(text)
    return d


# The seed's fix without the queues change: the route, not the NIC, is what is wrong here. No
# second probe of the restored state (ops_ansible_role_lab's trap case runs that one).
MISROUTED = """apiVersion: pathwarden/v1
kind: StoragePath
metadata: {name: movies-10g}
spec:
  guest: {node: pve1, vmid: 101, host: media-vm}
  nic: {device: net1}
  mount:
    server: 198.51.100.2
    nas_addresses: [192.0.2.2]
    export: /volume1/movies
    path: /mnt/movies
    options: [vers=3, nconnect=8, _netdev]
    reason: "vers=3 on purpose: NFSv4.1 trunking reuses the 1 GbE transport"
  verify: {probe_file: probe-64m, probe_bytes: 64MiB}
  restart: {allowed: true}
  rollback: {verify_restored: false}
"""


def test_misrouted(binary):
    ctl.reset_nic()
    lab.Guest().helper("apply", json.dumps(scenarios.scenario("misrouted-link2")))
    before = ctl.guest_state()
    rc, report, err = pathwarden(binary, ctl.settings(), "reconcile", policy_dir("movies", MISROUTED))
    p = report["policies"][0]
    check(rc == 4 and p["verdict"] == "rolled-back" and p["cause"] == "wrong-path",
          f"exit {rc}:\n{json.dumps(report, indent=1)}\n{err[-1500:]}")
    check("misrouted" in (p["verification"]["diagnosis"] or ""), f"diagnosis: {p['verification']['diagnosis']}")
    check(ctl.guest_state()["fstab_sha256"] == before["fstab_sha256"], "fstab not restored")


if __name__ == "__main__":
    tests = {"misrouted": test_misrouted}
    if len(sys.argv) != 3 or sys.argv[2] not in tests:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        tests[sys.argv[2]](sys.argv[1])
    except Failure as e:
        print(f"FAIL {sys.argv[2]}: {e}")
        sys.exit(1)
    print(f"ok {sys.argv[2]}")
