# SPDX-License-Identifier: GPL-3.0-or-later
"""The journal's test hook as the CLI tests drive it (test builds only, PW_TEST_HOOKS): with PAUSE
set to record numbers ("3" or "4,6"), pathwarden stops itself (SIGSTOP) right after writing each
of those journal records, so a test can break something at that exact point and let the run go
on with SIGCONT."""

PAUSE = "PATHWARDEN_TEST_PAUSE_AFTER_JOURNAL_RECORDS"


def paused(p):
    """Whether the process p (a subprocess.Popen) stopped itself."""
    try:
        with open(f"/proc/{p.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def wait_paused(p, what, timeout=900):
    """Waits until p stopped itself at its pause point (bounded only so a broken run fails
    instead of hanging; no time is asserted)."""
    from .script import wait_for
    wait_for(what, lambda: paused(p), [p], timeout)
