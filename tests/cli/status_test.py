#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""`pathwarden status` tells: per selected policy the verdict and, where it is not healthy, why
and what to do; the last change and the last proof; `--runs N` of history; selection as the
other commands (--policy with globs and did-you-mean, --exclude, --host); a versioned JSON; an
exit code from the one table (0 only when every selected policy is healthy).

usage: status_test.py PATHWARDEN PVESIM
Two controllers share one state directory (as two shards on one host do): one applies the
seed's fix with the recorded guest (pwtest.stand_in, verified then converged), the other's guest
does not answer (pwtest.offline_controller: unobserved).
"""
import json
import os
import tempfile

from pwtest import policies
from pwtest.offline_controller import PVESIM_ARGS, STATE, write_policy
from pwtest.pvesim_process import Pvesim
from pwtest.script import check, test_main
from pwtest.stand_in import STAND_IN_STATE, one_host_shards


def main(binary, pvesim):
    binary = os.path.abspath(binary)
    with tempfile.TemporaryDirectory(prefix="pw-status-") as work, \
            Pvesim(pvesim, STAND_IN_STATE, PVESIM_ARGS) as sim_a, Pvesim(pvesim, STATE, PVESIM_ARGS) as sim_b:
        ctl_a, ctl_b = one_host_shards(binary, sim_a, sim_b, work)  # one state directory
        pol_a, pol_b = os.path.join(work, "policies-a"), os.path.join(work, "policies-b")
        policies.write(pol_a, "movies.yaml", policies.seed_fix("movies-10g", 101, "media-vm", queues=8))
        write_policy(pol_b)  # "movies", VM 301: its guest does not answer

        r = ctl_a.run("status")
        check(r.returncode == 0 and "no results yet" in r.stdout, f"empty status: {r.returncode}\n{r.stdout}")
        check(ctl_a.run("reconcile", pol_a).returncode == 2, "the fix applied")
        check(ctl_a.run("reconcile", pol_a).returncode == 0, "then converged")
        check(ctl_b.run("reconcile", pol_b).returncode == 6, "the other guest unobserved")

        # Both: one is not healthy, so the exit code is the table's for it (6), and it says why.
        r = ctl_a.run("status", "--runs", "5")
        out = "\n" + r.stdout
        check(r.returncode == 6, f"status of both: exit {r.returncode}\n{out}{r.stderr}")
        movies = out.split("\nmovies:", 1)[1].split("\nmovies-10g:", 1)[0] if "\nmovies:" in out else ""
        check("why: could not observe guest" in movies, f"the unobserved policy's reason:\n{out}")
        check("remedy: for the guest: check that media-vm is up" in movies, f"what to do when unobserved:\n{out}")
        healthy = out.split("movies-10g: converged", 1)[1] if "movies-10g: converged" in out else ""
        check(healthy and "why:" not in healthy.split("\n\n")[0], f"a healthy policy has no 'why':\n{out}")
        check("  last change: " in healthy and "none in the stored runs" not in healthy.split("\n\n")[0],
              f"the fix is the last change:\n{out}")
        check("  last proof: 20" in healthy, f"the last proof's time:\n{out}")
        check(healthy.count("  run 20") == 2 and " verified changed" in healthy, f"--runs shows the two runs:\n{out}")
        check("1 of 2 policies healthy; exit code 6" in out, f"summary line:\n{out}")

        # Selection as the other commands: the healthy one alone exits 0.
        for args in (["--policy", "movies-10g"], ["--exclude", "movies"], ["--policy", "!movies"],
                     ["--policy", "movies-1*", "--host", "media-vm"]):
            r = ctl_a.run("status", *args)
            check(r.returncode == 0 and "movies-10g: converged" in r.stdout and "\nmovies:" not in r.stdout,
                  f"status {args}: exit {r.returncode}\n{r.stdout}{r.stderr}")
        r = ctl_a.run("status", "--policy", "movies-10h")
        check(r.returncode == 1 and "did you mean 'movies-10g'" in r.stderr, f"typo: {r.returncode} {r.stderr}")
        r = ctl_a.run("status", "--host", "nas-vm")
        check(r.returncode == 1 and "no policy is selected by --host nas-vm" in r.stderr, f"--host: {r.stderr}")
        r = ctl_a.run("status", "--runs", "many")
        check(r.returncode == 1 and "--runs wants a number" in r.stderr, f"bad --runs: {r.stderr}")

        r = ctl_a.run("status", "--output", "json")
        doc = json.loads(r.stdout)
        check(r.returncode == 6 and doc["format"] == "pathwarden-status" and doc["format_version"] == "1.0"
              and doc["healthy"] is False and doc["exit_code"] == 6
              and {p["policy"]: p["healthy"] for p in doc["policies"]} == {"movies": False, "movies-10g": True}
              and all("history" not in p for p in doc["policies"]), f"json: {r.stdout}")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
