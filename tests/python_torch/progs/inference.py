"""An inference loop, no optimizer: 15 batches under torch.no_grad()."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).eval()
model(torch.randn(2, 32))  # a shape check with gradients on: not a step
with torch.no_grad():
    for i in range(15):
        pred = model(torch.randn(16, 32)).argmax(1)
print("predictions:", pred.shape[0])
