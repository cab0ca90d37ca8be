"""Epochs of training with a validation pass after each, in one frame."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
train = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.randn(8 * 16, 32), torch.randint(0, 10, (8 * 16,))), batch_size=16)
val = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.randn(4 * 16, 32), torch.randint(0, 10, (4 * 16,))), batch_size=16)
for epoch in range(3):
    model.train()
    for x, y in train:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val:
            correct += int((model(x).argmax(1) == y).sum())
print("epochs: 3")
