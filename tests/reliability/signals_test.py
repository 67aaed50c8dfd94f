#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stop signals (issue 14, item 6): the real `pathwarden reconcile` sent SIGTERM (systemd's stop)
or SIGINT (Ctrl-C) at exact points of a run, on pvesim and the light guests. The run stops itself
right after a given journal record (PATHWARDEN_TEST_PAUSE_AFTER_JOURNAL_RECORDS, the dev/asan
test hook), the test sends the signal and lets it go on: events, never time windows.

usage: signals_test.py PVESIM PATHWARDEN

One policy, guest3's queues change on a VM without network hot-plug (set-nic pending, then
restart-vm, set-channels, change-fstab, verify): the first safe point after a signal is the phase
boundary after the step under way.
- before the first change (after run-started): exit 143, nothing changed, nothing to recover;
- mid-change (after set-nic began): the step finishes, the run stops before the reboot, the
  pending NIC change is undone: exit 143, verdict rolled-back (cause interrupted), no reboot;
- Ctrl-C twice (after set-nic began, then after it was done): the process ends at once by SIGINT,
  its journal left; `pathwarden recover` finishes it and everything is as before.
"""
import json
import os
import signal

from pwtest.cli_world import World, enter_controller_namespace, policy_text, report_of, results_record
from pwtest.journal_pause import PAUSE, wait_paused
from pwtest.script import check, test_main

AREA = "Stop signals (SIGTERM/SIGINT to the real binary; pvesim + light guests)"


def run_with_signals(w, name, policies, pause, signals):
    """Starts a reconcile that pauses after each record in `pause`; at each pause sends the next
    signal of `signals` (None: none) and lets it go on. Returns (process, stdout, stderr)."""
    settings = w.settings(name)
    p = w.start(settings, "reconcile", policies, "--output", "json", env={PAUSE: ",".join(map(str, pause))})
    for n, sig in zip(pause, signals):
        wait_paused(p, f"journal record {n}")
        if sig is not None:
            os.kill(p.pid, sig)
        os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=900)
    return p, out, err, settings


def report(p, out, err):
    """The JSON report, or a failure saying what the run printed instead."""
    import subprocess
    return report_of(subprocess.CompletedProcess(p.args, p.returncode, out, err))


def record_types(w, name):
    return [json.loads(line.split(" ", 1)[1]) for _, line in w.journal_lines(name)]


def nothing_to_recover(w, settings):
    r = w.run(settings, "recover", "--output", "json")
    return r.returncode == 0 and not report_of(r)["policies"]


def main(pvesim, pathwarden):
    enter_controller_namespace()
    with World(pvesim, pathwarden, hotplug_off=(3,)) as w:
        policies = w.policies("signals", [policy_text(3, queues=2)])
        before = w.snapshot()

        # The records of an undisturbed run, so the pause points below are what they claim.
        full = w.run(w.settings("full"), "reconcile", policies, "--output", "json")
        recs = record_types(w, "full")
        kinds = [(r["type"], r.get("kind")) for r in recs]
        check(kinds[:2] == [("run-started", None), ("step-begin", "set-nic")] and kinds[2][0] == "step-done",
              f"the run's first records are not run-started, set-nic begin/done: {kinds[:4]}\n{full.stdout[-1500:]}")
        check(w.snapshot() == before, "the undisturbed run did not end as before")

        # SIGTERM before the first change.
        p, out, err, settings = run_with_signals(w, "term-first", policies, [1], [signal.SIGTERM])
        rep = report(p, out, err)
        pr = rep["policies"][0]
        check(p.returncode == 143 and rep["stopped_by"] == "SIGTERM",
              f"exit {p.returncode}:\n{out[-2000:]}\n{err[-2000:]}")
        check(pr["verdict"] == "precondition-failed" and any("before its first change" in e for e in pr["errors"]),
              f"verdict: {json.dumps(pr)[:1500]}")
        check("stopping at the next safe point" in err, f"no line said what happens:\n{err[-1500:]}")
        check(w.snapshot() == before, "something changed")
        check([r["type"] for r in record_types(w, "term-first")][-1] == "run-finished", "the journal was not finished")
        check(nothing_to_recover(w, settings), "recover found work after a stop before the first change")
        results_record("signals", AREA, "SIGTERM after run-started (before the first change)",
                       "exit 143, verdict precondition-failed \"stopped by SIGTERM before its first change\", "
                       "nothing changed, journal finished, nothing to recover")

        # SIGTERM while the first change runs: finished, then undone before the reboot.
        p, out, err, settings = run_with_signals(w, "term-mid", policies, [2], [signal.SIGTERM])
        rep = report(p, out, err)
        pr = rep["policies"][0]
        check(p.returncode == 143, f"exit {p.returncode}:\n{out[-2000:]}\n{err[-2000:]}")
        check(pr["verdict"] == "rolled-back" and pr["cause"] == "interrupted", f"verdict: {json.dumps(pr)[:1500]}")
        types = [(r["type"], r.get("kind"), r.get("phase")) for r in record_types(w, "term-mid")]
        check(not any(k == "restart-vm" for _, k, _ in types), f"a reboot was begun after the stop: {types}")
        check(w.snapshot() == before, "the NIC change was not undone")
        check(nothing_to_recover(w, settings), "recover found work after a stopped and rolled back run")
        results_record("signals", AREA, "SIGTERM after set-nic began (mid-change)",
                       "the step finishes, no reboot, the pending NIC change undone: exit 143, rolled-back "
                       "(interrupted), nothing to recover")

        # Ctrl-C twice: at once, journal left, recover finishes it.
        p, out, err, settings = run_with_signals(w, "int-twice", policies, [2, 3], [signal.SIGINT, signal.SIGINT])
        check(p.returncode == -signal.SIGINT, f"exit {p.returncode}, want death by SIGINT:\n{err[-2000:]}")
        check("run 'pathwarden recover'" in err, f"no line said to run recover:\n{err[-1500:]}")
        rec = w.run(settings, "recover", "--output", "json")
        check(rec.returncode != 5 and report_of(rec)["policies"],
              f"recover: exit {rec.returncode}\n{rec.stdout[-2000:]}")
        check(w.snapshot() == before, "recover did not restore everything")
        check(nothing_to_recover(w, settings), "a second recover still found work")
        results_record("signals", AREA, "SIGINT twice (after set-nic began, then after it was done)",
                       "ends at once by SIGINT saying to run recover; recover undoes the NIC change; as before")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
    print("ok")
