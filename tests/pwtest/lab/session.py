# SPDX-License-Identifier: GPL-3.0-or-later
"""The QEMU lab brought up for a benchmark run by hand (tests/bench/verify_cost.py,
tests/bench/ssh_share_lab.py) and taken down afterwards, whatever happens: through
tests/lab/lab, as the suite's lab_up/lab_down fixture does. Refuses while another lab runs
(one lab per machine)."""
import contextlib
import os
import subprocess
import time

from ..paths import ROOT
from . import topology as topo

LAB = os.path.join(ROOT, "tests", "lab", "lab")


class LabBusy(RuntimeError):
    pass


@contextlib.contextmanager
def running_lab(pvesim: str, log):
    """Yields the seconds `lab up` took. pvesim: the binary the lab runs (PW_PVESIM)."""
    if os.path.exists(f"/run/netns/{topo.NETNS}"):
        raise LabBusy(f"another lab is running (namespace {topo.NETNS}); run again when it is down")
    env = dict(os.environ, PW_PVESIM=pvesim)
    log("bringing the lab up")
    t0 = time.monotonic()
    up = subprocess.run([LAB, "up"], stdin=subprocess.DEVNULL, env=env, capture_output=True, text=True)
    try:
        if up.returncode != 0:
            raise RuntimeError(f"lab up failed ({up.returncode}):\n{up.stdout[-3000:]}{up.stderr[-3000:]}")
        yield time.monotonic() - t0
    finally:
        log("taking the lab down")
        subprocess.run([LAB, "down"], stdin=subprocess.DEVNULL, env=env, capture_output=True, text=True)
