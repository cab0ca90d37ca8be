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

- DDP's gradient buckets. DDP all-reduces gradients in C++ (its Reducer),
  bucket by bucket while backward still runs, never through the Python
  functions above; backward waits for the last bucket before it returns, so
  that wait is backward time (``run_meta`` ``torch.ddp`` says so). To see the
  buckets, the first forward of a DDP model registers a communication hook
  (``dist._register_comm_hook``) that does what DDP does without one --
  divide the bucket by the group's size, ``ProcessGroup.allreduce`` it --
  and times it (launch, and completion through ``Future.then``). Only when:
  the program (or DDP itself: mixed precision, optimizer in backward)
  registered no hook before, and the group's size is a power of two (then
  the division is exact, so the gradients are bit-identical to DDP's own
  scaling, which multiplies by 1/size or divides by size depending on the
  path). A hook the program registers after ours runs inside ours, timed
  the same (the Reducer takes one hook only); a built-in one as its Python
  twin from ``default_hooks``; a second one is refused by DDP as it would
  be. The DDP logger's ``comm_hook`` stays unset. ``run_meta``
  ``torch.ddp.buckets`` says what was done for the process's first DDP
  model, or why not.
  Per bucket, a ``comm`` row "DDP allreduce bucket <index>" (launch to
  completion, bytes, comm_size = the group's size) written at the end of
  the step it belongs to; per step, just before it ends (0 in a step
  without a synchronising backward, e.g. inside ``no_sync()``):
  ``ddp.buckets`` (all-reduces), ``ddp.bytes``, ``ddp.comm_ns`` (time with
  at least one bucket in flight), ``ddp.exposed_ns`` (from the launch of a
  backward's last bucket -- its gradients are all computed then -- to the
  completion of its last all-reduce: what backward waits for after its
  computation, summed over the step's backward passes) and
  ``ddp.bucket_max_bytes``. ``run_meta`` ``torch.ddp.config``: bucket
  cap, gradient_as_bucket_view, static_graph, find_unused_parameters,
  and the bucket sizes (written again when DDP rebuilds its buckets after
  the first iteration).

install() never raises; every wrapper forwards all arguments and returns
or raises exactly what the original does.
"""

import functools
import sys
import weakref

from .. import _native
from .. import _steps
from .._wrapping import safe as _safe, strip as _strip
from ..kinds import COMM, COMM_INIT

_COLLECTIVES = (
    "all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier", "reduce",
    "gather", "scatter", "all_to_all", "all_gather_into_tensor", "reduce_scatter_tensor",
    "all_to_all_single", "_all_gather_base", "_reduce_scatter_base", "all_gather_object",
    "broadcast_object_list", "all_reduce_coalesced",
    # torch 2.13's single-tensor forms, which FSDP's shards go through
    "all_gather_single", "reduce_scatter_single",
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
_ddp_said = False


def _patch_ddp():
    import sys

    par = sys.modules.get("torch.nn.parallel.distributed")
    if par is None:
        return False
    cls = getattr(par, "DistributedDataParallel", None)
    if cls is None or getattr(cls.__init__, "__phaseprof_wrapped__", None) is not None:
        return True
    init = _wrap_phase(COMM_INIT, "DistributedDataParallel.__init__", cls.__init__)

    # said when a DDP is made, not when its module is imported: FSDP
    # imports it too, and the rank rules read this note as "DDP in use"
    @functools.wraps(init)
    def ddp_init(*args, **kwargs):
        global _ddp_said
        if not _ddp_said:
            _ddp_said = True
            _native.meta("torch.ddp", "gradient allreduce runs in DDP's C++ reducer hooks during "
                         "backward: its wait is part of backward time; buckets: comm rows and ddp.* "
                         "counters")
        return init(*args, **kwargs)

    ddp_init.__phaseprof_wrapped__ = init.__phaseprof_wrapped__
    cls.__init__ = ddp_init
    _safe(_patch_ddp_hooks, cls)
    return True


# ---- DDP gradient buckets (see the module's docstring) ----

class _Hook:
    """The state of our communication hook on one DDP model."""

    def __init__(self, ddp, pg):
        self.pg = pg
        self.size = pg.size()
        self.delegate = None      # (hook, state) the program registered after ours
        self.round = 0            # backward passes seen (a bucket with is_last() ends one)
        self.sizes = []           # the last round's bucket sizes, in bytes
        self.config = _ddp_config(ddp)


_user_hook = weakref.WeakKeyDictionary()  # DDP model -> True: a hook registered before ours
_ours = weakref.WeakKeyDictionary()       # DDP model -> _Hook (or None: not registered, said why)
_records = []     # [hook state, round, index, bytes, launch ns, done ns (0 until done)]
_ddp_steps = False  # per-step counters are written once a hook is ours
_meta_said = False
_compiling = bool


def _ddp_config(ddp):
    cap = getattr(ddp, "bucket_bytes_cap", None)
    return "bucket_cap_mb=%s gradient_as_bucket_view=%s static_graph=%s find_unused_parameters=%s" % (
        ("%g" % (cap / 1048576.0)) if isinstance(cap, (int, float)) else "?",
        getattr(ddp, "gradient_as_bucket_view", "?"), getattr(ddp, "static_graph", "?"),
        getattr(ddp, "find_unused_parameters", "?"))


def _comm_hook(state, bucket):
    """DDP's own reduction (no hook: the bucket scaled by 1/size, summed
    across the group), timed. Runs on the thread that runs backward."""
    t0 = _native.now()
    d = state.delegate
    if d is not None:
        fut = d[0](d[1], bucket)
    else:
        buf = bucket.buffer()
        buf.div_(state.size)
        fut = state.pg.allreduce([buf]).get_future()
    rec = [state, state.round, -1, 0, t0, 0]
    try:
        rec[2] = bucket.index()
        if d is None:
            rec[3] = buf.numel() * buf.element_size()
        else:
            b = bucket.buffer()
            rec[3] = b.numel() * b.element_size()
        if bucket.is_last():
            state.round += 1
    except Exception:
        pass
    if len(_records) < 65536:  # steps end and take them; bounded if none ever does
        _records.append(rec)
    return fut.then(_done(rec, d is None))


def _done(rec, first):
    """The callback that times a bucket's completion and passes its value
    on (the first tensor of the all-reduce's list; a delegate's value as
    is). A failed all-reduce (a rank gone) fails the returned future with
    its message (torch's wrapper prefixes "Got the following error when
    running the callback"), holding no reference to the all-reduce's
    future. See docs/distributed.md for what torch 1.13 may do at exit
    then."""
    def done(f):
        rec[5] = _native.now()
        try:
            v = f.value()
        except Exception as e:
            err = RuntimeError(str(e))
        else:
            return v[0] if first else v
        f = None
        _failed()
        raise err from None
    return done


_grace_on = False


def _failed():
    """An all-reduce failed (a rank is gone): the process is likely to end
    with the exception. torch 1.13's gloo workers may still finish a failed
    work after that and call into Python; during the interpreter's
    finalization that ends the process by SIGABRT (docs/distributed.md).
    At exit, give them a moment with the GIL released first."""
    global _grace_on
    if _grace_on:
        return
    _grace_on = True
    try:
        sys.modules["_frozen_importlib"]._builtin_from_name("atexit").register(_grace)
    except Exception:
        pass


def _grace():
    try:
        sys.modules["time"].sleep(0.5)
    except Exception:
        pass


def _register(ddp):
    """Our hook on ddp, once, at its first forward (the program registers
    its own hooks after construction, before training)."""
    global _ddp_steps, _meta_said
    if ddp in _ours:
        return
    _ours[ddp] = None
    why = None
    if _user_hook.get(ddp):
        why = "the program registered a communication hook: not timed"
    elif getattr(ddp, "reducer", None) is None or getattr(ddp, "_delay_all_reduce_all_params", False):
        why = "no reducer (all parameters all-reduced after backward): not timed"
    else:
        pg = getattr(ddp, "process_group", None)
        n = pg.size() if pg is not None else 0
        if n < 1 or n & (n - 1):
            why = ("process group of %d ranks: not a power of two, a hook's division could round the "
                   "gradients differently from DDP's own: not timed" % n)
    if why is None:
        h = _Hook(ddp, ddp.process_group)
        sys.modules["torch.distributed"]._register_comm_hook(ddp.reducer, h, _comm_hook)
        _ours[ddp] = h
        _ddp_steps = True
        why = "timed through a communication hook (%s)" % h.config
    if not _meta_said:
        _meta_said = True
        _native.meta("torch.ddp.buckets", why)


def _ddp_forward(orig):
    @functools.wraps(orig)
    def forward(self, *args, **kwargs):
        if not _compiling() and self not in _ours:
            _safe(_register, self)
        try:
            return orig(self, *args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise
    forward.__phaseprof_wrapped__ = orig
    return forward


def _late_hook(self, state, hook):
    """register_comm_hook after ours: the Reducer takes one hook, so ours
    calls the program's instead of DDP's reduction. DDP's own checks run
    first, so a bad hook raises as it would."""
    self._check_comm_hook(hook)
    lg = getattr(self, "logger", None)
    if lg is not None:
        lg._set_comm_hook_name(hook.__qualname__)
    hooks = getattr(self, "_comm_hooks", None)
    if isinstance(hooks, list):
        hooks.append((hook, state))
    _ours[self].delegate = (hook, state)


def _ddp_register_hook(orig):
    @functools.wraps(orig)
    def register_comm_hook(self, state, hook):
        h = _ours.get(self)
        try:
            if h is None or h.delegate is not None:
                # (a second hook: DDP refuses it as it would)
                _user_hook[self] = True
                return orig(self, state, hook)
            return _late_hook(self, state, hook)
        except BaseException as e:
            _strip(e)
            raise
    register_comm_hook.__phaseprof_wrapped__ = orig
    return register_comm_hook


def _builtin_hook(kind, state):
    """A built-in hook registered after ours, as its Python twin."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as dh
    name = str(kind).rsplit(".", 1)[-1]
    if name == "FP16_COMPRESS":
        return dh.fp16_compress_hook
    return dh.allreduce_hook


def _ddp_register_builtin(orig):
    @functools.wraps(orig)
    def _register_builtin_comm_hook(self, comm_hook_type):
        h = _ours.get(self)
        try:
            if h is None or h.delegate is not None:
                _user_hook[self] = True
                return orig(self, comm_hook_type)
            lg = getattr(self, "logger", None)
            if lg is not None:
                lg._set_comm_hook_name(str(comm_hook_type))
            h.delegate = (_builtin_hook(comm_hook_type, h), h.pg)
        except BaseException as e:
            _strip(e)
            raise
    _register_builtin_comm_hook.__phaseprof_wrapped__ = orig
    return _register_builtin_comm_hook


def _patch_ddp_hooks(cls):
    global _compiling
    torch = sys.modules.get("torch")
    comp = getattr(torch, "compiler", None)
    _compiling = getattr(comp, "is_compiling", None) or bool
    for attr, make in (("forward", _ddp_forward), ("register_comm_hook", _ddp_register_hook),
                       ("_register_builtin_comm_hook", _ddp_register_builtin)):
        orig = cls.__dict__.get(attr)
        if orig is not None and getattr(orig, "__phaseprof_wrapped__", None) is None:
            setattr(cls, attr, make(orig))
    _steps.on_end.append(_on_step_end)


def _union(iv):
    t = 0
    end = None
    for a, b in sorted(iv):
        if end is None or a > end:
            t += b - a
            end = b
        elif b > end:
            t += b - end
            end = b
    return t


def _flush_step():
    """The buckets completed since the last step's end: rows and counters."""
    global _records
    if not _records and not _ddp_steps:
        return
    recs = _records
    done = [r for r in recs if r[5]]
    _records = [r for r in recs if not r[5]]
    nbytes = 0
    biggest = 0
    rounds = {}
    for st, rnd, idx, b, t0, t1 in done:
        nbytes += b
        biggest = max(biggest, b)
        k = (id(st), rnd)
        g = rounds.get(k)
        if g is None:
            rounds[k] = [t0, t1, st, rnd, [(idx, b)]]
        else:
            g[0] = max(g[0], t0)
            g[1] = max(g[1], t1)
            g[4].append((idx, b))
        _native.comm_row("DDP allreduce bucket %d" % idx, t0, t1, b, -1, st.size)
    exposed = 0
    for t0, t1, st, rnd, bk in rounds.values():
        exposed += max(0, t1 - t0)
        bk.sort()
        sizes = [b for _, b in bk]
        if sizes != st.sizes:  # the first round, and DDP's rebuild of its buckets after it
            st.sizes = sizes
            _native.meta("torch.ddp.config", "%s; %d buckets of %s bytes (index order)" % (
                st.config, len(sizes), ", ".join(str(b) for b in sizes)))
    _native.counter("ddp.buckets", float(len(done)))
    _native.counter("ddp.bytes", float(nbytes))
    _native.counter("ddp.bucket_max_bytes", float(biggest))
    _native.counter("ddp.comm_ns", float(_union([(r[4], r[5]) for r in done])))
    _native.counter("ddp.exposed_ns", float(exposed))


def _on_step_end():
    _safe(_flush_step)


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
