#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A run tells where it is (issue 41 item 1): off a terminal an info log line on stderr at each
activity (observe with guests counted, the NIC set through Proxmox, the guests changed, the
probe with its size); with `--output json` the same lines on stderr and stdout only the report;
on a terminal one line redrawn in place. The per-minute cadence is tested with time as a value
(tests/reconcile/progress_test.cpp), not here.

usage: progress_test.py PATHWARDEN PVESIM
The seed's fix with the recorded guest (pwtest.stand_in) against pvesim on loopback.
"""
import json
import os
import pty
import subprocess
import tempfile
import threading

from pwtest import policies
from pwtest.offline_controller import PVESIM_ARGS
from pwtest.pvesim_process import Pvesim
from pwtest.script import check, test_main
from pwtest.stand_in import STAND_IN_STATE, stand_in_controller


def progress_lines(stderr):
    return [line.split("progress: ", 1)[1] for line in stderr.splitlines() if "progress: " in line]


def run_on_terminal(ctl, *args):
    """stderr on a pseudo-terminal, stdout piped: returns (exit code, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([ctl.binary, "--config", ctl.settings, *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave, env=ctl.env, text=True)
    os.close(slave)
    got = bytearray()

    def drain():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the last writer closed the terminal
                return
            if not chunk:
                return
            got.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    out, _ = proc.communicate(timeout=600)
    reader.join(timeout=60)
    os.close(master)
    return proc.returncode, out, got.decode(errors="replace")


def main(binary, pvesim):
    binary = os.path.abspath(binary)
    with tempfile.TemporaryDirectory(prefix="pw-progress-") as work, \
            Pvesim(pvesim, STAND_IN_STATE, PVESIM_ARGS) as sim:
        ctl = stand_in_controller(binary, sim, work)
        pol = os.path.join(work, "policies")
        policies.write(pol, "movies.yaml", policies.seed_fix("movies-10g", 101, "media-vm", queues=8))

        # Off a terminal (a pipe, as under systemd or AWX): a log line per activity, in order.
        r = ctl.run("reconcile", pol)
        lines = progress_lines(r.stderr)
        check(r.returncode == 2, f"the fix applied: {r.returncode}\n{r.stdout}{r.stderr}")
        expected = ["observing guests (0 of 1)", "movies-10g: setting net1 of VM 101 (hot-plug)",
                    "writing the fstab of 1 guest(s)", "movies-10g: probing "]
        at = 0
        for want in expected:
            found = [i for i, line in enumerate(lines) if i >= at and line.startswith(want)]
            check(found, f"'{want}' after line {at} of the progress lines:\n" + "\n".join(lines) + f"\n{r.stderr}")
            at = found[0] + 1
        check(all(" · elapsed " in line for line in lines), f"each line says the time elapsed:\n{lines}")
        check("progress:" not in r.stdout, f"stdout is the report's:\n{r.stdout}")

        # --output json: the report alone on stdout, the progress still on stderr.
        r = ctl.run("reconcile", pol, "--output", "json")
        check(r.returncode == 0, f"converged: {r.returncode}\n{r.stderr}")
        report = json.loads(r.stdout)  # raises when anything else is on stdout
        check(report["policies"][0]["verdict"] == "converged", f"the report: {r.stdout}")
        check(any(line.startswith("observing guests") for line in progress_lines(r.stderr)),
              f"progress on stderr with --output json:\n{r.stderr}")

        # --log-format json: the progress lines are JSON objects too.
        r = ctl.run("--log-format", "json", "reconcile", pol, "--output", "json")
        logged = [json.loads(line) for line in r.stderr.splitlines() if line.strip()]
        check(any(e["level"] == "info" and e["msg"].startswith("progress: observing guests") for e in logged),
              f"a JSON progress line:\n{r.stderr}")

        # On a terminal: the line is redrawn in place (carriage return, erase line), not logged.
        code, out, tty = run_on_terminal(ctl, "reconcile", pol)
        check(code == 0 and "converged" in out, f"converged on a terminal: {code}\n{out}")
        check("\r\x1b[Kobserving guests (" in tty and " · elapsed " in tty, f"a live line:\n{tty!r}")
        check("progress: " not in tty, f"no log lines on a terminal:\n{tty!r}")
        check(tty.endswith("\r\x1b[K"), f"the line is cleared at the end:\n{tty[-200:]!r}")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
