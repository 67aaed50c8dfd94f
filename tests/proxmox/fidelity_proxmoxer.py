#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fidelity of pvesim, proven by a client nobody here wrote: Debian's python3-proxmoxer reads a VM
config and sets virtio queues, and meets Proxmox's pending, digest, MAC, boolean, auth and task
behaviour. Usage: fidelity_proxmoxer.py PVESIM_BINARY"""
import os
import re
import sys
import time

from pwtest.pvesim_process import Pvesim, local_env
from pwtest.script import check

os.environ.clear()
os.environ.update(local_env())

from proxmoxer import ProxmoxAPI  # noqa: E402
from proxmoxer.backends.https import AuthenticationError  # noqa: E402
from proxmoxer.core import ResourceException  # noqa: E402

STATE = {
    "nodes": ["pve1", "pve2"],
    "guests": [
        {"vmid": 101, "node": "pve1", "running": True,
         "config": {"name": "media-vm", "cores": 2, "memory": "2048",
                    "net0": "virtio=BC:24:11:AA:BB:00,bridge=vmbr0,firewall=1",
                    "net1": "virtio=BC:24:11:AA:BB:01,bridge=vmbr1,firewall=1"}},
        {"vmid": 102, "node": "pve2", "running": True,
         "config": {"name": "db-vm", "hotplug": "disk,usb",
                    "net1": "virtio=BC:24:11:AA:BB:02,bridge=vmbr1,queues=2"}},
        {"vmid": 103, "node": "pve1", "running": False, "config": {"name": "stopped-vm"}},
        {"vmid": 200, "node": "pve2", "type": "lxc", "running": True, "config": {"hostname": "ct-200"}},
    ],
}


def expect_error(status, fn, contains=""):
    try:
        fn()
    except ResourceException as e:
        check(e.status_code == status, "expected HTTP %d, got %s" % (status, e))
        check(contains in str(e), "expected %r in %r" % (contains, str(e)))
        return e
    raise AssertionError("expected HTTP %d, the call succeeded" % status)


def wait_task(px, node, upid):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st = px.nodes(node).tasks(upid).status.get()
        if st["status"] == "stopped":
            return st
        time.sleep(0.05)
    raise AssertionError("task %s did not finish" % upid)


def main(binary):
    with Pvesim(binary, STATE,
                ["--token", "root@pam!fidelity=0b9e6a2c-secret", "--user", "root@pam=pw-fidelity"]) as sim:
        px = ProxmoxAPI(sim.host, user="root@pam", token_name="fidelity", token_value="0b9e6a2c-secret",
                        verify_ssl=sim.ca_file)

        check(px.version.get()["version"].startswith("9."), "version")
        resources = px.cluster.resources.get(type="vm")
        by_id = {r["vmid"]: r for r in resources}
        check(set(by_id) == {101, 102, 103, 200}, "cluster/resources lists QEMU and LXC guests: %s" % sorted(by_id))
        check(by_id[200]["type"] == "lxc" and by_id[101]["node"] == "pve1", "resource entries")

        # Read the config in effect and set queues the way a careful client would: same MAC, with digest.
        vm = px.nodes("pve1").qemu(101)
        cfg = vm.config.get(current=1)
        check(cfg["net1"] == "virtio=BC:24:11:AA:BB:01,bridge=vmbr1,firewall=1", "net1 as stored: %r" % cfg["net1"])
        check(cfg["cores"] == 2, "integer config keys come back as JSON numbers")
        check(len(cfg["digest"]) == 40, "digest is a SHA-1")
        check(vm.config.put(net1=cfg["net1"] + ",queues=4", digest=cfg["digest"]) is None, "PUT answers null")
        after = vm.config.get(current=1)
        check(after["net1"] == "virtio=BC:24:11:AA:BB:01,bridge=vmbr1,firewall=1,queues=4",
              "hot-plugged queues in effect: %r" % after["net1"])
        check(after["digest"] != cfg["digest"], "digest changes with the config")

        # A stale digest is refused; nothing is written.
        expect_error(500, lambda: vm.config.put(net1=cfg["net1"] + ",queues=8", digest=cfg["digest"]),
                     "checksum mismatch")
        check(vm.config.get(current=1)["net1"].endswith("queues=4"), "refused write left the config alone")

        # Network hot-plug off: the change waits in [PENDING]; only current=1 shows the value in effect.
        db = px.nodes("pve2").qemu(102)
        net1 = db.config.get()["net1"]
        db.config.put(net1=net1.replace("queues=2", "queues=8"))
        check(db.config.get(current=1)["net1"].endswith("queues=2"), "current=1 shows the value in effect")
        check(db.config.get()["net1"].endswith("queues=8"), "the default folds pending values in")
        pending = {p["key"]: p for p in db.pending.get()}
        check(pending["net1"].get("pending", "").endswith("queues=8"), "pending endpoint: %r" % pending["net1"])
        check("digest" in pending, "the digest is an item of the pending list")
        upid = db.status.reboot.post()
        check(upid.startswith("UPID:pve2:") and ":qmreboot:102:root@pam!fidelity:" in upid, "reboot UPID %r" % upid)
        st = wait_task(px, "pve2", upid)
        check(st["exitstatus"] == "OK" and st["tokenid"] == "fidelity" and st["user"] == "root@pam", "task %r" % st)
        deadline = time.monotonic() + 60
        while db.status.current.get()["status"] != "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        check(db.config.get(current=1)["net1"].endswith("queues=8"), "reboot applied the pending change")

        # A NIC written without its MAC gets a new one from Proxmox.
        stopped = px.nodes("pve1").qemu(103)
        stopped.config.put(net0="virtio,bridge=vmbr0")
        net0 = stopped.config.get(current=1)["net0"]
        check(re.fullmatch(r"virtio=BC:24:11(:[0-9A-F]{2}){3},bridge=vmbr0", net0) is not None,
              "generated MAC: %r" % net0)

        # proxmoxer sends Python True as 'True', which Proxmox refuses.
        expect_error(400, lambda: stopped.config.put(onboot=True), "Parameter verification failed")
        stopped.config.put(onboot=1)
        check(stopped.config.get(current=1)["onboot"] == 1, "onboot=1 accepted")
        expect_error(400, lambda: stopped.config.put(net0="virtio=BC:24:11:AA:BB:03,queues=65"))
        expect_error(500, lambda: px.nodes("pve2").qemu(101).config.get(), "does not exist")

        # Tasks, and a POST config as a task with a warning.
        upid = stopped.status.start.post()
        check(wait_task(px, "pve1", upid)["exitstatus"] == "OK", "start task")
        check(stopped.status.current.get()["status"] == "running", "started")
        upid = stopped.config.post(delete="net7")
        check(wait_task(px, "pve1", upid)["exitstatus"] == "WARNINGS: 1", "deleting an unset key warns")

        # Ticket login: cookie plus CSRF token on writes.
        tpx = ProxmoxAPI(sim.host, user="root@pam", password="pw-fidelity", verify_ssl=sim.ca_file)
        tvm = tpx.nodes("pve1").qemu(101)
        tcfg = tvm.config.get()
        tvm.config.put(net1=tcfg["net1"].replace("queues=4", "queues=6"), digest=tcfg["digest"])
        check(tvm.config.get(current=1)["net1"].endswith("queues=6"), "write with a ticket")
        try:
            ProxmoxAPI(sim.host, user="root@pam", password="wrong", verify_ssl=sim.ca_file)
            raise AssertionError("a wrong password logged in")
        except AuthenticationError:
            pass
        bad = ProxmoxAPI(sim.host, user="root@pam", token_name="fidelity", token_value="wrong", verify_ssl=sim.ca_file)
        expect_error(401, lambda: bad.version.get())
        check(sim.request_count("PUT /nodes/{node}/qemu/{vmid}/config") == 8, "PUT count %d" %
              sim.request_count("PUT /nodes/{node}/qemu/{vmid}/config"))
    print("fidelity_proxmoxer: ok")


if __name__ == "__main__":
    main(sys.argv[1])
