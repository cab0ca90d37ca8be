"""Inference with two module calls per batch (backbone, then head)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
backbone = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU()).eval()
head = nn.Linear(256, 10).eval()
data = torch.utils.data.TensorDataset(torch.randn(24 * 8, 64))
loader = torch.utils.data.DataLoader(data, batch_size=8)
n = 0
with torch.no_grad():
    for (x,) in loader:
        feats = backbone(x)
        pred = head(feats).argmax(1)
        n += 1
print("batches:", n)
