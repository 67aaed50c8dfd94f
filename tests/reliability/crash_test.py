#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Crashes (issue 9, item 3): the real `pathwarden reconcile` killed with SIGKILL right after each
durable journal record (PATHWARDEN_TEST_KILL_AFTER_JOURNAL_RECORDS=N), on pvesim and the light
guests; then `pathwarden recover`. After every kill: pvesim's NIC configs and the guests' fstab
files are byte for byte as before (or fully new), mounts as before, no journal left unfinished.
Every third kill also tears the last record in half (power loss while writing it).

usage: crash_test.py PVESIM PATHWARDEN

Two policies in one run, so every journaled step kind is killed at least once: guest2 an fstab
entry, guest3 a queues change that needs a VM restart (set-nic, restart-vm, set-channels). Light
guests cannot mount NFS, so every run ends in a rollback: the kills land in every forward step and
in every step of the rollbacks, the channels restore's included (guest3's eth0 stands in for a
virtio NIC's channels: tests/lab/light/virtio-ethtool). (The QEMU lab
runs without KVM here: one reboot costs minutes, too slow for a loop over every record.)
"""
import json
import os
import time

from pwtest.cli_world import World, describe_record, enter_controller_namespace, policy_text, report_of, results_record
from pwtest.script import check, test_main

AREA = "Crash (SIGKILL of the real binary; pvesim + light guests)"


def tear_last_record(path):
    """Cuts the journal's last line in half, as a power loss during its write would."""
    with open(path, "rb") as f:
        data = f.read()
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    with open(path, "r+b") as f:
        f.truncate(start + (len(data) - start) // 2)


POLICIES = ("rel-guest2", "rel-guest3")


def records_by_policy(world, name):
    """Each policy's journal and its records (the file name ends in .POLICY.journal)."""
    out = {}
    for path, line in world.journal_lines(name):
        base = os.path.basename(path)
        key = next((p for p in POLICIES if base.endswith(f".{p}.journal")), base)
        out.setdefault(key, (path, []))[1].append(line)
    return out


def killed_at(world, name, earlier):
    """The record the kill came right after, and its journal: the run is deterministic, so it is the
    one this run wrote and the run killed one record earlier did not (`earlier`: that run's records
    by policy). A newest-file guess by mtime could name, and tear, the other policy's journal when
    both were written within one mtime tick."""
    journals = records_by_policy(world, name)
    now = {k: lines for k, (_, lines) in journals.items()}
    grown = [k for k, lines in now.items() if len(lines) == len(earlier.get(k, [])) + 1]
    same = [k for k, lines in now.items() if len(lines) == len(earlier.get(k, []))]
    check(len(grown) == 1 and len(grown) + len(same) == len(now),
          f"{name}: not exactly one record more than the run killed before it: "
          f"{ {k: len(v) for k, v in now.items()} } after { {k: len(v) for k, v in earlier.items()} }")
    return json.loads(now[grown[0]][-1].split(" ", 1)[1]), journals[grown[0]][0], now


def main(pvesim, pathwarden):
    enter_controller_namespace()
    with World(pvesim, pathwarden, hotplug_off=(3,)) as w:
        policies = w.policies("crash", [policy_text(2), policy_text(3, queues=2)])  # POLICIES' names
        before = w.snapshot()

        # A whole run without a kill: how many records, and that it ends as before.
        full = w.run(w.settings("full"), "reconcile", policies, "--output", "json")
        rep = report_of(full)
        check(full.returncode == 4, f"uninterrupted run: exit {full.returncode}, want 4 (rolled back):\n{full.stdout}")
        check(all(p["verdict"] == "rolled-back" for p in rep["policies"]), f"uninterrupted run:\n{full.stdout}")
        check(w.snapshot() == before, "the uninterrupted run did not restore everything")
        total = len(w.journal_lines("full"))
        check(total >= 20, f"only {total} journal records in a full run")
        kinds = {}
        earlier = {}
        for n in range(1, total + 1):
            started = time.monotonic()
            name = f"kill{n}"
            torn = n % 3 == 0
            killed = w.run(w.settings(name), "reconcile", policies, "--output", "json",
                           env={"PATHWARDEN_TEST_KILL_AFTER_JOURNAL_RECORDS": str(n)})
            check(killed.returncode == -9,
                  f"kill {n}: exit {killed.returncode}, want SIGKILL:\n{killed.stderr[-2000:]}")
            check(len(w.journal_lines(name)) == n, f"kill {n}: {len(w.journal_lines(name))} records on disk")
            record, journal, earlier = killed_at(w, name, earlier)
            at = describe_record(record)
            if torn:
                tear_last_record(journal)
            rec = w.run(w.settings(name), "recover", "--output", "json")
            recovered = report_of(rec)
            check(rec.returncode != 5, f"kill {n} ({at}): recover exit 5:\n{rec.stdout}\n{rec.stderr[-2000:]}")
            again = report_of(w.run(w.settings(name), "recover", "--output", "json"))
            check(not again["policies"], f"kill {n} ({at}): a second recover still found work:\n{again}")
            after = w.snapshot()
            check(after == before, f"kill {n} ({at}{', torn' if torn else ''}): not as before:\n"
                                   f"before {before}\nafter  {after}\nrecover: {rec.stdout}")
            verdicts = sorted({p["verdict"] for p in recovered["policies"]}) or ["nothing to do"]
            kinds.setdefault(at, []).append(n)
            print(f"kill {n}/{total} after {at}{' (torn)' if torn else ''}: recover "
                  f"{', '.join(verdicts)}; consistent ({time.monotonic() - started:.0f} s)", flush=True)
        # A last reconcile after all that still plans the same thing and ends as before.
        final = w.run(w.settings(f"kill{total}"), "reconcile", policies, "--output", "json")
        check(final.returncode == 4 and w.snapshot() == before, f"final run: exit {final.returncode}")
        for at, ns in sorted(kinds.items()):
            results_record("crash", AREA, f"SIGKILL right after \"{at}\" ({len(ns)}×: records {ns})",
                           "recover exit ≠ 5; NIC configs, fstab bytes and mounts as before; no journal left"
                           + ("; incl. torn last record" if any(k % 3 == 0 for k in ns) else ""))
        results_record("crash", AREA, f"all {total} kill points of a 2-policy run (fstab; NIC + restart + channels)",
                       f"{total}/{total} consistent after recover "
                       f"({len([n for n in range(1, total + 1) if n % 3 == 0])}"
                       " with a torn last record)")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
    print("ok")
