#!/usr/bin/python3
"""The reconcile engine on the real lab (QEMU guest, knfsd NAS, pvesim): the misrouted case, on
an operator's ground.

usage: lab_reconcile_test.py PATHWARDEN misrouted
Runs the real `pathwarden` binary against pvesim and the lab guest over SSH, and checks the
outcome in the guest (fstab bytes) and in the report. The guest is reached as the unprivileged
pwadmin with `become: true` (the settings name a relative inventory), and the policy names the
NAS by host name, which only the guest's resolver knows: every phase (facts, apply, probe,
rollback) runs the way most shops run it, not as root with addresses. The trap (trunked, rolled back) and the
seed's fix (verified, then converged) run once each in tests/ops/ansible_role_lab_test.py,
through the role operators schedule, with the assertions that used to be here.
"""
import json

from pwtest.lab import controller as ctl
from pwtest.lab import lab, scenarios
from pwtest.lab import topology as topo
from pwtest.policies import seed_fix
from pwtest.script import case_main, check


# The seed's fix without the queues change: the route, not the NIC, is what is wrong here. No
# second probe of the restored state (ops_ansible_role_lab's trap case runs that one).
MISROUTED = seed_fix(verify_restored=False, server=topo.LINK2["nas_name"], nas_addresses=[topo.LINK1["nas_name"]],
                     probe_bytes=topo.TEST_PROBE)


def test_misrouted(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("apply", json.dumps(scenarios.scenario("misrouted-link2")))
    before = ctl.guest_state()
    since = guest.run("date +%s").stdout.strip()
    rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "reconcile", ctl.policy_dir("movies", MISROUTED))
    p = report["policies"][0]
    check(rc == 4 and p["verdict"] == "rolled-back" and p["cause"] == "wrong-path",
          f"exit {rc}:\n{json.dumps(report, indent=1)}\n{err[-1500:]}")
    check("misrouted" in (p["verification"]["diagnosis"] or ""), f"diagnosis: {p['verification']['diagnosis']}")
    check(ctl.guest_state()["fstab_sha256"] == before["fstab_sha256"], "fstab not restored")
    # The name was resolved by the guest and the address it gave is what was compared.
    check(p["verification"].get("server_address") == topo.LINK2["nas"],
          f"server address: {p['verification'].get('server_address')}")
    # Logged in as pwadmin only, and became root with sudo for what needs it.
    logins = guest.run(f"journalctl -q -o cat --since=@{since} _COMM=sshd | grep 'Accepted publickey' || true").stdout
    users = {line.split(" for ", 1)[1].split(" ", 1)[0] for line in logins.splitlines() if " for " in line}
    check(topo.GUEST_OPERATOR in users, f"pathwarden's logins: {logins}")
    sudo = guest.run(f"journalctl -q -o cat --since=@{since} _COMM=sudo || true").stdout
    check(f"{topo.GUEST_OPERATOR} : " in sudo and "USER=root" in sudo, f"no sudo to root by {topo.GUEST_OPERATOR}:\n{sudo}")


if __name__ == "__main__":
    case_main({"misrouted": test_misrouted}, __doc__)
