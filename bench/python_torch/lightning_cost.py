"""Per-batch cost of the Lightning adapter, measured directly.

Run under `phaseprof record` with the torch-2 venv's python. Trainer.fit of a
minimal LightningModule (one parameter, 64 training batches of one element,
no validation) runs alternately with the adapter (its callback in the
Trainer: steps, phases, the profiler-action hooks) and without it (the
connector's original callback ordering put back before the Trainer is
built, so the Trainer has no phaseprof callback; the PyTorch adapter stays
in both). The difference per training batch is what the Lightning adapter
adds (on a loaded machine this whole-fit difference is within its noise,
hence the second measurement below); a third variant without it but with one empty ``pl.Callback()``
gives what Lightning itself charges for any callback (it dispatches every
hook to every callback through its profiler). Thread CPU time, medians of the rounds: on a loaded machine the wall
clock mostly measures the neighbours."""
import statistics
import sys
import time

import pytorch_lightning as pl
import torch
from pytorch_lightning.trainer.connectors import callback_connector as cc
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
BATCHES = 64
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def training_step(self, batch, batch_idx):
        return (self.w * batch[0]).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)


data = DataLoader(TensorDataset(torch.ones(BATCHES, 1)), batch_size=1)
C = cc._CallbackConnector
wrapped = C.__dict__["_reorder_callbacks"]
orig = getattr(wrapped.__func__, "__wrapped__", None)
if orig is None:
    raise SystemExit("lightning_cost.py: the adapter is not installed (run it under phaseprof record)")


def fit(on, empty=False):
    C._reorder_callbacks = wrapped if on else staticmethod(orig)
    try:
        t = pl.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False,
                       enable_checkpointing=False, enable_progress_bar=False,
                       enable_model_summary=False, num_sanity_val_steps=0,
                       callbacks=[pl.Callback()] if empty else None)
        has = any(type(c).__name__ == "PhaseprofCallback" for c in t.callbacks)
        assert has == on, (on, t.callbacks)
        c0 = time.thread_time()
        t.fit(Net(), data)
        return (time.thread_time() - c0) / BATCHES
    finally:
        C._reorder_callbacks = wrapped


fit(True), fit(False)  # warm up
on, off, empty = [], [], []
for _ in range(ROUNDS):
    off.append(fit(False))
    on.append(fit(True))
    empty.append(fit(False, True))
m_on, m_off, m_empty = (statistics.median(x) for x in (on, off, empty))
print("fit per batch: with the adapter %.1f us, without %.1f us, without it and with one empty "
      "pl.Callback() %.1f us (medians of %d rounds of %d batches)"
      % (m_on * 1e6, m_off * 1e6, m_empty * 1e6, ROUNDS, BATCHES))
print("Lightning adapter: %.1f us per training batch (%.1f%% of a 1 ms step); "
      "Lightning's own cost of one more callback: %.1f us"
      % ((m_on - m_off) * 1e6, (m_on - m_off) / 1e-3 * 100, (m_empty - m_off) * 1e6))

# The same cost taken apart, without the fit's own noise: one training
# batch's calls into the adapter, repeated (under record the steps are real
# recorder writes): the epoch loop's _on_before_fetch (wrapped: it begins
# the step, ending the previous one), and the batch's six callback hooks
# dispatched as Lightning does (through the profiler's profile() context),
# to the adapter's callback; vs the original _on_before_fetch and no
# callback, and vs an empty callback (Lightning's cost of any callback).
import threading  # noqa: E402

from pytorch_lightning.loops.training_epoch_loop import _TrainingEpochLoop  # noqa: E402

L = sys.modules["phaseprof.adapters.lightning"]
t = pl.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
               enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
ours = next(c for c in t.callbacks if type(c).__name__ == "PhaseprofCallback")
ours.on_before_optimizer_step = None  # as on_train_start leaves it: one step per batch
empty = pl.Callback()
hooks = [("on_train_batch_start", (None, 0)), ("on_before_zero_grad", (None,)),
         ("on_before_backward", (None,)), ("on_after_backward", ()),
         ("on_before_optimizer_step", (None,)), ("on_train_batch_end", (None, None, 0))]


class Loop:
    trainer = t


def batches(cb, fetch, n):
    loop, prof = Loop(), t.profiler
    for _ in range(n):
        fetch(loop)
        prof.stop("[_TrainingEpochLoop].train_dataloader_next")
        if cb is not None:
            for h, args in hooks:  # as lightning's trainer.call._call_callback_hooks
                fn = getattr(cb, h)
                if callable(fn):
                    with prof.profile("[Callback]%s.%s" % (type(cb).__qualname__, h)):
                        fn(t, None, *args)


def cpu(*a):
    c0 = time.thread_time()
    batches(*a)
    return (time.thread_time() - c0) / a[-1]


M = 2000
wrapped_fetch = _TrainingEpochLoop._on_before_fetch
orig_fetch = wrapped_fetch.__wrapped__
res = {"adapter": [], "none": [], "empty": []}
for _ in range(ROUNDS):
    res["none"].append(cpu(None, orig_fetch, M))
    res["empty"].append(cpu(empty, orig_fetch, M))
    L.F.__init__()
    L.F.active, L.F.tid, L.F.in_epoch = True, threading.get_ident(), True
    res["adapter"].append(cpu(ours, wrapped_fetch, M))
    L._close_all()
    L.F.active = False
m = {k: statistics.median(v) * 1e6 for k, v in res.items()}
print("one batch's calls: %.1f us with the adapter (a step ended and begun in each), %.1f us with"
      " neither: the adapter adds %.1f us per batch (%.2f%% of a 1 ms step); for comparison one"
      " empty pl.Callback() costs %.1f us per batch"
      % (m["adapter"], m["none"], m["adapter"] - m["none"], (m["adapter"] - m["none"]) / 10,
         m["empty"] - m["none"]))
