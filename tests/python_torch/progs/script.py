"""A TorchScript model trained 20 steps: scripted before the loop, its
profiling executor optimises the graph during the first runs."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 128)
        self.b = nn.Linear(128, 10)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)) * 0.5 + 0.1)


model = torch.jit.script(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 64)
y = torch.randint(0, 10, (64,))
for step in range(20):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("scripted:", type(model).__name__)
