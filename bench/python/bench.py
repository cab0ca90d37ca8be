"""Overhead of the CPython layer of `phaseprof record`, side by side in one
run: plain, the agent alone (preloaded, no launcher, no ingest) with and
without the Python layer, whole `record` with and without it, and
`-X importtime` on the import workloads; then the cost of phaseprof.step().

Runs are interleaved (one of each per round) so a busy neighbour slows every
column alike; medians of wall time and of CPU time (user + system of the
whole process tree, steadier on a shared machine). Prints; never asserts.

usage: bench.py BUILD_DIR [REPEATS]
To add a workload: one more entry in WORKLOADS (label, argv).
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(sys.argv[1])
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.realpath(os.path.join(HERE, "..", "..", "python"))
PP = os.path.join(BUILD, "phaseprof")
AGENT = os.path.join(BUILD, "libphaseprof-agent.so")
PY = "/usr/bin/python3"

WORKLOADS = [
    ("python3 -c 'import json'", [PY, "-c", "import json"]),
    ("python3 -c 'import numpy'", [PY, "-c", "import numpy"]),
    ("5 M pure-Python calls", [PY, os.path.join(HERE, "loop.py")]),
]

tmp = tempfile.mkdtemp(prefix="pp-bench-python-")


def timed(argv, env=None):
    """(wall ms, CPU ms) of one run, output discarded."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    return (t1 - t0) * 1e3, cpu * 1e3


def columns(argv):
    spool = dict(os.environ, PHASEPROF_OUT=os.path.join(tmp, "a.spool"), LD_PRELOAD=AGENT)
    db = os.path.join(tmp, "r.db")
    cols = [
        ("plain", argv, None),
        ("agent alone, Python layer", argv, spool),
        ("agent alone, --no-python", argv, dict(spool, PHASEPROF_PYTHON="0")),
        ("phaseprof record", [PP, "record", "-o", db, "--"] + argv, None),
        ("phaseprof record --no-python", [PP, "record", "--no-python", "-o", db, "--"] + argv, None),
    ]
    if argv[1:2] == ["-c"] and "import" in argv[2]:
        cols.append(("python3 -X importtime (reference)", [argv[0], "-X", "importtime"] + argv[1:], None))
    return cols


print("CPython layer overhead: median of %d interleaved runs, %d CPUs, load average %.1f" %
      (REPS, os.cpu_count(), os.getloadavg()[0]))
print("(wall time suffers from other work on a shared machine; CPU time is the steadier figure)")
subprocess.run([PY, "-c", "import numpy"], stdout=subprocess.DEVNULL)  # warm the page cache
for label, argv in WORKLOADS:
    cols = columns(argv)
    res = {c[0]: [] for c in cols}
    for _ in range(REPS):
        for name, a, env in cols:
            res[name].append(timed(a, env))
    print("%s:" % label)
    print("  %-36s %10s %7s %10s %7s" % ("", "wall", "", "CPU", ""))
    pw = statistics.median(w for w, c in res["plain"])
    pc = statistics.median(c for w, c in res["plain"])
    for name, _, _ in cols:
        w = statistics.median(x for x, c in res[name])
        c = statistics.median(y for x, y in res[name])
        print("  %-36s %7.1f ms %6.2fx %7.1f ms %6.2fx" % (name, w, w / pw, c, c / pc))

env = dict(os.environ, PHASEPROF_OUT=os.path.join(tmp, "s.spool"), LD_PRELOAD=AGENT)
on = subprocess.run([PY, os.path.join(HERE, "steps.py")], env=env, capture_output=True, text=True).stdout.strip()
off = subprocess.run([PY, os.path.join(HERE, "steps.py")], env=dict(os.environ, PYTHONPATH=PYDIR),
                     capture_output=True, text=True).stdout.strip()
print("phaseprof.step() per step (begin + end): %s ns under the agent, %s ns as the no-op;"
      " 2%% of a 5 ms step is 100000 ns" % (on, off))
r = subprocess.run([PY, os.path.join(HERE, "import_cost.py")], env=env, capture_output=True, text=True).stdout.split()
if len(r) == 6 and r[0] != "-":
    print("import hook per import (best of 11 rounds of 1000 instant imports, wrapped vs the original):")
    print("  new module names: %s ns vs %s ns, +%s ns (the recorder interns each name once)" % tuple(r[:3]))
    print("  names seen before: %s ns vs %s ns, +%s ns (the C wrapper alone)" % tuple(r[3:]))
for f in os.listdir(tmp):
    os.unlink(os.path.join(tmp, f))
os.rmdir(tmp)
