# SPDX-License-Identifier: GPL-3.0-or-later
"""Process helpers and the lab's error type: failures are messages, never stack traces."""
import os
import shlex
import subprocess
import sys
import time


class LabError(Exception):
    """An expected failure: what went wrong and what to do, printed as one message."""


def log(msg: str) -> None:
    print(f"lab: {msg}", file=sys.stderr, flush=True)


def run(cmd, *, check=True, capture=False, input=None, env=None, cwd=None, timeout=None,
        what=None) -> subprocess.CompletedProcess:
    """Runs cmd (a list); on failure raises LabError with the command's last stderr lines."""
    try:
        proc = subprocess.run(cmd, input=input, env=env, cwd=cwd, timeout=timeout, text=True,
                              stdin=subprocess.DEVNULL if input is None else None,
                              stdout=subprocess.PIPE if capture else None,
                              stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise LabError(f"{cmd[0]}: command not found (install tests/packages.txt: tests/install-packages)")
    except subprocess.TimeoutExpired:
        raise LabError(f"{what or shlex.join(cmd)}: no answer within {timeout} s")
    if check and proc.returncode != 0:
        tail = "; ".join(line for line in (proc.stderr or "").strip().splitlines()[-3:])
        raise LabError(f"{what or shlex.join(cmd)} failed (exit {proc.returncode}): {tail or 'no message'}")
    return proc


def output(cmd, **kw) -> str:
    return run(cmd, capture=True, **kw).stdout


def netns_cmd(netns: str, cmd: list) -> list:
    return ["ip", "netns", "exec", netns] + cmd


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def pid_cmdline(pid: int) -> list:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def read_pidfile(path: str):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def wait_until(predicate, timeout: float, interval: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def require_root() -> None:
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, taps, QEMU): run it with sudo")
