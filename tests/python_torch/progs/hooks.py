"""A per-step growth bug: a forward hook registered in every step (argv[1]
== "bug"), or once before the loop ("fixed")."""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
bug = sys.argv[1] == "bug"
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
stats = []


def log_activations(module, inputs, output):
    # what a per-step logging hook does: statistics of the output
    stats.append((output.mean().item(), output.std().item(), output.abs().max().item()))


if not bug:
    model.register_forward_hook(log_activations)
x = torch.randn(32, 64)
y = torch.randint(0, 10, (32,))
for step in range(60):
    if bug:
        model.register_forward_hook(log_activations)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("hook calls:", len(stats))
