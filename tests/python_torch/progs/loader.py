"""Training fed by a DataLoader with 2 worker processes, 2 epochs, each
followed by a validation pass (a loader without workers, under no_grad).

usage: loader.py slow|fast|raises
  slow  __getitem__ sleeps 3 ms per sample (reading and decoding a file,
        say): one batch of 8 takes a worker ~24 ms, the step much less, so
        the loop waits for its data (loader-bound).
  fast  __getitem__ is cheap and the step does more work: the workers keep
        ahead of the loop (a healthy loader).
  raises  as fast, and sample 21 raises in its worker.
"""
import sys
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)

SLOW = sys.argv[1] == "slow"
RAISES = sys.argv[1] == "raises"
BATCHES, BATCH = 16, 8


class Images(torch.utils.data.Dataset):
    def __init__(self, n, delay):
        self.n, self.delay = n, delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        if RAISES and i == 21:
            raise ValueError("bad sample %d" % i)
        return torch.full((64,), float(i % 7)), i % 10


if __name__ == "__main__":
    width = 64 if SLOW else 512
    model = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    train = torch.utils.data.DataLoader(Images(BATCHES * BATCH, 0.003 if SLOW else 0),
                                        batch_size=BATCH, num_workers=2)
    val = torch.utils.data.DataLoader(Images(4 * BATCH, 0.01 if SLOW else 0), batch_size=BATCH)
    n = 0
    for epoch in range(2):
        for x, y in train:
            opt.zero_grad()
            out = model(x)
            if not SLOW:
                for _ in range(20):
                    out = model(x) + out * 0.5
            nn.functional.cross_entropy(out, y).backward()
            opt.step()
            n += 1
        with torch.no_grad():
            correct = sum(int((model(x).argmax(1) == y).sum()) for x, y in val)
    print("batches:", n, "validated:", correct >= 0)
