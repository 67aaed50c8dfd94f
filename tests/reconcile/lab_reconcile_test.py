#!/usr/bin/python3
"""The reconcile engine on the real lab (QEMU guest, knfsd NAS, pvesim): the misrouted case.

usage: lab_reconcile_test.py PATHWARDEN misrouted
Runs the real `pathwarden` binary against pvesim and the lab guest over SSH, and checks the
outcome in the guest (fstab bytes) and in the report. The trap (trunked, rolled back) and the
seed's fix (verified, then converged) run once each in tests/ops/ansible_role_lab_test.py,
through the role operators schedule, with the assertions that used to be here.
"""
import json

from pwtest.lab import controller as ctl
from pwtest.lab import lab, scenarios
from pwtest.policies import seed_fix
from pwtest.script import case_main, check


# The seed's fix without the queues change: the route, not the NIC, is what is wrong here. No
# second probe of the restored state (ops_ansible_role_lab's trap case runs that one).
MISROUTED = seed_fix(verify_restored=False)


def test_misrouted(binary):
    ctl.reset_nic()
    lab.Guest().helper("apply", json.dumps(scenarios.scenario("misrouted-link2")))
    before = ctl.guest_state()
    rc, report, err = ctl.pathwarden(binary, ctl.settings(), "reconcile", ctl.policy_dir("movies", MISROUTED))
    p = report["policies"][0]
    check(rc == 4 and p["verdict"] == "rolled-back" and p["cause"] == "wrong-path",
          f"exit {rc}:\n{json.dumps(report, indent=1)}\n{err[-1500:]}")
    check("misrouted" in (p["verification"]["diagnosis"] or ""), f"diagnosis: {p['verification']['diagnosis']}")
    check(ctl.guest_state()["fstab_sha256"] == before["fstab_sha256"], "fstab not restored")


if __name__ == "__main__":
    case_main({"misrouted": test_misrouted}, __doc__)
