"""A loop that raises in the middle of its sixth step."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8)
for step in range(10):
    opt.zero_grad()
    out = model(x)
    if step == 5:
        raise RuntimeError("bad batch at step 5")
    out.sum().backward()
    opt.step()
