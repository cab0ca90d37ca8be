"""`phaseprof record` on CPython 3.12 and 3.13, end to end.

usage: versions.py PHASEPROF PYTHON TEST

PYTHON is the interpreter under test (e.g. a pyenv python3.12); when it is
not there the test prints why and exits 77 (ctest SKIP_RETURN_CODE).
TEST is one of
  record  version_target.py under `record`: output, exit status and stderr
          as a plain run's; the import tree of json as `-X importtime`
          prints it; steps 0..3 in a first_step phase; stats counts 4
  offsets pyoffsets_check.py run by PYTHON with the probe library given
          as a 4th argument: the sampler's layout for this interpreter
          against the live interpreter's objects
  sample  the same under `record --sample 1000` with 1 s of CPU time in
          busy_leaf: Python frames in the samples (module -> busy_caller
          -> busy_leaf at their lines, the eval loop replaced), the
          py_frames rows and the one `info` line
"""

import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from pp_pytest import (import_tree, importtime_tree, meta, program_stderr, q,  # noqa: E402
                       run_main, spans)


PHASEPROF, PY, TEST = sys.argv[1:4]
PROBE = sys.argv[4] if len(sys.argv) > 4 else None
HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "version_target.py")
PYDIR = os.path.realpath(os.path.join(HERE, "..", "..", "python"))
IMPORT, FIRST_STEP, STEP = 22, 15, 16
T = "version_target.py"

if not (os.path.isfile(PY) and os.access(PY, os.X_OK)):
    print("SKIP: interpreter %s not installed" % PY)
    sys.exit(77)

tmp = tempfile.mkdtemp(prefix="pp-pyversions-")
failures = []


def check(cond, what):
    print("ok: " + what.split("\n")[0].split(" (")[0] if cond else "FAIL: " + what)
    if not cond:
        failures.append(what)


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    return p.returncode, p.stdout, p.stderr


rc, out, _ = run([PY, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"])
VERSION = out.strip()
print("interpreter: %s (CPython %s)" % (PY, VERSION))


def recorded(name, args, opts=()):
    """Records args and runs them plainly (the no-op package on PYTHONPATH);
    output, status and stderr must match."""
    prc, pout, perr = run(args, env=dict(os.environ, PYTHONPATH=PYDIR))
    db = os.path.join(tmp, name + ".db")
    rc, out, err = run([PHASEPROF, "record", "-o", db, *opts, "--", *args])
    check(rc == prc == 0, "exit status 0 under record and plain (%d, %d)" % (rc, prc))
    check(out == pout, "same stdout: %r vs plain %r" % (out, pout))
    check(program_stderr(err) == perr, "same stderr: %r vs plain %r" % (program_stderr(err), perr))
    check(os.path.exists(db), "a database (%s)" % err.strip()[-300:])
    return db, out


def test_record():
    db, out = recorded("record", [PY, TARGET, "0.1"])
    check(out == 'done {"steps": 4}\n', "program output: %r" % out)
    check(meta(db, "python") == "CPython %s: start-up, imports, phaseprof module" % VERSION,
          "python layer on: %r" % meta(db, "python"))
    check(meta(db, "python.boot") == "ok", "package booted: %r" % meta(db, "python.boot"))
    check((meta(db, "python.audit_hook") or "").startswith("removed after start-up"),
          "audit hook left after start-up: %r" % meta(db, "python.audit_hook"))
    sp = spans(db)
    js = [i for i, v in sp.items() if v[0] == IMPORT and v[1] == "json"]
    check(len(js) == 1, "one import of json (%d)" % len(js))
    if js:
        got = import_tree(sp, js[0])
        want = [t for t in importtime_tree(PY, "import json") if t[0] == "json"]
        check(want and got == want[0], "import tree of json as -X importtime:\n%r\nvs\n%r" % (got, want[:1]))
        check("json.decoder" in [c[0] for c in got[1]], "json.decoder under json: %r" % (got,))
    steps = sorted((v[5], v[4], i) for i, v in sp.items() if v[0] == STEP)
    check([s[0] for s in steps] == [0, 1, 2, 3], "steps 0..3: %r" % [s[0] for s in steps])
    check(all(s[1] is not None for s in steps), "every step closed")
    first = [i for i, v in sp.items() if v[0] == FIRST_STEP]
    check(len(first) == 1 and steps and sp[steps[0][2]][2] == first[0], "first_step wraps step 0")
    rc, jout, _ = run([PHASEPROF, "stats", "--json", db])
    check(rc == 0 and json.loads(jout)["runs"][0]["steps"] == 4, "stats counts 4 steps")


def folded_sum(text, pattern, without=None):
    n = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if re.search(pattern, stack) and not (without and without in stack):
            n += int(count)
    return n


def test_sample():
    db, out = recorded("sample", [PY, TARGET, "1.0"], opts=["--sample", "1000"])
    check(out == 'done {"steps": 4}\n', "program output: %r" % out)
    pf = meta(db, "agent.python_frames")
    check(pf == "on: CPython %s" % VERSION, "agent.python_frames: %r" % pf)
    folded = os.path.join(tmp, "folded")
    rc, _, err = run([PHASEPROF, "export", "--format", "folded", "-o", folded, db])
    check(rc == 0, "folded export: %s" % err)
    text = open(folded).read() if rc == 0 else ""
    total = folded_sum(text, ".")
    chain = re.escape("<module> (%s:24);busy_caller (%s:18);busy_leaf (%s:" % (T, T, T))
    busy = folded_sum(text, chain)
    print("samples: %d in all, %d in <module> -> busy_caller -> busy_leaf" % (total, busy))
    # 1 s of the thread's CPU time: ~250 samples at a 250 Hz tick, however loaded
    check(busy >= 50, "at least 50 samples in busy_leaf under its callers (%d)" % busy)
    loop = folded_sum(text, re.escape("busy_leaf (%s:" % T) + r"1[123]\)")
    check(loop >= busy * 9 // 10, "busy_leaf's samples at its loop lines 11-13 (%d of %d)" % (loop, busy))
    left = busy - folded_sum(text, chain, without="_PyEval_EvalFrameDefault")
    check(left * 10 <= busy, "the eval loop replaced by its Python frames (%d of %d left)" % (left, busy))
    rows = q(db, "SELECT m.value FROM py_frames p JOIN strings s ON s.id = p.qualname_id"
             " JOIN strings m ON m.id = p.module_id WHERE s.value = 'busy_leaf'")
    check(rows and all(r[0] == TARGET for r in rows), "py_frames: busy_leaf of %s (%r)" % (TARGET, rows[:2]))
    rc, iout, _ = run([PHASEPROF, "info", db])
    check("python frames in samples: on: CPython %s\n" % VERSION in iout, "info says python frames are on")
    steps = q(db, "SELECT count(*) FROM spans WHERE kind = ?", STEP)[0][0]
    check(steps == 4, "4 steps while sampling (%d)" % steps)


def test_offsets():
    rc, out, err = run([PY, os.path.join(HERE, "pyoffsets_check.py"), PROBE])
    sys.stdout.write(out + err)
    check(rc == 0, "layout checked against CPython %s" % VERSION)


TESTS = {"record": test_record, "sample": test_sample, "offsets": test_offsets}

run_main(TESTS, TEST, tmp, failures)
