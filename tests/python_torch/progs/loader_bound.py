"""A loader-bound loop: a DataLoader with 2 workers whose items take longer
to make than the step that uses them. Memory is flat."""
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 60 * 16

    def __getitem__(self, i):
        time.sleep(0.002)  # decoding from a slow disk
        return torch.randn(64), i % 10


if __name__ == "__main__":
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(Slow(), batch_size=16, num_workers=2)
    n = 0
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        n += 1
    print("batches:", n)
