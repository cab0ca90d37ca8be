"""A CPU loop with torch.cuda made to look initialised (no GPU here): its
memory_allocated grows 8 MB a step, as a loss kept with its graph on a GPU
does; memory_reserved steps up in 20 MB blocks. The adapter must record
both per step and gpu_memory_grows_per_step must say it. Patched before
the loop, as a test double; the adapter calls through torch.cuda's
attributes at each step's end."""
import torch
import torch.nn as nn

state = {"allocated": 1 << 30}
torch.cuda.is_initialized = lambda: True
torch.cuda.memory_allocated = lambda device=None: state["allocated"]
torch.cuda.memory_reserved = lambda device=None: (state["allocated"] // (20 << 20) + 1) * (20 << 20)

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 64)
y = torch.randint(0, 10, (64,))
total = 0.0
for step in range(24):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    state["allocated"] += 8 << 20
    total += loss.item()
print("steps: 24, mean loss finite:", total == total)
