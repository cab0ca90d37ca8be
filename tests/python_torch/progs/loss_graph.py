"""A loss accumulated with its graph: every step's autograd graph (and its
saved activations) stays alive through total_loss."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                      nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 256)
y = torch.randint(0, 10, (256,))
total_loss = 0
for step in range(30):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    total_loss += loss  # the bug: should be loss.item()
print("mean loss:", float(total_loss) / 30)
