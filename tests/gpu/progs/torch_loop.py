"""torch_loop.py: a PyTorch training loop on the GPU for scripts/gpu-check.sh.

DataLoader (2 workers, pinned memory) -> .to(device, non_blocking=True) ->
forward / backward / optimizer step, one loss.item() per step. Seeded and
free of autotuning (cudnn.benchmark off), so two runs launch the same
kernels: run once under `phaseprof record`, once with --profile under
torch.profiler, and compare.

    python3 torch_loop.py [--steps N] [--device cuda] [--profile trace.json]

--profile wraps all the program's CUDA work (from moving the model to the
device to the last synchronisation) in torch.profiler.profile(CPU, CUDA) and
writes its Chrome trace. Prints one line at the end:
"torch_loop: steps=N device=D loss=L [trace=FILE]" and exits 0; on a
missing GPU one line "torch_loop: no GPU: ..." and exit 3.
"""
import argparse
import contextlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 8 * 8, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--profile", metavar="TRACE_JSON")
    a = ap.parse_args()

    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("torch_loop: no GPU: torch.cuda.is_available() is False (torch %s, built for CUDA %s)"
              % (torch.__version__, torch.version.cuda), file=sys.stderr)
        return 3
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    n = a.steps * a.batch
    g = torch.Generator().manual_seed(1)
    data = TensorDataset(torch.randn(n, 3, 32, 32, generator=g), torch.randint(0, 10, (n,), generator=g))
    loader = DataLoader(data, batch_size=a.batch, shuffle=False, num_workers=a.workers,
                        pin_memory=a.device.startswith("cuda"), drop_last=True)
    model = Net()
    device = torch.device(a.device)

    prof = None
    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU]
        if device.type == "cuda":
            acts.append(ProfilerActivity.CUDA)
        prof = profile(activities=acts)
    ctx = prof if prof is not None else contextlib.nullcontext()
    loss_v = float("nan")
    steps = 0
    with ctx:
        model.to(device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            loss_v = loss.item()  # one synchronisation per step
            steps += 1
        if device.type == "cuda":
            torch.cuda.synchronize()
    if prof is not None:
        prof.export_chrome_trace(a.profile)
    print("torch_loop: steps=%d device=%s loss=%.4f%s" % (
        steps, device, loss_v, " trace=" + a.profile if prof is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
