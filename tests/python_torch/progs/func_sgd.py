"""torch.func: per-sample gradients (DP-SGD style, vmap over grad) and a
functional update, no torch.optim, no backward()."""
import torch
import torch.nn as nn
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
params = {k: v.detach() for k, v in model.named_parameters()}


def loss_fn(p, x, y):
    out = functional_call(model, p, (x.unsqueeze(0),))
    return nn.functional.cross_entropy(out, y.unsqueeze(0))


per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))
x = torch.randn(32, 16)
y = torch.randint(0, 4, (32,))
for i in range(12):
    g = per_sample(params, x, y)
    params = {k: v - 0.1 * g[k].clamp(-1, 1).mean(0) for k, v in params.items()}
print("updates: 12")
