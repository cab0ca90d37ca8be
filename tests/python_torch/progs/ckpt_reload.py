"""A checkpoint saved and reloaded mid-training: one jump in resident
memory (the loaded state dict and the allocator's new pages), flat before
and after. Not a leak."""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
path = sys.argv[1]
model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                      nn.Linear(2048, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(64, 512)
y = torch.randint(0, 10, (64,))
keep = None
for step in range(60):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    if step == 30:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
        keep = torch.load(path)  # kept: the resumed-from copy
        model.load_state_dict(keep["model"])
        opt.load_state_dict(keep["opt"])
print("steps: 60, reloaded at 30:", keep is not None)
