"""A DataLoader with two worker processes feeding 12 steps."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 12 * 16

    def __getitem__(self, i):
        x = torch.randn(64)
        for _ in range(20):  # some decoding work in the worker
            x = torch.tanh(x * 1.01)
        return x, i % 10


if __name__ == "__main__":
    model = nn.Linear(64, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(Slow(), batch_size=16, num_workers=2)
    n = 0
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        n += 1
    print("batches:", n)
