"""Gradient accumulation: 4 micro-batches per optimizer step, a scheduler."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
data = torch.utils.data.TensorDataset(torch.randn(12 * 4 * 16, 32), torch.randint(0, 10, (12 * 4 * 16,)))
loader = torch.utils.data.DataLoader(data, batch_size=16)
ACCUM = 4
updates = 0
for i, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y) / ACCUM
    loss.backward()
    if (i + 1) % ACCUM == 0:
        opt.step()
        opt.zero_grad()
        sched.step()
        updates += 1
print("optimizer steps:", updates)
