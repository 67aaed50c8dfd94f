#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verification cost on the QEMU lab (issue 8, target 5): for background rates of 0, 1, 5 and 20 MB/s
received on each of the lab guest's storage links, the probe bytes the adaptive verifier needed
and its verdict, on a correct path (expect `verified`) and on a misrouted one (never `verified`).

usage: tests/bench/verify_cost.py --pathwarden BIN --pvesim BIN [--rates 0,1,5,20] [--record-facts DIR]

Brings the lab up (tests/lab/lab up) and down again; refuses while another lab runs (namespace
pwlab-sw exists). Prints one JSON document on stdout; progress on stderr.

Each case is a real `pathwarden reconcile`: the guest is reset to a scenario, the policy asks for
vers=3,nconnect=8 on /mnt/movies (so the mount is re-made and verified), starting with a 4 MiB
probe that the verifier may grow up to the 64 MiB probe file. Background: `ping -I LINK -s 60000`
to the NAS's address on that link, paced to the rate (each 60 KB echo reply is received on the
link, whatever route the NFS traffic takes), on link1 and link2 at once; the rate actually
received is measured from the guest's counters and reported.

--record-facts DIR: afterwards converge the guest with the seed fix (pwtest.fleet's policy)
and record one facts run of it for tests/bench/recordings/ (the replay of the fleet benchmarks).
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

# Run by hand and by tests/bench/run, not by CTest: tests/, where the pwtest package is.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
from pwtest import fleet  # noqa: E402
from pwtest.lab import topology as topo  # noqa: E402
from pwtest.lab import lab, pvesim, scenarios  # noqa: E402
from pwtest.lab.background import measured_rate, ping_background, stop_ping_background  # noqa: E402
from pwtest.lab.session import LabBusy, running_lab  # noqa: E402
from pwtest.paths import ROOT  # noqa: E402
from pwtest.policies import seed_fix, write as write_policy  # noqa: E402

START_PROBE = 4 << 20
MAX_PROBE = topo.PROBE_BYTES
POLICY = seed_fix("movies-bench", reason="benchmark: verification cost", probe_bytes=START_PROBE,
                  max_probe_bytes=MAX_PROBE, restart=False)
CASES = (("correct path", "clean-link2", "verified"), ("misrouted", "misrouted-link2", "wrong-path"))


def log(msg):
    print("verify_cost: " + msg, file=sys.stderr, flush=True)


UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def probe_sequence(p):
    """The size of every probe the verifier sent: the policy's first, then as its notes say
    ("probe grown: ... probe again with 16.0 MiB", "measured again: ..."), checked against the
    report's count and last size."""
    sizes = [START_PROBE]
    for note in p.get("notes", []):
        if note.startswith("probe grown:"):
            number, unit = note.split()[-2:]
            sizes.append(round(float(number) * UNITS[unit]))
        elif note.startswith("measured again:"):
            sizes.append(sizes[-1])
    v = p.get("verification") or {}
    if v and (len(sizes) != v.get("probes") or abs(sizes[-1] - v.get("probe_bytes", 0)) > (1 << 20)):
        raise RuntimeError(f"probe notes {sizes} disagree with the report ({v.get('probes')} probes, "
                           f"last {v.get('probe_bytes')} bytes)")
    return sizes if v else []


def reconcile(binary, config, policies):
    proc = subprocess.run([binary, "--config", config, "reconcile", policies, "--output", "json"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1800)
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr
    except json.JSONDecodeError:
        raise RuntimeError(f"pathwarden printed no JSON (exit {proc.returncode}): {proc.stderr[-1500:]}")


def reset_nic():
    a = pvesim.api()
    want = topo.guest_vm_config()["net1"]
    if a.config()["net1"] != want:
        a.set_config({"net1": want})


def settings():
    out = subprocess.run([os.path.join(ROOT, "examples", "lab", "controller-settings"),
                          tempfile.mkdtemp(prefix="pw-bench-lab-")],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def run_cases(binary, rates):
    config = settings()
    d = tempfile.mkdtemp(prefix="pw-bench-verify-")
    write_policy(d, "movies.yaml", POLICY)
    guest = lab.Guest()
    rows = []
    for rate in rates:
        for case, scenario, want in CASES:
            reset_nic()
            guest.helper("apply", json.dumps(scenarios.scenario(scenario)))
            pids = ping_background(guest, rate)
            try:
                l1, l2 = measured_rate(guest)
                log(f"{rate} MB/s {case}: background received link1 {l1:.2f} MB/s, link2 {l2:.2f} MB/s")
                t0 = time.monotonic()
                rc, report, err = reconcile(binary, config, d)
                took = time.monotonic() - t0
            finally:
                stop_ping_background(guest, pids)
            p = report["policies"][0]
            v = p.get("verification") or {}
            verdict = v.get("verdict") or p["verdict"]
            sizes = probe_sequence(p)
            if verdict == "verified" and want != "verified":
                status = "WRONG"
            elif verdict == want:
                status = "correct"
            elif verdict == "inconclusive":
                status = "safe: inconclusive"
            else:
                status = "wrong verdict"
            target = "≤ 64 MiB" if rate <= 5 and want == "verified" else "never verified" if want != "verified" else ""
            if status == "correct" and target == "≤ 64 MiB" and sum(sizes) > 64 << 20:
                status = "over 64 MiB"
            log(f"  → {p['verdict']} ({verdict}), probes {sizes}, exit {rc}, {took:.0f} s")
            rows.append({"background_mb_s": rate, "measured_link1_mb_s": round(l1, 2),
                         "measured_link2_mb_s": round(l2, 2), "case": case, "want": want, "verdict": verdict,
                         "policy_verdict": p["verdict"], "probes": len(sizes), "probe_sizes": sizes,
                         "probe_mib": sum(sizes) / 1048576, "seconds": took, "exit": rc, "status": status,
                         "target": target, "summary": v.get("summary", ""), "notes": p.get("notes", [])})
    return rows


SEED_FIX = fleet.policy("movies-10g", "pve1", 101, "media-vm")


def record_facts(binary, out_dir):
    """Converge the lab guest with the fleet's policy and record one facts run (jsonl) of it."""
    config = settings()
    d = tempfile.mkdtemp(prefix="pw-bench-record-")
    write_policy(d, "movies-10g.yaml", SEED_FIX)
    reset_nic()
    lab.Guest().helper("apply", json.dumps(scenarios.scenario("trunk-trap")))
    rc, report, err = reconcile(binary, config, d)
    check_verdict = report["policies"][0]["verdict"]
    if rc != 2 or check_verdict != "verified":
        raise RuntimeError(f"the seed fix did not verify (exit {rc}, {check_verdict}): {err[-1500:]}")
    rc, report, err = reconcile(binary, config, d)
    if rc != 0:
        raise RuntimeError(f"the second run was not converged (exit {rc}): {json.dumps(report)[:2000]}")
    books = os.path.join(d, "books")
    subprocess.run([binary, "--config", config, "plan", d, "--emit-playbooks", books], stdin=subprocess.DEVNULL,
                   capture_output=True, text=True, check=False)
    state = lab.read_state()
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.jsonl", ANSIBLE_JSON_INDENT="0",
               ANSIBLE_HOST_KEY_CHECKING="True", ANSIBLE_NOCOLOR="1", LC_ALL="C.UTF-8", LANG="C.UTF-8",
               ANSIBLE_SSH_ARGS=f"-F {state['ssh_config']} -o StrictHostKeyChecking=yes -o BatchMode=yes")
    proc = subprocess.run(["ansible-playbook", "-i", state["inventory"], os.path.join(books, "facts.yml")],
                          stdin=subprocess.DEVNULL, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"facts run failed ({proc.returncode}): {proc.stderr[-1500:]}{proc.stdout[-1500:]}")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "facts.jsonl"), "w") as f:
        f.write(proc.stdout)
    with open(os.path.join(out_dir, "recording.json"), "w") as f:
        json.dump({"host": topo.GUEST_NAME, "mac": topo.GUEST_MACS["link2"].lower(), "policy": "movies-10g",
                   "recorded": time.strftime("%Y-%m-%d"),
                   "policy_sha256": hashlib.sha256(SEED_FIX.encode()).hexdigest(),
                   "how": "tests/bench/verify_cost.py --record-facts: the lab guest after the seed fix, converged"},
                  f, indent=1)
        f.write("\n")
    reset_nic()
    log(f"recorded the converged guest's facts in {out_dir}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pathwarden", required=True)
    ap.add_argument("--pvesim", required=True)
    ap.add_argument("--rates", default="0,1,5,20")
    ap.add_argument("--record-facts")
    args = ap.parse_args()
    try:
        with running_lab(args.pvesim, log) as up_seconds:
            result = {"lab_up_seconds": up_seconds}
            status = lab.read_state()
            result["accel"] = status.get("accel")
            rates = [float(x) if "." in x else int(x) for x in args.rates.split(",")]
            result["rows"] = run_cases(args.pathwarden, rates)
            if args.record_facts:
                record_facts(args.pathwarden, args.record_facts)
    except LabBusy as e:
        log(str(e))
        return 3
    print(json.dumps(result))
    wrong = [r for r in result["rows"] if r["status"] == "WRONG"]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
