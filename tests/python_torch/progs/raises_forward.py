"""An exception raised inside forward (a model called from a helper): the
traceback must be the one a plain run prints."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 4:
            raise ValueError("shape mismatch in call %d" % self.calls)
        return self.fc(x)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8)


def train_step():
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()


for step in range(10):
    train_step()
