"""Records one small PyTorch program under `phaseprof record` and asserts
exact facts about the recording (spans, counters, findings, runs).

usage: check.py PHASEPROF CASE [PYTHON]   (cases: see CASES at the end)
PYTHON is the interpreter the programs run with: /usr/bin/python3 (Debian's
torch 1.13) unless given (the torch-2 venv's python for torch 2.13).
Exit 0 when every assertion holds, 77 when torch is missing (skip), else 1.
"""
import os
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.argv[3] if len(sys.argv) > 3 else "/usr/bin/python3"


class Rec:
    """One recording: the program's output and the database."""

    def __init__(self, phaseprof, prog, *args, expect_rc=0, opts=()):
        self.dir = tempfile.mkdtemp(prefix="pp-torch-")
        self.db = os.path.join(self.dir, "run.db")
        cmd = [phaseprof, "record", "-o", self.db] + list(opts) + ["--", PY,
               os.path.join(HERE, "progs", prog)] + [a.replace("@DIR", self.dir) for a in args]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=self.dir, timeout=300)
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

    def findings(self):
        return self.rows("SELECT rule, severity, title, evidence FROM findings WHERE run_id = ?",
                         self.run)

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
    per_step(r, ("data_wait", "forward", "backward"))
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
    check(r.finding("iteration_time_grows") is None, "growth finding on the fixed twin", r)
    healthy(r)


def case_loss_graph(pp):
    r = Rec(pp, "loss_graph.py")
    check(len(r.steps()) == 30, "steps: %d" % len(r.steps()), r)
    f = r.finding("memory_grows_per_step")
    check(f is not None and f[1] in ("moderate", "high"), "no memory growth finding", r)


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
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
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


def case_raises_forward(pp):
    r = Rec(pp, "raises_forward.py", expect_rc=1)
    p = subprocess.run([PY, os.path.join(HERE, "progs", "raises_forward.py")], capture_output=True,
                       text=True, timeout=300)
    want = traceback_of(p.stderr)
    check("ValueError: shape mismatch in call 4" in want, "plain run: " + p.stderr[-800:])
    got = traceback_of(r.err)
    check(got == want, "traceback differs under record:\n%s\n--- plain:\n%s" % (got, want))
    check(numbers(r) == list(range(3)), "closed steps %r" % numbers(r), r)


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    try:
        subprocess.run([PY, "-c", "import torch"], check=True, capture_output=True)
    except Exception:
        print("SKIP: %s cannot import torch" % PY)
        sys.exit(77)
    CASES[sys.argv[2]](sys.argv[1])
    print("ok", sys.argv[2])
