"""A 2-rank FSDP (FULL_SHARD) training loop on gloo, on the CPU, launched
as torchrun would (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set).

usage: fsdp_train.py STEPS

Prints, per rank, the parameters' digest after training: recorded and plain
runs must print the same."""
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main():
    steps = int(sys.argv[1])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    model = FSDP(model, device_id=torch.device("cpu"), use_orig_params=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        x = torch.randn(32, 64, generator=g)
        y = torch.randint(0, 10, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        digest = sum(float(p.double().sum()) for p in model.parameters())
    print("fsdp_train: rank %d of %d, %d steps, digest %.6f" % (rank, dist.get_world_size(), steps, digest))
    dist.destroy_process_group()


main()
