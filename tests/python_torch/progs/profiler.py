"""A program that runs torch.profiler itself around its 10 steps."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.Adam(model.parameters())
x = torch.randn(16, 32)
y = torch.randint(0, 10, (16,))
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    for step in range(10):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
names = {e.key for e in prof.key_averages()}
print("profiler saw Optimizer.step:", any(n.startswith("Optimizer.step#Adam") for n in names))
print("profiler saw aten::addmm:", "aten::addmm" in names)
