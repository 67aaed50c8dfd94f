# SPDX-License-Identifier: GPL-3.0-or-later
"""pvesim (tests/pvesim, the Proxmox API emulator) driving the lab guest through vm-hook.

`lab up` starts pvesim on loopback with the guest (vmid 101 on pve1) in its state file and
tests/lab/vm-hook as that VM's hook, then boots the guest with POST .../status/start. Every
power or NIC change afterwards goes through the API, as pathwarden's would.

pve1's taps are the real ones: pvesim reads pve1's /proc/net/dev inside the switch namespace
(--node-net-dev pve1=/run/netns/NS), where QEMU's taps tap<vmid>i<N> live, so status/current's
"nics" are the bytes that really crossed each tap (check it: tests/lab/lab taps).

The guest's config has `agent: 1`: vm-hook starts it with the guest agent's channel, whose socket
is topology.qga_socket(101) in topology.qga_dir(), the lab's /var/run/qemu-server. pvesim gets
`--qga-dir` that directory, so its .../agent/... endpoints talk to the real agent, when the binary
offers the option (`pvesim --help` lists it); an older pvesim runs without it.
"""
import glob
import json
import os
import secrets
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from ..paths import LAB, ROOT
from . import topology as topo
from .common import LabError, log, pid_alive, pid_cmdline, read_pidfile, wait_until

HOOK = os.path.join(LAB, "vm-hook")
TOKEN_ID = "root@pam!pwlab"
TASK_TIMEOUT = 900
# The node's /proc/net/dev as Proxmox reads it: the switch namespace, where the taps are (a
# namespace file survives QEMU restarts, unlike /proc/<qemu pid>/net/dev).
NODE_NET_DEV = f"/run/netns/{topo.NETNS}"


def _dir() -> str:
    return topo.run_path("pvesim")


def find_binary() -> str:
    """PW_PVESIM, else the newest pvesim built in this checkout's build directories."""
    explicit = os.environ.get("PW_PVESIM")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise LabError(f"PW_PVESIM={explicit} is not an executable")
        return explicit
    found = [p for p in glob.glob(os.path.join(ROOT, "build", "*", "tests", "pvesim", "pvesim"))
             if os.access(p, os.X_OK)]
    if not found:
        raise LabError("no pvesim binary: build it (cmake --build build/dev --target pvesim) "
                       "or point PW_PVESIM at it")
    return max(found, key=os.path.getmtime)


def _pid():
    pid = read_pidfile(os.path.join(_dir(), "pvesim.pid"))
    if pid and pid_alive(pid) and any(a.endswith("pvesim") for a in pid_cmdline(pid)[:1]):
        return pid
    return None


def supports_option(binary: str, option: str) -> bool:
    """Whether this pvesim binary lists option in its --help (options come and go with its version)."""
    try:
        proc = subprocess.run([binary, "--help"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(word.startswith(option) for word in (proc.stdout + proc.stderr).split())


def start_and_boot_guest() -> dict:
    binary = find_binary()
    qga = ["--qga-dir", topo.qga_dir()] if supports_option(binary, "--qga-dir") else []
    if not qga:
        log("this pvesim has no --qga-dir: its agent endpoints do not reach the guest's agent "
            "(tests/lab/lab qga does)")
    os.makedirs(topo.qga_dir(), exist_ok=True)
    d = _dir()
    os.makedirs(d, mode=0o700, exist_ok=True)
    state_file = os.path.join(d, "state.json")
    with open(state_file, "w") as f:
        json.dump({"cluster": "pwlab", "nodes": [topo.GUEST_NODE],
                   "guests": [{"vmid": topo.GUEST_VMID, "node": topo.GUEST_NODE, "type": "qemu",
                               "running": False, "config": topo.guest_vm_config()}]}, f, indent=1)
    secret = secrets.token_hex(16)
    token_file = os.path.join(d, "token")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(f"{TOKEN_ID}={secret}\n")
    ready = os.path.join(d, "ready.json")
    log_file = open(os.path.join(d, "pvesim.log"), "ab")
    proc = subprocess.Popen([binary, "--listen", "127.0.0.1", "--port", "0", "--ready-file", ready,
                             "--state", state_file, "--vm-hook", f"{topo.GUEST_VMID}={HOOK}",
                             "--node-net-dev", f"{topo.GUEST_NODE}={NODE_NET_DEV}",
                             "--token", f"{TOKEN_ID}={secret}"] + qga,
                            stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                            start_new_session=True)
    log_file.close()
    with open(os.path.join(d, "pvesim.pid"), "w") as f:
        f.write(f"{proc.pid}\n")
    if not wait_until(lambda: os.path.exists(ready) or proc.poll() is not None, 30, 0.1) or proc.poll() is not None:
        raise LabError(f"pvesim did not start: {_log_tail()}")
    with open(ready) as f:
        info = json.load(f)
    info |= {"token_id": TOKEN_ID, "token_file": token_file, "pid": proc.pid, "binary": binary,
             "qga_dir": qga[1] if qga else None}
    log(f"pvesim at {info['url']}; starting guest {topo.GUEST_VMID} through the API")
    Api(info).power("start")
    return info


def _log_tail() -> str:
    try:
        with open(os.path.join(_dir(), "pvesim.log"), errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-3:])
    except OSError:
        return "no log"


def info_from_state(state: dict) -> dict:
    info = (state or {}).get("pvesim")
    if not info:
        raise LabError("the lab is not up (no pvesim): run tests/lab/lab up")
    return info


def healthy(state: dict) -> bool:
    return bool(state and state.get("pvesim")) and _pid() is not None


def stop(state: dict) -> None:
    pid = _pid()
    if pid:
        os.kill(pid, signal.SIGTERM)
        if not wait_until(lambda: not pid_alive(pid), 15, 0.2):
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not pid_alive(pid), 10, 0.2)


def leftover_pids() -> list:
    pid = _pid()
    return [pid] if pid else []


class Api:
    """A small Proxmox API client for the lab itself (TLS verified against pvesim's CA file)."""

    def __init__(self, info: dict):
        self.url = info["url"].rstrip("/") + "/api2/json"
        with open(info["token_file"]) as f:
            self.token = f.read().strip()
        self.ctx = ssl.create_default_context(cafile=info["ca_file"])
        self.base = f"/nodes/{topo.GUEST_NODE}/qemu/{topo.GUEST_VMID}"

    def request(self, method: str, path: str, params: dict = None):
        data = urllib.parse.urlencode(params or {}).encode() if method in ("POST", "PUT") else None
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params and data is None else "")
        req = urllib.request.Request(url, data=data, method=method,
                                     headers={"Authorization": f"PVEAPIToken={self.token}"})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=60) as resp:
                return json.load(resp).get("data")
        except urllib.error.HTTPError as e:
            body = e.read().decode(errors="replace")[:300]
            raise LabError(f"pvesim {method} {path}: HTTP {e.code} {e.reason} {body}")
        except urllib.error.URLError as e:
            raise LabError(f"pvesim {method} {path}: {e.reason}")

    def wait_task(self, upid: str, timeout: float = TASK_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        path = f"/nodes/{topo.GUEST_NODE}/tasks/{urllib.parse.quote(upid, safe='')}/status"
        while time.monotonic() < deadline:
            st = self.request("GET", path)
            if st.get("status") == "stopped":
                if st.get("exitstatus") != "OK":
                    raise LabError(f"task {upid} failed: {st.get('exitstatus')}")
                return
            time.sleep(0.5)
        raise LabError(f"task {upid} still running after {timeout} s")

    def power(self, action: str) -> None:
        self.wait_task(self.request("POST", f"{self.base}/status/{action}"))

    def config(self) -> dict:
        return self.request("GET", f"{self.base}/config")

    def set_config(self, params: dict) -> None:
        """POST (async, a task) like Proxmox clients do for changes that may hot-plug."""
        upid = self.request("POST", f"{self.base}/config", params)
        if upid:
            self.wait_task(upid)

    def status(self) -> str:
        return self.request("GET", f"{self.base}/status/current")["status"]

    def pending(self) -> list:
        return self.request("GET", f"{self.base}/pending")

    def nics(self) -> dict:
        """status/current's per-tap counters: {"tap101i0": {"netin": B, "netout": B}, ...}."""
        return self.request("GET", f"{self.base}/status/current").get("nics", {})


def _tap_stats(ns: str) -> dict:
    """Every tap's rx/tx bytes in the namespace, from the kernel (ip -s link), not from /proc/net/dev."""
    links = json.loads(subprocess.run(["ip", "-n", ns, "-j", "-s", "link", "show", "type", "tun"],
                                      stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                      check=True).stdout or "[]")
    return {link["ifname"]: (link["stats64"]["rx"]["bytes"], link["stats64"]["tx"]["bytes"]) for link in links}


def check_taps(state: dict = None) -> dict:
    """The guest's "nics" against the kernel's tap counters, read before and after: each API value
    must lie between them, with the direction swapped (netout = tap rx, netin = tap tx). Returns
    {"nics", "taps"}; raises LabError on any disagreement."""
    a = api(state)
    before = _tap_stats(topo.NETNS)
    nics = a.nics()
    after = _tap_stats(topo.NETNS)
    want = sorted(t for t in before if t.startswith(f"tap{topo.GUEST_VMID}i"))
    if sorted(nics) != want:
        raise LabError(f"status/current nics {sorted(nics)}, the namespace's taps of VM {topo.GUEST_VMID} {want}")
    for tap, c in nics.items():
        for member, i in (("netout", 0), ("netin", 1)):
            if not before[tap][i] <= c[member] <= after.get(tap, before[tap])[i]:
                raise LabError(f"{tap} {member} {c[member]}: the kernel's {'rx' if i == 0 else 'tx'} "
                               f"was {before[tap][i]}..{after.get(tap, before[tap])[i]}")
    return {"nics": nics, "taps": {t: {"rx": v[0], "tx": v[1]} for t, v in after.items()}}


def api(state: dict = None) -> Api:
    from .lab import read_state
    return Api(info_from_state(state or read_state()))


def set_net_queues(key: str, queues: int) -> None:
    """Sets queues= on netN through the API (hot-plugged on a running VM when hotplug allows
    network, otherwise pending until the next start)."""
    a = api()
    conf = a.config()
    if key not in conf:
        raise LabError(f"the guest has no {key}")
    parts = [p for p in conf[key].split(",") if not p.startswith("queues=")]
    a.set_config({key: ",".join(parts + ([f"queues={queues}"] if queues else []))})


def reboot_guest() -> None:
    a = api()
    a.power("reboot")
    if not wait_until(lambda: a.status() == "running", 120, 0.5):
        raise LabError("the guest did not come back after the reboot task")
