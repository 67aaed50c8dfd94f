#!/usr/bin/python3
"""Guest faults on the real lab (issue 9, item 2): QEMU guest, knfsd NAS VM, pvesim, the real
`pathwarden` over real SSH. The fault lands at an exact point of the run: pathwarden stops itself
after a given journal record (PATHWARDEN_TEST_PAUSE_AFTER_JOURNAL_RECORDS, a test-only hook), the
test breaks something in the lab's switch namespace, and lets it go on (SIGCONT).

usage: lab_faults_test.py PATHWARDEN NAME   (NAME: ssh_lost | nas_gone)

- ssh_lost: the fstab is written and the mounts re-made, then the guest's management link goes
  down: the probe cannot reach the guest, nor can the rollback; the run ends rollback-failed
  (exit 5) with the journal left. With the link back, `pathwarden recover` restores the old
  fstab byte for byte and the old mounts.
- nas_gone: the NAS's links go down as the probe starts: the O_DIRECT read hangs on the hard
  mount until the Ansible run's time limit, the verification is inconclusive, and once the NAS
  is back the change is rolled back (exit 4), fstab byte-identical, mounts as before.

The policy is the seed's fix without the queues change (no reboot: the lab runs without KVM).
Records of that run: 1 run-started, 2 step-begin change-fstab, 3 step-done, 4 step-begin verify,
5 step-done (verdict), 6 rollback-begin, ...
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lab"))
sys.path.insert(0, HERE)
from pwlab import topology as topo  # noqa: E402
from pwlab import lab, pvesim, scenarios  # noqa: E402
from cli_world import Failure, check, results_record  # noqa: E402

PAUSE = "PATHWARDEN_TEST_PAUSE_AFTER_JOURNAL_RECORDS"
AREA = "Guest (QEMU lab: real guest, knfsd NAS, pvesim, SSH)"
POLICY = """apiVersion: pathwarden/v1
kind: StoragePath
metadata: {name: movies-10g}
spec:
  guest: {node: pve1, vmid: 101, host: media-vm}
  nic: {device: net1}
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


def settings(run_timeout):
    d = tempfile.mkdtemp(prefix="pw-rel-lab-")
    out = subprocess.run([os.path.join(ROOT, "examples", "lab", "controller-settings"), d],
                         capture_output=True, text=True, check=True).stdout.strip()
    with open(out) as f:
        text = f.read()
    with open(out, "w") as f:
        f.write(text.replace("    remote_user: root\n", f"    remote_user: root\n    timeout: {run_timeout}\n"))
    policies = os.path.join(d, "policies")
    os.makedirs(policies)
    with open(os.path.join(policies, "movies.yaml"), "w") as f:
        f.write(POLICY)
    return out, policies


def link(name, up):
    subprocess.run(["ip", "-n", topo.NETNS, "link", "set", name, "up" if up else "down"], check=True)


def guest_state():
    g = lab.Guest()
    fstab = g.run("cat /etc/fstab").stdout
    mounts = sorted(line for line in g.run("grep ' nfs' /proc/mounts || true").stdout.splitlines())
    keep = []
    for line in mounts:
        dev, mp, fstype, opts = line.split()[:4]
        keep.append((dev, mp, fstype, tuple(o for o in opts.split(",") if o.split("=")[0] in ("vers", "addr", "nconnect"))))
    return {"fstab": fstab, "mounts": keep}


def reset():
    a = pvesim.api()
    want = topo.guest_vm_config()["net1"]
    if a.config()["net1"] != want:
        a.set_config({"net1": want})
    lab.Guest().helper("apply", json.dumps(scenarios.scenario("trunk-trap")))


def start(binary, config, policies, pause):
    return subprocess.Popen([binary, "--config", config, "reconcile", "--output", "json", policies],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, **{PAUSE: pause}))


def paused(p):
    try:
        with open(f"/proc/{p.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def wait_paused(p, what, timeout=900):
    """Bounded only so a broken run fails instead of hanging; no time is asserted."""
    deadline = time.monotonic() + timeout
    while not paused(p):
        if p.poll() is not None:
            raise Failure(f"pathwarden exited ({p.returncode}) before {what}:\n{p.stdout.read()[-3000:]}\n"
                          f"{p.stderr.read()[-3000:]}")
        if time.monotonic() > deadline:
            raise Failure(f"pathwarden never reached {what}")
        time.sleep(0.1)


def finish(p):
    out, err = p.communicate(timeout=1800)
    try:
        return p.returncode, json.loads(out), err
    except json.JSONDecodeError:
        raise Failure(f"no JSON report (exit {p.returncode}):\n{out[-2000:]}\n{err[-3000:]}")


def recover(binary, config):
    r = subprocess.run([binary, "--config", config, "recover", "--output", "json"], capture_output=True, text=True,
                       timeout=1800)
    return r.returncode, json.loads(r.stdout), r.stderr


def test_ssh_lost(binary):
    reset()
    before, conf_before = guest_state(), pvesim.api().config()
    config, policies = settings("3m")
    mgmt = f"tap{topo.GUEST_VMID}i2"
    p = start(binary, config, policies, "3")
    try:
        wait_paused(p, "the end of its fstab step")
        written = guest_state()
        check(written["fstab"] != before["fstab"], "the fstab was not written before the link went down")
        link(mgmt, False)
        os.kill(p.pid, signal.SIGCONT)
        rc, report, err = finish(p)
    finally:
        link(mgmt, True)
    pr = report["policies"][0]
    check(rc == 5 and pr["verdict"] == "rollback-failed", f"exit {rc}: {json.dumps(pr, indent=1)}\n{err[-1500:]}")
    check(any("pathwarden recover" in e for e in pr["errors"]), f"no hint to recover: {pr['errors']}")
    check(lab.Guest().reachable(), "the guest does not answer again")
    now = guest_state()
    check(now["fstab"] in (before["fstab"], written["fstab"]), "the fstab is neither the old nor the new file")
    rc2, rec, err2 = recover(binary, config)
    check(rc2 != 5 and rec["policies"] and rec["policies"][0]["verdict"] == "rolled-back",
          f"recover: exit {rc2}: {json.dumps(rec, indent=1)}\n{err2[-1500:]}")
    after = guest_state()
    check(after["fstab"] == before["fstab"], f"fstab not byte-identical:\n{before['fstab']}\n---\n{after['fstab']}")
    check(after["mounts"] == before["mounts"], f"mounts differ:\n{before['mounts']}\n{after['mounts']}")
    check(pvesim.api().config() == conf_before, "pvesim's config changed")
    results_record("lab_faults", AREA, "SSH lost after the fstab was written (guest management link down)",
                   f"{pr['verdict']} (exit 5, journal left; e.g. \"{pr['errors'][0][:200]}\"); link back, recover: "
                   "rolled-back, fstab byte-identical, mounts as before")


def test_nas_gone(binary):
    reset()
    before, conf_before = guest_state(), pvesim.api().config()
    config, policies = settings("90s")
    nas = [f"tap{topo.NAS_VMID}i0", f"tap{topo.NAS_VMID}i1"]
    p = start(binary, config, policies, "4,6")
    try:
        wait_paused(p, "the start of the verification")
        for t in nas:
            link(t, False)
        os.kill(p.pid, signal.SIGCONT)
        wait_paused(p, "the start of the rollback")
    finally:
        for t in nas:
            link(t, True)
    # The probe's read is blocked on the hard mount until the NAS answers again; the rollback
    # unmounts, so it waits for that read to end (bounded, not asserted).
    deadline = time.monotonic() + 600
    while lab.Guest().run("pgrep -x dd", check=False).returncode == 0 and time.monotonic() < deadline:
        time.sleep(2)
    os.kill(p.pid, signal.SIGCONT)
    rc, report, err = finish(p)
    pr = report["policies"][0]
    check(rc == 4 and pr["verdict"] == "rolled-back" and pr["cause"] == "inconclusive",
          f"exit {rc}: {json.dumps(pr, indent=1)}\n{err[-1500:]}")
    after = guest_state()
    check(after["fstab"] == before["fstab"], f"fstab not byte-identical:\n{before['fstab']}\n---\n{after['fstab']}")
    check(after["mounts"] == before["mounts"], f"mounts differ:\n{before['mounts']}\n{after['mounts']}")
    check(pvesim.api().config() == conf_before, "pvesim's config changed")
    results_record("lab_faults", AREA, "the NAS goes away as the probe starts (both NAS links down)",
                   f"probe failed (\"{(pr['errors'] or ['?'])[0][:160]}\"), inconclusive → rolled-back (exit 4) once "
                   "the NAS was back; fstab byte-identical, mounts as before")


if __name__ == "__main__":
    tests = {"ssh_lost": test_ssh_lost, "nas_gone": test_nas_gone}
    if len(sys.argv) != 3 or sys.argv[2] not in tests:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        tests[sys.argv[2]](sys.argv[1])
    except Failure as e:
        print(f"FAIL {sys.argv[2]}: {e}")
        sys.exit(1)
    print(f"ok {sys.argv[2]}")
