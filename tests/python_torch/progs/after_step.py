"""A running metric computed after optimizer.step() over every prediction
so far: its cost grows with the iteration number, outside the textbook
forward/backward/step."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 32)
y = torch.randint(0, 10, (64,))
history = []
for i in range(150):
    opt.zero_grad()
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    loss.backward()
    opt.step()
    # the running metric: every prediction so far, re-scored each iteration
    history.append(out.detach().repeat(40, 1))
    scores = torch.cat(history).softmax(1).max(1).values
    running = float(scores.mean())
print("iterations: %d, running metric finite: %s" % (len(history), running == running))
