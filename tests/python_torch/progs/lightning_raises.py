"""Trainer.fit whose training_step raises at the 6th batch (index 5): the
traceback, exit status and output must be the program's own."""
import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 2)

    def training_step(self, batch, batch_idx):
        if batch_idx == 5:
            raise RuntimeError("bad batch at step %d" % batch_idx)
        x, y = batch
        return nn.functional.cross_entropy(self.body(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


x = torch.randn(128, 8)
data = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=16)
trainer = pl.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False)
print("fitting")
trainer.fit(Net(), data)
print("not reached")
