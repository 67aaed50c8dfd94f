# SPDX-License-Identifier: GPL-3.0-or-later
"""QEMU VMs launched from a Proxmox VM config the way qemu-server does, controlled through QMP.

Faithful where pathwarden can see it: netN `virtio=MAC,bridge=B,queues=N,rate=R` becomes a tap
named tap<vmid>i<N> on bridge B (multiqueue when N > 1), `-netdev tap,...,queues=N` and
`virtio-net-pci,mq=on,vectors=2N+2,mac=MAC`; rate= is a tc limit on the tap in MB/s; netN ids
are the QEMU device ids, so a hot-plug is a real device_del/device_add. `agent: 1` (or
`enabled=1,...`) adds the guest agent's channel with qemu-server's options, its socket
topology.qga_socket(vmid) (qemu-server: /var/run/qemu-server/<vmid>.qga), removed when the VM
stops. Lab-specific: the guest boots the lab kernel directly (no firmware boot), and runs inside
the switch namespace.
"""
import json
import os
import re
import shlex
import signal
import socket
import time

from . import topology as topo
from .common import LabError, log, netns_cmd, pid_alive, pid_cmdline, read_pidfile, run, wait_until

MAX_NICS = 8  # root ports prepared for net0..net7, so a new NIC can be hot-plugged too
NIC_MODELS = {"virtio": "virtio-net-pci", "e1000": "e1000", "rtl8139": "rtl8139", "vmxnet3": "vmxnet3"}


class NetSpec:
    """One netN value of a Proxmox config."""

    def __init__(self, key: str, value: str):
        m = re.fullmatch(r"net(\d+)", key)
        if not m:
            raise LabError(f"{key}: not a network device key (expected netN)")
        self.key, self.index = key, int(m.group(1))
        if self.index >= MAX_NICS:
            raise LabError(f"{key}: the lab supports net0..net{MAX_NICS - 1}")
        self.model, self.mac, self.bridge = None, None, None
        self.queues, self.rate, self.link_down = 0, None, False
        for part in value.split(","):
            name, _, val = part.partition("=")
            if name in NIC_MODELS:
                self.model, self.mac = name, val or None
            elif name == "model":
                self.model = val
            elif name == "macaddr":
                self.mac = val
            elif name == "bridge":
                self.bridge = val
            elif name == "queues":
                if not val.isdigit() or int(val) > 64:
                    raise LabError(f"{key}: queues={val}: expected an integer 0..64")
                self.queues = int(val)
            elif name == "rate":
                try:
                    self.rate = float(val)
                except ValueError:
                    raise LabError(f"{key}: rate={val}: expected a number (MB/s)")
            elif name == "link_down":
                self.link_down = val == "1"
            elif name in ("firewall", "mtu", "tag", "trunks"):
                pass  # no effect on what the lab shows
            else:
                raise LabError(f"{key}: unknown option '{name}' in '{value}'")
        if self.model not in NIC_MODELS:
            raise LabError(f"{key}: model '{self.model}' not supported (one of {', '.join(NIC_MODELS)})")
        if not self.mac or not re.fullmatch(r"([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}", self.mac):
            raise LabError(f"{key}: missing or invalid MAC address in '{value}'")
        if not self.bridge:
            raise LabError(f"{key}: no bridge in '{value}' (the lab has no NAT networking)")

    def tap(self, vmid: int) -> str:
        return f"tap{vmid}i{self.index}"

    def multiqueue(self) -> bool:
        return self.model == "virtio" and self.queues > 1

    def netdev_args(self, vmid: int) -> dict:
        args = {"type": "tap", "id": self.key, "ifname": self.tap(vmid), "script": "no", "downscript": "no"}
        if self.multiqueue():
            args["queues"] = self.queues
        return args

    def device_args(self, q35: bool) -> dict:
        args = {"driver": NIC_MODELS[self.model], "id": self.key, "netdev": self.key, "mac": self.mac}
        if self.multiqueue():
            args |= {"mq": "on", "vectors": 2 * self.queues + 2}
        if q35:
            args["bus"] = f"rp-{self.key}"
        else:
            args |= {"bus": "pci.0", "addr": hex(0x12 + self.index)}
        return args


# qemu-server's $agent_fmt (PVE/QemuServer/Agent.pm): key -> boolean, or the allowed values.
AGENT_KEYS = {"enabled": None, "fstrim_cloned_disks": None, "freeze-fs-on-backup": None, "freeze-fs": None,
              "type": ("virtio", "isa")}


def _pve_boolean(text: str):
    """PVE::JSONSchema::parse_boolean: 1|on|yes|true -> True, 0|off|no|false -> False, else None."""
    low = text.lower()
    return True if low in ("1", "on", "yes", "true") else False if low in ("0", "off", "no", "false") else None


def parse_guest_agent(value) -> dict:
    """qemu-server's parse_guest_agent: the `agent` property string ("1", "enabled=1,type=virtio",
    ...) as a dict, or {} when it is absent, disabled, or does not parse (qemu-server warns then and
    starts the VM without the channel; so does the lab, on stderr)."""
    if value is None:
        return {}
    result = {}
    try:
        for part in str(value).split(","):
            if not part:
                continue
            key, sep, val = part.partition("=")
            if not sep:
                key, val = "enabled", part  # the format's default key
            if key not in AGENT_KEYS:
                raise LabError(f"{key}: property is not defined in schema")
            if key in result:
                raise LabError(f"{key}: duplicate key in comma-separated list property")
            allowed = AGENT_KEYS[key]
            if allowed is None:
                flag = _pve_boolean(val)
                if flag is None:
                    raise LabError(f"{key}: type check ('boolean') failed - got '{val}'")
                result[key] = flag
            elif val in allowed:
                result[key] = val
            else:
                raise LabError(f"{key}: value '{val}' does not have a value in the enumeration "
                               f"'{', '.join(allowed)}'")
    except LabError as e:
        log(f"agent: {value}: {e}: the VM starts without the guest agent channel")
        return {}
    return result if result.get("enabled") else {}


def agent_args(config: dict, vmid: int, q35: bool) -> list:
    """qemu-server's config_to_command for an enabled agent: a socket chardev and, for type
    virtio, a virtio-serial controller with the port org.qemu.guest_agent.0 (qemu-server puts it
    at bus=pci.0,addr=0x8; a q35 machine in the lab has no pci.0, so QEMU places it on pcie.0)."""
    agent = parse_guest_agent(config.get("agent"))
    if not agent:
        return []
    args = ["-chardev", f"socket,path={topo.qga_socket(vmid)},server=on,wait=off,id=qga0"]
    if agent.get("type", "virtio") == "isa":
        return args + ["-device", "isa-serial,chardev=qga0"]
    return args + ["-device", "virtio-serial,id=qga0" + ("" if q35 else ",bus=pci.0,addr=0x8"),
                   "-device", f"virtserialport,chardev=qga0,name={topo.QGA_PORT}"]


def _opts(args: dict) -> str:
    head = args.get("driver") or args.get("type")
    rest = ",".join(f"{k}={v}" for k, v in args.items() if k not in ("driver", "type"))
    return f"{head},{rest}" if rest else head


def nets_of(config: dict) -> dict:
    return {k: NetSpec(k, v) for k, v in sorted(config.items()) if re.fullmatch(r"net\d+", k)}


def disk_path(value: str) -> tuple:
    """`local:<vmid>/<file>,size=...` in the lab's directory storage -> (path, format)."""
    volume = value.split(",", 1)[0]
    storage, _, name = volume.partition(":")
    if storage != "local" or "/" not in name or ".." in name:
        raise LabError(f"disk '{volume}': the lab has only the directory storage 'local' "
                       "(local:<vmid>/<file>)")
    path = os.path.join(topo.storage_root(), "images", name)
    fmt = "qcow2" if name.endswith(".qcow2") else "raw"
    if not os.path.exists(path):
        raise LabError(f"disk '{volume}': {path} does not exist")
    return path, fmt


class LabState:
    """What `lab up` recorded for VM launches: namespace, accelerator, boot files."""

    def __init__(self):
        path = topo.run_path("state.json")
        try:
            with open(path) as f:
                self.data = json.load(f)
        except OSError:
            raise LabError(f"the lab is not up ({path} missing): run tests/lab/lab up")

    def __getitem__(self, key):
        return self.data[key]


# ---------------------------------------------------------------------------------------------
# QMP

class Qmp:
    def __init__(self, path: str, timeout: float = 30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError as e:
            raise LabError(f"QMP socket {path}: {e.strerror}")
        self.buf = b""
        self.events = []
        self._read()  # greeting
        self.execute("qmp_capabilities")

    def _read(self) -> dict:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise LabError("QMP: QEMU closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, command: str, **arguments):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read()
            if "event" in reply:
                self.events.append(reply)
            elif "error" in reply:
                raise LabError(f"QMP {command}: {reply['error'].get('desc', reply['error'])}")
            elif "return" in reply:
                return reply["return"]

    def wait_event(self, name: str, match=lambda data: True, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for ev in self.events:
                if ev["event"] == name and match(ev.get("data", {})):
                    self.events.remove(ev)
                    return ev
            left = deadline - time.monotonic()
            if left <= 0:
                raise LabError(f"QMP: no {name} event within {timeout} s")
            self.sock.settimeout(left)
            try:
                self.events.append(self._read())
            except socket.timeout:
                raise LabError(f"QMP: no {name} event within {timeout} s")

    def close(self):
        self.sock.close()


# ---------------------------------------------------------------------------------------------
# VM lifecycle

class Vm:
    def __init__(self, vmid: int):
        self.vmid = vmid
        self.dir = topo.vm_dir(vmid)
        self.qmp_path = os.path.join(self.dir, "qmp.sock")
        self.pidfile = os.path.join(self.dir, "qemu.pid")
        self.console = os.path.join(self.dir, "console.log")
        self.running_file = os.path.join(self.dir, "running.json")
        self.qga_path = topo.qga_socket(vmid)

    def pid(self):
        """The QEMU PID, only if that process really is this VM's QEMU (no PID-reuse accidents)."""
        pid = read_pidfile(self.pidfile)
        if pid and pid_alive(pid) and any(self.qmp_path in a for a in pid_cmdline(pid)):
            return pid
        return None

    def running(self) -> bool:
        return self.pid() is not None

    def qmp(self) -> Qmp:
        return Qmp(self.qmp_path)

    # -- start --------------------------------------------------------------------------------
    def command(self, config: dict, state: LabState) -> list:
        q35 = config.get("machine", "pc").startswith(("q35", "pc-q35"))
        cores = int(config.get("cores", "1"))
        sockets = int(config.get("sockets", "1"))
        cmd = ["qemu-system-x86_64", "-name", f"{config.get('name', 'vm' + str(self.vmid))},debug-threads=on",
               "-machine", "q35" if q35 else "pc", "-accel", state["accel"]]
        if state["accel"] == "kvm":
            cmd += ["-cpu", "host"]
        cmd += ["-m", config.get("memory", "512"), "-smp", f"{cores * sockets},sockets={sockets},cores={cores}",
                "-nodefaults", "-display", "none",
                "-chardev", f"file,id=serial0,path={self.console},append=on", "-serial", "chardev:serial0",
                "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
                "-pidfile", self.pidfile, "-daemonize"]
        if "args" in config:
            cmd += shlex.split(config["args"])
        else:
            cmd += ["-kernel", state["kernel"], "-initrd", state["initrd"], "-append", state["append"]]
        if q35:
            for i in range(MAX_NICS):
                cmd += ["-device", f"pcie-root-port,id=rp-net{i},bus=pcie.0,chassis={i + 1},slot={i + 1}"]
        for key in sorted(k for k in config if re.fullmatch(r"virtio\d+", k)):
            path, fmt = disk_path(config[key])
            cmd += ["-drive", f"file={path},if=none,id=drive-{key},format={fmt},cache=writeback,discard=unmap",
                    "-device", f"virtio-blk-pci,drive=drive-{key},id={key}"]
        for spec in nets_of(config).values():
            cmd += ["-netdev", _opts(spec.netdev_args(self.vmid)), "-device", _opts(spec.device_args(q35))]
        return cmd + agent_args(config, self.vmid, q35)

    def start(self, config: dict) -> None:
        if self.running():
            raise LabError(f"VM {self.vmid} is already running")
        state = LabState()
        os.makedirs(self.dir, exist_ok=True)
        os.makedirs(topo.qga_dir(), exist_ok=True)
        for stale in (self.qmp_path, self.pidfile, self.qga_path):
            if os.path.exists(stale):
                os.unlink(stale)
        nets = nets_of(config)
        for spec in nets.values():
            _check_bridge(state, spec)
        with open(self.console, "a") as f:
            f.write(f"\n=== pwlab: start VM {self.vmid} at {time.strftime('%H:%M:%S')} ===\n")
        run(netns_cmd(state["netns"], self.command(config, state)), what=f"QEMU for VM {self.vmid}")
        try:
            for spec in nets.values():
                _plug_tap(state, self.vmid, spec)
            if any(spec.link_down for spec in nets.values()):
                q = self.qmp()
                for spec in nets.values():
                    if spec.link_down:
                        q.execute("set_link", name=spec.key, up=False)
                q.close()
        except LabError:
            self.stop()  # a half-wired VM must not keep running while the API says stopped
            raise
        self._record(config)

    def _record(self, config: dict) -> None:
        with open(self.running_file, "w") as f:
            json.dump(config, f, indent=1, sort_keys=True)

    # -- stop ---------------------------------------------------------------------------------
    def shutdown(self, timeout: float) -> None:
        """ACPI power button, then a hard stop after timeout seconds."""
        pid = self.pid()
        if not pid:
            return
        try:
            q = self.qmp()
            q.execute("system_powerdown")
            q.close()
        except LabError as e:
            log(f"VM {self.vmid}: {e}; stopping it")
        if not wait_until(lambda: not pid_alive(pid), timeout):
            log(f"VM {self.vmid} did not power off within {timeout:.0f} s; stopping it")
        self.stop()

    def stop(self) -> None:
        pid = self.pid()
        if pid:
            try:
                q = self.qmp()
                q.execute("quit")
                q.close()
            except (LabError, OSError):
                pass
            if not wait_until(lambda: not pid_alive(pid), 10, 0.2):
                os.kill(pid, signal.SIGKILL)
                wait_until(lambda: not pid_alive(pid), 10, 0.2)
        # The agent's socket too, as qemu-server's vm_stop_cleanup removes <vmid>.qga.
        for f in (self.pidfile, self.qmp_path, self.running_file, self.qga_path):
            if os.path.exists(f):
                os.unlink(f)

    # -- hot-plug -----------------------------------------------------------------------------
    def hotplug_nic(self, config: dict, key: str) -> None:
        """Unplugs netN and plugs it back as the config now says (qemu-server does the same
        for a queues change: a new netdev, counters from 0)."""
        pid = self.pid()
        if not pid:
            raise LabError(f"VM {self.vmid} is not running")
        state = LabState()
        try:
            with open(self.running_file) as f:
                current = json.load(f)
        except OSError:
            current = {}
        want = NetSpec(key, config[key]) if key in config else None
        have = NetSpec(key, current[key]) if key in current else None
        if want:
            _check_bridge(state, want)
        q35 = current.get("machine", config.get("machine", "pc")).startswith(("q35", "pc-q35"))
        q = self.qmp()
        try:
            if have:
                q.execute("device_del", id=key)
                q.wait_event("DEVICE_DELETED", lambda d: d.get("device") == key, timeout=60)
                q.execute("netdev_del", id=key)
                current.pop(key, None)
                self._record(current)
            if want:
                q.execute("netdev_add", **want.netdev_args(self.vmid))
                q.execute("device_add", **want.device_args(q35))
                _plug_tap(state, self.vmid, want)
                if want.link_down:
                    q.execute("set_link", name=key, up=False)
                current[key] = config[key]
                self._record(current)
        finally:
            q.close()


def _check_bridge(state: LabState, spec: NetSpec) -> None:
    if spec.bridge not in state["bridges"]:
        raise LabError(f"{spec.key}: bridge '{spec.bridge}' does not exist in the lab "
                       f"(bridges: {', '.join(state['bridges'])})")


def _plug_tap(state: LabState, vmid: int, spec: NetSpec) -> None:
    ns, tap = state["netns"], spec.tap(vmid)
    run(["ip", "-n", ns, "link", "set", tap, "master", spec.bridge], what=f"attach {tap} to {spec.bridge}")
    run(["ip", "-n", ns, "link", "set", tap, "up"], what=f"set {tap} up")
    if spec.rate:
        rate_limit(ns, tap, spec.rate)


def rate_limit(ns: str, tap: str, rate_mbps: float) -> None:
    """Limits a tap like Proxmox's rate= (MB/s): htb on egress (host -> VM, what reads cross)
    and, where the host kernel has the tc police action, a policer on ingress (VM -> host)."""
    bps = int(rate_mbps * 1024 * 1024)
    tc = ["ip", "netns", "exec", ns, "tc"]
    run(tc + ["qdisc", "replace", "dev", tap, "root", "handle", "1:", "htb", "default", "1"])
    run(tc + ["class", "replace", "dev", tap, "parent", "1:", "classid", "1:1", "htb",
              "rate", f"{bps}bps", "burst", "1mb"])
    run(tc + ["qdisc", "replace", "dev", tap, "handle", "ffff:", "ingress"])
    police = run(tc + ["filter", "replace", "dev", tap, "parent", "ffff:", "prio", "50", "matchall",
                       "action", "police", "rate", f"{bps}bps", "burst", "1mb", "drop"], check=False)
    if police.returncode != 0:
        run(tc + ["qdisc", "del", "dev", tap, "ingress"], check=False)
