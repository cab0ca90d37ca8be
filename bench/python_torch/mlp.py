"""Benchmark program: an MLP trained 20 Adam steps from a DataLoader.
argv[1] == "profiler": the loop runs inside torch.profiler.profile()
(default activities, no shapes), as a user profiling it would."""
import contextlib
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                      nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
data = torch.utils.data.TensorDataset(torch.randn(20 * 64, 256), torch.randint(0, 10, (20 * 64,)))
loader = torch.utils.data.DataLoader(data, batch_size=64)
ctx = torch.profiler.profile() if sys.argv[1:] == ["profiler"] else contextlib.nullcontext()
with ctx:
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
