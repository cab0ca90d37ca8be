"""phaseprof beside the profilers a PyTorch user would pick instead, on one
training loop with ~5 ms steps (loop5ms.py), side by side in one run.

  compare.py --pp BUILD/phaseprof --python PY [--peers VENV] [--reps N] [--steps S]

Every command runs once per round, REPS rounds, interleaved (each round
starts one command further along, so no command always follows the same
one); each run by posix_spawn with output to /dev/null, reaped by wait4.
Per command, medians and [min-max] over the rounds of:

  run wall    the whole command line, the tool's start-up and its work after
              the program (writing its database / profile / trace) included
  run CPU     user+system CPU of the command and every process it waited
              for (the program, py-spy's sampler, record's ingest)
  loop wall   the measured loop alone, timed inside the program
  loop CPU    the program's own process CPU over the loop

and each median's ratio to plain's. On a machine shared with other jobs the
wall clock mostly measures the neighbours; CPU time measures what a tool
costs. PEERS: a virtual environment over PY's site packages with py-spy,
scalene, memray, pyinstrument and viztracer from PyPI (scripts/install-deps.sh
--bench); a peer that is not there is listed as not installed. Figures are
printed, never asserted."""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
prog = os.path.join(here, "loop5ms.py")


def run(argv, env, out):
    try:
        os.unlink(out)
    except FileNotFoundError:
        pass
    fa = [(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
          (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)]
    t0 = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, env, file_actions=fa)
    _, st, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    loop = None
    try:
        with open(out) as f:
            w, c, _ = f.read().split()
            loop = (float(w), float(c))
    except (OSError, ValueError):
        pass
    return {"ok": os.waitstatus_to_exitcode(st) == 0, "wall": wall,
            "cpu": ru.ru_utime + ru.ru_stime, "loop": loop}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pp", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--peers", default="")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--only", default="", help="comma-separated labels (plain is always run)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pp-bench-torch-")
    try:
        go(a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def go(a, tmp):
    py, st = a.python, str(a.steps)
    peer_py = os.path.join(a.peers, "bin", "python") if a.peers else ""
    have_peers = bool(peer_py) and os.access(peer_py, os.X_OK)

    def has(mod):
        if not have_peers:
            return False
        import subprocess
        return subprocess.call([peer_py, "-c", "import " + mod],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0

    pyspy = os.path.join(a.peers, "bin", "py-spy") if a.peers else ""
    pyspy = pyspy if pyspy and os.access(pyspy, os.X_OK) else shutil.which("py-spy")
    t = lambda n: os.path.join(tmp, n)
    # (label, argv or None when unavailable, files to remove after each run, target)
    cmds = [
        ("plain", [py, prog, st], [], ""),
        ("phaseprof record", [a.pp, "record", "-q", "-o", t("rec.db"), "--", py, prog, st],
         [t("rec.db")], "<= 1.05x"),
        ("phaseprof record --sample 100",
         [a.pp, "record", "-q", "--sample", "100", "-o", t("smp.db"), "--", py, prog, st],
         [t("smp.db")], "<= py-spy"),
        ("torch.profiler (CPU)", [py, prog, st, "torch-profiler"], [t("trace.json")], ""),
        ("py-spy record --rate 100 --nonblocking",
         [pyspy, "record", "--rate", "100", "--nonblocking", "-o", t("pyspy.svg"), "--", py, prog, st]
         if pyspy else None, [t("pyspy.svg")], ""),
        ("scalene --cpu-only",
         [peer_py, "-m", "scalene", "run", "--cpu-only", "-o", t("scalene.json"), prog, "---", st]
         if has("scalene") else None, [t("scalene.json")], ""),
        ("memray run", [peer_py, "-m", "memray", "run", "-q", "-f", "-o", t("memray.bin"), prog, st]
         if has("memray") else None, [t("memray.bin")], ""),
        ("pyinstrument", [peer_py, "-m", "pyinstrument", "-o", t("pyinstr.txt"), prog, st]
         if has("pyinstrument") else None, [t("pyinstr.txt")], ""),
        ("viztracer", [peer_py, "-m", "viztracer", "--quiet", "-o", t("viz.json"), prog, st]
         if has("viztracer") else None, [t("viz.json")], ""),
        ("cProfile", [py, "-m", "cProfile", "-o", t("cprof.out"), prog, st], [t("cprof.out")], ""),
    ]
    if a.only:
        keep = set(a.only.split(",")) | {"plain"}
        cmds = [c for c in cmds if c[0] in keep]
    missing = [c[0] for c in cmds if c[1] is None]
    cmds = [c for c in cmds if c[1] is not None]
    env = dict(os.environ)
    env["PP_BENCH_OUT"] = t("loop.txt")
    env["PP_BENCH_TRACE"] = t("trace.json")
    ver = os.popen("%s -c 'import torch; print(torch.__version__)' 2>/dev/null" % py).read().strip()
    load0 = open("/proc/loadavg").read().split()[:3]
    print("torch %s (%s), %s steps of loop5ms.py, %d rounds interleaved; %d CPUs; "
          "load average at start %s; %s UTC"
          % (ver, py, st, a.reps, os.cpu_count(), " ".join(load0),
             time.strftime("%Y-%m-%d %H:%M", time.gmtime())))
    res = {c[0]: [] for c in cmds}
    run([py, prog, "5"], env, t("loop.txt"))  # warm the page cache
    for r in range(a.reps):
        for i in range(len(cmds)):
            label, argv, rm, _ = cmds[(r + i) % len(cmds)]
            res[label].append(run(argv, env, t("loop.txt")))
            for p in rm:
                if os.path.exists(p):
                    os.unlink(p)
    load1 = open("/proc/loadavg").read().split()[:3]

    def col(label, key):
        v = [x[key] if key in ("wall", "cpu") else (x["loop"][0 if key == "lwall" else 1] if x["loop"] else None)
             for x in res[label]]
        v = [x for x in v if x is not None]
        return (statistics.median(v), min(v), max(v)) if v else None

    base = {k: col("plain", k) for k in ("wall", "cpu", "lwall", "lcpu")}
    print("  %-40s %-24s %-24s %-24s %-24s %s" % ("", "run wall s", "run CPU s", "loop wall ms/step",
                                                  "loop CPU ms/step", "target"))
    for label, _, _, target in cmds:
        cells = []
        for k in ("wall", "cpu", "lwall", "lcpu"):
            c = col(label, k)
            if c is None:
                cells.append("%-24s" % "-")
                continue
            s = 1e3 / a.steps if k in ("lwall", "lcpu") else 1
            cells.append("%-24s" % ("%.*f %5.2fx [%.*f-%.*f]" % (
                2, c[0] * s, c[0] / base[k][0], 2, c[1] * s, 2, c[2] * s)))
        bad = sum(not x["ok"] for x in res[label])
        print("  %-40s %s %s%s" % (label, " ".join(cells), target,
                                    "  (%d of %d runs failed)" % (bad, a.reps) if bad else ""))
    for m in missing:
        print("  %-40s not installed (scripts/install-deps.sh --bench)" % m)
    print("  load average at end %s" % " ".join(load1))


main()
