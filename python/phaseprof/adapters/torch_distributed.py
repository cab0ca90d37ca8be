"""torch.distributed under ``phaseprof record``.

What is recorded:

- ``init_process_group`` -> a ``comm_init`` phase (rendezvous through the
  store, the backend's set-up and, in torch 1.13, the store-based barrier
  every rank passes: one of the events ``merge`` aligns clocks on).
- the collectives called from Python (``all_reduce``, ``broadcast``,
  ``all_gather``, ``reduce_scatter``, ``barrier``, ``reduce``, ``gather``,
  ``scatter``, ``all_to_all`` and their ``*_tensor`` / ``*_single`` forms)
  -> a ``comm`` phase named after the function, and the cumulative counters
  ``comm.bytes`` (bytes of the tensors this rank passed in) and
  ``comm.calls``. With ``async_op=True`` the phase covers only the launch;
  the wait is in ``Work.wait()``, which is not wrapped.
- ``DistributedDataParallel(...)`` -> a ``comm_init`` phase
  ``DistributedDataParallel.__init__`` (it broadcasts the parameters from
  rank 0 and checks the model is the same everywhere). Like
  ``init_process_group`` it is a sync point for the rank rules: a rank
  that reaches it late is named, with the time the others sat in it.

What is not: DDP's gradient allreduce runs in C++ autograd hooks (the
Reducer), overlapped with backward, never through these Python functions.
It shows as backward time; ``run_meta`` says so (``torch.ddp``). Wrapping it
would mean registering a communication hook, which changes how DDP reduces,
so it is not done.

install() never raises; every wrapper forwards all arguments and returns
or raises exactly what the original does.
"""

import functools

from .. import _native
from ..kinds import COMM, COMM_INIT

_COLLECTIVES = (
    "all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier", "reduce",
    "gather", "scatter", "all_to_all", "all_gather_into_tensor", "reduce_scatter_tensor",
    "all_to_all_single", "_all_gather_base", "_reduce_scatter_base", "all_gather_object",
    "broadcast_object_list", "all_reduce_coalesced",
)

_bytes = 0
_calls = 0


def _tensor_bytes(x, depth=0):
    """Bytes of the tensors in an argument (a tensor or a list of them)."""
    try:
        ne = getattr(x, "numel", None)
        es = getattr(x, "element_size", None)
        if ne is not None and es is not None:
            return int(ne()) * int(es())
        if depth == 0 and isinstance(x, (list, tuple)):
            return sum(_tensor_bytes(t, 1) for t in x)
    except Exception:
        pass
    return 0


def _wrap_collective(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        global _bytes, _calls
        n = 0
        if args:
            n = _tensor_bytes(args[0])
        _native.begin(COMM, name)
        try:
            return fn(*args, **kwargs)
        finally:
            _native.end()
            _calls += 1
            _bytes += n
            _native.counter("comm.bytes", float(_bytes))
            _native.counter("comm.calls", float(_calls))

    wrapper.__phaseprof_wrapped__ = fn
    return wrapper


def _wrap_phase(kind, name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _native.begin(kind, name)
        try:
            return fn(*args, **kwargs)
        finally:
            _native.end()
            _try_ddp()

    wrapper.__phaseprof_wrapped__ = fn
    return wrapper


def _replace(mod, attr, make):
    orig = getattr(mod, attr, None)
    if orig is None or getattr(orig, "__phaseprof_wrapped__", None) is not None:
        return None
    w = make(orig)
    setattr(mod, attr, w)
    return orig, w


def _patch(module):
    import sys

    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    targets = [module] + ([c10d] if c10d is not None and c10d is not module else [])
    for name in _COLLECTIVES:
        for mod in targets:
            orig = getattr(mod, name, None)
            if orig is None or getattr(orig, "__phaseprof_wrapped__", None) is not None:
                continue
            # one wrapper per original: torch.distributed re-exports c10d's
            w = _wrappers.get(id(orig))
            if w is None:
                w = _wrappers[id(orig)] = _wrap_collective(name, orig)
            setattr(mod, name, w)
    for mod in targets:
        orig = getattr(mod, "init_process_group", None)
        if orig is None or getattr(orig, "__phaseprof_wrapped__", None) is not None:
            continue
        w = _wrappers.get(id(orig))
        if w is None:
            w = _wrappers[id(orig)] = _wrap_phase(COMM_INIT, "init_process_group", orig)
        setattr(mod, "init_process_group", w)


_wrappers = {}


def _patch_ddp():
    import sys

    par = sys.modules.get("torch.nn.parallel.distributed")
    if par is None:
        return False
    cls = getattr(par, "DistributedDataParallel", None)
    if cls is None or getattr(cls.__init__, "__phaseprof_wrapped__", None) is not None:
        return True
    cls.__init__ = _wrap_phase(COMM_INIT, "DistributedDataParallel.__init__", cls.__init__)
    _native.meta("torch.ddp", "gradient allreduce runs in DDP's C++ reducer hooks during backward: "
                 "not recorded per call, it is part of backward time")
    return True


_ddp_done = False


def _try_ddp():
    """DDP is patched once torch has finished importing: torch.distributed is
    imported half-way through `import torch`, when importing anything more
    would break torch's own initialisation. Only sys.modules is looked at."""
    global _ddp_done
    if _ddp_done:
        return
    try:
        _ddp_done = _patch_ddp()
    except Exception as e:
        _ddp_done = True
        _native.meta("python.adapter.torch.distributed.ddp_error", repr(e)[:300])


def install(module):
    try:
        _patch(module)
    except Exception as e:  # never break the program
        _native.meta("python.adapter.torch.distributed.error", repr(e)[:300])
    _try_ddp()
