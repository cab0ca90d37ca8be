"""The end every Python test driver shares: run the named test, keep its
databases when it failed (and say where), exit 0 / 1, or 2 for a name it
does not know."""
import shutil
import sys


def run(tests, name, tmp, failures):
    if name not in tests:
        print("unknown test %s (one of %s)" % (name, ", ".join(tests)), file=sys.stderr)
        sys.exit(2)
    try:
        tests[name]()
    finally:
        if not failures:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("databases kept in", tmp, file=sys.stderr)
    sys.exit(1 if failures else 0)
