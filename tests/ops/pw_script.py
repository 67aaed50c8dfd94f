"""The shape of a test script: usage on wrong arguments, 'FAIL: ...' and exit 1 on failure."""
import sys


def test_main(main, doc, nargs):
    if len(sys.argv) != nargs + 1:
        print(doc.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        main(*sys.argv[1:])
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
