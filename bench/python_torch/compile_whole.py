"""What recording adds to torch.compile's compile time (target <= 2 %).

  compile_whole.py --pp BUILD/phaseprof --python TORCH2-PY [--reps N]

Runs this file's child mode, plain and under `phaseprof record`, in
interleaved rounds; each child compiles a small MLP with torch.compile
(Inductor, CPU) into an empty Inductor cache of its own (a cold compile:
Dynamo capture, AOTAutograd, Inductor lowering and code generation, the C++
compile; TORCHINDUCTOR_COMPILE_THREADS=1, so the compile runs in the
process and not in a pool of workers), then runs one training step, and
reports the first call's wall time, its process CPU, and the CPU of the
compiler subprocesses (the C++ compiler) it waited for. Medians [min-max] and ratios to plain."""
import os
import shutil
import statistics
import sys
import tempfile
import time


def child():
    import resource

    import torch
    import torch.nn as nn
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    cm = torch.compile(model)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, c0 = time.perf_counter(), time.process_time()
    loss = nn.functional.cross_entropy(cm(x), y)
    loss.backward()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    opt.step()
    kids = (ch1.ru_utime + ch1.ru_stime) - (ch0.ru_utime + ch0.ru_stime)
    with open(os.environ["PP_BENCH_OUT"], "w") as f:
        f.write("%.6f %.6f %.6f\n" % (wall, cpu, kids))


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--pp", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pp-bench-compile-")
    me = os.path.abspath(__file__)
    cmds = [("plain", [a.python, me, "--child"]),
            ("phaseprof record", [a.pp, "record", "-q", "-o", os.path.join(tmp, "c.db"), "--",
                                  a.python, me, "--child"])]
    res = {k: [] for k, _ in cmds}
    print("torch.compile, first call of a small MLP (cold Inductor cache), %d rounds interleaved; "
          "load average %s; %s UTC" % (a.reps, " ".join(open("/proc/loadavg").read().split()[:3]),
                                       time.strftime("%Y-%m-%d %H:%M", time.gmtime())))
    try:
        for r in range(a.reps):
            for i in range(len(cmds)):
                label, argv = cmds[(r + i) % len(cmds)]
                cache = os.path.join(tmp, "inductor")
                shutil.rmtree(cache, ignore_errors=True)
                if os.path.exists(os.path.join(tmp, "c.db")):
                    os.unlink(os.path.join(tmp, "c.db"))
                env = dict(os.environ, PP_BENCH_OUT=os.path.join(tmp, "out.txt"),
                           TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_COMPILE_THREADS="1")
                pid = os.posix_spawnp(argv[0], argv, env, file_actions=[
                    (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, os.path.join(tmp, "err.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)])
                _, st, _ = os.wait4(pid, 0)
                try:
                    with open(env["PP_BENCH_OUT"]) as f:
                        res[label].append([float(v) for v in f.read().split()])
                    os.unlink(env["PP_BENCH_OUT"])
                except OSError:
                    print("  %s failed (status %d): %s" % (label, st, open(os.path.join(tmp, "err.txt")).read()[-500:]))
        base = None
        for label, _ in cmds:
            v = res[label]
            if not v:
                continue
            cells = []
            meds = []
            for k in range(3):
                col = [x[k] for x in v]
                meds.append(statistics.median(col))
                cells.append((meds[-1], min(col), max(col)))
            if base is None:
                base = meds
            print("  %-18s first call wall %.2f s %.3fx [%.2f-%.2f]; CPU %.2f s %.3fx [%.2f-%.2f]; "
                  "compiler subprocesses %.2f s" % (label, cells[0][0], cells[0][0] / base[0], cells[0][1],
                                                    cells[0][2], cells[1][0], cells[1][0] / base[1],
                                                    cells[1][1], cells[1][2], cells[2][0]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if sys.argv[1:] == ["--child"]:
    child()
else:
    main()
