# SPDX-License-Identifier: GPL-3.0-or-later
"""Bringing the lab up and down, and talking to its guest.

Guest().helper(COMMAND, ARGS...) runs tests/lab/guest/pwlab_guest.py in the guest (commands:
counters, read, apply, reset, set-mount, compose-file; see that file) and returns its JSON.
Guest().compose_file(O, DEVICE=None) rewrites only the lab Compose file's volume `o:` (and
`device:`), as `lab compose-file` does; the caller then runs docker-compose itself, as an
operator would (`cd /srv/pg && docker-compose down && docker volume rm pg_pgdata && ...`).
"""
import fcntl
import glob
import json
import os
import shutil
import subprocess
import time

from ..paths import LAB as LAB_DIR
from . import images, nas as nas_channel, nas_image, pvesim, topology as topo
from .common import LabError, log, netns_cmd, output, pid_alive, pid_cmdline, run, wait_until
from .qemu import Vm

GUEST_HELPER = os.path.join(LAB_DIR, "guest", "pwlab_guest.py")
BOOT_TIMEOUT = float(os.environ.get("PW_LAB_BOOT_TIMEOUT", "600"))
KVM_PROBE_TIMEOUT = 20


# ---------------------------------------------------------------------------------------------
# Accelerator

def _kvm_device_opens() -> bool:
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return fcntl.ioctl(fd, 0xAE00) == 12  # KVM_GET_API_VERSION
    except OSError:
        return False
    finally:
        os.close(fd)


def kvm_usable(kernel: str) -> bool:
    """True when a KVM guest really runs: /dev/kvm can exist while guests never get past the
    kernel decompressor (nested virtualisation without VMX), so boot the lab kernel with no root
    and wait for its panic. The answer is cached per machine boot."""
    if not _kvm_device_opens():
        return False
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot_id = f.read().strip()
    cache = os.path.join(topo.CACHE_ROOT, "kvm-probe.json")
    try:
        with open(cache) as f:
            known = json.load(f)
        if known.get("boot_id") == boot_id:
            return known["usable"]
    except (OSError, ValueError, KeyError):
        pass
    cmd = ["qemu-system-x86_64", "-accel", "kvm", "-cpu", "host", "-machine", "q35", "-m", "256",
           "-nodefaults", "-display", "none", "-serial", "stdio", "-no-reboot",
           "-kernel", kernel, "-append", "console=ttyS0 panic=-1 loglevel=1"]
    t0 = time.monotonic()
    try:
        # stdin from /dev/null: QEMU's stdio chardev makes its stdin non-blocking and, killed at the
        # timeout, leaves it so, which breaks every later ansible-playbook sharing that stdin.
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=KVM_PROBE_TIMEOUT)
        usable = b"Kernel panic" in proc.stdout
    except subprocess.TimeoutExpired:
        usable = False
    log(f"KVM probe: {'guests run' if usable else 'guests do not run'} ({time.monotonic() - t0:.1f} s)")
    with open(cache, "w") as f:
        json.dump({"boot_id": boot_id, "usable": usable}, f)
    return usable


def choose_accel(kernel: str) -> str:
    forced = os.environ.get("PW_LAB_ACCEL", "")
    if forced in ("kvm", "tcg"):
        if forced == "kvm" and not kvm_usable(kernel):
            raise LabError("PW_LAB_ACCEL=kvm but /dev/kvm is not usable here")
        return forced
    if forced:
        raise LabError(f"PW_LAB_ACCEL={forced}: expected kvm or tcg")
    return "kvm" if kvm_usable(kernel) else "tcg"


# ---------------------------------------------------------------------------------------------
# Network: the switch namespace

def _link_exists(name: str, ns: str = None) -> bool:
    cmd = ["ip"] + (["-n", ns] if ns else []) + ["link", "show", name]
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True).returncode == 0


def netns_exists() -> bool:
    return os.path.exists(f"/run/netns/{topo.NETNS}")


def create_switch() -> None:
    ns = topo.NETNS
    run(["ip", "netns", "add", ns])
    run(netns_cmd(ns, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
                       "net.ipv6.conf.default.disable_ipv6=1"]), check=False)
    run(["ip", "-n", ns, "link", "set", "lo", "up"])
    for br in topo.BRIDGES:
        run(["ip", "-n", ns, "link", "add", br, "type", "bridge", "stp_state", "0",
             "forward_delay", "0", "mcast_snooping", "0"])
        run(["ip", "-n", ns, "link", "set", br, "up"])
    # The controller reaches the guest's management address through this veth (203.0.113.0/28 only).
    run(["ip", "link", "add", topo.MGMT_VETH_HOST, "type", "veth", "peer", "name", topo.MGMT_VETH_SWITCH,
         "netns", ns])
    if os.path.exists(f"/proc/sys/net/ipv6/conf/{topo.MGMT_VETH_HOST}"):
        run(["sysctl", "-q", "-w", f"net.ipv6.conf.{topo.MGMT_VETH_HOST}.disable_ipv6=1"])
    run(["ip", "addr", "add", f"{topo.MGMT_HOST_ADDR}/{topo.MGMT_PREFIX}", "dev", topo.MGMT_VETH_HOST])
    run(["ip", "link", "set", topo.MGMT_VETH_HOST, "up"])
    run(["ip", "-n", ns, "link", "set", topo.MGMT_VETH_SWITCH, "master", topo.BRIDGE_MGMT, "up"])


def delete_switch() -> None:
    if netns_exists():
        run(["ip", "netns", "del", topo.NETNS], check=False)
    if _link_exists(topo.MGMT_VETH_HOST):
        run(["ip", "link", "del", topo.MGMT_VETH_HOST], check=False)


# ---------------------------------------------------------------------------------------------
# Files the controller uses: SSH config, known_hosts, Ansible inventory

CONTROL_PATH = os.path.join(topo.RUN_DIR, "ssh", "cm-%C")
# Ansible's connect timeout (ConnectTimeout, which also covers sshd's banner) for the TCG guest:
# a bound on a hang, generous enough that a loaded machine's slow handshake is never "unreachable".
ANSIBLE_CONNECT_TIMEOUT = 30


def close_shared_ssh() -> None:
    """Ends the harness's shared SSH connection to the guest, if one is open."""
    config = topo.run_path("ssh", "config")
    if os.path.exists(config):
        try:
            subprocess.run(["ssh", "-F", config, "-O", "exit", topo.GUEST_NAME], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            pass  # the master is killed with the VMs' network below


def write_access_files(imgs: images.ImageSet) -> None:
    ssh_dir = topo.run_path("ssh")
    os.makedirs(ssh_dir, mode=0o700, exist_ok=True)
    key = os.path.join(ssh_dir, "id_ed25519")
    shutil.copy2(imgs.ssh_key, key)
    os.chmod(key, 0o600)
    known = os.path.join(ssh_dir, "known_hosts")
    with open(known, "w") as f:
        f.write(f"{topo.GUEST_NAME},{topo.GUEST_MGMT_ADDR} {imgs.guest_host_key()}\n")
    # The harness's own SSH shares one connection (closed by `lab down`): a handshake with the
    # TCG guest costs seconds on a loaded machine. ConnectTimeout only bounds a hang; it must
    # not decide an outcome, so it leaves a slow guest's sshd plenty of time for its banner.
    opts = {"HostName": topo.GUEST_MGMT_ADDR, "User": "root", "IdentityFile": key,
            "IdentitiesOnly": "yes", "UserKnownHostsFile": known, "GlobalKnownHostsFile": "/dev/null",
            "StrictHostKeyChecking": "yes", "HostKeyAlias": topo.GUEST_NAME, "ConnectTimeout": "60",
            "ServerAliveInterval": "5", "ServerAliveCountMax": "6", "BatchMode": "yes", "LogLevel": "ERROR",
            "ControlMaster": "auto", "ControlPath": CONTROL_PATH, "ControlPersist": "300"}
    with open(os.path.join(ssh_dir, "config"), "w") as f:
        f.write(f"Host {topo.GUEST_NAME}\n" + "".join(f"  {k} {v}\n" for k, v in opts.items()))
    common = (f"-o UserKnownHostsFile={known} -o GlobalKnownHostsFile=/dev/null "
              f"-o StrictHostKeyChecking=yes -o HostKeyAlias={topo.GUEST_NAME} -o IdentitiesOnly=yes")
    with open(topo.run_path("inventory.ini"), "w") as f:
        f.write("# The lab guest for ansible-playbook -i (written by tests/lab/lab up).\n[lab]\n"
                f"{topo.GUEST_NAME} ansible_host={topo.GUEST_MGMT_ADDR} ansible_user=root "
                f"ansible_ssh_private_key_file={key} ansible_python_interpreter=/usr/bin/python3 "
                f"ansible_pipelining=true ansible_timeout={ANSIBLE_CONNECT_TIMEOUT} "
                f"ansible_ssh_common_args='{common}'\n")


def ssh_command(args: list) -> list:
    return ["ssh", "-F", topo.run_path("ssh", "config"), topo.GUEST_NAME] + args


class Guest:
    """The lab guest over SSH (pinned host key, lab key)."""

    def run(self, command: str, check=True, timeout=120, input=None) -> subprocess.CompletedProcess:
        # Never the caller's stdin: ssh makes a non-tty stdin non-blocking and, killed at the
        # timeout, leaves it so for every process sharing it (ansible-playbook then refuses to run).
        proc = subprocess.run(ssh_command([command]), text=True, capture_output=True, timeout=timeout,
                              input=input, stdin=subprocess.DEVNULL if input is None else None)
        if check and proc.returncode != 0:
            raise LabError(f"guest: `{command}` failed (exit {proc.returncode}): "
                           f"{proc.stderr.strip() or proc.stdout.strip()[-300:]}")
        return proc

    def helper(self, *args: str, timeout=300) -> dict:
        with open(GUEST_HELPER) as f:
            script = f.read()
        quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in args)
        proc = self.run(f"python3 - {quoted}", check=False, timeout=timeout, input=script)
        try:
            doc = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            raise LabError(f"guest helper {args[0]}: no result (exit {proc.returncode}): "
                           f"{proc.stderr.strip()[-400:]}")
        if "error" in doc:
            raise LabError(f"guest helper {args[0]}: {doc['error']}")
        return doc

    def compose_file(self, options: str, device: str = None) -> dict:
        """Rewrites the lab Compose file's volume `o:` (and `device:`); runs no docker command."""
        return self.helper("compose-file", options, *([device] if device is not None else []))

    def reachable(self) -> bool:
        try:
            return self.run("true", check=False, timeout=20).returncode == 0
        except subprocess.TimeoutExpired:
            return False


# ---------------------------------------------------------------------------------------------
# up / down / status

def _state_path() -> str:
    return topo.run_path("state.json")


def read_state():
    try:
        with open(_state_path()) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


def _write_state(state: dict) -> None:
    tmp = _state_path() + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=2)
    os.replace(tmp, _state_path())


def nas_config(imgs: images.ImageSet, server: str) -> dict:
    links = " ".join(f"pwnas.link={link['name']},{topo.NAS_MACS[link['name']]},{link['nas']}/{link['prefix']}"
                     for link in topo.LINKS)
    exports = " ".join([f"pwnas.export={e}" for e in topo.NAS_EXPORTS] +
                       [f"pwnas.roexport={d}:{src}" for d, src in topo.NAS_RO_EXPORTS.items()])
    append = (f"console=ttyS0 ipv6.disable=1 panic=-1 loglevel=4 {links} {exports} "
              f"pwnas.probe_mib={topo.PROBE_BYTES // (1024 * 1024)} pwnas.server={server}")
    return {"name": topo.NAS_HOSTNAME, "machine": "q35", "memory": "640", "cores": "1",
            "args": f"-kernel {imgs.kernel} -initrd {imgs.initrd_nas} -append '{append}' {nas_channel.qemu_args()}",
            "net0": f"virtio={topo.NAS_MACS['link1']},bridge={topo.BRIDGE_LINK1}",
            "net1": f"virtio={topo.NAS_MACS['link2']},bridge={topo.BRIDGE_LINK2}"}


def _console_tail(vm: Vm, lines=15) -> str:
    try:
        with open(vm.console, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return f"(no console log at {vm.console}: did another `lab down` remove {topo.RUN_DIR}?)"


def _wait_console(vm: Vm, marker: str, fatal: tuple, timeout: float, what: str) -> None:
    def seen():
        if not vm.running():
            raise LabError(f"{what} stopped while booting; console:\n{_console_tail(vm)}")
        try:
            with open(vm.console, errors="replace") as f:
                text = f.read()
        except OSError:
            return False
        for bad in fatal:
            if bad in text:
                raise LabError(f"{what}: '{bad}' on the console:\n{_console_tail(vm)}")
        return marker in text
    if not wait_until(seen, timeout, 1):
        raise LabError(f"{what} not ready within {timeout:.0f} s; console:\n{_console_tail(vm)}")


def _lab_running(state: dict) -> bool:
    return bool(state) and netns_exists() and Vm(topo.NAS_VMID).running() and \
        Vm(topo.GUEST_VMID).running() and pvesim.healthy(state)


def _server_of(state: dict) -> str:
    return state.get("nas_server", "knfsd")  # a lab started before the choice existed: knfsd


def nas_server() -> str:
    """The NFS server the running lab's NAS runs (knfsd or ganesha)."""
    state = read_state()
    if not state:
        raise LabError("the lab is not up (`tests/lab/lab up`)")
    return _server_of(state)


def nas_trunks() -> bool:
    """Whether the running NAS answers every address of its with one NFSv4 client ID, so that an
    NFSv4.1+ mount through a second address joins the first address's client (the seed's trap).
    knfsd does. NFS-Ganesha keys its client records by the server address the client connected to
    (docs/field-next-upstream.md §5.3): one client per address, no trap."""
    return nas_server() == "knfsd"


def require_nas_server() -> None:
    """A test run for one server (PW_LAB_NAS, as `lab up` reads it) fails on a lab that runs
    another, rather than proving the other server's behaviour under this one's name."""
    if "PW_LAB_NAS" in os.environ and nas_server() != topo.NAS_SERVER:
        raise LabError(f"this test is for the NAS running {topo.NAS_SERVER} (PW_LAB_NAS); the lab's "
                       f"runs {nas_server()}: `PW_LAB_NAS={topo.NAS_SERVER} tests/lab/lab up`")


class UpDownLock:
    """Serialises `lab up` and `lab down` of different processes (the lab is one per machine)."""

    def __enter__(self):
        self.f = open(topo.RUN_DIR.rstrip("/") + ".lock", "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        self.f.close()


def up(rebuild=False) -> dict:
    with UpDownLock():
        return _up(rebuild)


def _up(rebuild: bool) -> dict:
    server = topo.NAS_SERVER
    if server not in nas_image.SERVERS:
        raise LabError(f"PW_LAB_NAS={server!r}: the lab NAS runs one of {', '.join(nas_image.SERVERS)}")
    state = read_state()
    running = _server_of(state) if state else None
    if not rebuild and _lab_running(state) and running == server and Guest().reachable():
        log(f"lab already up (accel {state['accel']}, guest {topo.GUEST_MGMT_ADDR}, NAS {server})")
        return state
    if state and running != server:
        log(f"the lab's NAS runs {running}; PW_LAB_NAS asks for {server}: starting the lab anew")
    if state or netns_exists() or glob.glob(topo.run_path("vms", "*")):
        log("cleaning up a partial lab first")
        _down()
    t0 = time.monotonic()
    imgs = images.ensure_images(rebuild=rebuild)
    t_images = time.monotonic() - t0
    accel = choose_accel(imgs.kernel)
    log(f"accelerator: {accel}" + ("" if accel == "kvm" else " (software emulation; /dev/kvm not usable)"))
    os.makedirs(topo.RUN_DIR, mode=0o700, exist_ok=True)
    disk_dir = os.path.join(topo.storage_root(), "images", str(topo.GUEST_VMID))
    os.makedirs(disk_dir, exist_ok=True)
    disk = os.path.join(disk_dir, f"vm-{topo.GUEST_VMID}-disk-0.qcow2")
    run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", imgs.guest_root, disk])
    state = {"accel": accel, "nas_server": server, "netns": topo.NETNS, "bridges": list(topo.BRIDGES),
             "images": imgs.dir,
             "kernel": imgs.kernel, "initrd": imgs.initrd_boot,
             "append": "root=/dev/vda console=ttyS0 ipv6.disable=1 panic=10 loglevel=4",
             "guest": {"vmid": topo.GUEST_VMID, "node": topo.GUEST_NODE, "name": topo.GUEST_NAME,
                       "mgmt": topo.GUEST_MGMT_ADDR},
             "ssh_config": topo.run_path("ssh", "config"), "inventory": topo.run_path("inventory.ini"),
             "timings": {"images_s": round(t_images, 1)}}
    _write_state(state)
    write_access_files(imgs)
    create_switch()
    t1 = time.monotonic()
    nas = Vm(topo.NAS_VMID)
    nas.start(nas_config(imgs, server))
    state["pvesim"] = pvesim.start_and_boot_guest()
    _write_state(state)
    _wait_console(nas, "PWLAB-NAS READY", ("nas-init:", "Kernel panic"), BOOT_TIMEOUT, "NAS VM")
    if not wait_for_guest():
        raise LabError(f"guest not reachable over SSH within {BOOT_TIMEOUT:.0f} s; console:\n"
                       f"{_console_tail(Vm(topo.GUEST_VMID))}")
    state["timings"]["boot_s"] = round(time.monotonic() - t1, 1)
    _write_state(state)
    log(f"lab up in {time.monotonic() - t0:.0f} s (images {t_images:.0f} s, boot {state['timings']['boot_s']:.0f} s, "
        f"accel {accel}, NAS {server}); guest {topo.GUEST_NAME} at {topo.GUEST_MGMT_ADDR}")
    return state


def wait_for_guest(timeout: float = BOOT_TIMEOUT) -> bool:
    """Waits until the guest VM runs, answers over SSH and systemd has finished booting."""
    guest, vm = Guest(), Vm(topo.GUEST_VMID)
    if not wait_until(lambda: vm.running() and guest.reachable(), timeout, 2):
        return False
    guest.run("systemctl is-system-running --wait >/dev/null || true", timeout=300)
    return True


def _lab_qemu_pids() -> list:
    """QEMU processes started for this lab (their command line names our runtime directory)."""
    pids = []
    marker = topo.run_path("vms") + "/"
    for d in glob.glob("/proc/[0-9]*"):
        args = pid_cmdline(int(d[6:]))
        if args and "qemu-system" in os.path.basename(args[0]) and any(marker in a for a in args):
            pids.append(int(d[6:]))
    return pids


def down() -> list:
    """Stops everything the lab started; returns what is still left (empty when clean)."""
    with UpDownLock():
        return _down()


def _down() -> list:
    state = read_state() or {}
    close_shared_ssh()
    pvesim.stop(state)
    for d in glob.glob(topo.run_path("vms", "*")):
        name = os.path.basename(d)
        if name.isdigit():
            Vm(int(name)).stop()
    for pid in _lab_qemu_pids():
        log(f"stopping leftover lab QEMU {pid}")
        os.kill(pid, 9)
        wait_until(lambda: not pid_alive(pid), 10, 0.2)
    delete_switch()
    shutil.rmtree(topo.RUN_DIR, ignore_errors=True)
    return leftovers()


def leftovers() -> list:
    left = []
    if netns_exists():
        left.append(f"network namespace {topo.NETNS}")
    if _link_exists(topo.MGMT_VETH_HOST):
        left.append(f"link {topo.MGMT_VETH_HOST}")
    left += [f"QEMU process {pid}" for pid in _lab_qemu_pids()]
    left += [f"pvesim process {pid}" for pid in pvesim.leftover_pids()]
    if os.path.exists(topo.RUN_DIR):
        left.append(f"directory {topo.RUN_DIR}")
    return left


def status() -> dict:
    state = read_state()
    if not state:
        return {"up": False, "leftovers": leftovers()}
    ns = topo.NETNS
    vms = {}
    for vmid in (topo.NAS_VMID, topo.GUEST_VMID):
        vm = Vm(vmid)
        vms[str(vmid)] = {"running": vm.running(), "pid": vm.pid(), "console": vm.console}
    taps = output(["ip", "-n", ns, "-br", "link", "show", "type", "tun"], check=False).split() \
        if netns_exists() else []
    qga = topo.qga_socket(topo.GUEST_VMID)
    return {"up": _lab_running(state), "accel": state["accel"], "nas_server": _server_of(state),
            "netns": ns, "vms": vms,
            "taps": [t for t in taps if t.startswith("tap")], "pvesim": state.get("pvesim"),
            "qga": {"socket": qga, "present": os.path.exists(qga)},
            "ssh_config": state["ssh_config"], "inventory": state["inventory"],
            "images": state["images"], "timings": state.get("timings")}
