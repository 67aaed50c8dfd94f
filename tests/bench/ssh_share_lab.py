#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""What sharing SSH connections saves on the QEMU lab (issue 18, target 3): the seed's trap
policy (examples/lab/trap: the mount moved to the 10 GbE address with NFSv4.2; applied, probed,
found on the wrong link, rolled back and probed again) run by the real binary with
`spec.ansible.share_connections` on and off, alternating, from the same reset state each time.

usage: sudo tests/bench/ssh_share_lab.py --pathwarden BIN --pvesim BIN [--repeat N]

Brings the lab up and down (tests/pwtest/lab/session.py; refuses while another lab runs).
Prints one JSON document on stdout, progress on stderr. Each run must end as the trap does
(exit 4, rolled-back, cause wrong-path), or the benchmark fails: a time is only worth printing
for a run that did the work. Controller CPU-seconds are the user + system time of
pathwarden with every ansible-playbook, fork and ssh client it waited for (RUSAGE_CHILDREN).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
from pwtest.lab import controller as ctl  # noqa: E402
from pwtest.lab.session import LabBusy, running_lab  # noqa: E402
from pwtest.paths import ROOT  # noqa: E402

TRAP = os.path.join(ROOT, "examples", "lab", "trap")


def log(msg):
    print("ssh_share_lab: " + msg, file=sys.stderr, flush=True)


def settings(share):
    config = ctl.settings(prefix=f"pw-share-{'on' if share else 'off'}-")
    with open(config) as f:
        text = f.read()
    if not share:
        text = text.replace("    remote_user: root\n", "    remote_user: root\n    share_connections: false\n")
        if "share_connections: false" not in text:
            raise RuntimeError("examples/lab/controller-settings no longer writes 'remote_user: root'")
    with open(config, "w") as f:
        f.write(text)
    return config


def one_run(binary, share):
    config = settings(share)
    ctl.reset_to_trap()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run([binary, "--config", config, "reconcile", TRAP, "--output", "json"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out, err = proc.stdout, proc.stderr
    report = json.loads(out)
    p = report["policies"][0]
    if proc.returncode != 4 or p["verdict"] != "rolled-back":
        raise RuntimeError(f"share={share}: exit {proc.returncode}, {p['verdict']}, want 4 rolled-back:\n{err[-2000:]}")
    return {"share": share, "seconds": took, "cpu_seconds": cpu}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pathwarden", required=True)
    ap.add_argument("--pvesim", required=True)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    binary = os.path.abspath(args.pathwarden)
    runs = []
    try:
        with running_lab(os.path.abspath(args.pvesim), log) as up:
            for i in range(args.repeat):
                for share in (True, False):
                    r = one_run(binary, share)
                    log(f"run {i + 1}, sharing {'on' if share else 'off'}: {r['seconds']:.1f} s, "
                        f"{r['cpu_seconds']:.1f} CPU-s")
                    runs.append(r)
    except LabBusy as e:
        log(str(e))
        return 3
    on = [r for r in runs if r["share"]]
    off = [r for r in runs if not r["share"]]
    print(json.dumps({"lab_up_seconds": up, "runs": runs,
                      "median_seconds": {"on": statistics.median(r["seconds"] for r in on),
                                         "off": statistics.median(r["seconds"] for r in off)},
                      "median_cpu_seconds": {"on": statistics.median(r["cpu_seconds"] for r in on),
                                             "off": statistics.median(r["cpu_seconds"] for r in off)}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
