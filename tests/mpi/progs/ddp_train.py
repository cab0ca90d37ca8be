"""A small DDP training loop on gloo, launched the way torchrun launches its
workers (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT in each
rank's environment). Steps are not declared: the PyTorch adapter finds them
(one per optimizer step). The loss is averaged across ranks with an
explicit all_reduce, as training scripts do for logging."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 8

torch.manual_seed(0)
torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
x = torch.randn(32, 64, generator=torch.Generator().manual_seed(rank))
y = torch.randint(0, 10, (32,), generator=torch.Generator().manual_seed(rank))
for i in range(STEPS):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    opt.step()
    avg = loss.detach().clone()
    dist.all_reduce(avg)
dist.barrier()
if rank == 0:
    print("ddp: %d ranks, %d steps, loss %.4f" % (dist.get_world_size(), STEPS, float(avg) / dist.get_world_size()))
dist.destroy_process_group()
