"""Benchmark program: a training loop with ~5 ms steps on torch CPU.

An MLP (256 -> 512 -> 256 -> 10) trained with Adam from a DataLoader
(batch 64, num_workers=0), one intra-op thread, STEPS steps (argv[1],
default 200) after 5 warm-up steps. It writes one line to the file named by
$PP_BENCH_OUT (if set): "LOOP_WALL_S LOOP_CPU_S STEPS", the wall and
process CPU time of the measured loop only, so that a profiler's start-up
and its work after the program (writing its output) are told apart from
what it adds to every step.

argv[2] == "torch-profiler": the loop runs inside
torch.profiler.profile(activities=[CPU]) (no shapes, no memory, no stack),
as a user profiling the loop with PyTorch's own profiler would; the trace
is exported to $PP_BENCH_TRACE when set (its cost is counted in the
whole-run time, not in the loop's)."""
import contextlib
import os
import sys
import time

import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
mode = sys.argv[2] if len(sys.argv) > 2 else ""
torch.manual_seed(0)
torch.set_num_threads(1)
torch.set_num_interop_threads(1)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                      nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
n = (steps + 5) * 64
data = torch.utils.data.TensorDataset(torch.randn(n, 256), torch.randint(0, 10, (n,)))
loader = torch.utils.data.DataLoader(data, batch_size=64)

if mode == "torch-profiler":
    from torch.profiler import ProfilerActivity, profile
    ctx = profile(activities=[ProfilerActivity.CPU])
else:
    ctx = contextlib.nullcontext()

with ctx as prof:
    t0 = c0 = None
    for i, (x, y) in enumerate(loader):
        if i == 5:
            t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0

out = os.environ.get("PP_BENCH_OUT")
if out:
    with open(out, "w") as f:
        f.write("%.6f %.6f %d\n" % (wall, cpu, steps))
if mode == "torch-profiler" and os.environ.get("PP_BENCH_TRACE"):
    prof.export_chrome_trace(os.environ["PP_BENCH_TRACE"])
