#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""pvesim's per-tap byte counters: status/current's "nics" in Proxmox's shape (qemu-server
PVE/QemuServer.pm, sub vmstatus), synthesised and moved by the admin API for simulated VMs, read
from a node's /proc/net/dev (a file, or a network namespace) for real taps.
Usage: nic_counters_test.py PVESIM_BINARY CASE (CASE: synthetic, real_taps, netns)"""
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from pwtest.pvesim_process import Pvesim
from pwtest.script import case_main, check

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "samples", "proc_net_dev")
TOKEN = "root@pam!taps=5e1c-secret"
AUDITLESS = "nobody@pve!taps=0a0a-secret"
MAC0, MAC1, MAC2 = "BC:24:11:AA:BB:00", "BC:24:11:AA:BB:01", "BC:24:11:AA:BB:02"
STATE = {
    "nodes": ["pve1", "pve2"],
    "guests": [
        {"vmid": 101, "node": "pve1", "running": True,
         "config": {"name": "media-vm", "net0": f"virtio={MAC0},bridge=vmbr0,firewall=1",
                    "net1": f"virtio={MAC1},bridge=vmbr1",
                    "net2": f"e1000={MAC2}"}},  # no bridge: user-mode networking, no tap
        {"vmid": 103, "node": "pve1", "running": False,
         "config": {"name": "stopped-vm", "net0": "virtio=BC:24:11:AA:BB:03,bridge=vmbr0"}},
        {"vmid": 201, "node": "pve2", "running": True,
         "config": {"name": "other-node", "net0": "virtio=BC:24:11:AA:BB:04,bridge=vmbr0"}},
        {"vmid": 300, "node": "pve2", "type": "lxc", "running": True, "config": {"hostname": "ct-300"}},
    ],
}
ARGS = ["--token", TOKEN, "--token", AUDITLESS + ":VM.PowerMgmt"]


class HttpFailure(Exception):
    def __init__(self, code, body):
        super().__init__(f"HTTP {code}: {body}")
        self.code = code


def call(sim, method, path, params=None, token=TOKEN, admin=False):
    """A Proxmox API call (form-encoded, token auth) or, with admin=True, a JSON admin call."""
    headers = {}
    data = None
    if admin:
        url = sim.url + path
        if params is not None:
            data = json.dumps(params).encode()
            headers["Content-Type"] = "application/json"
    else:
        url = sim.url + "/api2/json" + path
        headers["Authorization"] = "PVEAPIToken=" + token
        if params is not None:
            data = urllib.parse.urlencode(params).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}),
        urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=sim.ca_file)))
    try:
        with opener.open(req, timeout=30) as resp:
            return json.load(resp)["data"]
    except urllib.error.HTTPError as e:
        raise HttpFailure(e.code, e.read().decode(errors="replace")) from None


def status(sim, vmid, node="pve1"):
    return call(sim, "GET", f"/nodes/{node}/qemu/{vmid}/status/current")


def resource(sim, vmid):
    return next(r for r in call(sim, "GET", "/cluster/resources?type=vm") if r["vmid"] == vmid)


def expect_http(code, fn, contains=""):
    try:
        fn()
    except HttpFailure as e:
        check(e.code == code, f"expected HTTP {code}, got {e}")
        check(contains in str(e), f"expected {contains!r} in {e}")
        return
    raise AssertionError(f"expected HTTP {code}, the call succeeded")


def check_shape(nics):
    """Proxmox's shape: {"tap<vmid>i<N>": {"netin": int, "netout": int}}, numbers not strings."""
    for name, c in nics.items():
        check(set(c) == {"netin", "netout"}, f"{name}: members {sorted(c)}")
        check(all(type(v) is int and v >= 0 for v in c.values()), f"{name}: counters {c} are not integers")


def wait_task(sim, upid):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st = call(sim, "GET", f"/nodes/pve1/tasks/{urllib.parse.quote(upid, safe='')}/status")
        if st["status"] == "stopped":
            check(st["exitstatus"] == "OK", f"task {upid}: {st['exitstatus']}")
            return
        time.sleep(0.05)
    raise AssertionError(f"task {upid} did not finish")


def synthetic(binary):
    with Pvesim(binary, STATE, ARGS) as sim:
        s = status(sim, 101)
        check(s["nics"] == {"tap101i0": {"netin": 0, "netout": 0}, "tap101i1": {"netin": 0, "netout": 0}},
              f"a running VM's taps start at zero, one per bridged NIC: {s.get('nics')}")
        check((s["netin"], s["netout"]) == (0, 0), f"sums {s['netin']}, {s['netout']}")
        check("nics" not in status(sim, 103), "a stopped VM has no taps, so no nics")
        check("nics" not in call(sim, "GET", "/nodes/pve2/lxc")[0], "lists never carry nics")
        # vm_status's permissions: VM.Audit on /vms/{vmid}.
        expect_http(403, lambda: call(sim, "GET", "/nodes/pve1/qemu/101/status/current", token=AUDITLESS),
                    "/vms/101, VM.Audit")

        # "The bytes crossed tap101i1, not tap101i0": a read of 4 MiB on net1.
        got = call(sim, "POST", "/pvesim/vms/101/nic-counters/advance", {"net1": {"netin": 4 << 20}}, admin=True)
        check(got["tap101i1"] == {"netin": 4 << 20, "netout": 0} and got["tap101i0"]["netin"] == 0, f"advance: {got}")
        s = status(sim, 101)
        check_shape(s["nics"])
        check(s["nics"]["tap101i1"]["netin"] == 4 << 20 and s["nics"]["tap101i0"] == {"netin": 0, "netout": 0},
              f"status after the advance: {s['nics']}")
        check(s["netin"] == 4 << 20, f"status netin is the sum over the taps: {s['netin']}")
        check(resource(sim, 101)["netin"] == 4 << 20, "/cluster/resources netin is the sum too")
        call(sim, "PUT", "/pvesim/vms/101/nic-counters", {"net0": {"netout": 1000}}, admin=True)
        got = call(sim, "POST", "/pvesim/vms/101/nic-counters/advance", {"net0": {"netout": 24}}, admin=True)
        check(got["tap101i0"] == {"netin": 0, "netout": 1024}, f"set then advance: {got}")
        check(call(sim, "GET", "/pvesim/vms/101/nic-counters", admin=True) == status(sim, 101)["nics"],
              "the admin view is status/current's")

        # No tap, no counters: every refusal changes nothing (all or none).
        before = status(sim, 101)["nics"]
        expect_http(400, lambda: call(sim, "POST", "/pvesim/vms/101/nic-counters/advance",
                                      {"net1": {"netin": 1}, "net2": {"netin": 1}}, admin=True), "user-mode")
        expect_http(400, lambda: call(sim, "PUT", "/pvesim/vms/101/nic-counters", {"net5": {"netin": 1}}, admin=True),
                    "no net5")
        expect_http(400, lambda: call(sim, "PUT", "/pvesim/vms/101/nic-counters", {"net0": {"netin": -1}}, admin=True),
                    "non-negative")
        expect_http(400, lambda: call(sim, "PUT", "/pvesim/vms/101/nic-counters", {"net0": {"rx": 1}}, admin=True),
                    "unknown member")
        expect_http(400, lambda: call(sim, "PUT", "/pvesim/vms/103/nic-counters", {"net0": {"netin": 1}}, admin=True),
                    "not running")
        check(status(sim, 101)["nics"] == before, "refused changes left the counters alone")

        # A re-plug (queues on a running VM with network hot-plug) makes a new tap: from 0 again;
        # a live bridge change keeps the tap (qemu-server vmconfig_update_net).
        digest = call(sim, "GET", "/nodes/pve1/qemu/101/config")["digest"]
        call(sim, "PUT", "/nodes/pve1/qemu/101/config",
             {"net1": f"virtio={MAC1},bridge=vmbr1,queues=4", "digest": digest})
        digest = call(sim, "GET", "/nodes/pve1/qemu/101/config")["digest"]
        call(sim, "PUT", "/nodes/pve1/qemu/101/config",
             {"net0": f"virtio={MAC0},bridge=vmbr1,firewall=1", "digest": digest})
        s = status(sim, 101)["nics"]
        check(s["tap101i1"] == {"netin": 0, "netout": 0}, f"net1 re-plugged: a new tap {s}")
        check(s["tap101i0"] == {"netin": 0, "netout": 1024}, f"net0's bridge change kept its tap {s}")

        # Stop and start: new taps, counting from 0.
        wait_task(sim, call(sim, "POST", "/nodes/pve1/qemu/101/status/stop", {}))
        check("nics" not in status(sim, 101), "stopped: no nics")
        wait_task(sim, call(sim, "POST", "/nodes/pve1/qemu/101/status/start", {}))
        check(status(sim, 101)["nics"]["tap101i0"] == {"netin": 0, "netout": 0}, "started again: new taps from 0")


def real_taps(binary):
    work = tempfile.mkdtemp(prefix="pvesim-taps-")
    try:
        dev = os.path.join(work, "net_dev")
        shutil.copy(SAMPLE, dev)
        with Pvesim(binary, STATE, ARGS + ["--node-net-dev", f"pve1={dev}"]) as sim:
            s = status(sim, 101)
            check_shape(s["nics"])
            # vmstatus: netout = the tap's receive (what the guest sent), netin = its transmit.
            check(s["nics"] == {"tap101i0": {"netin": 2500000, "netout": 150000},
                                "tap101i1": {"netin": 73400320, "netout": 4500000}},
                  f"VM 101's taps from the node's /proc/net/dev, not tap1010i0's or fwbr's: {s['nics']}")
            check((s["netin"], s["netout"]) == (2500000 + 73400320, 150000 + 4500000), "sums")
            check(resource(sim, 101)["netout"] == 150000 + 4500000, "/cluster/resources from the same taps")
            # Proxmox shows whatever taps the node has, whatever the VM's state.
            check(status(sim, 103)["nics"] == {"tap103i0": {"netin": 22, "netout": 11}}, "a leftover tap shows")
            check(status(sim, 201, "pve2")["nics"] == {"tap201i0": {"netin": 0, "netout": 0}},
                  "a node without --node-net-dev keeps simulated taps")
            expect_http(409, lambda: call(sim, "PUT", "/pvesim/vms/101/nic-counters", {"net0": {"netin": 1}},
                                          admin=True), "real taps")
            view = call(sim, "GET", "/pvesim/nodes/pve1/net-dev", admin=True)
            check(view["path"] == dev and view["error"] is None and
                  view["devices"]["tap101i1"] == {"receive": 4500000, "transmit": 73400320}, f"net-dev view {view}")

            # Read on every request: bytes that crossed the tap show at once.
            with open(dev) as f:
                text = f.read().replace("tap101i1: 4500000", "tap101i1: 9000000")
            with open(dev + ".new", "w") as f:
                f.write(text)
            os.rename(dev + ".new", dev)
            check(status(sim, 101)["nics"]["tap101i1"]["netout"] == 9000000, "the new counters show")

            # Unreadable: no taps, as read_proc_net_dev returns {}; the status itself still answers.
            os.unlink(dev)
            s = status(sim, 101)
            check("nics" not in s and s["netin"] == 0, f"unreadable net dev: {s}")
            check(call(sim, "GET", "/pvesim/nodes/pve1/net-dev", admin=True)["error"], "the view names the error")
        bad = subprocess.run([binary, "--port", "0", "--node-net-dev", f"pve1={dev}"], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=60)
        check(bad.returncode == 2 and "--node-net-dev pve1" in bad.stderr, f"unreadable at start: {bad.stderr}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def netns(binary):
    """A network namespace file is read from inside that namespace: a fresh one has only lo."""
    with Pvesim(binary, STATE, ARGS + ["--node-net-dev", f"pve1=/proc/{os.getpid()}/ns/net"]) as sim:
        for _ in range(5):  # links may come and go here between the two reads (other tests)
            mine = set(call(sim, "GET", "/pvesim/nodes/pve1/net-dev", admin=True)["devices"])
            with open("/proc/net/dev") as f:
                here = {line.split(":")[0].strip() for line in f.readlines()[2:]}
            if mine == here:
                break
        check(mine == here, f"this namespace's devices {sorted(here)}, pvesim read {sorted(mine)}")
    holder = subprocess.Popen(["unshare", "--net", "sleep", "300"], stdin=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        ns = f"/proc/{holder.pid}/ns/net"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.readlink(ns) == os.readlink("/proc/self/ns/net"):
            if holder.poll() is not None:
                print(f"skipped the foreign namespace (unshare --net: {holder.stderr.read().decode().strip()})")
                return
            time.sleep(0.02)
        with Pvesim(binary, STATE, ARGS + ["--node-net-dev", f"pve1={ns}"]) as sim:
            view = call(sim, "GET", "/pvesim/nodes/pve1/net-dev", admin=True)
            check(view["error"] is None and set(view["devices"]) == {"lo"}, f"a new namespace has only lo: {view}")
            check("nics" not in status(sim, 101), "no taps there")
    finally:
        holder.kill()
        holder.wait()


if __name__ == "__main__":
    case_main({"synthetic": synthetic, "real_taps": real_taps, "netns": netns}, __doc__)
