"""The journal's test hook as the CLI tests drive it (test builds only, PW_TEST_HOOKS): with PAUSE
set to record numbers ("3" or "4,6"), pathwarden stops itself (SIGSTOP) right after writing each
of those journal records, so a test can break something at that exact point and let the run go
on with SIGCONT."""

import time

PAUSE = "PATHWARDEN_TEST_PAUSE_AFTER_JOURNAL_RECORDS"


def paused(p):
    """Whether the process p (a subprocess.Popen) stopped itself."""
    try:
        with open(f"/proc/{p.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def wait_paused(p, what, timeout=900):
    """Waits until p stopped itself at its pause point. Bounded only so a broken run fails instead
    of hanging; no time is asserted."""
    from .script import Failure
    deadline = time.monotonic() + timeout
    while not paused(p):
        if p.poll() is not None:
            raise Failure(f"pathwarden exited ({p.returncode}) before {what}:\n{p.stdout.read()[-3000:]}\n"
                          f"{p.stderr.read()[-3000:]}")
        if time.monotonic() > deadline:
            raise Failure(f"pathwarden never reached {what}")
        time.sleep(0.1)
