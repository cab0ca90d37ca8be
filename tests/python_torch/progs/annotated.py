"""A loop annotated with phaseprof.step() that also has an optimizer: the
program's own steps count, never doubled; it runs plainly too."""
import phaseprof
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Linear(32, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
y = torch.randint(0, 10, (16,))
for i in range(15):
    with phaseprof.step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
print("steps: 15, enabled:", phaseprof.enabled())
