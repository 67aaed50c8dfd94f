# SPDX-License-Identifier: GPL-3.0-or-later
"""pathwarden against the running lab, as the lab's CLI tests drive it (tests/reconcile,
tests/ops, tests/reliability): settings written by examples/lab/controller-settings, the guest's
fstab and NFS mounts as the kernel shows them, net1 reset, and the scan that the API token's
secret never appears in an output or a file of the run."""
import hashlib
import json
import os
import stat
import subprocess
import tempfile

from ..paths import ROOT
from . import lab, pvesim, scenarios
from . import topology as topo
LINK1_MAC = topo.GUEST_MACS["link1"].lower()
LINK2_MAC = topo.GUEST_MACS["link2"].lower()


def settings(prefix: str = "pw-lab-ctl-") -> str:
    """A fresh directory with the lab's controller settings and token; returns the settings file."""
    out = subprocess.run([os.path.join(ROOT, "examples", "lab", "controller-settings"),
                          tempfile.mkdtemp(prefix=prefix)],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def operator_settings(prefix: str = "pw-lab-op-") -> str:
    """The lab's settings as an operator writes them for a guest reached as an unprivileged user:
    a copy of the lab inventory beside the settings file with ansible_user=pwadmin, named by a
    relative path, and `become: true` (pwadmin's sudoers entry is the one policies/README.md
    documents). Returns the settings file."""
    config = settings(prefix)
    with open(topo.run_path("inventory.ini")) as f:
        inventory = f.read()
    if "ansible_user=root " not in inventory:
        raise AssertionError("the lab inventory no longer names ansible_user=root:\n" + inventory)
    with open(os.path.join(os.path.dirname(config), "inventory.ini"), "w") as f:
        f.write(inventory.replace("ansible_user=root ", f"ansible_user={topo.GUEST_OPERATOR} "))
    with open(config) as f:
        text = f.read()
    lines = []
    for line in text.splitlines():
        if line.startswith("    inventory: "):
            line = "    inventory: inventory.ini"
        elif line.startswith("    remote_user: "):
            line = f"    remote_user: {topo.GUEST_OPERATOR}\n    become: true"
        lines.append(line)
    with open(config, "w") as f:
        f.write("\n".join(lines) + "\n")
    return config


def pathwarden(binary: str, config: str, *args: str, timeout=1800):
    """Runs `pathwarden --config CONFIG ARGS --output json` (trace logs); returns (exit, report,
    stderr). Fails the test when it prints no JSON or the token's secret leaks into any output."""
    from ..script import Failure
    proc = subprocess.run([binary, "--config", config, "--log-level", "trace", *args, "--output", "json"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    try:
        secret_never_leaks(config, proc.stdout + proc.stderr)
    except AssertionError as e:
        raise Failure(str(e))
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise Failure(f"pathwarden {' '.join(args)} printed no JSON (exit {proc.returncode}):\n"
                      f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.returncode, report, proc.stderr


def policy_dir(name: str, text: str) -> str:
    """A fresh directory holding one policy file NAME.yaml."""
    from ..policies import write as write_policy
    d = tempfile.mkdtemp(prefix=f"pw-{name}-")
    write_policy(d, f"{name}.yaml", text)
    return d


def state_dir(config: str) -> str:
    return os.path.join(os.path.dirname(config), "state")


def guest_state() -> dict:
    """fstab text and its SHA-256, and the guest's NFS lines of /proc/mounts (sorted)."""
    g = lab.Guest()
    fstab = g.run("cat /etc/fstab").stdout
    mounts = sorted(line for line in g.run("grep ' nfs' /proc/mounts || true").stdout.splitlines())
    return {"fstab_sha256": hashlib.sha256(fstab.encode()).hexdigest(), "fstab": fstab, "mounts": mounts}


def mount_summary(lines) -> list:
    """Device, mount point, type and the options that decide the path (vers, addr, nconnect)."""
    out = []
    for line in lines:
        dev, mp, fstype, opts = line.split()[:4]
        keep = [o for o in opts.split(",") if o.split("=")[0] in ("vers", "addr", "nconnect")]
        out.append((dev, mp, fstype, tuple(keep)))
    return out


def reset_nic() -> None:
    """net1 back to the lab's config (no queues=), so every case starts from the same VM."""
    a = pvesim.api()
    want = topo.guest_vm_config()["net1"]
    if a.config()["net1"] != want:
        a.set_config({"net1": want})


def reset_to_trap() -> None:
    """net1 as the lab made it and the guest in the seed's trap (NFSv4.2 through link1's address)."""
    reset_nic()
    lab.Guest().helper("apply", json.dumps(scenarios.scenario("trunk-trap")))


def interface(report: dict, mac: str):
    """The verification's entry for the guest interface with this MAC, or None."""
    v = report["policies"][0]["verification"]
    return next((i for i in v["interfaces"] if i["mac"] == mac), None)


def secret_never_leaks(config: str, output: str) -> None:
    """The API token's secret appears in no output, log, report, journal or generated playbook."""
    conf_dir = os.path.dirname(config)
    with open(os.path.join(conf_dir, "token")) as f:
        secret = f.read().strip()
    assert secret and secret not in output, "the token secret appeared in pathwarden's output"
    for dirpath, _, files in os.walk(conf_dir):
        for name in files:
            path = os.path.join(dirpath, name)
            if path == os.path.join(conf_dir, "token") or not stat.S_ISREG(os.lstat(path).st_mode):
                continue  # the secret itself; SSH control sockets
            with open(path, "rb") as f:
                assert secret.encode() not in f.read(), f"the token secret appeared in {path}"
