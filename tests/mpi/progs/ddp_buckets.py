"""DDP's gradient buckets under `phaseprof record`, launched the way torchrun
launches its workers (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).

    ddp_buckets.py MODE STEPS
      overlap   six 384x384 layers (3.4 MiB), bucket_cap_mb=1: several buckets,
                all-reduced while backward runs
      nosync    the same with gradient accumulation: two micro-batches per
                optimizer step, the first inside no_sync()
      exposed   little compute, 8 MiB of parameters in one bucket at the
                end of backward: the all-reduce is almost all exposed
      hooks     the program's own communication hooks: one registered
                before the first forward, one after it (Python), a built-in
                one after it, and a second registration DDP refuses; prints
                how often each hook ran and the refusal

Each rank prints its facts: DDP's own bucket sizes (its logging data,
rebuilt after the first iteration) and a digest of the final parameters
and of the last step's gradients, so a recorded run's output can be
compared with a plain run's, byte for byte."""
import hashlib
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

MODE = sys.argv[1] if len(sys.argv) > 1 else "overlap"
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 10

torch.manual_seed(0)
torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
if MODE == "exposed":
    model = nn.Sequential(nn.Linear(1024, 2048), nn.Linear(2048, 4))
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=64)
    x = torch.randn(2, 1024, generator=torch.Generator().manual_seed(rank))
    y = torch.randn(2, 4, generator=torch.Generator().manual_seed(rank))
else:
    layers = []
    for _ in range(6):
        layers += [nn.Linear(384, 384), nn.Tanh()]
    model = nn.Sequential(*layers, nn.Linear(384, 4))
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1)
    x = torch.randn(256, 384, generator=torch.Generator().manual_seed(rank))
    y = torch.randn(256, 4, generator=torch.Generator().manual_seed(rank))
# (exposed: little work besides the all-reduce, so no momentum either)
if MODE == "hooks":
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    calls = {}

    def counting(name):
        def hook(state, bucket):
            calls[name] = calls.get(name, 0) + 1
            return default_hooks.allreduce_hook(state, bucket)
        hook.__qualname__ = name
        return hook

    def train(d, n):
        o = torch.optim.SGD(d.parameters(), lr=0.01)
        for _ in range(n):
            o.zero_grad()
            nn.functional.mse_loss(d(x), y).backward()
            o.step()

    def new_ddp():
        torch.manual_seed(1)
        return nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(384, 64), nn.Linear(64, 4)))

    early = new_ddp()
    early.register_comm_hook(None, counting("early"))
    train(early, 3)
    late = new_ddp()
    train(late, 1)
    late.register_comm_hook(None, counting("late"))
    train(late, 3)
    try:
        late.register_comm_hook(None, counting("twice"))
    except Exception as e:
        print("rank %d second hook refused: %s" % (rank, str(e).strip().splitlines()[0][:200]))
    builtin = new_ddp()
    train(builtin, 1)
    builtin._register_builtin_comm_hook(dist.BuiltinCommHookType.ALLREDUCE)
    train(builtin, 3)
    print("rank %d hook calls %s; digests %s" % (rank, sorted(calls.items()), " ".join(
        hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in m.parameters())).hexdigest()[:12]
        for m in (early, late, builtin))))
opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0 if MODE == "exposed" else 0.9)
for i in range(STEPS):
    opt.zero_grad()
    if MODE == "nosync":
        with ddp.no_sync():
            nn.functional.mse_loss(ddp(x[:128]), y[:128]).backward()
        nn.functional.mse_loss(ddp(x[128:]), y[128:]).backward()
    else:
        nn.functional.mse_loss(ddp(x), y).backward()
    opt.step()


def digest(ts):
    h = hashlib.sha256()
    for t in ts:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


ld = ddp._get_ddp_logging_data()
sizes = ld.get("rebuilt_bucket_sizes") or ld.get("bucket_sizes")
grads = digest(p.grad for p in model.parameters())
params = digest(model.parameters())
dist.barrier()
print("ddp_buckets %s: rank %d of %d, %d steps, buckets %d: %s" % (
    MODE, rank, dist.get_world_size(), STEPS, len(str(sizes).split(",")), sizes))
print("rank %d grads %s params %s" % (rank, grads, params))
dist.destroy_process_group()
