"""A training loop that closes every descriptor above stderr in the middle
(a daemon's close loop), then opens a file: the numbers it sees and the
descriptors below the agent's range must be a plain run's. The agent keeps
/proc/self/statm open for the per-step RSS counter, high and
close-on-exec; closed behind its back it opens it again."""
import os
import resource

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


def low_fds(limit):
    d = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
    try:
        return sorted(int(n) for n in os.listdir(d) if int(n) < limit and int(n) != d)
    finally:
        os.close(d)


model = nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 8), torch.randn(16, 2)
soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
limit = min(soft if soft != resource.RLIM_INFINITY else 4096, 4096)
for i in range(12):
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    if i == 5:
        for fd in range(3, limit):
            try:
                os.close(fd)
            except OSError:
                pass
fd = os.open("/dev/null", os.O_RDONLY)
print("first free descriptor: %d" % fd)
# the agent's descriptors live from 1000 up, or from 3/4 of a limit <= 4096
floor = 1000 if soft == resource.RLIM_INFINITY or soft > 4096 else soft * 3 // 4
print("descriptors below %d: %r" % (floor, low_fds(floor)))
