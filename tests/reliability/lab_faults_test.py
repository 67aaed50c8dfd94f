#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Guest faults on the real lab (issue 9, item 2): QEMU guest, knfsd NAS VM, pvesim, the real
`pathwarden` over real SSH. The fault lands at an exact point of the run: pathwarden stops itself
after a given journal record (PATHWARDEN_TEST_PAUSE_AFTER_JOURNAL_RECORDS, a test-only hook), the
test breaks something in the lab's switch namespace, and lets it go on (SIGCONT).

usage: lab_faults_test.py PATHWARDEN NAME   (NAME: ssh_lost | nas_gone)

- ssh_lost: the fstab is written and the mounts re-made, then the guest's management link goes
  down: the probe cannot reach the guest, nor can the rollback; the run ends rollback-failed
  (exit 5) with the journal left. With the link back, `pathwarden recover` restores the old
  fstab byte for byte and the old mounts.
- nas_gone: the NAS's links go down as the probe starts (the run paused at its verify step's
  begin record): the O_DIRECT read hangs on the hard mount; once the test sees that read running
  in the guest it kills it (SIGKILL ends a read on a hard NFS mount), so the probe fails, the
  verification is inconclusive, and at the rollback's begin record the NAS comes back: the change
  is rolled back (exit 4), fstab byte-identical, mounts as before.

Every fault is triggered by an event (a journal record, a process seen in the guest), never by a
time window: at each pause the test checks the journal's last record is the one it names, and no
Ansible time limit is shortened, so a slow machine changes how long the test takes, not its
outcome.
The policy is the seed's fix without the queues change (no reboot: the lab runs without KVM).
Records of that run: 1 run-started, 2 step-begin change-fstab, 3 step-done, 4 step-begin verify,
5 step-done (verdict), 6 rollback-begin, ...
"""
import json
import os
import signal
import subprocess
import time

from pwtest.cli_world import results_record
from pwtest.journal_pause import PAUSE, paused, wait_paused
from pwtest.lab import controller as ctl
from pwtest.lab import lab, pvesim
from pwtest.lab import topology as topo
from pwtest.policies import seed_fix, write as write_policy
from pwtest.script import Failure, case_main, check

AREA = "Guest (QEMU lab: real guest, knfsd NAS, pvesim, SSH)"


def settings():
    """The lab's settings as examples/lab/controller-settings writes them (Ansible's own time
    limits untouched), and the policy directory; returns (settings, policies, state_dir)."""
    config = ctl.settings(prefix="pw-rel-lab-")
    policies = os.path.join(os.path.dirname(config), "policies")
    os.makedirs(policies)
    write_policy(policies, "movies.yaml", seed_fix(probe_bytes=topo.TEST_PROBE))
    return config, policies, ctl.state_dir(config)


def last_journal_record(state_dir):
    """The newest journal's last record as JSON (each line: <crc32> <JSON>)."""
    jdir = os.path.join(state_dir, "journal")
    journals = sorted((os.path.join(jdir, n) for n in os.listdir(jdir) if n.endswith(".journal")),
                      key=os.path.getmtime)
    if not journals:
        raise Failure(f"no journal in {jdir}")
    with open(journals[-1]) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    return json.loads(lines[-1].split(" ", 1)[1])


def expect_paused_at(state_dir, want_type, want_kind=None):
    """The run stopped where the test means to inject its fault, or the test says where it is."""
    rec = last_journal_record(state_dir)
    if rec.get("type") != want_type or (want_kind and rec.get("kind") != want_kind):
        raise Failure(
            f"paused at the wrong record: expected {want_type} {want_kind or ''}, got {json.dumps(rec)[:600]}")


def link(name, up):
    subprocess.run(["ip", "-n", topo.NETNS, "link", "set", name, "up" if up else "down"], stdin=subprocess.DEVNULL,
                   check=True)


def guest_state():
    state = ctl.guest_state()
    return {"fstab": state["fstab"], "mounts": ctl.mount_summary(state["mounts"])}


STARTED = []  # every pathwarden this test started, killed at the end if still there


def start(binary, config, policies, pause):
    p = subprocess.Popen([binary, "--config", config, "reconcile", "--output", "json", policies],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **{PAUSE: pause}))
    STARTED.append(p)
    return p


def killing_leftovers(test):
    """The test, then SIGKILL for any pathwarden it started that is still there: a failed check
    can leave one stopped at a pause point (SIGKILL ends a stopped process too)."""
    def run(binary):
        try:
            return test(binary)
        finally:
            for p in STARTED:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    return run


def finish(p):
    out, err = p.communicate(timeout=1800)
    try:
        return p.returncode, json.loads(out), err
    except json.JSONDecodeError:
        raise Failure(f"no JSON report (exit {p.returncode}):\n{out[-2000:]}\n{err[-3000:]}")


def recover(binary, config):
    r = subprocess.run([binary, "--config", config, "recover", "--output", "json"], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True,
                       timeout=1800)
    return r.returncode, json.loads(r.stdout), r.stderr


def test_ssh_lost(binary):
    ctl.reset_to_trap()
    before, conf_before = guest_state(), pvesim.api().config()
    config, policies, state = settings()
    mgmt = f"tap{topo.GUEST_VMID}i2"
    p = start(binary, config, policies, "3")
    try:
        wait_paused(p, "the end of its fstab step")
        expect_paused_at(state, "step-done")
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
    ctl.reset_to_trap()
    before, conf_before = guest_state(), pvesim.api().config()
    config, policies, state = settings()
    nas = [f"tap{topo.NAS_VMID}i0", f"tap{topo.NAS_VMID}i1"]
    p = start(binary, config, policies, "4,6")
    try:
        wait_paused(p, "the start of the verification")
        expect_paused_at(state, "step-begin", "prove-path")
        for t in nas:
            link(t, False)
        os.kill(p.pid, signal.SIGCONT)
        # The probe blocks on the hard mount as long as the NAS is gone: in its check of the probe
        # file (a stat) or in dd's read. The guest's `timeout` would end it at the guest time
        # limit; here each probe seen running is killed first, the whole process group `timeout`
        # leads (SIGKILL ends a wait on a hard NFS mount): the probe fails by an event, not by a
        # time limit; the run then stops itself at its rollback's begin record.
        guest, killed = lab.Guest(), 0
        # Only a group that waits on the mount (a process in D state): a facts run is never touched.
        kill_probe = ('found=1; for g in $(ps -eo stat=,pgid= | awk \'$1 ~ /^D/ {print $2}\' | sort -u); do '
                      '[ "$(ps -o comm= -p "$g")" = timeout ] && kill -KILL -- "-$g" && found=0; done; exit $found')
        while not paused(p):
            if p.poll() is not None:
                raise Failure(f"pathwarden exited ({p.returncode}) before its rollback:\n{p.stdout.read()[-3000:]}")
            killed += guest.run(kill_probe, check=False).returncode == 0
            time.sleep(0.5)
        check(killed > 0, "the probe was never seen running in the guest")
        expect_paused_at(state, "rollback-begin")
    finally:
        for t in nas:
            link(t, True)
    os.kill(p.pid, signal.SIGCONT)
    rc, report, err = finish(p)
    pr = report["policies"][0]
    check(rc == 4 and pr["verdict"] == "rolled-back" and pr["cause"] == "inconclusive",
          f"exit {rc}: {json.dumps(pr, indent=1)}\n{err[-1500:]}")
    after = guest_state()
    check(after["fstab"] == before["fstab"], f"fstab not byte-identical:\n{before['fstab']}\n---\n{after['fstab']}")
    check(after["mounts"] == before["mounts"], f"mounts differ:\n{before['mounts']}\n{after['mounts']}")
    check(pvesim.api().config() == conf_before, "pvesim's config changed")
    results_record("lab_faults", AREA, "the NAS goes away as the probe starts (both NAS links down; the hung "
                   "read is killed)",
                   f"probe failed (\"{(pr['errors'] or ['?'])[0][:160]}\"), inconclusive → rolled-back (exit 4) once "
                   "the NAS was back; fstab byte-identical, mounts as before")


if __name__ == "__main__":
    case_main({"ssh_lost": killing_leftovers(test_ssh_lost), "nas_gone": killing_leftovers(test_nas_gone)}, __doc__)
