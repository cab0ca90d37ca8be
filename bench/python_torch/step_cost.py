"""Per-step cost of the PyTorch adapter's step tracking, measured directly.

Run under `phaseprof record`. A training loop whose framework work is as
small as it gets (a DataLoader over a range, a module returning its input,
a one-element backward, SGD on one parameter) runs in blocks of steps,
alternately with the adapter's wrappers and with the original functions
put back (functools.wraps keeps them as __wrapped__). The per-step
difference is what the adapter adds to every step: its wrappers, step
begin/end, the phases inside, the five counters, hook and graph counting.
Thread CPU time, medians of many short blocks: on a loaded machine the wall
clock mostly measures the neighbours."""
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
N = 200


def block():
    loader = torch.utils.data.DataLoader(range(N), batch_size=None)
    t = time.thread_time_ns()
    for x in loader:
        opt.zero_grad()
        model(x).backward()
        opt.step()
    return (time.thread_time_ns() - t) / N


on, off = [], []
for rep in range(41):
    for o, a, w in wrapped:
        setattr(o, a, w)
    on.append(block())
    for o, a, w in wrapped:
        setattr(o, a, w.__wrapped__)
    off.append(block())
for o, a, w in wrapped:
    setattr(o, a, w)
on.sort()
off.sort()
a, b = on[len(on) // 2], off[len(off) // 2]
print("adapter per step: %.1f us (minimal step %.1f us with, %.1f us without; %.2f%% of a 5 ms step)"
      % ((a - b) / 1e3, a / 1e3, b / 1e3, 100 * (a - b) / 5e6))
