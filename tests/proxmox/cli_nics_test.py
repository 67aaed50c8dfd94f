#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""`pathwarden proxmox nics` against pvesim: every VM's NICs and queues, pending changes, filters,
errors. Usage: cli_nics_test.py PVESIM_BINARY PATHWARDEN_BINARY"""
import json
import os
import subprocess
import sys

from pwtest.pvesim_process import Pvesim, local_env
from pwtest.script import check

SECRET = "e3b0c442-cli-secret"
STATE = {
    "nodes": ["pve1", "pve2"],
    "guests": [
        {"vmid": 301, "node": "pve1", "running": True,
         "config": {"name": "media-vm", "hotplug": "disk,usb",
                    "net0": "virtio=BC:24:11:00:03:00,bridge=vmbr0,firewall=1",
                    "net1": "virtio=BC:24:11:00:03:01,bridge=vmbr1,queues=2"},
         "pending": {"net1": "virtio=BC:24:11:00:03:01,bridge=vmbr1,queues=8"}},
        {"vmid": 302, "node": "pve2", "running": False,
         "config": {"name": "db-vm", "net0": "e1000=BC:24:11:00:03:02,bridge=vmbr0"}},
        {"vmid": 400, "node": "pve2", "type": "lxc", "running": True, "config": {"hostname": "ct"}},
    ],
}


def pathwarden(binary, sim, secret_file, *args):
    cmd = [binary, "proxmox", "nics", "--url", sim.url, "--token-id", "root@pam!cli",
           "--token-secret-file", secret_file, "--ca-file", sim.ca_file] + list(args)
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, env=local_env())


def main(pvesim, binary):
    with Pvesim(pvesim, STATE, ["--token", "root@pam!cli=" + SECRET]) as sim:
        secret_file = os.path.join(sim.dir, "secret")
        with open(os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(SECRET + "\n")

        out = pathwarden(binary, sim, secret_file, "--output", "json")
        check(out.returncode == 0, "json run failed: %s" % out.stderr)
        report = json.loads(out.stdout)
        nics = {(n["vmid"], n["nic"]): n for n in report["nics"]}
        check(sorted(nics) == [(301, "net0"), (301, "net1"), (302, "net0")], "NICs listed: %s" % sorted(nics))
        net1 = nics[(301, "net1")]
        check(net1["queues"] == 2 and net1["pending"].endswith("queues=8") and net1["mac"] == "BC:24:11:00:03:01",
              "queues in effect and pending: %r" % net1)
        check(nics[(301, "net0")]["queues"] is None and nics[(301, "net0")]["pending"] is None, "net0 plain")
        check(nics[(302, "net0")]["model"] == "e1000" and nics[(302, "net0")]["status"] == "stopped", "e1000 NIC")
        check(report["containers_skipped"] == 1 and report["errors"] == [], "LXC skipped, no errors")
        check(report["format"] == "pathwarden-nics" and report["format_version"] == "1.0", "versioned JSON")

        text = pathwarden(binary, sim, secret_file)
        check(text.returncode == 0, text.stderr)
        lines = text.stdout.splitlines()
        check(lines[0].split() == ["NODE", "VMID", "NAME", "STATUS", "NIC", "MODEL", "MAC", "BRIDGE", "QUEUES",
                                   "PENDING"], "header: %r" % lines[0])
        row = [line for line in lines if " net1 " in line][0].split()
        check(row[:9] == ["pve1", "301", "media-vm", "running", "net1", "virtio", "BC:24:11:00:03:01", "vmbr1", "2"],
              "row: %r" % row)
        check(" ".join(row[9:]) == "queues 2 -> 8", "pending column: %r" % row[9:])
        check(lines[-1] == "3 NICs on 2 VMs, 1 with changes waiting for a restart; 1 LXC container skipped",
              "summary: %r" % lines[-1])

        only = pathwarden(binary, sim, secret_file, "--vmid", "302", "--output", "json")
        check([n["vmid"] for n in json.loads(only.stdout)["nics"]] == [302], "--vmid filter")
        node = pathwarden(binary, sim, secret_file, "--node", "pve1", "--output", "json")
        check({n["vmid"] for n in json.loads(node.stdout)["nics"]} == {301}, "--node filter")

        with open(os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write("not-the-secret\n")
        bad = pathwarden(binary, sim, secret_file)
        check(bad.returncode == 6, "bad token: could not observe, exit 6 (%d)" % bad.returncode)
        check("HTTP 401" in bad.stderr and "not-the-secret" not in bad.stderr + bad.stdout,
              "auth error without the secret: %r" % bad.stderr)

        pinned = subprocess.run([binary, "proxmox", "nics", "--url", sim.url, "--token-id", "root@pam!cli",
                                 "--token-secret-env", "PW_TEST_SECRET", "--fingerprint", "AA" + ":AA" * 31],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                                env=dict(local_env(), PW_TEST_SECRET=SECRET))
        check(pinned.returncode == 6 and sim.fingerprint in pinned.stderr, "wrong pin names the seen fingerprint: %r"
              % pinned.stderr)
        usage = subprocess.run([binary, "proxmox", "nic"], stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=60)
        check(usage.returncode == 1 and "did you mean 'nics'" in usage.stderr, "usage error: %r" % usage.stderr)
    # A token that sees no VM (Proxmox lists only what VM.Audit allows) says so and fails.
    with Pvesim(pvesim, {"nodes": ["pve1"], "guests": []}, ["--token", "root@pam!cli=" + SECRET]) as sim:
        secret_file = os.path.join(sim.dir, "secret")
        with open(os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(SECRET + "\n")
        empty = pathwarden(binary, sim, secret_file)
        check(empty.returncode == 6 and "sees no VM" in empty.stderr and "VM.Audit" in empty.stderr,
              "an empty listing fails with the privilege to grant: %d %r" % (empty.returncode, empty.stderr))
    print("cli_nics_test: ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
