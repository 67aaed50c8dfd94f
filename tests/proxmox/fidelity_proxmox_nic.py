#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fidelity of pvesim, proven by Ansible: community.general.proxmox_nic (Debian's ansible package)
changes a NIC's queues, reports no change on a second run, and the result shows in the next GET.
Usage: fidelity_proxmox_nic.py PVESIM_BINARY"""
import json
import os
import subprocess
import sys
import tempfile

from pwtest.pvesim_process import Pvesim, local_env
from pwtest.script import check

HERE = os.path.dirname(os.path.abspath(__file__))
MAC = "BC:24:11:CC:DD:01"
STATE = {
    "nodes": ["pve1", "pve2"],
    "guests": [
        {"vmid": 150, "node": "pve1", "running": True, "config": {"name": "other"}},
        {"vmid": 201, "node": "pve2", "running": True,
         "config": {"name": "media-vm",
                    "net0": "virtio=BC:24:11:CC:DD:00,bridge=vmbr0",
                    "net1": "virtio=%s,bridge=vmbr1,firewall=1" % MAC}},
    ],
}


def run_play(sim, workdir, queues, check_mode=False):
    variables = {"pve_host": sim.host, "pve_user": "root@pam", "token_name": "ansible",
                 "token_secret": "5f1d-ansible-secret", "ca_file": sim.ca_file, "vmid": 201,
                 "interface": "net1", "bridge": "vmbr1", "queues": queues}
    vars_file = os.path.join(workdir, "vars.json")
    with open(vars_file, "w") as f:
        json.dump(variables, f)
    env = local_env()
    env.update({
        "HOME": workdir,  # ansible keeps ~/.ansible; never the runner's real home
        "ANSIBLE_LOCAL_TEMP": os.path.join(workdir, "tmp"),
        "ANSIBLE_STDOUT_CALLBACK": "json",
        "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_CONFIG": os.path.join(workdir, "none.cfg"),
        "LC_ALL": "C.UTF-8",  # ansible refuses to run without a UTF-8 locale
        "LANG": "C.UTF-8",
    })
    cmd = ["ansible-playbook", "-i", "localhost,", os.path.join(HERE, "proxmox_nic_play.yml"), "-e", "@" + vars_file]
    if check_mode:
        cmd.append("--check")
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, env=env, capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("ansible-playbook printed no JSON (rc %d):\n%s\n%s" % (proc.returncode, proc.stdout,
                                                                                    proc.stderr))
    result = report["plays"][0]["tasks"][0]["hosts"]["localhost"]
    check(proc.returncode == 0 and not result.get("failed"),
          "proxmox_nic failed (rc %d): %s\n%s" % (proc.returncode, result.get("msg"), proc.stderr))
    return result


def main(binary):
    with Pvesim(binary, STATE, ["--token", "root@pam!ansible=5f1d-ansible-secret"]) as sim, \
            tempfile.TemporaryDirectory(prefix="ansible-") as workdir:
        put = "PUT /nodes/{node}/qemu/{vmid}/config"

        first = run_play(sim, workdir, 4)
        check(first["changed"] is True, "first run changes the NIC: %r" % first)
        check(first["msg"] == "Nic net1 updated on VM with vmid 201", first["msg"])
        config = sim.guest(201)["config"]
        check(config["net1"] == "virtio=%s,bridge=vmbr1,firewall=1,queues=4" % MAC,
              "queues=4 in effect, MAC kept: %r" % config["net1"])
        check(sim.request_count(put) == 1, "one PUT")

        second = run_play(sim, workdir, 4)
        check(second["changed"] is False, "second run is idempotent: %r" % second)
        check(sim.request_count(put) == 1, "no PUT on the second run")

        dry = run_play(sim, workdir, 8, check_mode=True)
        check(dry["changed"] is True, "check mode reports the change")
        check(sim.request_count(put) == 1, "check mode sends nothing")
        check(sim.guest(201)["config"]["net1"].endswith("queues=4"), "check mode changed nothing")

        # The next GET, as any API client sees it.
        got = sim.api_get("/nodes/pve2/qemu/201/config?current=1", "root@pam!ansible=5f1d-ansible-secret")
        check(got["net1"] == "virtio=%s,bridge=vmbr1,firewall=1,queues=4" % MAC, "GET after the play: %r" % got)
        stats = sim.admin("GET", "/pvesim/stats")["requests"]
        check(stats.get("GET /version", 0) >= 3, "proxmox_nic checks /version first")
        check(stats.get("GET /cluster/resources", 0) >= 3, "and finds the node in /cluster/resources")
    print("fidelity_proxmox_nic: ok")


if __name__ == "__main__":
    main(sys.argv[1])
