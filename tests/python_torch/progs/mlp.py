"""A healthy training loop: an MLP trained 20 steps from a DataLoader."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)


model = MLP()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
lossf = nn.CrossEntropyLoss()
data = torch.utils.data.TensorDataset(torch.randn(20 * 64, 64), torch.randint(0, 10, (20 * 64,)))
loader = torch.utils.data.DataLoader(data, batch_size=64)
for x, y in loader:
    opt.zero_grad()
    loss = lossf(model(x), y)
    loss.backward()
    opt.step()
print("trained 20 steps, loss finite:", bool(torch.isfinite(loss)))
