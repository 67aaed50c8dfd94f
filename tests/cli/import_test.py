#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""`pathwarden import` (issue 41 item 12) as a newcomer runs it: the recorded guest's hand-written
fstab entry becomes a policy file that `validate` passes and that the next reconcile adopts without
re-making the mount (only pathwarden's comment goes above the entry); a mount on a link that is no
NIC of the VM is left out with why; a second import writes nothing; no guest named, a typo, a guest
that does not answer, the Proxmox API down (exit 6, not even the directory made) and --output json
each say so.

usage: import_test.py PATHWARDEN PVESIM
pvesim on loopback, the guest stand-in (pwtest.stand_in) and the offline controller.
"""
import json
import os
import stat
import subprocess
import tempfile

import yaml  # Debian's python3-yaml

from pwtest.offline_controller import PVESIM_ARGS, STATE, OfflineController, closed_loopback_port
from pwtest.pvesim_process import Pvesim
from pwtest.script import check, test_main
from pwtest.stand_in import STAND_IN_STATE, guest_runs, stand_in_controller

ENTRY = "198.51.100.2:/volume1/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0\n"


def hand_written(fstab_path):
    """The recorded fstab without pathwarden's comments: entries an operator wrote by hand."""
    with open(fstab_path) as f:
        lines = [line for line in f if "Managed by pathwarden" not in line]
    with open(fstab_path, "w") as f:
        f.writelines(lines)
    return "".join(lines)


def main(binary, pvesim):
    binary = os.path.abspath(binary)
    with tempfile.TemporaryDirectory(prefix="pw-import-") as work, \
            Pvesim(pvesim, STAND_IN_STATE, PVESIM_ARGS) as sim:
        ctl = stand_in_controller(binary, sim, work)
        pol = os.path.join(work, "policies")  # does not exist yet: import makes it

        r = ctl.run("import", pol)
        check(r.returncode == 1 and "--host HOST" in r.stderr, f"no guest named: {r.returncode} {r.stderr}")
        r = ctl.run("import", pol, "--host", "media-vn")
        check(r.returncode == 1 and "did you mean 'media-vm'" in r.stderr, f"a typo: {r.returncode} {r.stderr}")

        # The stand-in writes the recorded fstab on its first run; its entries are then made hand-written.
        ctl.run("import", os.path.join(work, "warm-up"), "--host", "media-vm")
        fstab_path = os.path.join(ctl.guest, "fstab")
        before = hand_written(fstab_path)
        check(ENTRY in before and "pathwarden" not in before, f"a hand-written fstab:\n{before}")

        r = ctl.run("import", pol, "--host", "media-*")
        check(r.returncode == 0, f"import: {r.returncode}\n{r.stdout}{r.stderr}")
        file = os.path.join(pol, "media-vm-mnt-movies.yaml")
        check(f"wrote {file}: /mnt/movies on media-vm (VM 101 on pve1), owner fstab, net1 (link2)" in r.stdout,
              f"what was written:\n{r.stdout}")
        check("left out media-vm /mnt/backup: its traffic leaves by link1" in r.stdout,
              f"the mount on a link that is no NIC of VM 101:\n{r.stdout}")
        check(sorted(os.listdir(pol)) == ["media-vm-mnt-movies.yaml"], f"one file: {os.listdir(pol)}")
        check(stat.S_IMODE(os.stat(file).st_mode) == 0o644, "the policy file is 0644, as a file in git")
        with open(file) as f:
            text = f.read()
        doc = yaml.safe_load(text)
        spec = doc["spec"]
        check(spec["guest"] == {"node": "pve1", "vmid": 101, "host": "media-vm"}, f"guest: {spec}")
        check(spec["nic"] == {"device": "net1"}, f"the NIC, its queues not managed: {spec['nic']}")
        check(spec["mount"]["options"] == ["vers=3", "nconnect=8", "_netdev"], f"options as written: {spec}")
        check(spec["mount"]["reason"] == "" and "for you to write" in text, f"reason left for the operator:\n{text}")
        check("dd if=/dev/urandom of=/mnt/movies/.pathwarden-probe" in text, f"a probe file suggested:\n{text}")

        r = ctl.run("validate", pol)
        check(r.returncode == 0, f"validate passes on what import wrote: {r.returncode}\n{r.stdout}{r.stderr}")
        r = ctl.run("reconcile", "--check", "--diff", pol)
        check(r.returncode == 3 and "adopt the fstab entry of /mnt/movies" in r.stdout and
              "= " + ENTRY.strip() + "  (unchanged" in r.stdout, f"--check --diff: {r.returncode}\n{r.stdout}")
        runs_before = len(guest_runs(ctl))
        r = ctl.run("reconcile", pol, "--output", "json")
        report = json.loads(r.stdout)
        entry = report["policies"][0]
        check(r.returncode == 2 and entry["verdict"] == "converged", f"adopted: {r.returncode}\n{r.stdout}")
        check([c["action"] for c in entry["changes"]] == ["change-fstab"] and
              "the mount stays as it is" in entry["changes"][0]["text"], f"only the comment: {entry['changes']}")
        check("probe.yml" not in guest_runs(ctl)[runs_before:], f"nothing probed: {guest_runs(ctl)}")
        with open(fstab_path) as f:
            after = f.read()
        check("# Managed by pathwarden (policy media-vm-mnt-movies)\n" + ENTRY in after,
              f"the comment above the entry, which kept its bytes:\n{after}")
        check(after.replace("# Managed by pathwarden (policy media-vm-mnt-movies)\n", "") == before,
              f"nothing else changed:\n{after}")
        check(ctl.run("reconcile", pol).returncode == 0, "then converged")

        # Again: the mount is described already, nothing is written, nothing overwritten.
        r = ctl.run("import", pol, "--host", "media-vm", "--output", "json")
        out = json.loads(r.stdout)
        check(r.returncode == 0 and out["format_version"] == "1.0" and out["format"] == "pathwarden-import" and
              out["written"] == [], f"a second import: {r.returncode}\n{r.stdout}")
        check(any("describes it already" in e["why"] and e["mount"] == "/mnt/movies" for e in out["left_out"]),
              f"said why: {out['left_out']}")
        with open(file) as f:
            check(f.read() == text, "the file is as written")

        # The Proxmox API down (its address a closed port): the guest answers, but which VM and NIC
        # carry its mounts cannot be known, so nothing is written and the run says why (exit 6).
        with open(ctl.settings) as f:
            settings = f.read()
        down = os.path.join(work, "api-down.yaml")
        with open(down, "w") as f:
            f.write(settings.replace(sim.url, f"https://127.0.0.1:{closed_loopback_port()}"))
        r = subprocess.run([binary, "--config", down, "import", os.path.join(work, "down"), "--host", "media-vm"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, env=ctl.env)
        check(r.returncode == 6 and not os.path.exists(os.path.join(work, "down")) and "Proxmox" in r.stdout + r.stderr,
              f"the API down: {r.returncode}\n{r.stdout}{r.stderr}")

    with tempfile.TemporaryDirectory(prefix="pw-import-off-") as work, Pvesim(pvesim, STATE, PVESIM_ARGS) as sim:
        ctl = OfflineController(binary, sim, work)
        r = ctl.run("import", os.path.join(work, "policies"), "--host", "media-vm")
        check(r.returncode == 6 and "not observed media-vm" in r.stdout, f"a guest that does not answer: "
              f"{r.returncode}\n{r.stdout}{r.stderr}")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
