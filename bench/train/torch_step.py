"""PyTorch's CPU training step for the same MLP as bench_train_step:
784 -> 1024 (relu) -> 10, batch 128, Adam (lr 1e-3, eps 1e-7), mean sparse
cross-entropy. Prints one line: first step and median of the later steps.

usage: /usr/bin/python3 torch_step.py STEPS TORCH_THREADS LABEL
(OPENBLAS_NUM_THREADS and LD_LIBRARY_PATH are set by run.sh.)
"""
import sys
import time

t_import = time.perf_counter()
import torch  # noqa: E402

t_import = time.perf_counter() - t_import
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 0
label = sys.argv[3] if len(sys.argv) > 3 else ""
if threads > 0:
    torch.set_num_threads(threads)

B, IN, HID, OUT = 128, 784, 1024, 10
g = torch.Generator().manual_seed(1)
x = torch.rand(B * 8, IN, generator=g) - 0.5
y = torch.arange(B * 8) % OUT
# weakly learnable: the loss stays O(1), so no denormal gradients skew timings
x = x + 0.02 * ((torch.arange(IN).unsqueeze(0) % OUT) == y.unsqueeze(1)).float()

model = torch.nn.Sequential(torch.nn.Linear(IN, HID), torch.nn.ReLU(), torch.nn.Linear(HID, OUT))
opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
lossf = torch.nn.CrossEntropyLoss()

times = []
cpus = []
losses = []
for s in range(steps):
    off = (s * B) % (B * 8)
    bx, by = x[off:off + B], y[off:off + B]
    t0 = time.perf_counter()
    c0 = time.process_time()
    opt.zero_grad(set_to_none=True)
    loss = lossf(model(bx), by)
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
    cpus.append(time.process_time() - c0)
    losses.append(loss.item())

later = sorted(times[1:])
med = later[len(later) // 2]
cpu_med = sorted(cpus[1:])[len(later) // 2]
print("torch %-28s: import %6.0f ms | first step %7.2f ms | median step %6.2f ms (cpu %6.2f ms) "
      "(%d steps) | threads %d | loss %.3f -> %.3f"
      % (label, t_import * 1e3, times[0] * 1e3, med * 1e3, cpu_med * 1e3, steps,
         torch.get_num_threads(), losses[0], losses[-1]))
