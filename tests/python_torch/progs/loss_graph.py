"""A loss accumulated with its graph: every step's autograd graph (and its
saved activations) stays alive through total_loss. backward keeps the
graph's saved tensors (retain_graph=True, as programs do to silence "Trying
to backward through the graph a second time"): without it torch 2 frees
them in backward and only the graph's nodes (a few hundred bytes a step)
stay, so memory does not grow there (torch 1.13 kept ~2.4 MiB a step
either way)."""
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
    loss.backward(retain_graph=True)  # "to be safe": keeps every graph total_loss holds
    opt.step()
    total_loss += loss  # the bug: should be loss.item()
print("mean loss:", float(total_loss) / 30)
