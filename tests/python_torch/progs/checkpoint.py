"""A checkpoint saved, then loaded back with torch.load and load_state_dict."""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
path = sys.argv[1]
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
torch.save(model.state_dict(), path)
fresh = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
state = torch.load(path)
fresh.load_state_dict(state)
print("same:", all(torch.equal(a, b) for a, b in zip(model.parameters(), fresh.parameters())))
