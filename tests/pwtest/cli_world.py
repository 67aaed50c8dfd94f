# SPDX-License-Identifier: GPL-3.0-or-later
"""The real `pathwarden` binary against pvesim and the light guests (tests/lab/light/guests, CTest
fixture light_guests), for the reliability tests that need the whole CLI (crashes, two
controllers, secure defaults). Run with Debian's /usr/bin/python3.

Everything runs inside the light lab's controller network namespace, where the guests are
reachable: a test calls enter_controller_namespace() first, which re-executes it there. pvesim
then listens on that namespace's loopback; nothing leaves the lab's namespaces.
"""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

from . import policies
from .paths import TESTS
from .pvesim_process import Pvesim, local_env
from .script import Failure, check

GUESTS = os.path.join(TESTS, "lab", "light", "guests")
TOKEN_ID = "root@pam!rel"
TOKEN_SECRET = "rel-token-5e3c8f0a-secret"
USER = "pathwarden@pve"
PASSWORD = "rel-password-9d1b7c42"


def lab_name():
    return os.environ.get("PW_LIGHT_LAB") or "light"


def lab_env():
    out = subprocess.run([GUESTS, "--lab", lab_name(), "env"], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if out.returncode != 0:
        raise Failure("light guests are not up (the CTest fixture light_guests brings them up): " + out.stderr)
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)


def enter_controller_namespace():
    """Re-executes this script in the lab's controller namespace unless it already runs there."""
    if os.environ.get("PW_REL_NAMESPACE") == lab_name():
        return
    ns = lab_env()["LAB_NAMESPACE"]
    os.execvp("ip", ["ip", "netns", "exec", ns, "env", f"PW_REL_NAMESPACE={lab_name()}",
                     "/usr/bin/python3", *sys.argv])


def results_record(file, area, case, outcome):
    """One line for tests/reliability/README.md's table (see run-report)."""
    d = os.environ.get("PW_RELIABILITY_RESULTS")
    if not d:
        return
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, file + ".jsonl"), "a") as f:
        f.write(json.dumps({"area": area, "case": case, "outcome": outcome}) + "\n")


class Guests:
    def __init__(self):
        self.env = lab_env()
        self.count = int(self.env["LAB_GUESTS"])

    @staticmethod
    def host(i):
        return f"guest{i}"

    def run(self, i, *argv):
        return subprocess.run([GUESTS, "--lab", lab_name(), "exec", str(i), *argv], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)

    def must(self, i, *argv):
        r = self.run(i, *argv)
        check(r.returncode == 0, f"in guest {i}: {' '.join(argv)}: {r.stderr}")
        return r.stdout

    def fstab(self, i):
        return self.must(i, "cat", "/etc/fstab")

    def mac(self, i):
        return self.must(i, "cat", "/sys/class/net/eth0/address").strip()

    def mount_points(self, i):
        """The guest's mounts under /mnt (the rest of its namespace mirrors the host's, which changes)."""
        return sorted(line.split()[1] for line in self.must(i, "cat", "/proc/mounts").splitlines()
                      if line.split()[1].startswith("/mnt"))


def policy_text(i, queues=None):
    """Guest i's policy: an NFS mount on /mnt/reliability over net0, with a queues change if asked."""
    return policies.storage_path(f"rel-guest{i}", 200 + i, f"guest{i}", device="net0", queues=queues,
                                 export="/volume1/reliability", path="/mnt/reliability",
                                 options=["vers=3", "_netdev"], reason="reliability test",
                                 probe_file="probe.bin", probe_bytes="1MiB", restart=True)


def canonical_net(value):
    """netN with its keys sorted (model=MAC first), as Proxmox prints it."""
    parts = value.split(",")
    return ",".join([parts[0]] + sorted(parts[1:]))


class World:
    """pvesim with one VM per light guest (net0 = the guest's eth0 MAC; the VMs in hotplug_off
    without network hot-plug, so a queues change needs a restart) and controller settings."""

    def __init__(self, pvesim, pathwarden, hotplug_off=(3,), pvesim_args=None):
        self.pathwarden = pathwarden
        self.guests = Guests()
        check(self.guests.count >= 3, "the light lab needs 3 guests")
        self.work = tempfile.mkdtemp(prefix="pw-rel-cli-")
        os.chmod(self.work, 0o700)
        self.nets = {}
        vms = []
        for i in (1, 2, 3):
            self.nets[i] = f"virtio={self.guests.mac(i).upper()},bridge=vmbr0"
            config = {"name": f"guest{i}", "cores": 2, "net0": self.nets[i]}
            if i in hotplug_off:
                config["hotplug"] = "disk,usb"
            vms.append({"vmid": 200 + i, "node": "pve1", "running": True, "config": config})
        args = pvesim_args if pvesim_args is not None else ["--token", f"{TOKEN_ID}={TOKEN_SECRET}"]
        self.sim = Pvesim(pvesim, {"nodes": ["pve1"], "guests": vms}, args)
        self.env = dict(local_env(), GIT_CEILING_DIRECTORIES=self.work,
                        ANSIBLE_CONFIG=self.guests.env["LAB_CONFIG"])

    def close(self):
        self.sim.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def secret_file(self, name, value):
        path = os.path.join(self.work, name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(value + "\n")
        return path

    def settings(self, name, auth="token", fingerprint=None, extra_proxmox="", known_hosts=None):
        """Writes WORK/NAME.yaml (state directory WORK/NAME-state) and returns its path."""
        if auth == "token":
            creds = f'    token_id: "{TOKEN_ID}"\n    token_secret_file: {self.secret_file("token", TOKEN_SECRET)}\n'
        else:
            creds = f'    user: "{USER}"\n    password_file: {self.secret_file("password", PASSWORD)}\n'
        path = os.path.join(self.work, f"{name}.yaml")
        with open(path, "w") as f:
            f.write(f"""apiVersion: pathwarden/v1
kind: Controller
spec:
  proxmox:
    url: {self.sim.url}
{creds}    fingerprint: "{fingerprint or self.sim.fingerprint}"
{extra_proxmox}  ansible:
    inventory: {self.guests.env["LAB_INVENTORY"]}
    known_hosts_file: {known_hosts or os.path.join(self.guests.env["LAB_STATE"], "known_hosts")}
    timeout: 3m
  state_dir: {self.state_dir(name)}
""")
        return path

    def state_dir(self, name):
        return os.path.join(self.work, f"{name}-state")

    def policies(self, name, texts):
        d = os.path.join(self.work, f"policies-{name}")
        os.makedirs(d, exist_ok=True)
        for i, text in enumerate(texts):
            with open(os.path.join(d, f"p{i}.yaml"), "w") as f:
                f.write(text)
        return d

    def start(self, settings, *args, env=None):
        return subprocess.Popen([self.pathwarden, "--config", settings, *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(self.env, **(env or {})))

    def run(self, settings, *args, env=None, timeout=900):
        p = self.start(settings, *args, env=env)
        out, err = p.communicate(timeout=timeout)
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)

    def snapshot(self):
        """What must be as before after any failed or recovered run: each guest's fstab bytes and
        mount points, each VM's net0 (canonical) and pending changes."""
        snap = {}
        for i in (1, 2, 3):
            g = self.sim.guest(200 + i)
            snap[i] = {"fstab_sha256": hashlib.sha256(self.guests.fstab(i).encode()).hexdigest(),
                       "mounts": self.guests.mount_points(i),
                       "net0": canonical_net(g["config"]["net0"]),
                       "pending": sorted(g.get("pending", {}).keys()) + sorted(g.get("pending_delete", []))}
        return snap

    def journal_lines(self, name):
        """Every journal record of a state directory, as (file, line) in file order."""
        out = []
        for path in sorted(glob.glob(os.path.join(self.state_dir(name), "journal", "*.journal"))):
            with open(path) as f:
                out.extend((path, line) for line in f.read().splitlines())
        return out


def report_of(proc):
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise Failure(f"no JSON report (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")


def describe_record(rec):
    if rec is None:
        return "no record"
    what = rec.get("type", "?")
    if rec.get("kind"):
        what += f" {rec['kind']}"
    if rec.get("phase") == "rollback":
        what += " (rollback)"
    return what
