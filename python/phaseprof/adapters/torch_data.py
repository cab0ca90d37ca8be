"""DataLoader adapter: what the loader's workers do per batch, and who they are.

``install(torch.utils.data)`` runs when that submodule's import completed,
while ``torch`` itself is still initialising (its ``dataloader`` and
``_utils`` modules are loaded by then). It wraps (originals kept, every
argument forwarded, return values and exceptions unchanged):

  _worker_loop        the body of each DataLoader worker process (a forked
                      child, recorded as a child run): the run is labelled
                      "DataLoader worker k of N" (run_meta ``label``;
                      ``torch.dataloader.worker`` = "k of N",
                      ``torch.dataloader.num_workers`` = N,
                      ``torch.dataloader.dataset`` = the dataset's class,
                      ``torch.dataloader.pass`` = which iteration over the
                      loader started the worker, 1 for the first).
  fetcher.fetch       one batch: a ``data_fetch`` phase around the fetcher's
                      ``fetch`` (``__getitem__`` / ``__getitems__`` of a
                      map-style dataset, ``next()`` of an iterable one), with
                      the batch's collate nested in it as a ``data_collate``
                      phase (the fetcher's ``collate_fn``), so the fetch's
                      self time is the dataset's and the whole phase is the
                      time to produce one batch. In a worker and, with
                      ``num_workers=0``, in the main process (inside its
                      ``data_wait``). An iterable dataset's last fetch, which
                      ends with StopIteration, is a phase too.
  pin_memory          ``data_transfer`` "pin_memory" where batches are pinned
                      (the loader's pin thread, or the main thread); only
                      with an accelerator: pin_memory is off otherwise.
  iterator __init__   in the main process, a new pass over a loader records
                      ``torch.dataloader.num_workers``, ``.batch_size``,
                      ``.prefetch_factor`` (workers only),
                      ``.persistent_workers`` and ``.dataset`` as run_meta
                      (the latest pass's values win).

The waits of the main process for the next batch are the torch adapter's
``data_wait`` phases. The diagnosis (``data_starvation``) compares them with
the workers' ``data_fetch`` times read from the worker runs.
"""

import functools
import os

from .. import _native as N
from .._wrapping import safe as _safe, strip as _strip, wrap as _wrap
from ..kinds import DATA_COLLATE, DATA_FETCH, DATA_TRANSFER

_passes = {}        # id(loader) -> passes started (main process)
_pass_now = [1]     # the pass whose workers are being started
_meta = {}          # the loader run_meta last written (main process)


def _arg(args, kwargs, i, name):
    if len(args) > i:
        return args[i]
    return kwargs.get(name)


def _label_worker(args, kwargs):
    wid = _arg(args, kwargs, 10, "worker_id")
    nw = _arg(args, kwargs, 11, "num_workers")
    ds = _arg(args, kwargs, 1, "dataset")
    if not isinstance(wid, int) or not isinstance(nw, int):
        return
    label = "DataLoader worker %d of %d" % (wid, nw)
    if _pass_now[0] > 1:
        label += ", pass %d" % _pass_now[0]
    N.meta("label", label)
    N.meta("torch.dataloader.worker", "%d of %d" % (wid, nw))
    N.meta("torch.dataloader.num_workers", str(nw))
    N.meta("torch.dataloader.pass", str(_pass_now[0]))
    if ds is not None:
        N.meta("torch.dataloader.dataset", type(ds).__name__)


def _worker_loop(orig):
    @functools.wraps(orig)
    def _worker_loop(*args, **kwargs):
        _safe(_label_worker, args, kwargs)
        try:
            return orig(*args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise
    return _worker_loop


def _collate(fn):
    """The fetcher's collate_fn, as a data_collate phase."""
    if getattr(fn, "_phaseprof", False):
        return fn

    @functools.wraps(fn)
    def collate(*args, **kwargs):
        N.begin(DATA_COLLATE, "collate")
        try:
            return fn(*args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise
        finally:
            N.end()
    collate._phaseprof = True
    return collate


def _fetch(orig):
    @functools.wraps(orig)
    def fetch(self, *args, **kwargs):
        c = self.__dict__.get("collate_fn")
        if c is not None and not getattr(c, "_phaseprof", False):
            _safe(setattr, self, "collate_fn", _collate(c))
        N.begin(DATA_FETCH, "fetch")
        try:
            return orig(self, *args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise
        finally:
            N.end()
    return fetch


def _pin(orig):
    @functools.wraps(orig)
    def pin_memory(*args, **kwargs):
        N.begin(DATA_TRANSFER, "pin_memory")
        try:
            return orig(*args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise
        finally:
            N.end()
    return pin_memory


def _loader_meta(loader):
    nw = loader.num_workers
    kv = [("num_workers", str(nw)), ("batch_size", str(loader.batch_size)),
          ("dataset", type(loader.dataset).__name__)]
    if nw > 0:
        kv += [("prefetch_factor", str(loader.prefetch_factor)),
               ("persistent_workers", str(bool(loader.persistent_workers)))]
    for k, v in kv:  # what changed since the last pass's loader
        if _meta.get(k) != v:
            _meta[k] = v
            N.meta("torch.dataloader." + k, v)
    k = id(loader)
    n = _passes.get(k, 0) + 1
    if len(_passes) >= 64 and k not in _passes:
        _passes.clear()
    _passes[k] = n
    _pass_now[0] = n


def _iter_init(orig):
    @functools.wraps(orig)
    def __init__(self, loader, *args, **kwargs):
        if os.getpid() == _pid:
            _safe(_loader_meta, loader)
        try:
            return orig(self, loader, *args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise
    return __init__


_pid = None


def _install(data):
    global _pid
    _pid = os.getpid()
    u = data._utils
    _wrap(u.worker, "_worker_loop", _worker_loop)
    for c in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        cls = getattr(u.fetch, c, None)
        if isinstance(cls, type):
            _wrap(cls, "fetch", _fetch)
    _wrap(u.pin_memory, "pin_memory", _pin)
    _wrap(data.dataloader._BaseDataLoaderIter, "__init__", _iter_init)


def install(data):
    """Instruments torch.utils.data; never raises."""
    if not N.enabled:
        return
    try:
        _install(data)
    except Exception as e:
        N.meta("python.adapter.torch.utils.data.partial", "%s: %s" % (type(e).__name__, e))
