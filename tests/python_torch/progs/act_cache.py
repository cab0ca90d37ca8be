"""A per-step activation cache: a forward hook keeps a copy of every step's
hidden activations in a list that nothing ever empties (256 x 1024 float32
= 1.0 MiB kept per step)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(128, 1024), nn.ReLU(), nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
cache = []


def cache_hook(module, inputs, output):
    cache.append(output.detach().clone())  # kept forever: the leak


model[1].register_forward_hook(cache_hook)
x = torch.randn(256, 128)
y = torch.randint(0, 10, (256,))
for step in range(40):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
print("cached:", len(cache))
