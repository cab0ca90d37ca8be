"""A small Lightning 2.6 program, written as users write one: a
LightningModule with its own setup and configure_optimizers, a training and
a validation loader, Trainer.fit with the default sanity check (2 batches).
2 epochs x 8 training batches; argv[1] = accumulate_grad_batches (default 1);
argv[2] = "unified": Lightning imported as `lightning.pytorch` (the unified
package) instead of `pytorch_lightning`.
"""
import sys

if sys.argv[2:] == ["unified"]:
    import lightning.pytorch as pl
else:
    import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

ACC = int(sys.argv[1]) if len(sys.argv) > 1 else 1


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = None
        self.seen = 0

    def setup(self, stage):
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        self.seen += 1
        return nn.functional.cross_entropy(self.body(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.body(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class Count(pl.Callback):
    def __init__(self):
        self.batches = 0

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.batches += 1


def loader(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 32, generator=g)
    return DataLoader(TensorDataset(x, (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()), batch_size=16)


torch.manual_seed(0)
count = Count()
mine = [count]
trainer = pl.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False, accumulate_grad_batches=ACC, callbacks=mine)
net = Net()
trainer.fit(net, loader(128, 1), loader(64, 2))
print("training batches:", net.seen, "callback saw:", count.batches)
print("optimizer steps:", trainer.global_step)
print("user callbacks list unchanged:", mine == [count])
print("val_loss finite:", bool(torch.isfinite(trainer.callback_metrics["val_loss"])))
