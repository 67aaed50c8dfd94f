#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A sudo that asks for a password (issue 41 item 10), on a light guest reached as `pwpass` (sudo
with its password, tests/lab/light): `plan` and `reconcile --check` find it before a real run
(precondition-failed, exit 3, naming ansible_become_password), and nothing is written; with the
password in an Ansible vault in the inventory and `spec.ansible.vault_password_file` in the
settings, `validate` reads the vaulted inventory, `plan` has nothing to refuse, and the change is
made as root through sudo (the light guest cannot mount NFS, so it is then rolled back: exit 4,
the fstab as before, the backup written by root).

usage: become_password_test.py PVESIM PATHWARDEN
"""
import os
import shutil
import subprocess

import yaml  # Debian's python3-yaml

from pwtest.cli_world import World, enter_controller_namespace, policy_text
from pwtest.script import check, test_main

GUEST = 1
PASSWORD = "pwlab-become"  # the light lab's pwpass (tests/lab/light/guests): a test account's


def inventory_dir(world, name, vaulted=None):
    """The lab's inventory with guest 1 reached as pwpass (and its vaulted become password)."""
    d = os.path.join(world.work, name)
    os.makedirs(d)
    # Not "*.ini": Ansible skips that extension in an inventory directory (INVENTORY_IGNORE_EXTS).
    shutil.copy(world.guests.env["LAB_INVENTORY"], os.path.join(d, "lab"))
    host = {"ansible_user": "pwpass"}
    with open(os.path.join(d, "pwpass.yml"), "w") as f:
        f.write(yaml.safe_dump({"all": {"hosts": {f"guest{GUEST}": host}}}))
        if vaulted:
            f.write("".join("      " + line + "\n" for line in vaulted.splitlines()))
    return d


def settings(world, name, inventory, vault_key=None):
    path = world.settings(name)
    with open(path) as f:
        doc = yaml.safe_load(f)
    doc["spec"]["ansible"]["inventory"] = inventory
    doc["spec"]["ansible"]["become"] = True
    if vault_key:
        doc["spec"]["ansible"]["vault_password_file"] = vault_key
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    return path


def main(pvesim, pathwarden):
    enter_controller_namespace()
    with World(pvesim, pathwarden) as w:
        pol = w.policies("pass", [policy_text(GUEST)])
        before = w.snapshot()

        asks = settings(w, "asks", inventory_dir(w, "inv-asks"))
        for args, said in ((["plan", pol], "cannot apply: sudo in"),
                           (["reconcile", "--check", pol], "precondition-failed")):
            r = w.run(asks, *args)
            out = r.stdout + r.stderr
            check(r.returncode == 3 and f"sudo in guest{GUEST} asks for a password" in out
                  and "ansible_become_password" in out and said in out,
                  f"{args[0]} finds the sudo that would ask: exit {r.returncode}\n{out[-3000:]}")
        check(w.snapshot() == before, "nothing was written")

        key = w.secret_file("vault-key", "pwlab-vault-key")
        r = subprocess.run(["ansible-vault", "encrypt_string", "--vault-password-file", key,
                            "--name", "ansible_become_password", PASSWORD],
                           capture_output=True, text=True, timeout=120, env=w.env)
        check(r.returncode == 0 and PASSWORD not in r.stdout, f"ansible-vault: {r.stderr}")
        vaulted = r.stdout
        given = settings(w, "given", inventory_dir(w, "inv-given", vaulted), vault_key=key)
        r = w.run(given, "validate", pol)
        check(r.returncode == 0, f"validate reads the vaulted inventory: {r.returncode}\n{r.stdout}{r.stderr}")
        r = w.run(given, "plan", pol)
        check(r.returncode == 3 and "asks for a password" not in r.stdout and "1 to change, 0 blocked" in r.stdout,
              f"plan with the password given: exit {r.returncode}\n{r.stdout}{r.stderr[-2000:]}")
        backups = "ls -n /var/backups/pathwarden/ 2>/dev/null || true"
        had = w.guests.run(GUEST, "sh", "-c", backups).stdout
        r = w.run(given, "reconcile", pol)
        check(r.returncode == 4 and "rolled-back" in r.stdout, f"the change made, then rolled back: exit "
              f"{r.returncode}\n{r.stdout[-3000:]}{r.stderr[-2000:]}")
        check(w.snapshot()[GUEST]["fstab_sha256"] == before[GUEST]["fstab_sha256"], "the fstab as before")
        made = [line for line in w.guests.run(GUEST, "sh", "-c", backups).stdout.splitlines()
                if line not in had.splitlines() and "fstab." in line]
        check(made and all(line.split()[2] == "0" for line in made), f"the backup written by root: {made}")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
