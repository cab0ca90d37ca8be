"""A compiled loss function fed six batch sizes, twice over, in a training
loop: with dynamic=False every new batch size fails the guard on x's first
dimension and recompiles (5 recompiles); the second round reuses them.
backend="aot_eager" (Dynamo capture + AOTAutograd, no Inductor C++ build)
keeps the test quick; the recompiles are the same with Inductor."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.b = nn.Linear(32, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)


@torch.compile(backend="aot_eager", dynamic=False)
def loss_fn(x, y):
    return nn.functional.cross_entropy(model(x), y)


sizes = [8, 12, 16, 20, 24, 28]
for step in range(12):
    b = sizes[step % len(sizes)]
    x = torch.randn(b, 16)
    y = torch.randint(0, 4, (b,))
    opt.zero_grad()
    loss = loss_fn(x, y)
    loss.backward()
    opt.step()
print("trained 12 steps over %d batch sizes" % len(sizes))
