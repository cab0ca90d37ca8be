"""Per-step cost of the PyTorch adapter's step tracking, measured directly.

Run under `phaseprof record`. A training loop whose framework work is as
small as it gets (a DataLoader over a range, a module returning its input,
a one-element backward, SGD on one parameter) runs in blocks of N steps,
alternately in four set-ups:

  off        the original functions put back (functools.wraps keeps them
             as __wrapped__): no adapter at all
  wrappers   the adapter's wrappers with their phases, the loop tracker
             (phaseprof/_loop.py) made a no-op: no step is drawn
  no counters  wrappers + loop tracker + step begin/end, without the five
             per-step counters written before each step ends
  on         everything the adapter adds to every step: wrappers, the loop
             tracker, step begin/end, the phases inside, the five counters
             (allocations, RSS, hooks, graph nodes)

Thread CPU time, medians of many short blocks: on a loaded machine the wall
clock mostly measures the neighbours. Each "on" block must draw one step
per iteration (checked). The cost is compared with a 1 ms step (target
<= 1 %, issue 25) and a 5 ms one.

  step_cost.py [--profile]   --profile: cProfile of "on" blocks, the
                             adapter's and tracker's functions by own time
"""
import sys
import time

import torch
import torch.nn as nn
import torch.utils.data.dataloader as dl

torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return self.w * x


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.0)
targets = [(nn.Module, "__call__"), (torch.autograd, "backward"),
           (dl._BaseDataLoaderIter, "__next__"), (torch.optim.SGD, "step")]
wrapped = [(o, a, getattr(o, a)) for o, a in targets]
if not all(hasattr(w, "__wrapped__") for _, _, w in wrapped):
    raise SystemExit("step_cost.py: the adapter is not installed (run it under phaseprof record)")
from phaseprof import _loop, _steps  # noqa: E402  (the adapter's modules, as installed by record)
from phaseprof.adapters import torch as adapter  # noqa: E402

N = 200
real_event = _loop.event
counters = adapter._on_step_end


def block():
    loader = torch.utils.data.DataLoader(range(N), batch_size=None)
    t = time.thread_time_ns()
    for x in loader:
        opt.zero_grad()
        model(x).backward()
        opt.step()
    return (time.thread_time_ns() - t) / N


def setup(mode):
    for o, a, w in wrapped:
        setattr(o, a, w.__wrapped__ if mode == "off" else w)
    _loop.event = (lambda *a, **k: None) if mode == "wrappers" else real_event
    if mode == "no counters":
        if counters in _steps.on_end:
            _steps.on_end.remove(counters)
    elif counters not in _steps.on_end:
        _steps.on_end.append(counters)


modes = ["off", "wrappers", "no counters", "on"]
if sys.argv[1:] == ["--profile"]:
    import cProfile
    import pstats
    setup("on")
    block()
    p = cProfile.Profile()
    p.enable()
    for _ in range(20):
        block()
    p.disable()
    setup("on")
    st = pstats.Stats(p)
    st.sort_stats("tottime")
    print("cProfile of 20 blocks of %d steps with the adapter on (own time; cProfile inflates "
          "every Python call alike):" % N)
    st.print_stats(r"phaseprof", 25)
    raise SystemExit(0)

t = {m: [] for m in modes}
steps = []
for rep in range(41):
    for m in modes:
        setup(m)
        n0 = _steps.number
        t[m].append(block())
        if m == "on" and rep:
            steps.append(_steps.number - n0)
setup("on")
med = {m: sorted(v)[len(v) // 2] for m, v in t.items()}
q = {m: (sorted(v)[len(v) // 4], sorted(v)[3 * len(v) // 4]) for m, v in t.items()}
best = {m: min(v) for m, v in t.items()}
add = med["on"] - med["off"]
steps.sort()
print("minimal step, thread CPU per step (median of %d blocks of %d steps; [quartiles]; best block):"
      % (len(t["on"]), N))
for m in modes:
    print("  %-12s %7.1f us  [%.1f-%.1f]  best %.1f us"
          % (m, med[m] / 1e3, q[m][0] / 1e3, q[m][1] / 1e3, best[m] / 1e3))
print("  steps drawn per block of %d iterations: median %d (min %d, max %d)"
      % (N, steps[len(steps) // 2], steps[0], steps[-1]))
print("adapter per step: %.1f us = %.2f%% of a 1 ms step (target <= 1%%), %.2f%% of a 5 ms step"
      % (add / 1e3, 100 * add / 1e6, 100 * add / 5e6))
print("  of which wrappers and phases %.1f us, loop tracker and step begin/end %.1f us, "
      "per-step counters %.1f us"
      % ((med["wrappers"] - med["off"]) / 1e3, (med["no counters"] - med["wrappers"]) / 1e3,
         (med["on"] - med["no counters"]) / 1e3))
print("  best blocks: adapter %.1f us per step = %.2f%% of a 1 ms step"
      % ((best["on"] - best["off"]) / 1e3, 100 * (best["on"] - best["off"]) / 1e6))

# The same tracking with warm caches: the four events of one iteration and
# one step boundary (per-step counters included) in a tight loop, no torch
# work between them. What the tracker itself executes; the blocks above add
# what a real step's torch work does to its caches.
setup("on")


def events(n, f):
    for _ in range(n):
        f(_loop.DATA, sys._getframe(0), 7)
        f(_loop.FORWARD, sys._getframe(0))
        f(_loop.BACKWARD, sys._getframe(0))
        f(_loop.OPTIMIZER, sys._getframe(0))


def warm(f):
    events(300, f)
    r = []
    for _ in range(9):
        t0 = time.thread_time_ns()
        events(1000, f)
        r.append((time.thread_time_ns() - t0) / 1000)
    return sorted(r)[4]


# the loop is learned anew, here
_loop.set_completing(_loop.FORWARD)
_loop.set_completing(_loop.OPTIMIZER)
n0 = _steps.number
on, off = warm(adapter._event), warm(lambda *a: None)
print("warm caches: 4 events and one step boundary per iteration %.1f us (%.2f%% of a 1 ms step; "
      "%d steps drawn for %d iterations)" % ((on - off) / 1e3, (on - off) / 1e4, _steps.number - n0,
                                            9 * 1000 + 300))
