#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Two controllers started at the same moment on the same policies (issue 9, item 3), with the real
binary on pvesim and the light guests. They never both change one guest:

- same machine, same state directory: the per-guest lock. The test stops (SIGSTOP) whichever run
  holds the guest's lock, so the other one certainly reaches it while it is held; that one must
  refuse the guest with an error naming the holder's PID and change nothing.
- two machines (two state directories, no shared lock): optimistic concurrency. The test lets
  controller A write the VM's NIC while B has planned from the same digest, then lets B go on: B's
  write carries the old digest, Proxmox refuses it, and B re-observes and re-plans instead of
  overwriting. Then the same for the fstab: A's write lands between B's observation and B's
  compare-and-swap, which refuses; B re-observes. The interleaving is exact: each controller
  stops itself after a given journal record (PATHWARDEN_TEST_PAUSE_AFTER_JOURNAL_RECORDS, a
  test-only hook) and the test lets it go on (SIGCONT).

usage: two_controllers_test.py PVESIM PATHWARDEN
"""
import json
import os
import signal

from pwtest.cli_world import World, enter_controller_namespace, policy_text, report_of, results_record
from pwtest.journal_pause import PAUSE, paused
from pwtest.script import check, test_main, wait_for

AREA = "Two controllers at once (real binary; pvesim + light guests)"


def records(w, name):
    out = []
    for _, line in w.journal_lines(name):
        try:
            out.append(json.loads(line.split(" ", 1)[1]))
        except (IndexError, ValueError):
            pass  # a record being written right now
    return out


def step_done(w, name, kind):
    """Whether a run in state NAME finished its forward step of KIND."""
    recs = records(w, name)
    steps = {r["step"] for r in recs if r.get("type") == "step-begin" and r.get("kind") == kind
             and r.get("phase") == "apply"}
    return any(r.get("type") in ("step-done", "step-failed") and r.get("phase") == "apply" and r.get("step") in steps
               for r in recs)


def started(w, name):
    return any(r.get("type") == "run-started" for r in records(w, name))


def finish(p):
    out, err = p.communicate(timeout=600)
    p.stdout_text, p.stderr_text = out, err
    return p


def policy_report(proc, policy):
    rep = report_of(type("P", (), {"stdout": proc.stdout_text, "returncode": proc.returncode,
                                   "stderr": proc.stderr_text})())
    return next(p for p in rep["policies"] if p["policy"] == policy), rep


def same_machine(w, policies):
    before = w.snapshot()
    settings = w.settings("shared")
    a = w.start(settings, "reconcile", policies, "--output", "json")
    b = w.start(settings, "reconcile", policies, "--output", "json")
    lock = os.path.join(w.state_dir("shared"), "locks", "guest2.lock")

    def holder():
        try:
            with open(lock) as f:
                pid = json.load(f).get("pid")
        except (OSError, ValueError):
            return None
        return pid if pid in (a.pid, b.pid) else None

    pid = wait_for("one controller to hold guest2's lock", holder, [a, b])
    os.kill(pid, signal.SIGSTOP)
    holding, other = (a, b) if pid == a.pid else (b, a)
    try:
        finish(other)
    finally:
        os.kill(pid, signal.SIGCONT)
    finish(holding)
    refused, _ = policy_report(other, "rel-guest2")
    done, _ = policy_report(holding, "rel-guest2")
    check(refused["verdict"] == "precondition-failed" and not refused["changes"],
          f"the second controller did not refuse the guest: {refused}")
    check(any(str(pid) in e for e in refused["errors"]), f"the refusal does not name the holder {pid}: {refused}")
    check(done["verdict"] == "rolled-back", f"the lock holder: {done}")
    journals = [p for p, _ in w.journal_lines("shared") if ".rel-guest2." in p]
    check(len(set(journals)) == 1, f"both controllers journaled steps on guest2: {sorted(set(journals))}")
    check(w.snapshot() == before, "not as before after both controllers")
    results_record("two_controllers", AREA, "same machine, same state directory, started together",
                   f"one holds guest2's lock, the other refuses it: \"{refused['errors'][0]}\"; only one journal "
                   "touches the guest; everything as before")


def race(w, name, policies, policy):
    """Controllers A and B (own state directories) observe the same state; B stops right after
    its plan (its first journal record), A right after its first step (records: run-started,
    step-begin, step-done/failed); then B goes on against what A changed, then A finishes."""
    a = w.start(w.settings(f"{name}-a"), "reconcile", policies, "--output", "json", env={PAUSE: "3"})
    b = w.start(w.settings(f"{name}-b"), "reconcile", policies, "--output", "json", env={PAUSE: "1"})
    wait_for("B to stop after its plan", lambda: paused(b), [a, b])
    wait_for("A to stop after its first step", lambda: paused(a), [a])
    changed = w.snapshot()
    os.kill(b.pid, signal.SIGCONT)
    try:
        finish(b)
    finally:
        os.kill(a.pid, signal.SIGCONT)
    finish(a)
    return policy_report(a, policy)[0], policy_report(b, policy)[0], changed


def two_machines_proxmox(w, policies):
    """B writes the NIC with the digest A's write replaced: refused, B re-observes and re-plans."""
    before = w.snapshot()
    pa, pb, during = race(w, "nic", policies, "rel-guest1")
    check(during[1]["net0"] != before[1]["net0"], "A had not changed the NIC when B went on")
    stats = w.sim.admin("GET", "/pvesim/stats")
    check(stats["digest_mismatches"] >= 1, f"no write was refused for its digest: {stats}")
    check(stats["config_writes_without_digest"] == 0, f"a write without digest: {stats}")
    check(any("digest mismatch" in n for n in pb["notes"]) and any("re-planned" in n for n in pb["notes"]),
          f"B did not re-observe after the digest conflict: {pb}")
    check(w.snapshot() == before, f"not as before: A {pa['verdict']}, B {pb['verdict']}")
    results_record("two_controllers", AREA,
                   "two machines (own state directories): B writes the NIC with the digest A's write replaced",
                   f"Proxmox refused B's write (stale digest), B re-observed and re-planned (B {pb['verdict']}, "
                   f"A {pa['verdict']}); no write without a digest; everything as before")


def two_machines_fstab(w, policies):
    """A's fstab write lands between B's observation and B's compare-and-swap: B refuses, re-plans."""
    before = w.snapshot()
    pa, pb, during = race(w, "fstab", policies, "rel-guest2")
    # A wrote the fstab and failed to mount it (light guests have no NFS client), not yet restored.
    check(during[2]["fstab_sha256"] != before[2]["fstab_sha256"], "A had not written the fstab when B went on")
    check(any("changed since it was observed" in n for n in pb["notes"]) and
          any("re-planned" in n for n in pb["notes"]), f"B's compare-and-swap did not refuse and re-plan: {pb}")
    check(pb["verdict"] != "rollback-failed" and pa["verdict"] != "rollback-failed", f"A {pa}\nB {pb}")
    check(w.snapshot() == before, f"not as before: A {pa['verdict']}, B {pb['verdict']}")
    results_record("two_controllers", AREA,
                   "two machines: A's fstab write lands between B's observation and B's write",
                   f"B's compare-and-swap refused, B re-observed and re-planned (B {pb['verdict']}, "
                   f"A {pa['verdict']}); the fstab byte-identical to before at the end")


def main(pvesim, pathwarden):
    enter_controller_namespace()
    with World(pvesim, pathwarden, hotplug_off=(3,)) as w:
        same_machine(w, w.policies("fstab", [policy_text(2)]))
        two_machines_proxmox(w, w.policies("nic", [policy_text(1, queues=2)]))
        two_machines_fstab(w, w.policies("fstab", [policy_text(2)]))


if __name__ == "__main__":
    test_main(main, __doc__, 2)
    print("ok")
