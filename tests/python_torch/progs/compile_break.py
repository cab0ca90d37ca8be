"""A compiled model (Inductor) whose forward branches on a tensor's value
(``.item()``): Dynamo breaks the graph there and runs the branch in eager
Python, compiling the code before and after it as two graphs. Inference,
ten batches of one shape: the compiles all fall in the first step."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.b = nn.Linear(32, 4)

    def forward(self, x):
        h = torch.relu(self.a(x))
        if h.mean().item() > 0.0:
            h = h * 2.0
        return self.b(h)


model = torch.compile(Gated())
total = 0.0
with torch.no_grad():
    for i in range(10):
        total += float(model(torch.randn(8, 16)).sum())
print("predictions: 10, finite:", total == total)
