#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""examples/systemd: the units pass systemd-analyze, and the service's command line works.

usage: systemd_units_test.py PATHWARDEN PVESIM
1. `systemd-analyze verify` accepts pathwarden.service and pathwarden.timer with no message at all
   (the ExecStart binary is pointed at the built pathwarden, since verify checks it exists).
2. `systemd-analyze security --offline=yes` rates the hardening at exposure 2.0 or better.
3. The unit's exit-code contract: 2 and 3 are SuccessExitStatus, 1, 4 and 5 are not.
4. The unit's ExecStart, expanded the way systemd does with its Environment= defaults (paths moved
   into a temporary directory), runs the real pathwarden against pvesim with an unreachable guest:
   it exits 3 (a success of the unit), writes the node_exporter textfile atomically (no temp file
   left) and the JSON report that `pathwarden report --html` renders (as it renders the state
   directory's last results); with
   PATHWARDEN_LOG_FORMAT=json every log line on stderr is one JSON object (journald-friendly).
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile

from pwtest.offline_controller import PVESIM_ARGS, STATE, OfflineController, write_policy
from pwtest.paths import ROOT
from pwtest.pvesim_process import Pvesim
from pwtest.script import check, test_main

UNITS = os.path.join(ROOT, "examples", "systemd")

INSTALLED_BINARY = "/usr/local/bin/pathwarden"


def parse_unit(path):
    """{section: {key: [values]}}; continuation lines joined, comments dropped."""
    sections, current, pending = {}, None, ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not pending and (not line.strip() or line.lstrip().startswith(("#", ";"))):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            line, pending = pending + line, ""
            if line.startswith("["):
                current = sections.setdefault(line.strip("[] "), {})
                continue
            key, value = line.split("=", 1)
            current.setdefault(key.strip(), []).append(value.strip())
    return sections


def expand_exec(command, env):
    """systemd's ExecStart expansion: ${VAR} is one word, $VAR is split on whitespace."""
    words = []
    for word in shlex.split(command):
        if re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", word):
            words.extend(env.get(word[1:], "").split())
        else:
            words.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), word))
    return words


def unit_environment(service):
    env = {}
    for line in service["Service"].get("Environment", []):
        for assignment in shlex.split(line):
            key, value = assignment.split("=", 1)
            env[key] = value
    return env


def analyze(units_dir, binary):
    staged = tempfile.mkdtemp(prefix="pw-units-")
    try:
        for name in ("pathwarden.service", "pathwarden.timer"):
            with open(os.path.join(UNITS, name)) as f:
                text = f.read()
            with open(os.path.join(staged, name), "w") as f:
                f.write(text.replace(INSTALLED_BINARY, binary))
        files = [os.path.join(staged, n) for n in ("pathwarden.service", "pathwarden.timer")]
        v = subprocess.run(["systemd-analyze", "verify", *files], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=120)
        check(v.returncode == 0 and not v.stdout.strip() and not v.stderr.strip(),
              f"systemd-analyze verify (exit {v.returncode}):\n{v.stdout}\n{v.stderr}")
        s = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--threshold=20", files[0]],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        level = re.search(r"Overall exposure level for pathwarden.service: ([0-9.]+)", s.stdout)
        check(s.returncode == 0 and level,
              f"systemd-analyze security (exit {s.returncode}):\n{s.stdout[-3000:]}\n{s.stderr}")
        print(f"systemd-analyze: verify clean, exposure {level.group(1)}")
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def main(binary, pvesim):
    binary = os.path.abspath(binary)
    check(shutil.which("systemd-analyze") is not None, "systemd-analyze is missing (Debian package systemd)")
    analyze(UNITS, binary)

    service = parse_unit(os.path.join(UNITS, "pathwarden.service"))
    timer = parse_unit(os.path.join(UNITS, "pathwarden.timer"))
    svc = service["Service"]
    check(svc["Type"] == ["oneshot"], "Type=oneshot: one run at a time, never overlapping")
    success = set(" ".join(svc.get("SuccessExitStatus", [])).split())
    check(success == {"2", "3"}, f"SuccessExitStatus is {sorted(success)}, want 2 and 3 (4, 5 and 1 fail the unit)")
    # A stop reaches pathwarden alone and leaves it time to undo what it began (issue 14, item 6).
    check(svc.get("KillMode") == ["mixed"] and svc.get("TimeoutStopSec") == ["10min"],
          f"KillMode {svc.get('KillMode')}, TimeoutStopSec {svc.get('TimeoutStopSec')}: want mixed, 10min")
    check(svc["StateDirectory"] == ["pathwarden"] and svc["StateDirectoryMode"] == ["0700"], "private state directory")
    t = timer["Timer"]
    check(t.get("RandomizedDelaySec") and t.get("Persistent") == ["yes"] and t.get("OnCalendar"),
          f"timer: randomised delay, persistent, calendar: {t}")

    with tempfile.TemporaryDirectory(prefix="pw-systemd-") as work, Pvesim(pvesim, STATE, PVESIM_ARGS) as sim:
        policies = os.path.join(work, "policies")
        write_policy(policies)
        ctl = OfflineController(binary, sim, work, policies_dir=policies)
        textfile_dir = os.path.join(work, "node-exporter")
        os.makedirs(textfile_dir)
        env = unit_environment(service)
        check(env.get("PATHWARDEN_TEXTFILE", "").endswith(".prom"),
              "the textfile ends in .prom (node_exporter reads only those)")
        env["PATHWARDEN_TEXTFILE"] = os.path.join(textfile_dir, os.path.basename(env["PATHWARDEN_TEXTFILE"]))
        report_file = os.path.join(work, "last-run.json")

        def exec_start(extra_env):
            argv = expand_exec(svc["ExecStart"][0], dict(env, **extra_env))
            check(argv[0] == INSTALLED_BINARY, f"ExecStart runs {argv[0]}")
            argv[0] = binary
            argv = [a.replace("/etc/pathwarden/pathwarden.yaml", ctl.settings)
                     .replace("/var/lib/pathwarden/last-run.json", report_file) for a in argv]
            return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600,
                                  env=ctl.env)

        run = exec_start({})
        # An unreachable guest could not be observed: exit 6, a failure of the unit (never the
        # "drift" of exit 3, which the unit counts as success).
        check(run.returncode == 6 and str(run.returncode) not in success and "3" in success,
              f"ExecStart exited {run.returncode}, want 6 (a failure of the unit):\n{run.stdout}\n{run.stderr[-2000:]}")
        check("unobserved" in run.stdout and "unreachable" in run.stdout, f"report on stdout:\n{run.stdout}")
        check(os.listdir(textfile_dir) == ["pathwarden.prom"], f"textfile dir holds {os.listdir(textfile_dir)}")
        with open(env["PATHWARDEN_TEXTFILE"]) as f:
            prom = f.read()
        # The shard is the textfile's name (pathwarden.prom) unless --shard names it.
        check('pathwarden_run_exit_code{shard="pathwarden"} 6\n' in prom and
              'pathwarden_policy_verdict{shard="pathwarden",policy="movies",node="pve1",vmid="301",'
              'verdict="unobserved"} 1' in prom,
              f"textfile:\n{prom}")
        with open(report_file) as f:
            report = json.load(f)
        check(report["exit_code"] == 6 and report["mode"] == "reconcile", f"report file: {json.dumps(report)[:800]}")
        html = os.path.join(work, "last-run.html")
        r = subprocess.run([binary, "report", "--input", report_file, "--html", html],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
        check(r.returncode == 0 and "unobserved" in open(html).read(), f"report --html: {r.stderr}")
        # Without --input: the last result of each policy, from the state directory.
        r = ctl.run("report", "--html", html)
        page = open(html).read()
        check(r.returncode == 0 and "<h2>movies</h2>" in page and f"by run {report['run_id']}" in page,
              f"report --html of the state directory: {r.stderr}")

        run = exec_start({"PATHWARDEN_LOG_FORMAT": "json", "PATHWARDEN_ARGS": "--log-level debug --policy movies"})
        check(run.returncode == 6, f"json logging run exited {run.returncode}:\n{run.stderr[-2000:]}")
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        check(lines, "no log lines at all on stderr")
        for line in lines:
            try:
                json.loads(line)
            except json.JSONDecodeError:
                raise AssertionError(f"a log line is not JSON with --log-format json: {line!r}")
    print("ok systemd units")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
