# SPDX-License-Identifier: GPL-3.0-or-later
"""The shape of a test script: checks raise Failure; test_main prints usage on wrong arguments, and
'FAIL: ...' with exit 1 on a failed check."""
import time
import sys


class Failure(AssertionError):
    """A check that failed: test_main prints it as 'FAIL: ...' and exits 1."""


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def case_main(cases, doc):
    """`SCRIPT BINARY CASE`: runs cases[CASE](BINARY); usage on wrong arguments, 'FAIL CASE: ...'
    and exit 1 on a failed check, 'ok CASE' when it passed."""
    if len(sys.argv) != 3 or sys.argv[2] not in cases:
        print(doc.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        cases[sys.argv[2]](sys.argv[1])
    except Failure as e:
        print(f"FAIL {sys.argv[2]}: {e}")
        sys.exit(1)
    print(f"ok {sys.argv[2]}")


def test_main(main, doc, nargs):
    if len(sys.argv) != nargs + 1:
        print(doc.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        main(*sys.argv[1:])
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)


def wait_for(what, predicate, procs, timeout=300):
    """Polls until predicate() is true. Bounded only so a broken run fails instead of hanging;
    nothing is asserted about the time it takes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        for p in procs:
            if p.poll() is not None:
                raise Failure(f"waiting for {what}: a controller exited ({p.returncode}) first:\n"
                              f"{p.stdout.read()[-2000:]}\n{p.stderr.read()[-3000:]}")
        if time.monotonic() > deadline:
            raise Failure(f"gave up waiting for {what}")
        time.sleep(0.05)
