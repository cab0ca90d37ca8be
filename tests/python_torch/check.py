"""Records one small PyTorch program under `phaseprof record` and asserts
exact facts about the recording (spans, counters, findings, runs).

usage: check.py PHASEPROF CASE [PYTHON]   (cases: see CASES at the end)
PYTHON is the interpreter the programs run with: /usr/bin/python3 (Debian's
torch 1.13) unless given (the torch-2 venv's python for torch 2.13).
Exit 0 when every assertion holds, 77 when torch is missing (skip), else 1.
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.argv[3] if len(sys.argv) > 3 else "/usr/bin/python3"


class Rec:
    """One recording: the program's output and the database."""

    def __init__(self, phaseprof, prog, *args, expect_rc=0, env=None, opts=()):
        self.dir = tempfile.mkdtemp(prefix="pp-torch-")
        self.db = os.path.join(self.dir, "run.db")
        cmd = [phaseprof, "record", "-o", self.db] + list(opts) + ["--", PY,
               os.path.join(HERE, "progs", prog)] + [a.replace("@DIR", self.dir) for a in args]
        env = dict(os.environ, **{k: v.replace("@DIR", self.dir) for k, v in (env or {}).items()})
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=self.dir, timeout=600, env=env)
        self.out, self.err, self.rc = p.stdout, p.stderr, p.returncode
        if p.returncode != expect_rc:
            fail("%s exited %d (expected %d)\nstdout:\n%s\nstderr:\n%s"
                 % (prog, p.returncode, expect_rc, p.stdout, p.stderr))
        self.con = sqlite3.connect(self.db)
        self.run = self.one("SELECT MIN(id) FROM runs")

    def rows(self, sql, *a):
        return self.con.execute(sql, a).fetchall()

    def one(self, sql, *a):
        r = self.con.execute(sql, a).fetchone()
        return r[0] if r else None

    def spans(self, kind, run=None):
        return self.rows("SELECT name, start_ns, end_ns, step, id, parent_id FROM spans_v "
                         "WHERE run_id = ? AND kind_name = ? ORDER BY start_ns",
                         run or self.run, kind)

    def steps(self):
        return [s for s in self.spans("step") if s[2] is not None]

    def counter(self, name):
        return [v for (v,) in self.rows(
            "SELECT c.value FROM counters c JOIN strings s ON s.id = c.name_id "
            "WHERE c.run_id = ? AND s.value = ? ORDER BY c.ts_ns", self.run, name)]

    def marks(self, prefix):
        return [n for (n,) in self.rows(
            "SELECT s.value FROM marks m JOIN strings s ON s.id = m.name_id "
            "WHERE m.run_id = ? AND s.value LIKE ? ORDER BY m.ts_ns", self.run, prefix + "%")]

    def meta(self, key):
        return self.one("SELECT value FROM run_meta WHERE run_id = ? AND key = ?", self.run, key)

    def findings(self):
        return self.rows("SELECT rule, severity, title, evidence FROM findings WHERE run_id = ?",
                         self.run)

    def finding_fix(self, rule):
        return self.one("SELECT fix FROM findings WHERE run_id = ? AND rule = ?", self.run, rule) or ""

    def finding(self, rule):
        for f in self.findings():
            if f[0] == rule:
                return f
        return None

    def inside(self, child, parent):
        return parent[1] <= child[1] and child[2] is not None and child[2] <= parent[2]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg, rec=None):
    if not cond:
        if rec is not None:
            msg += "\nfindings: %r\nstderr tail: %s" % (rec.findings(), rec.err[-2000:])
        fail(msg)


def adapter_installed(r):
    v = r.one("SELECT value FROM run_meta WHERE run_id = ? AND key = 'python.adapter.torch'",
              r.run)
    check(v == "installed", "torch adapter not installed: %r" % (v,), r)


def per_step(r, kinds):
    """Every closed step contains one outermost span of each kind."""
    steps = r.steps()
    for k in kinds:
        sp = r.spans(k)
        for s in steps:
            check(any(r.inside(x, s) for x in sp), "step %d has no %s span" % (s[3], k), r)


# Start-up rules describe `import torch` itself, not the loop: they are
# information below 5 s of start-up in a program with steps
# (diag_sev_for_startup, unit-tested in diag.test_rules_framework), and a
# loaded test machine can take longer than that to import torch.
STARTUP = ("library_load_startup", "import_startup")


def healthy(r):
    bad = [f for f in r.findings() if f[1] in ("moderate", "high") and f[0] not in STARTUP]
    check(not bad, "moderate/high findings on a healthy loop: %r" % bad, r)


def case_mlp(pp):
    r = Rec(pp, "mlp.py")
    check("trained 20 steps, loss finite: True" in r.out, "program output changed: " + r.out)
    adapter_installed(r)
    steps = r.steps()
    check([s[3] for s in steps] == list(range(20)), "steps %r" % [s[3] for s in steps], r)
    first = r.spans("first_step")
    check(len(first) == 1 and r.inside(steps[0], first[0]), "first step not marked", r)
    check([s[0] for s in r.spans("model_build")] == ["MLP"], "model_build %r" % r.spans("model_build"))
    check([s[0] for s in r.spans("optimizer_setup")] == ["Adam", "Adam lazy state"],
          "optimizer_setup %r" % r.spans("optimizer_setup"))
    lazy = r.spans("optimizer_setup")[1]
    check(r.inside(lazy, steps[0]), "lazy optimizer state not inside the first step")
    check(r.one("SELECT COUNT(*) FROM marks m JOIN strings s ON s.id = m.name_id WHERE m.run_id = ? "
                "AND s.value LIKE 'optimizer state created: Adam, 12 tensors, %'", r.run) == 1,
          "no optimizer-state mark")
    # backward: Lightning runs training_step and backward inside
    # Optimizer.step(closure), where the PyTorch adapter records no backward
    # phase (its opt_depth gate); only accumulation's micro-batches that do
    # not step have one, outside the optimizer's step
    per_step(r, ("data_wait", "forward"))
    check(len(r.spans("optimizer_step")) == 19, "optimizer_step spans: %d" % len(r.spans("optimizer_step")))
    for c in ("step.allocs", "step.alloc_bytes", "step.rss_bytes", "torch.hooks", "torch.graph_nodes"):
        check(len(r.counter(c)) == 20, "counter %s: %d samples" % (c, len(r.counter(c))), r)
    check(min(r.counter("step.rss_bytes")) > 10e6, "rss not measured")
    check(min(r.counter("step.allocs")) > 0, "allocations not measured")
    check(set(r.counter("torch.hooks")) == {0}, "hooks %r" % r.counter("torch.hooks"))
    healthy(r)


def case_hooks_bug(pp):
    r = Rec(pp, "hooks.py", "bug")
    check(len(r.steps()) == 60, "steps: %d" % len(r.steps()), r)
    hooks = r.counter("torch.hooks")
    # a step is the whole iteration: it ends when the next one calls the
    # model, after that iteration registered its hook
    check(hooks == list(range(2, 61)) + [60], "torch.hooks %r" % hooks)
    f = r.finding("iteration_time_grows")
    check(f is not None, "no iteration_time_grows finding", r)
    check("module hooks" in f[3], "growth evidence does not name the hooks: " + f[3])


def case_hooks_fixed(pp):
    r = Rec(pp, "hooks.py", "fixed")
    check(len(r.steps()) == 60, "steps: %d" % len(r.steps()), r)
    check(set(r.counter("torch.hooks")) == {1}, "torch.hooks %r" % r.counter("torch.hooks"))
    # beside busy loops the steps' wall time may rise while their CPU time
    # stays: the rule then says so, as information (the program did not grow)
    f = r.finding("iteration_time_grows")
    check(f is None or (f[1] == "info" and "CPU time does not" in f[2]), "growth finding on the fixed twin", r)
    healthy(r)


def case_loss_graph(pp):
    r = Rec(pp, "loss_graph.py")
    check(len(r.steps()) == 30, "steps: %d" % len(r.steps()), r)
    f = r.finding("memory_grows_per_step")
    check(f is not None and f[1] in ("moderate", "high"), "no memory growth finding", r)


def case_cuda_mem_fake(pp):
    # torch.cuda faked (no GPU here): the per-step device memory counters
    # and the rule over them
    r = Rec(pp, "cuda_mem_fake.py")
    check("steps: 24, mean loss finite: True" in r.out, "program output changed: " + r.out)
    check(len(r.steps()) == 24, "steps: %d" % len(r.steps()), r)
    al = r.counter("torch.cuda.allocated_bytes")
    check(len(al) == 24, "torch.cuda.allocated_bytes: %d samples" % len(al), r)
    check(all(b - a == 8 << 20 for a, b in zip(al, al[1:])), "allocated not +8 MiB a step: %r" % al[:4], r)
    rs = r.counter("torch.cuda.reserved_bytes")
    check(len(rs) == 24 and all(x >= y for x, y in zip(rs, al)), "reserved %r" % rs[:4], r)
    f = r.finding("gpu_memory_grows_per_step")
    check(f is not None and f[1] in ("moderate", "high") and "8.0 MiB" in f[2],
          "gpu_memory_grows_per_step: %r" % (f,), r)
    check(r.finding("memory_grows_per_step") is None or r.finding("memory_grows_per_step")[1] == "info",
          "host memory growth claimed", r)


def memory_findings(r):
    return [f for f in r.findings() if f[0] == "memory_grows_per_step"]


def case_act_cache(pp):
    """A forward hook keeps a copy of every step's activations (1.0 MiB a
    step): the finding names the hook and what it keeps per step."""
    r = Rec(pp, "act_cache.py")
    check("cached: 40" in r.out, "program output changed: " + r.out)
    check(len(r.steps()) == 40, "steps: %d" % len(r.steps()), r)
    f = r.finding("memory_grows_per_step")
    check(f is not None and f[1] in ("moderate", "high"), "no memory growth finding", r)
    check("1.0 MiB per step kept, allocated in cache_hook (act_cache.py:15)" in f[3],
          "evidence does not name the hook's site and bytes: " + f[3])
    fix = r.one("SELECT fix FROM findings WHERE run_id = ? AND rule = 'memory_grows_per_step'",
                r.run)
    check("cache_hook (act_cache.py:15)" in fix and "total_loss" not in fix,
          "fix does not fit the program: " + fix)
    kept = r.rows("SELECT k.step, k.bytes, k.blocks, k.new_bytes FROM step_kept k "
                  "JOIN strings s ON s.id = k.site_id WHERE k.run_id = ? "
                  "AND s.value = 'cache_hook (act_cache.py:15)' ORDER BY k.step", r.run)
    check([k[0] for k in kept] == list(range(40)), "step_kept steps %r" % [k[0] for k in kept])
    check(all(k[1] == (k[0] + 1) << 20 and k[2] == k[0] + 1 and k[3] == 1 << 20 for k in kept),
          "step_kept rows %r" % kept[:5])


def case_ckpt_reload(pp):
    """A checkpoint saved and reloaded mid-training: one jump, not growth."""
    r = Rec(pp, "ckpt_reload.py", "@DIR/ckpt.pt")
    check("reloaded at 30: True" in r.out, "program output changed: " + r.out)
    check(len(r.steps()) == 60, "steps: %d" % len(r.steps()), r)
    bad = [f for f in memory_findings(r) if f[1] in ("moderate", "high")]
    check(not bad, "a reload rated as memory growth: %r" % bad, r)


def case_loader_sample(pp):
    """A loader-bound loop under --sample 100: the sampler's own memory is
    not the program's."""
    r = Rec(pp, "loader_bound.py", opts=("--sample", "100"))
    check("batches: 60" in r.out, "program output changed: " + r.out)
    check(len(r.steps()) == 60, "steps: %d" % len(r.steps()), r)
    check(not memory_findings(r), "memory finding under --sample: %r" % memory_findings(r), r)


def case_script(pp):
    r = Rec(pp, "script.py")
    check(len(r.steps()) == 20, "steps: %d" % len(r.steps()), r)
    comp = r.spans("compile")
    check(comp and comp[0][0] == "torch.jit.script Net", "no torch.jit.script compile: %r" % comp)
    runs = [c for c in comp if c[0].startswith("torchscript profiling run")]
    steps = r.steps()
    check(len(runs) == 2 and r.inside(runs[0], steps[0]) and r.inside(runs[1], steps[1]),
          "profiling-executor runs not in the first two steps: %r" % runs, r)
    flagged = [f for f in r.findings() if "compile" in f[2] or "compile" in f[3]]
    check(flagged, "compile in the first steps not flagged", r)


def case_checkpoint(pp):
    r = Rec(pp, "checkpoint.py", "@DIR/ckpt.pt")
    check("same: True" in r.out, "program output changed: " + r.out)
    size = os.path.getsize(os.path.join(r.dir, "ckpt.pt"))
    names = [s[0] for s in r.spans("weight_load")]
    check(names == ["torch.load ckpt.pt", "load_state_dict Sequential"], "weight_load %r" % names)
    got = r.counter("weight_load.bytes")
    tensors = (256 * 512 + 512 + 512 * 10 + 10) * 4
    check(got == [size, tensors], "weight_load.bytes %r, file %d, tensors %d" % (got, size, tensors))


def case_workers(pp):
    r = Rec(pp, "workers.py")
    check("batches: 12" in r.out, "program output changed: " + r.out)
    check(len(r.steps()) == 12, "steps: %d" % len(r.steps()), r)
    kids = r.one("SELECT COUNT(*) FROM runs WHERE parent_run = ?", r.run)
    check(kids >= 2, "worker processes in the tree: %r" % kids, r)
    per_step(r, ("data_wait",))
    waits = [s for s in r.spans("data_wait") if s[2] is not None]
    check(sum(s[2] - s[1] for s in waits) > 0, "data wait not measured")


def worker_runs(r):
    """The DataLoader worker runs under the main run: (id, label, 'k of N')."""
    return r.rows("SELECT r.id, r.label, m.value FROM runs r JOIN run_meta m ON m.run_id = r.id "
                  "AND m.key = 'torch.dataloader.worker' WHERE r.parent_run = ? ORDER BY r.id", r.run)


def loader_workers(r, pp):
    """2 epochs x 16 batches from 2 workers per epoch (not persistent): 4
    worker runs, each labelled and with one data_fetch and one data_collate
    phase per batch it produced (8: batches go round-robin)."""
    wk = worker_runs(r)
    labels = sorted(w[1] for w in wk)
    check(labels == ["DataLoader worker 0 of 2", "DataLoader worker 0 of 2, pass 2",
                     "DataLoader worker 1 of 2", "DataLoader worker 1 of 2, pass 2"],
          "worker labels %r" % labels, r)
    kids = r.one("SELECT COUNT(*) FROM runs WHERE parent_run = ?", r.run)
    check(kids == 4, "child runs %d, labelled workers %d" % (kids, len(wk)), r)
    for wid, label, _ in wk:
        fetch = [s for s in r.spans("data_fetch", wid) if s[2] is not None]
        coll = [s for s in r.spans("data_collate", wid) if s[2] is not None]
        check(len(fetch) == 8 and len(coll) == 8,
              "%s: %d data_fetch, %d data_collate (expected 8 each)" % (label, len(fetch), len(coll)), r)
        check(all(any(r.inside(c, f) for f in fetch) for c in coll),
              "%s: a collate outside its fetch" % label)
    check(r.one("SELECT value FROM run_meta WHERE run_id = ? AND key = 'python.adapter.torch.utils.data'",
                r.run) == "installed", "data adapter not installed", r)
    # the labels in what users read: info, stats, the report
    info = subprocess.run([pp, "info", r.db], capture_output=True, text=True).stdout
    stats = subprocess.run([pp, "stats", r.db], capture_output=True, text=True).stdout
    check("DataLoader worker 1 of 2, pass 2" in info, "info does not show the worker labels:\n" + info)
    check("DataLoader worker 0 of 2" in stats and "data_fetch" in stats and "data_collate" in stats,
          "stats does not show the workers' phases:\n" + stats[-3000:])
    html = os.path.join(r.dir, "report.html")
    subprocess.run([pp, "report", r.db, "-o", html], check=True, capture_output=True)
    h = open(html, encoding="utf-8").read()
    check("DataLoader worker 0 of 2" in h, "report does not name the workers")
    # recorded time: wall time, the workers inside the main run's time
    import re
    m = re.search(r'recorded time</div><div class="v">([0-9.]+) (s|ms)<', h)
    check(m is not None, "no recorded time in the report")
    shown = float(m.group(1)) * (1e9 if m.group(2) == "s" else 1e6)
    main = r.one("SELECT duration_ns FROM runs WHERE id = ?", r.run)
    summed = r.one("SELECT SUM(duration_ns) FROM runs")
    check(abs(shown - main) <= 0.01 * main and summed > main + 0.5e9,
          "recorded time %s; main run %.3f s, all runs summed %.3f s" % (m.group(0), main / 1e9,
                                                                         summed / 1e9))


def no_warmup_advice(r, strict):
    """A first step that waits for the workers to start is said to be that,
    as information, never "run a warm-up step". strict: the wait is the
    largest part of the first step, so a first_step_slow must say so (else a
    torch-2 first step's lazy imports may outweigh a short start-up wait)."""
    f = r.finding("first_step_slow")
    if f is None:
        return
    fix = r.finding_fix("first_step_slow")
    if strict or "first batch" in f[2]:
        check("first batch" in f[2] and "warm-up" not in fix and f[1] == "info",
              "first_step_slow on the workers' start: %r, fix: %s" % (f, fix), r)
    else:
        check("data_wait" not in f[2], "first_step_slow blames data_wait: %r" % (f,), r)


def case_loader_slow(pp):
    r = Rec(pp, "loader.py", "slow")
    check("batches: 32 validated: True" in r.out, "program output changed: " + r.out)
    check(len(r.steps()) == 32, "steps: %d" % len(r.steps()), r)
    loader_workers(r, pp)
    f = r.finding("data_starvation")
    check(f is not None and f[1] in ("moderate", "high"), "no data_starvation finding", r)
    import re
    m = re.search(r"([0-9.]+) (s|ms) of the ([0-9.]+) (s|ms) the steady steps take", f[3])
    check(m is not None, "starvation evidence: " + f[3])
    unit = {"s": 1e9, "ms": 1e6}
    wait, loop = float(m.group(1)) * unit[m.group(2)], float(m.group(3)) * unit[m.group(4)]
    check(0 < wait <= loop, "waits %s longer than the loop: %s" % (m.group(0), f[3]))
    check("Not counted:" in f[3], "the validation waits are not set apart: " + f[3])
    fix = r.finding_fix("data_starvation")
    check("2 workers each need" in fix and "num_workers >= " in fix and "num_workers > 0" not in fix,
          "fix does not fit a loader with 2 workers: " + fix)
    check("Images.__getitem__" in fix, "fix does not name the dataset: " + fix)
    need = int(re.search(r"num_workers >= (\d+)", fix).group(1))
    check(need > 2, "asks for %d workers with 2 already starving" % need)
    no_warmup_advice(r, True)


def case_loader_fast(pp):
    r = Rec(pp, "loader.py", "fast")
    check("batches: 32 validated: True" in r.out, "program output changed: " + r.out)
    check(len(r.steps()) == 32, "steps: %d" % len(r.steps()), r)
    loader_workers(r, pp)
    f = r.finding("data_starvation")
    check(f is None or f[1] == "info" and "keep up" in r.finding_fix("data_starvation"),
          "data_starvation on a healthy loader", r)
    no_warmup_advice(r, False)
    healthy(r)


def case_loader_raises(pp):
    """An exception in __getitem__ in a worker reaches the main process with
    the worker's traceback as text: no phaseprof frame in it."""
    r = Rec(pp, "loader.py", "raises", expect_rc=1)
    check("ValueError: bad sample 21" in r.err, "error changed: " + r.err[-1500:])
    tb = r.err[r.err.find("Original Traceback"):]
    check("Original Traceback" in r.err and "/phaseprof/adapters/" not in tb.split("ValueError")[0],
          "adapter frames in the worker's traceback:\n" + tb[:2000])


def case_profiler(pp):
    r = Rec(pp, "profiler.py")
    check("profiler saw Optimizer.step: True" in r.out and "profiler saw aten::addmm: True" in r.out,
          "torch.profiler output changed: " + r.out)
    check(len(r.steps()) == 10, "steps: %d" % len(r.steps()), r)


def case_inference(pp):
    r = Rec(pp, "inference.py")
    check("predictions: 16" in r.out, "program output changed: " + r.out)
    steps = r.steps()
    check([s[3] for s in steps] == list(range(15)), "steps %r" % [s[3] for s in steps], r)
    fwd = r.spans("forward")
    check(len(fwd) == 16 and not any(r.inside(fwd[0], s) for s in steps),
          "forward spans %d; the shape check must not be a step" % len(fwd), r)
    per_step(r, ("forward",))


def case_raises(pp):
    r = Rec(pp, "raises.py", expect_rc=1)
    check("RuntimeError: bad batch at step 5" in r.err, "traceback changed: " + r.err[-500:])
    steps = r.steps()
    check([s[3] for s in steps] == list(range(5)), "closed steps %r" % [s[3] for s in steps], r)
    st, code = r.rows("SELECT status, exit_code FROM runs WHERE id = ?", r.run)[0]
    check(code == 1, "exit code %r (status %r)" % (code, st))


def coverage(r, steps=None):
    """The share of the loop (first step's start to last step's end) that
    lies inside steps."""
    steps = steps or r.steps()
    span = steps[-1][2] - steps[0][1]
    return sum(s[2] - s[1] for s in steps) / span if span > 0 else 0.0


def unit(r):
    return r.one("SELECT value FROM run_meta WHERE run_id = ? AND key = 'python.step_unit'", r.run)


def numbers(r):
    return [s[3] for s in r.steps()]


def case_after_step(pp):
    r = Rec(pp, "after_step.py")
    check("iterations: 150, running metric finite: True" in r.out, "program output changed: " + r.out)
    check(numbers(r) == list(range(150)), "steps %r" % numbers(r), r)
    cov = coverage(r)
    check(cov >= 0.95, "only %.1f %% of the loop inside steps" % (100 * cov), r)
    check(unit(r) == "iteration (one optimizer step)", "step unit %r" % unit(r))
    # the metric after optimizer.step() is inside its iteration's step
    steps = r.steps()
    late = [s[2] - s[1] for s in steps[-20:]]
    early = [s[2] - s[1] for s in steps[1:21]]
    check(sorted(late)[10] > 3 * sorted(early)[10],
          "late steps not slower: %r vs %r" % (sorted(late)[10], sorted(early)[10]), r)
    f = r.finding("iteration_time_grows")
    check(f is not None and f[1] in ("moderate", "high"), "growth not found", r)


def case_accumulate(pp):
    r = Rec(pp, "accumulate.py")
    check("optimizer steps: 12" in r.out, "program output changed: " + r.out)
    check(numbers(r) == list(range(12)), "steps %r" % numbers(r), r)
    bw = r.spans("backward")
    for s in r.steps():
        n = sum(1 for b in bw if r.inside(b, s))
        check(n == 4, "step %d holds %d backward passes, not 4" % (s[3], n), r)
    check(unit(r) == "optimizer step of 4 micro-batches", "step unit %r" % unit(r))
    check(coverage(r) >= 0.95, "coverage %.3f" % coverage(r), r)
    healthy(r)


def case_manual_sgd(pp):
    r = Rec(pp, "manual_sgd.py")
    check("eval batches: 4" in r.out, "program output changed: " + r.out)
    check(numbers(r) == list(range(25)), "steps %r" % numbers(r), r)
    check(unit(r) == "iteration (one backward pass, no optimizer)", "step unit %r" % unit(r))
    fwd = r.spans("forward")
    check(len(fwd) == 29, "forward spans %d" % len(fwd), r)
    steps = r.steps()
    outside = [f for f in fwd if not any(r.inside(f, s) for s in steps)]
    # the 4 evaluation calls after the loop, and the first iteration's
    # forward: with no optimizer, the first backward pass is what shows
    # the loop trains, so step 0 starts there
    check(len(outside) == 5 and all(f[1] >= steps[-1][2] for f in outside[1:])
          and outside[0][2] <= steps[0][1],
          "forward calls outside steps: %r" % [(f[1], f[2]) for f in outside], r)
    check(coverage(r) >= 0.95, "coverage %.3f" % coverage(r), r)
    healthy(r)


def case_func_sgd(pp):
    r = Rec(pp, "func_sgd.py")
    check("updates: 12" in r.out, "program output changed: " + r.out)
    check(numbers(r) == list(range(12)), "steps %r" % numbers(r), r)
    per_step(r, ("backward",))
    # torch.func's first call imports functorch's machinery inside step 0:
    # a first step made slow by imports is what the finding may say
    bad = [f for f in r.findings() if f[1] in ("moderate", "high") and f[0] not in STARTUP
           and not (f[0] == "first_step_slow" and "import is" in f[2])]
    check(not bad, "moderate/high findings: %r" % bad, r)


def case_infer_two(pp):
    r = Rec(pp, "infer_two.py")
    check("batches: 24" in r.out, "program output changed: " + r.out)
    check(numbers(r) == list(range(24)), "steps %r" % numbers(r), r)
    fwd = r.spans("forward")
    for s in r.steps():
        names = [f[0] for f in fwd if r.inside(f, s)]
        check(names == ["Sequential", "Linear"], "step %d calls %r" % (s[3], names), r)
    check(unit(r) == "batch (inference: model calls between two loop iterations)", "step unit %r" % unit(r))
    check(coverage(r) >= 0.95, "coverage %.3f" % coverage(r), r)
    healthy(r)


def case_annotated(pp):
    r = Rec(pp, "annotated.py")
    check("steps: 15, enabled: True" in r.out, "program output changed: " + r.out)
    check(numbers(r) == list(range(15)), "steps %r" % numbers(r), r)
    check(unit(r) == "phaseprof.step()", "step unit %r" % unit(r))
    per_step(r, ("forward", "backward", "optimizer_step"))
    # the same program runs plainly, the package on its path: a no-op
    src = os.path.join(HERE, "..", "..", "python")
    path = src
    if subprocess.run([PY, "-c", "import pip, setuptools"], capture_output=True).returncode == 0:
        # installed the way Python users install things: pip, from a copy
        # of the source (pip leaves build files beside the sources)
        shutil.copytree(src, os.path.join(r.dir, "src"))
        path = os.path.join(r.dir, "site")
        p = subprocess.run([PY, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                            "--no-index", "--target", path, os.path.join(r.dir, "src")],
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, "pip install of python/ failed:\n%s%s" % (p.stdout, p.stderr))
        # under record with the installed copy on the path: the agent's own
        # copy is the one the program gets, and its steps count
        r2 = Rec(pp, "annotated.py", env={"PYTHONPATH": path})
        check(numbers(r2) == list(range(15)) and "enabled: True" in r2.out,
              "with pip's copy on the path: steps %r" % numbers(r2), r2)
    env = dict(os.environ, PYTHONPATH=path)
    p = subprocess.run([PY, os.path.join(HERE, "progs", "annotated.py")], capture_output=True,
                       text=True, env=env, timeout=300)
    check(p.returncode == 0 and "steps: 15, enabled: False" in p.stdout,
          "plain run with phaseprof importable: rc %d\n%s%s" % (p.returncode, p.stdout, p.stderr))


def case_train_val(pp):
    r = Rec(pp, "train_val.py")
    check("epochs: 3" in r.out, "program output changed: " + r.out)
    check(numbers(r) == list(range(24)), "steps %r" % numbers(r), r)
    steps = r.steps()
    fwd = r.spans("forward")
    inside = [f for f in fwd if any(r.inside(f, s) for s in steps)]
    check(len(fwd) == 36 and len(inside) == 24,
          "%d forward spans, %d inside steps (validation must be outside)" % (len(fwd), len(inside)), r)
    for e in range(3):
        ep = steps[8 * e:8 * e + 8]
        check(coverage(r, ep) >= 0.95, "epoch %d coverage %.3f" % (e, coverage(r, ep)), r)
    healthy(r)


def traceback_of(err):
    """The traceback a Python program printed (phaseprof's summary, when it
    shares stderr, comes after it)."""
    i = err.find("Traceback (most recent call last):")
    lines = err[i:].splitlines()
    out = []
    for ln in lines:
        out.append(ln)
        if ln and not ln.startswith(" ") and not ln.startswith("Traceback"):
            break
    return "\n".join(out)


def case_descriptors(pp):
    """The program's descriptors are a plain run's, through a close loop in
    the middle of the steps; the RSS counter survives it."""
    p = subprocess.run([PY, os.path.join(HERE, "progs", "descriptors.py")], capture_output=True,
                       text=True, timeout=300)
    check(p.returncode == 0 and "first free descriptor: 3" in p.stdout, "plain run: " + p.stdout + p.stderr)
    r = Rec(pp, "descriptors.py")
    check(r.out == p.stdout, "output differs under record:\n%s--- plain:\n%s" % (r.out, p.stdout))
    check(numbers(r) == list(range(12)), "steps %r" % numbers(r), r)
    rss = r.counter("step.rss_bytes")
    check(len(rss) == 12 and min(rss) > 10e6, "step.rss_bytes %r" % rss, r)


def case_raises_forward(pp):
    r = Rec(pp, "raises_forward.py", expect_rc=1)
    p = subprocess.run([PY, os.path.join(HERE, "progs", "raises_forward.py")], capture_output=True,
                       text=True, timeout=300)
    want = traceback_of(p.stderr)
    check("ValueError: shape mismatch in call 4" in want, "plain run: " + p.stderr[-800:])
    got = traceback_of(r.err)
    check(got == want, "traceback differs under record:\n%s\n--- plain:\n%s" % (got, want))
    check(numbers(r) == list(range(3)), "closed steps %r" % numbers(r), r)
def meta(r, key):
    return r.one("SELECT value FROM run_meta WHERE run_id = ? AND key = ?", r.run, key)


def named(r, kind, name):
    return [s for s in r.spans(kind) if s[0] == name and s[2] is not None]


def lightning_fit(pp, acc, package="pytorch_lightning"):
    """Trainer.fit of tests/python_torch/progs/lightning_fit.py: 2 epochs x 8
    training batches, 4 validation batches, the default sanity check (2);
    Lightning imported as package (pytorch_lightning or lightning.pytorch)."""
    args = (str(acc),) if package == "pytorch_lightning" else (str(acc), "unified")
    r = Rec(pp, "lightning_fit.py", *args)
    nsteps = 16 // acc
    for line in ("training batches: 16 callback saw: 16", "optimizer steps: %d" % nsteps,
                 "user callbacks list unchanged: True", "val_loss finite: True"):
        check(line in r.out, "program output changed: " + r.out, r)
    adapter_installed(r)
    check(meta(r, "python.adapter." + package) == "installed",
          "lightning adapter: %r" % meta(r, "python.adapter." + package), r)
    check(meta(r, "python.adapter.%s.fetch" % package) is None,
          "steps not begun at the fetch: %r" % meta(r, "python.adapter.%s.fetch" % package), r)
    unit = meta(r, "python.step_unit")
    want = ("Lightning training batch" if acc == 1 else
            "Lightning optimizer step (accumulate_grad_batches=%d training batches)" % acc)
    check(unit == want, "step unit %r" % unit, r)
    steps = r.steps()
    check([s[3] for s in steps] == list(range(nsteps)), "steps %r" % [s[3] for s in steps], r)
    check(len(r.spans("step")) == nsteps, "open steps left: %r" % r.spans("step"), r)
    first = r.spans("first_step")
    check(len(first) == 1 and r.inside(steps[0], first[0]), "first step not marked", r)

    # set-up: the module's setup and configure_optimizers (with the optimizer's
    # own construction) inside one set-up phase, before the sanity check
    setup = named(r, "span", "Lightning set-up")
    check(len(setup) == 1, "set-up phases %r" % setup, r)
    msetup = named(r, "span", "LightningModule.setup")
    check(len(msetup) == 1 and r.inside(msetup[0], setup[0]), "LightningModule.setup %r" % msetup, r)
    build = [s for s in r.spans("model_build") if r.inside(s, msetup[0])]
    check([s[0] for s in build] == ["Sequential"], "model built in setup: %r" % build, r)
    conf = named(r, "optimizer_setup", "LightningModule.configure_optimizers")
    check(len(conf) == 1 and r.inside(conf[0], setup[0]), "configure_optimizers %r" % conf, r)
    adam = named(r, "optimizer_setup", "Adam")
    check(len(adam) == 1 and r.inside(adam[0], conf[0]), "Adam not built in configure_optimizers", r)

    # the sanity check: one validation pass of 2 batches, before any step
    sanity = named(r, "span", "Lightning sanity check")
    check(len(sanity) == 1 and sanity[0][1] >= setup[0][2] and sanity[0][2] <= steps[0][1],
          "sanity check %r" % sanity, r)
    sval = named(r, "span", "Lightning validation (sanity check)")
    check(len(sval) == 1 and r.inside(sval[0], sanity[0]), "sanity validation %r" % sval, r)
    fwd = [s for s in r.spans("forward") if s[2] is not None]
    check(len([f for f in fwd if r.inside(f, sval[0])]) == 2, "sanity check forwards", r)

    # epochs, validation passes apart from the steps
    epochs = [named(r, "span", "Lightning training epoch %d" % e) for e in (0, 1)]
    check(all(len(e) == 1 for e in epochs), "epoch phases %r" % epochs, r)
    epochs = [e[0] for e in epochs]
    val = named(r, "span", "Lightning validation")
    check(len(val) == 2, "validation phases: %d" % len(val), r)
    for e, v in zip(epochs, val):
        check(r.inside(v, e), "validation pass outside its epoch", r)
        check(len([f for f in fwd if r.inside(f, v)]) == 4, "validation forwards", r)
        mine = [s for s in steps if r.inside(s, e)]
        check(len(mine) == nsteps // 2, "epoch %s has %d steps" % (e[0], len(mine)), r)
    for s in steps:
        for v in val + sval:
            check(s[2] <= v[1] or v[2] <= s[1], "validation overlaps step %d" % s[3], r)
    # backward: Lightning runs training_step and backward inside
    # Optimizer.step(closure), where the PyTorch adapter records no backward
    # phase (its opt_depth gate); only accumulation's micro-batches that do
    # not step have one, outside the optimizer's step
    per_step(r, ("data_wait", "forward"))
    batches_in = [len([f for f in fwd if r.inside(f, s)]) for s in steps]
    check(batches_in == [acc] * nsteps, "training forwards per step %r" % batches_in, r)
    opt = [len([o for o in r.spans("optimizer_step") + adam_lazy(r) if r.inside(o, s)])
           for s in steps]
    check(opt == [1] * nsteps, "optimizer steps per step %r" % opt, r)

    # the steps tile the training loop: in each epoch, from its first
    # step's start to its last step's end, less validation passes in
    # between (the epoch's own start and end hooks, the checkpoint
    # Lightning saves after the last batch, are no step's: 94.8% of a whole
    # epoch once on a loaded machine, for a fit whose steps left no gap)
    loop = 0
    for e in epochs:
        mine = [s for s in steps if r.inside(s, e)]
        a, b = min(s[1] for s in mine), max(s[2] for s in mine)
        loop += (b - a) - sum(v[2] - v[1] for v in val if a <= v[1] and v[2] <= b)
    inside = sum(s[2] - s[1] for s in steps)
    check(inside >= 0.95 * loop, "steps cover %.1f%% of the training loop" % (100.0 * inside / loop), r)
    print("steps cover %.1f%% of the training loop (%.1f ms of %.1f ms)"
          % (100.0 * inside / loop, inside / 1e6, loop / 1e6))
    # The first step of a fit pays torch's and Lightning's one-time costs
    # (the first backward: 2.03 s against 248 ms later beside two busy
    # loops); on a loaded machine they stretch past first_step_slow's
    # thresholds, and what it says then is so. Nothing else may be claimed.
    bad = [f for f in r.findings() if f[1] in ("moderate", "high") and f[0] not in STARTUP
           and f[0] != "first_step_slow"]
    check(not bad, "moderate/high findings on a healthy fit: %r" % bad, r)


def adam_lazy(r):
    return named(r, "optimizer_setup", "Adam lazy state")


def case_lightning_fit(pp):
    lightning_fit(pp, 1)


def case_lightning_accumulate(pp):
    lightning_fit(pp, 2)


def case_lightning_unified(pp):
    """The same fit through the unified package's name, lightning.pytorch."""
    lightning_fit(pp, 1, "lightning.pytorch")


def case_lightning_raises(pp):
    """training_step raises at batch 5: the program's traceback and exit
    status, the 5 steps before it closed, the broken one left open."""
    r = Rec(pp, "lightning_raises.py", expect_rc=1)
    check(r.out == "fitting\n", "program output changed: %r" % r.out, r)
    p = subprocess.run([PY, os.path.join(HERE, "progs", "lightning_raises.py")], capture_output=True,
                       text=True, timeout=300)
    want = traceback_of(p.stderr)
    check("RuntimeError: bad batch at step 5" in want, "plain run: " + p.stderr[-800:])
    got = traceback_of(r.err)
    check(got == want, "traceback differs under record:\n%s\n--- plain:\n%s" % (got, want))
    check(meta(r, "python.adapter.pytorch_lightning") == "installed", "lightning adapter", r)
    steps = r.steps()
    check([s[3] for s in steps] == list(range(5)), "closed steps %r" % [s[3] for s in steps], r)
    open_ = [s for s in r.spans("step") if s[2] is None]
    check([s[3] for s in open_] == [5], "open steps %r" % open_, r)
    check(r.one("SELECT COUNT(*) FROM marks m JOIN strings s ON s.id = m.name_id WHERE m.run_id = ? "
                "AND s.value = 'Lightning fit raised RuntimeError'", r.run) == 1, "no mark", r)
    st, code = r.rows("SELECT status, exit_code FROM runs WHERE id = ?", r.run)[0]
    check(code == 1, "exit code %r (status %r)" % (code, st))


# torch.compile (torch 2 only). A fresh Inductor cache folder per recording
# (TORCHINDUCTOR_CACHE_DIR) keeps the facts those of a cold start. Recorded
# once with a warm cache, compile_break had the same frames, graph-break and
# recompile marks, but no aot_autograd/inductor phases (AOTAutograd's cache
# hit skips them; capture and a short c++ compile phase, the cached module's
# load, remain) and the counters read 3 FX graph / 3 AOTAutograd cache hits,
# 0 misses: the cache assertions below would fail there.
COMPILE_ENV = {"TORCHINDUCTOR_CACHE_DIR": "@DIR/inductor-cache"}


def compile_spans(r, prefix):
    return [s for s in r.spans("compile") if s[0].startswith(prefix)]


def case_compile_shapes(pp):
    r = Rec(pp, "compile_shapes.py", env=COMPILE_ENV)
    check("trained 12 steps over 6 batch sizes" in r.out, "program output changed: " + r.out)
    adapter_installed(r)
    check(r.meta("python.adapter.torch._dynamo") == "installed",
          "torch._dynamo adapter: %r" % r.meta("python.adapter.torch._dynamo"), r)
    steps = r.steps()
    check([s[3] for s in steps] == list(range(12)), "steps %r" % [s[3] for s in steps], r)
    # the decorator's line: the code object's first line
    frame = "loss_fn (compile_shapes.py:27)"
    comp = compile_spans(r, "compile ")
    check([c[0] for c in comp] == ["compile " + frame] * 6,
          "outermost compile phases: %r" % [c[0] for c in comp], r)
    # one compile per new batch size, each inside the step that met the size
    for i, c in enumerate(comp):
        check(r.inside(c, steps[i]), "compile %d not inside step %d: %r %r" % (i, i, c, steps[i]), r)
    for s in steps[6:]:
        check(not any(r.inside(c, s) for c in r.spans("compile")),
              "a compile in step %d (sizes seen before)" % s[3], r)
    for stage in ("dynamo capture ", "aot_autograd "):
        st = compile_spans(r, stage + frame)
        check(len(st) == 6 and all(any(r.inside(x, c) for c in comp) for x in st),
              "%s phases: %r" % (stage, st), r)
    re = r.marks("torch.compile recompile: ")
    check(len(re) == 5, "recompile marks: %r" % re, r)
    sizes = [8, 12, 16, 20, 24, 28]
    for k, m in enumerate(re):
        check(m.startswith("torch.compile recompile: %s #%d: " % (frame, k + 2)), "mark %r" % m)
        # the guard names the input and the dimension that changed
        check("tensor 'x' size mismatch at index 0. expected %d, actual %d"
              % (sizes[k], sizes[k + 1]) in m, "guard reason %r" % m)
    check(r.counter("torch.compile.recompiles")[-1] == 5, "recompiles counter %r"
          % r.counter("torch.compile.recompiles"))
    check(r.counter("torch.compile.frames")[-1] == 6, "frames counter")
    check(not r.marks("torch.compile graph break: "), "graph breaks: %r"
          % r.marks("torch.compile graph break: "), r)
    f = r.finding("recompile_storm")
    check(f is not None, "no recompile_storm finding", r)
    check("recompiled %s 5 times (6 compiles," % frame in f[2], "storm title: " + f[2])
    check("tensor 'x' size mismatch at index 0. expected 8, actual 12" in f[3] and
          "expected 24, actual 28" in f[3] and "inside steps 0 to 5" in f[3],
          "storm evidence: " + f[3])
    check(f[1] in ("moderate", "high"), "storm severity %s" % f[1])
    f = r.finding("first_step_compile")
    check(f is not None and "(1 frame)" in f[2], "first_step_compile: %r" % (f,), r)
    check(r.finding("first_step_slow") is None, "first_step_slow beside first_step_compile", r)


def case_compile_break(pp):
    r = Rec(pp, "compile_break.py", env=COMPILE_ENV)
    check("predictions: 10, finite: True" in r.out, "program output changed: " + r.out)
    check(r.meta("python.adapter.torch._dynamo") == "installed", "torch._dynamo adapter", r)
    steps = r.steps()
    check([s[3] for s in steps] == list(range(10)), "steps %r" % [s[3] for s in steps], r)
    # the module's call breaks at .item(); Dynamo then compiles forward on
    # its own (it breaks again) and the resume function after the break
    frames = ["Gated.__call__ (compile_break.py:18)", "Gated.forward (compile_break.py:18)",
              "Gated.torch_dynamo_resume_in_forward_at_20 (compile_break.py:20)"]
    comp = compile_spans(r, "compile ")
    names = [c[0][8:] for c in comp]
    check(names == frames + frames[2:], "compiled frames: %r" % names, r)
    check(all(r.inside(c, steps[0]) for c in comp[:3]), "first compiles outside step 0", r)
    # .item()'s value is guarded as a constant: the resume function
    # recompiles once in step 1 (then Dynamo makes it dynamic)
    check(r.inside(comp[3], steps[1]), "the recompile is not in step 1", r)
    re = r.marks("torch.compile recompile: ")
    check(len(re) == 1 and re[0].startswith("torch.compile recompile: %s #2: " % frames[2])
          and "if h.mean().item() > 0.0" in re[0], "recompile marks %r" % re, r)
    for stage in ("dynamo capture ", "aot_autograd ", "inductor lowering ", "inductor codegen ",
                  "c++ compile "):
        sp = compile_spans(r, stage + frames[1])
        check(sp and all(r.inside(x, comp[1]) for x in sp), "no %sphase in %s" % (stage, frames[1]), r)
    gb = r.marks("torch.compile graph break: ")
    check(len(gb) == 2 and all(g.startswith("torch.compile graph break: %s: Unsupported Tensor.item() "
                                            "call with capture_scalar_outputs=False" % f)
                               and g.endswith(" at compile_break.py:20 (x1)") for g, f in zip(gb, frames)),
          "graph break marks (each with the line of the .item() call): %r" % gb, r)
    check(r.counter("torch.compile.graph_breaks")[-1] == 2, "graph_breaks counter")
    check(r.counter("torch.compile.recompiles")[-1] == 1, "recompiles counter")
    # cold cache: the two graphs miss; the recompiled graph is the same, a hit
    miss = r.counter("torch.compile.fx_graph_cache_misses")
    hit = r.counter("torch.compile.fx_graph_cache_hits")
    check(miss[-1] == 2 and hit[-1] == 1 and hit[2] == 0,
          "FX graph cache: misses %r, hits %r" % (miss, hit), r)
    check(r.finding("recompile_storm") is None, "recompile storm on one recompile", r)
    f = r.finding("first_step_compile")
    check(f is not None, "no first_step_compile finding", r)
    check("compilation: torch.compile took" in f[2] and "(3 frames)" in f[2], "title " + f[2])
    check("c++ compile" in f[3] and "0 hits, 2 misses (cold start)" in f[3] and
          "2 graph breaks" in f[3], "evidence " + f[3])
    check(r.finding("first_step_slow") is None, "first_step_slow beside first_step_compile", r)


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    try:
        subprocess.run([PY, "-c", "import torch"], check=True, capture_output=True)
    except Exception:
        print("SKIP: %s cannot import torch" % PY)
        sys.exit(77)
    CASES[sys.argv[2]](sys.argv[1])
    print("ok", sys.argv[2])
