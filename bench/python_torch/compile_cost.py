"""What the torch.compile adapter adds to compile time, measured directly.

Run under `phaseprof record` with torch 2.x (the torch-2 venv's python):
    phaseprof record -o /tmp/c.db -- /opt/phaseprof-venv/torch2/bin/python \\
        bench/python_torch/compile_cost.py [ROUNDS]

A small model's forward is compiled from scratch (torch._dynamo.reset()
before each) with backend="aot_eager" (Dynamo capture and AOTAutograd all
on this thread; Inductor's C++ build would only add time the adapter does
not touch), alternately with the adapter's two ChromiumEventLogger wrappers
and with the originals put back. Thread CPU time per compile, medians over
ROUNDS pairs: on a loaded machine the wall clock measures the neighbours.
Also prints the events per compile, the wrapper's cost per event, and the
adapter's own work per compile (thread CPU time inside its hooks): the
figure that does not drown in a loaded machine's noise.
"""
import sys
import time

import torch
import torch._dynamo
import torch._dynamo.utils as U

torch.set_num_threads(1)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
cls = U.ChromiumEventLogger
wrapped = (cls.__dict__["log_event_start"], cls.__dict__["log_event_end"])
if not getattr(wrapped[0], "_phaseprof", False):
    print("compile_cost: the torch.compile adapter is not installed (run under phaseprof record)")
    sys.exit(0)
ad = sys.modules["phaseprof.adapters.torch_compile"]
orig = tuple(w.__closure__[0].cell_contents for w in wrapped)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.b = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x))).sum()


net = Net()
x = torch.randn(8, 16)
events = [0]


def count(fn):
    def c(self, *a, **k):
        events[0] += 1
        return fn(self, *a, **k)
    return c


def compile_once(pair):
    cls.log_event_start, cls.log_event_end = pair
    torch._dynamo.reset()
    f = torch.compile(net.forward, backend="aot_eager")
    t = time.thread_time_ns()
    f(x).backward()
    return time.thread_time_ns() - t


compile_once(wrapped)  # first compile: imports and lazy set-up
# the adapter's own time inside the wrappers (its _on_start / _on_end work,
# which every recorded and ignored event reaches through _safe_call)
own = [0]
safe = ad._safe_call


def timed_safe_call(fn, *a):
    t = time.thread_time_ns()
    safe(fn, *a)
    own[0] += time.thread_time_ns() - t


ad._safe_call = timed_safe_call
on, off = [], []
for i in range(rounds):
    for w in ((wrapped, on), (orig, off)) if i % 2 else ((orig, off), (wrapped, on)):
        w[1].append(compile_once(w[0]))
ad._safe_call = safe
cls.log_event_start, cls.log_event_end = count(orig[0]), count(orig[1])
torch._dynamo.reset()
torch.compile(net.forward, backend="aot_eager")(x).backward()
per_compile = events[0]
cls.log_event_start, cls.log_event_end = wrapped


def med(v):
    v = sorted(v)
    return v[len(v) // 2]


# The wrapper's own cost per event: a start/end pair of an event the
# adapter records (its phase begin/end included) and of one it ignores.
class L(cls):
    def __init__(self):
        import threading
        self.tls = threading.local()


lg = L()
n = 2000
ad._tls.s = [("dynamo", "bench", "compile", 0)]  # inside a compile: stages are recorded
for name in ("GraphLowering.run", "pass.post_grad_passes.remove_noop_ops"):
    t = time.thread_time_ns()
    for _ in range(n):
        lg.log_event_start(name, 0, {})
        lg.log_event_end(name, 0, {}, 0, False)
    w = (time.thread_time_ns() - t) / n
    cls.log_event_start, cls.log_event_end = orig
    t = time.thread_time_ns()
    for _ in range(n):
        lg.log_event_start(name, 0, {})
        lg.log_event_end(name, 0, {}, 0, False)
    o = (time.thread_time_ns() - t) / n
    cls.log_event_start, cls.log_event_end = wrapped
    print("event pair %-40s %6.1f us wrapped, %6.1f us original: +%.1f us"
          % (name, w / 1e3, o / 1e3, (w - o) / 1e3))
ad._tls.s = []
a, b = med(on), med(off)
print("compile (aot_eager, thread CPU, median of %d): %.1f ms with the adapter, %.1f ms without: "
      "%.2fx; %d chromium event calls per compile" % (rounds, a / 1e6, b / 1e6, a / b, per_compile))
print("adapter's own work: %.0f us per compile = %.3f%% of the compile (%.1f ms)"
      % (own[0] / rounds / 1e3, 100.0 * own[0] / rounds / a, a / 1e6))
