#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Two shards on one host: their Prometheus textfiles compose (node_exporter's textfile collector
refuses a series that two files repeat), checked with Debian's promtool.

usage: prometheus_shards_test.py PATHWARDEN PVESIM
Shard cluster-a (--shard) applies the seed's fix with the recorded guest (pwtest.stand_in) and
records its last success; shard cluster-b (no --shard: the name of its textfile, cluster-b.prom)
reconciles another policy whose guest does not answer (pwtest.offline_controller). Both use one
state directory, as two shards on one controller host do. Then:
- each file passes `promtool check metrics` and carries pathwarden_build_info with its shard, the
  version and the commit `--version` names;
- each file carries only its own policies (cluster-b's never names cluster-a's policy, although
  the result store it reads holds that policy's last success), every policy series with `node`
  and `vmid`;
- the union, merged per metric family as node_exporter merges textfiles, repeats no series and
  passes promtool; the same union with both runs given one shard name does repeat series (so the
  check can fail).
"""
import os
import re
import subprocess
import tempfile

from pwtest import policies
from pwtest.offline_controller import PVESIM_ARGS, STATE, write_policy
from pwtest.pvesim_process import Pvesim
from pwtest.script import check, test_main
from pwtest.stand_in import NET1, STAND_IN_STATE, one_host_shards

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{family: (help, type, [(labels dict, value)])} of a textfile."""
    families = {}
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            kind, name, rest = line[2:6], *line[7:].split(" ", 1)
            entry = families.setdefault(name, {"help": None, "type": None, "samples": []})
            entry["help" if kind == "HELP" else "type"] = rest
            continue
        m = SAMPLE.match(line)
        check(m, f"not a sample line: {line!r}")
        labels = dict(LABEL.findall(m.group(3) or ""))
        families.setdefault(m.group(1), {"help": None, "type": None, "samples": []})[
                            "samples"].append((labels, m.group(4)))
    return families


def merge(*texts):
    """The files as node_exporter's textfile collector gathers them: one family per name (same HELP
    and TYPE in every file, or it refuses them), every file's samples under it. Returns (text,
    duplicated series)."""
    merged, seen, duplicates = {}, set(), []
    for text in texts:
        for name, fam in parse(text).items():
            into = merged.setdefault(name, {"help": fam["help"], "type": fam["type"], "samples": []})
            check((into["help"], into["type"]) == (fam["help"], fam["type"]), f"{name}: HELP/TYPE differ between files")
            for labels, value in fam["samples"]:
                key = (name, tuple(sorted(labels.items())))
                if key in seen:
                    duplicates.append(key)
                seen.add(key)
                into["samples"].append((labels, value))
    lines = []
    for name, fam in merged.items():
        lines += [f"# HELP {name} {fam['help']}", f"# TYPE {name} {fam['type']}"]
        for labels, value in fam["samples"]:
            body = ",".join(f'{k}="{v}"' for k, v in labels.items())
            lines.append(f"{name}{{{body}}} {value}" if body else f"{name} {value}")
    return "\n".join(lines) + "\n", duplicates


def promtool(text, what):
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    check(r.returncode == 0, f"promtool check metrics on {what}: exit {r.returncode}\n{r.stdout}{r.stderr}\n{text}")


def policy_series(text):
    """(family, labels) of every sample that names a policy."""
    return [(name, labels) for name, fam in parse(text).items() for labels, _ in fam["samples"] if "policy" in labels]


def main(binary, pvesim):
    binary = os.path.abspath(binary)
    version_line = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    version, commit = re.fullmatch(r"pathwarden (\S+) \(commit (\S+)\)\n", version_line).groups()

    with tempfile.TemporaryDirectory(prefix="pw-shards-") as work, \
            Pvesim(pvesim, STAND_IN_STATE, PVESIM_ARGS) as sim_a, Pvesim(pvesim, STATE, PVESIM_ARGS) as sim_b:
        ctl_a, ctl_b = one_host_shards(binary, sim_a, sim_b, work)  # one state directory
        pol_a, pol_b = os.path.join(work, "policies-a"), os.path.join(work, "policies-b")
        policies.write(pol_a, "movies.yaml", policies.seed_fix("movies-10g", 101, "media-vm", queues=8))
        write_policy(pol_b)  # "movies", VM 301 on pve1: its guest does not answer

        textfiles = os.path.join(work, "node-exporter")
        os.makedirs(textfiles)
        prom_a, prom_b = os.path.join(textfiles, "cluster-a.prom"), os.path.join(textfiles, "cluster-b.prom")
        # --check --diff: each planned step with its before (-) and after (+); nothing is changed.
        r = ctl_a.run("reconcile", pol_a, "--check", "--diff", "--no-color")
        check(r.returncode == 3 and f"\n    - {NET1}\n    + {NET1},queues=8\n" in r.stdout
              and re.search(r"planned: .*mount.*\n    = .*nconnect=8.*  \(unchanged\)\n", r.stdout),
              f"--check --diff: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        r = ctl_a.run("reconcile", pol_a, "--check", "--no-color")
        check(r.returncode == 3 and "    - " not in r.stdout, f"--check without --diff shows no diff:\n{r.stdout}")
        r = ctl_a.run("reconcile", pol_a, "--prometheus", prom_a, "--shard", "cluster-a")
        check(r.returncode == 2, f"shard cluster-a: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        # An output asked for and not written is the run's failure (exit 7), with the OS's reason:
        # the run itself stands (converged now) and its report is printed.
        missing = os.path.join(work, "no-such-dir", "x.prom")
        r = ctl_a.run("reconcile", pol_a, "--prometheus", missing, "--shard", "cluster-a")
        check(r.returncode == 7 and "the Prometheus textfile was not written" in r.stderr
              and "No such file or directory" in r.stderr and "movies-10g: converged" in r.stdout,
              f"unwritable textfile: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        # A converged run probes nothing: the last probe's series stay, with when it was proven.
        converged = os.path.join(work, "converged.prom")
        r = ctl_a.run("reconcile", pol_a, "--prometheus", converged, "--shard", "cluster-a")
        with open(converged) as f:
            fams = parse(f.read())
        probe = [labels for labels, _ in fams.get("pathwarden_probe_bytes", {"samples": []})["samples"]]
        check(r.returncode == 0 and any(p.get("policy") == "movies-10g" and p.get("intended") == "true" for p in probe)
              and fams.get("pathwarden_policy_last_verified_timestamp_seconds", {}).get("samples")
              and fams.get("pathwarden_run_duration_seconds", {}).get("samples"),
              f"a converged run's textfile: exit {r.returncode}\n{sorted(fams)}\n{probe}")
        r = ctl_b.run("reconcile", pol_b, "--prometheus", prom_b)
        check(r.returncode == 6, f"shard cluster-b: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        with open(prom_a) as f:
            text_a = f.read()
        with open(prom_b) as f:
            text_b = f.read()

        for text, shard in ((text_a, "cluster-a"), (text_b, "cluster-b")):
            promtool(text, f"shard {shard}'s file")
            fams = parse(text)
            check(fams["pathwarden_build_info"]["samples"]
                  == [({"shard": shard, "version": version, "commit": commit}, "1")],
                  f"{shard}: build info {fams.get('pathwarden_build_info')}")
            for name, fam in fams.items():
                check(all(labels.get("shard") == shard for labels,
                      _ in fam["samples"]), f"{shard}: {name} without its shard")
        series_a, series_b = policy_series(text_a), policy_series(text_b)
        check(series_a and {labels["policy"] for _, labels in series_a} == {"movies-10g"}
              and all(labels["node"] == "pve1" and labels["vmid"] == "101" for _, labels in series_a),
              f"cluster-a's policy series: {series_a}")
        check(any(name == "pathwarden_policy_last_success_timestamp_seconds" for name, _ in series_a),
              "cluster-a: no last success for the verified policy")
        check(series_b and {labels["policy"] for _, labels in series_b} == {"movies"}
              and all(labels["node"] == "pve1" and labels["vmid"] == "301" for _, labels in series_b),
              f"cluster-b's file names another shard's policy or lacks node/vmid: {series_b}")
        check("movies-10g" not in text_b, "cluster-b's file carries cluster-a's policy (from the shared result store)")

        union, duplicates = merge(text_a, text_b)
        check(not duplicates, f"the two shards' files repeat series: {duplicates}")
        promtool(union, "the union of both shards")

        # Both runs under one shard name: the build info and the run's series repeat, and the check says so.
        r = ctl_b.run("reconcile", pol_b, "--prometheus", prom_b, "--shard", "cluster-a")
        with open(prom_b) as f:
            _, duplicates = merge(text_a, f.read())
        check({name for name, _ in duplicates} == {"pathwarden_build_info", "pathwarden_run_exit_code",
                                                   "pathwarden_run_last_timestamp_seconds",
                                                   "pathwarden_run_duration_seconds"},
              f"one shard name for both runs: duplicates {duplicates}")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
