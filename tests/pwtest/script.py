"""The shape of a test script: checks raise Failure; test_main prints usage on wrong arguments, and
'FAIL: ...' with exit 1 on a failed check."""
import sys


class Failure(AssertionError):
    """A check that failed: test_main prints it as 'FAIL: ...' and exits 1."""


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def test_main(main, doc, nargs):
    if len(sys.argv) != nargs + 1:
        print(doc.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        main(*sys.argv[1:])
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
