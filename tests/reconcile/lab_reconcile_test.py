#!/usr/bin/python3
"""The reconcile engine on the real lab (QEMU guest, knfsd NAS, pvesim): issue "done when" cases.

usage: lab_reconcile_test.py PATHWARDEN NAME   (NAME: trunking_trap | seed_fix | misrouted)
Runs the real `pathwarden` binary against pvesim and the lab guest over SSH, and checks the
outcome in the guest (fstab bytes, /proc/mounts, ethtool) and in pvesim (config, digest).
"""
import hashlib
import json
import os
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lab"))
from pwlab import topology as topo  # noqa: E402
from pwlab import lab, pvesim, scenarios  # noqa: E402

PROBE = topo.PROBE_BYTES
NOISE = PROBE // 50
LINK1_MAC = topo.GUEST_MACS["link1"].lower()
LINK2_MAC = topo.GUEST_MACS["link2"].lower()


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def settings() -> str:
    out = subprocess.run([os.path.join(ROOT, "examples", "lab", "controller-settings"),
                          tempfile.mkdtemp(prefix="pw-lab-ctl-")], stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def pathwarden(binary, config, *args):
    proc = subprocess.run([binary, "--config", config, "--log-level", "trace", *args, "--output", "json"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=1800)
    secret_never_leaks(config, proc.stdout + proc.stderr)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise Failure(f"pathwarden {' '.join(args)} printed no JSON (exit {proc.returncode}):\n"
                      f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc.returncode, report, proc.stderr


def secret_never_leaks(config, output):
    """The API token's secret appears in no output, log, report, journal or generated playbook."""
    conf_dir = os.path.dirname(config)
    with open(os.path.join(conf_dir, "token")) as f:
        secret = f.read().strip()
    check(secret and secret not in output, "the token secret appeared in pathwarden's output")
    for dirpath, _, files in os.walk(conf_dir):
        for name in files:
            path = os.path.join(dirpath, name)
            if path == os.path.join(conf_dir, "token") or not stat.S_ISREG(os.lstat(path).st_mode):
                continue  # the secret itself; SSH control sockets
            with open(path, "rb") as f:
                check(secret.encode() not in f.read(), f"the token secret appeared in {path}")


def guest_state():
    g = lab.Guest()
    fstab = g.run("cat /etc/fstab").stdout
    mounts = sorted(line for line in g.run("grep ' nfs' /proc/mounts || true").stdout.splitlines())
    return {"fstab_sha256": hashlib.sha256(fstab.encode()).hexdigest(), "fstab": fstab, "mounts": mounts}


def nfs_mount_summary(lines):
    # device, mount point and the options that decide the path (vers, addr, nconnect)
    out = []
    for line in lines:
        dev, mp, fstype, opts = line.split()[:4]
        keep = [o for o in opts.split(",") if o.split("=")[0] in ("vers", "addr", "nconnect")]
        out.append((dev, mp, fstype, tuple(keep)))
    return out


def iface(report, mac):
    v = report["policies"][0]["verification"]
    return next((i for i in v["interfaces"] if i["mac"] == mac), None)


def reset_nic():
    """net1 back to the lab's config (no queues=), so every case starts from the same VM."""
    a = pvesim.api()
    want = topo.guest_vm_config()["net1"]
    if a.config()["net1"] != want:
        a.set_config({"net1": want})


def policy_dir(name, text):
    d = tempfile.mkdtemp(prefix=f"pw-{name}-")
    with open(os.path.join(d, f"{name}.yaml"), "w") as f:
        f.write(text)
    return d


def test_trunking_trap(binary):
    reset_nic()
    lab.Guest().helper("apply", json.dumps(scenarios.scenario("trunk-trap")))
    before = guest_state()
    conf_before = pvesim.api().config()
    rc, report, err = pathwarden(binary, settings(), "reconcile", os.path.join(ROOT, "examples", "lab", "trap"))
    p = report["policies"][0]
    check(rc == 4, f"exit {rc}, want 4:\n{json.dumps(report, indent=1)}\n{err[-1500:]}")
    check(p["verdict"] == "rolled-back" and p["cause"] == "wrong-path", json.dumps(p, indent=1))
    l1, l2 = iface(report, LINK1_MAC), iface(report, LINK2_MAC)
    check(l1 and l1["rx_bytes"] >= PROBE, f"link1 carried {l1}: expected ≈ the probe")
    check(l2 and l2["rx_bytes"] < NOISE, f"link2 carried {l2}: expected ≈ 0")
    check("trunk" in (p["verification"]["diagnosis"] or ""), f"diagnosis: {p['verification']['diagnosis']}")
    after = guest_state()
    check(after["fstab_sha256"] == before["fstab_sha256"],
          f"fstab not byte-identical:\n--- before\n{before['fstab']}\n--- after\n{after['fstab']}")
    check(nfs_mount_summary(after["mounts"]) == nfs_mount_summary(before["mounts"]),
          f"mounts differ:\n{before['mounts']}\n{after['mounts']}")
    conf_after = pvesim.api().config()
    check(conf_after == conf_before, f"pvesim config changed:\n{conf_before}\n{conf_after}")


SEED_FIX = """apiVersion: pathwarden/v1
kind: StoragePath
metadata: {name: movies-10g}
spec:
  guest: {node: pve1, vmid: 101, host: media-vm}
  nic: {device: net1, queues: 8}
  mount:
    server: 198.51.100.2
    nas_addresses: [192.0.2.2]
    export: /volume1/movies
    path: /mnt/movies
    options: [vers=3, nconnect=8, _netdev]
    reason: "vers=3 on purpose: NFSv4.1 trunking reuses the 1 GbE transport"
  verify: {probe_file: probe-64m, probe_bytes: 64MiB}
  restart: {allowed: true}
"""


def test_seed_fix(binary):
    reset_nic()
    lab.Guest().helper("apply", json.dumps(scenarios.scenario("trunk-trap")))
    config = settings()
    policies = policy_dir("movies", SEED_FIX)
    rc, report, err = pathwarden(binary, config, "reconcile", policies)
    p = report["policies"][0]
    check(rc == 2, f"exit {rc}, want 2:\n{json.dumps(report, indent=1)}\n{err[-1500:]}")
    check(p["verdict"] == "verified", json.dumps(p, indent=1))
    l1, l2 = iface(report, LINK1_MAC), iface(report, LINK2_MAC)
    check(l2 and l2["rx_bytes"] >= PROBE, f"link2 carried {l2}: expected ≈ the probe")
    check(l1 and l1["rx_bytes"] < NOISE, f"link1 carried {l1}: expected ≈ 0")
    state = guest_state()
    check("vers=3 on purpose" in state["fstab"], f"no reason comment in fstab:\n{state['fstab']}")
    check(any("/mnt/movies" in m and "vers=3" in m and "nconnect=8" in m for m in state["mounts"]),
          f"mount: {state['mounts']}")
    g = lab.Guest()
    name = g.run(f"ip -o link | awk -F': ' '/{LINK2_MAC}/ {{print $2}}'").stdout.strip()
    channels = g.run(f"ethtool -l {name}").stdout
    current = channels.split("Current hardware settings:")[1]
    check("Combined:\t8" in current or "Combined: 8" in current.replace("\t", " ").replace("  ", " "),
          f"ethtool -l {name}:\n{channels}")
    check("queues=8" in pvesim.api().config()["net1"], "pvesim net1 has no queues=8")
    # A second run plans nothing, writes nothing, exits 0.
    digest = pvesim.api().config()["digest"]
    rc2, report2, err2 = pathwarden(binary, config, "reconcile", policies)
    check(rc2 == 0 and report2["policies"][0]["verdict"] == "converged",
          f"second run: exit {rc2}\n{json.dumps(report2, indent=1)}\n{err2[-1000:]}")
    check(pvesim.api().config()["digest"] == digest, "the second run wrote to Proxmox")
    check(guest_state()["fstab_sha256"] == state["fstab_sha256"], "the second run changed the fstab")
    reset_nic()


MISROUTED = SEED_FIX.replace("  nic: {device: net1, queues: 8}", "  nic: {device: net1}")


def test_misrouted(binary):
    reset_nic()
    lab.Guest().helper("apply", json.dumps(scenarios.scenario("misrouted-link2")))
    before = guest_state()
    rc, report, err = pathwarden(binary, settings(), "reconcile", policy_dir("movies", MISROUTED))
    p = report["policies"][0]
    check(rc == 4 and p["verdict"] == "rolled-back" and p["cause"] == "wrong-path",
          f"exit {rc}:\n{json.dumps(report, indent=1)}\n{err[-1500:]}")
    check("misrouted" in (p["verification"]["diagnosis"] or ""), f"diagnosis: {p['verification']['diagnosis']}")
    check(guest_state()["fstab_sha256"] == before["fstab_sha256"], "fstab not restored")


if __name__ == "__main__":
    tests = {"trunking_trap": test_trunking_trap, "seed_fix": test_seed_fix, "misrouted": test_misrouted}
    if len(sys.argv) != 3 or sys.argv[2] not in tests:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        tests[sys.argv[2]](sys.argv[1])
    except Failure as e:
        print(f"FAIL {sys.argv[2]}: {e}")
        sys.exit(1)
    print(f"ok {sys.argv[2]}")
