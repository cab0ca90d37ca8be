"""A DDP training loop on gloo for the rank rules, launched the way torchrun
launches its workers (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).

    ddp_job.py MODE STEPS
      balanced    every rank the same work
      late-ddp    rank 1 sleeps 1.5 s between init_process_group and
                  DistributedDataParallel(...): rank 0 waits in DDP's
                  parameter broadcast
      slow-steps  rank 1 sleeps 150 ms in every step before its forward:
                  rank 0 waits in backward (DDP's gradient allreduce)
      exit / abort / segv
                  rank 1 ends in step 3 (before its forward) by os._exit(3),
                  os.abort() or SIGSEGV; rank 0 waits in backward until the
                  launcher (the test) stops it

Lateness is sleep, so a loaded machine stretches nothing that matters.
Steps are not declared: the PyTorch adapter finds them."""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

MODE = sys.argv[1] if len(sys.argv) > 1 else "balanced"
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 10

torch.manual_seed(0)
torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
if MODE == "late-ddp" and rank == 1:
    time.sleep(1.5)
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
x = torch.randn(32, 64, generator=torch.Generator().manual_seed(rank))
y = torch.randint(0, 10, (32,), generator=torch.Generator().manual_seed(rank))
for i in range(STEPS):
    opt.zero_grad()
    if rank == 1 and i == 3 and MODE in ("exit", "abort", "segv"):
        sys.stdout.flush()
        if MODE == "exit":
            os._exit(3)
        elif MODE == "abort":
            os.abort()
        os.kill(os.getpid(), signal.SIGSEGV)
    if MODE == "slow-steps" and rank == 1:
        time.sleep(0.15)
    else:
        time.sleep(0.02)
    loss = nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    opt.step()
dist.barrier()
if rank == 0:
    print("ddp_job %s: %d ranks, %d steps" % (MODE, dist.get_world_size(), STEPS))
dist.destroy_process_group()
