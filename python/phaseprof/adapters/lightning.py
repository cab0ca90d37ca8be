"""Lightning adapter: ``Trainer.fit``'s steps and phases from Lightning's own
hooks, no annotation. One module for both packages Lightning ships as
(``pytorch_lightning`` and ``lightning.pytorch``); ``install(module)`` gets
either.

How it attaches. One phaseprof callback (``PhaseprofCallback``, a
``Callback`` subclass, stateless: nothing goes into checkpoints) is added to
every ``Trainer`` where Lightning puts together its list of callbacks: the
callback connector's ``_reorder_callbacks`` (a staticmethod, called once when
the Trainer is built and again when a fit attaches the model's own
callbacks) is wrapped to order a new list, the given one plus the phaseprof
callback when it is not in it yet. So:
  * the program's callbacks keep their order and hooks; the phaseprof
    callback sits among them as an entry-point plugin's callback would
    (Lightning moves checkpoint callbacks after it);
  * ``trainer.callbacks`` shows one more entry; the program's own
    ``callbacks=[...]`` list object is not modified (the entry-point route,
    ``_load_external_callbacks``, would have been: Lightning extends the
    program's list with what the entry points give);
  * no phaseprof frame is on the stack while the program's code runs;
    ``Trainer(...)`` raising shows the same traceback. Every wrapper here
    removes its own traceback entry from an exception passing through it
    (as the PyTorch adapter's do).
If the connector has no such staticmethod (another Lightning version),
``Trainer.__init__`` is wrapped instead and the callback appended to
``trainer.callbacks`` after the original init.

Steps (``phaseprof._steps`` with source "lightning", explicit: the PyTorch
adapter's own boundaries are then ignored, never doubled). The adapter
claims the process's steps at the Trainer's ``setup`` hook of the first fit
and keeps them (``phaseprof._steps``: from the first explicit step on, the
adapters' boundaries are ignored), so a PyTorch loop after a fit draws no
steps of its own. The program's own ``phaseprof.step()`` takes precedence:
called before the fit, the adapter draws no steps (phases only); called
inside the fit, the adapter stops drawing at its next boundary.

  * One step per training batch; with ``accumulate_grad_batches`` = N > 1
    (automatic optimization) one step per optimizer step, i.e. per N
    micro-batches (the last window of an epoch may be shorter).
    ``python.step_unit`` says which.
  * A step begins when Lightning starts fetching its batch (the epoch loop's
    ``_on_before_fetch``, which starts the profiler action
    ``[_TrainingEpochLoop].train_dataloader_next``: the data wait is inside
    the step), or at ``on_train_batch_start`` when no fetch was seen;
    it ends when the next one begins, at the start of a validation pass, or
    at the end of the training epoch: the steps tile the training loop.
  * Validation passes, the sanity check and the epochs are phases; a
    validation pass is never inside a step.

Phases (kind, name):
  span             "Lightning set-up": from the Trainer's ``setup`` hook of a
                   fit to ``on_fit_start`` (module ``setup``, model and
                   optimizer configuration, moving the model, checkpoint
                   restore)
  span             "LightningModule.setup"
  model_build      "LightningModule.configure_model" (and the deprecated
                   ``configure_sharded_model``)
  optimizer_setup  "LightningModule.configure_optimizers"
  span             "Lightning sanity check", around its validation pass
  span             "Lightning validation" (inside the sanity check:
                   "Lightning validation (sanity check)")
  span             "Lightning training epoch N", around that epoch's steps
                   and the validation passes run during it

The LightningModule hook phases come from Lightning's profiler actions:
the start/stop of the Trainer's profiler class (``PassThroughProfiler``
unless the program chose one) are wrapped during the set-up only (from the
Trainer's ``setup`` hook to ``on_fit_start``), the originals called first.

Everything happens on the thread that runs the fit; the callback never
raises into the program (every hook catches its own failures and stops
recording for that fit).
"""

import sys
import threading

from .. import _native as N
from .._wrapping import strip as _strip
from .. import _steps
from ..kinds import MODEL_BUILD, OPTIMIZER_SETUP, SPAN

HOOKS = {  # LightningModule hook -> phase kind
    "setup": SPAN,
    "configure_sharded_model": MODEL_BUILD,
    "configure_model": MODEL_BUILD,
    "configure_optimizers": OPTIMIZER_SETUP,
}


class _Fit:
    """The fit in progress (one at a time in a process)."""

    def __init__(self):
        self.active = False
        self.tid = None
        self.stack = []           # names of the phases this adapter opened, innermost last
        self.claimed = False      # the steps are Lightning's (not the program's phaseprof.step())
        self.own = True           # still drawing steps (not the program's phaseprof.step())
        self.step = None          # number of the open step drawn here
        self.armed = True         # the next fetch / batch start begins a step
        self.per_batch = True     # the step unit is a training batch
        self.in_epoch = False


F = _Fit()


def _here():
    return F.active and threading.get_ident() == F.tid


# ---- phases and steps ----
# F.stack holds what this adapter opened on the fit's thread, innermost
# last: a phase name, or STEP for the step it began (phases and steps nest
# per thread, so they are closed in that order).

STEP = None


def _open(kind, name):
    N.begin(kind, name)
    F.stack.append(name)


def _pop():
    top = F.stack.pop()
    if top is STEP:
        if _mine():
            _steps.end("lightning")
        F.step = None
        F.armed = True
    else:
        N.end()


def _close(name):
    """Closes `name` (a phase, or STEP) and whatever this adapter opened
    inside it (left open only when Lightning skipped a hook)."""
    if name not in F.stack:
        return
    while F.stack:
        top = F.stack[-1]
        _pop()
        if top is name or top == name:
            break


def _close_all():
    while F.stack:
        _pop()


def _mine():
    """The step this adapter began is still the open one; once the program
    draws its own (phaseprof.step()), the adapter stops drawing for this fit."""
    if F.step is None:
        return False
    if _steps.is_open and _steps.number == F.step:
        return True
    F.own = False
    return False


def _next_step():
    _end_step()
    if not F.own or not F.claimed:
        return
    if _steps.begin(None, "lightning"):
        F.step = _steps.number
        F.stack.append(STEP)
    F.armed = False


def _end_step():
    if STEP in F.stack:
        _close(STEP)
    F.armed = True


_claimed = False  # a fit of this process claimed the steps


def _claim():
    """From here on the process's steps are Lightning's: explicit, as the
    program's phaseprof.step() would make them (phaseprof._steps: adapters'
    boundaries are ignored from then on). Claimed at the set-up, before any
    batch: the PyTorch adapter draws no inference steps in the sanity check
    of a module without an optimizer, nor a step of its own at the first
    fetch. Not claimed when the program's own phaseprof.step() has the
    steps already."""
    global _claimed
    if _steps.claim("lightning"):
        _claimed = True
    F.claimed = _claimed


# ---- the profiler's actions (set-up) and the fetch ----
# The hook phases of the set-up come from Lightning's profiler actions: the
# start/stop of the Trainer's profiler class are wrapped from the Trainer's
# setup hook to on_fit_start only (Lightning names ~25 actions per training
# batch; the loop does not pay for the wrappers). The fetch that begins a
# step is the epoch loop's own _on_before_fetch (what starts the profiler
# action "[_TrainingEpochLoop].train_dataloader_next"), one call per batch.

ACTIONS = {}  # profiler action -> (kind, phase name), during the set-up
_profiler_cls = None


def _action_start(a):
    if threading.get_ident() == F.tid:
        _open(a[0], a[1])


def _action_stop(a):
    if threading.get_ident() == F.tid:
        _close(a[1])


def _wrap_profiler(cls):
    """start/stop of the Trainer's profiler class (the signature of
    Profiler.start/stop: (self, action_name)); undone by _unwrap_profiler."""
    global _profiler_cls
    _unwrap_profiler()
    for attr, act in (("start", _action_start), ("stop", _action_stop)):
        orig = getattr(cls, attr, None)
        if orig is None or getattr(orig, "_phaseprof", False):
            continue

        def make(orig, act, get=ACTIONS.get):
            def w(self, action_name):
                try:
                    out = orig(self, action_name)
                except BaseException as e:
                    _strip(e)
                    raise
                a = get(action_name)
                if a is not None:
                    try:
                        act(a)
                    except Exception:
                        _fail()
                return out
            w.__name__ = orig.__name__
            w.__qualname__ = getattr(orig, "__qualname__", orig.__name__)
            w.__doc__ = orig.__doc__
            w.__wrapped__ = orig
            w._phaseprof = True
            w._phaseprof_had = attr in cls.__dict__
            return w

        setattr(cls, attr, make(orig, act))
    _profiler_cls = cls


def _unwrap_profiler():
    global _profiler_cls
    cls, _profiler_cls = _profiler_cls, None
    ACTIONS.clear()
    if cls is None:
        return
    for attr in ("start", "stop"):
        w = cls.__dict__.get(attr)
        if w is not None and getattr(w, "_phaseprof", False):
            if w._phaseprof_had:
                setattr(cls, attr, w.__wrapped__)
            else:
                delattr(cls, attr)


def _wrap_fetch(loop_cls):
    orig = loop_cls.__dict__.get("_on_before_fetch") if loop_cls is not None else None
    if orig is None or getattr(orig, "_phaseprof", False):
        return orig is not None

    def _on_before_fetch(self, *args, **kwargs):
        if F.active and F.in_epoch and F.armed and threading.get_ident() == F.tid:
            try:
                _next_step()
            except Exception:
                _fail()
        try:
            return orig(self, *args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise

    _on_before_fetch.__name__ = orig.__name__
    _on_before_fetch.__qualname__ = getattr(orig, "__qualname__", orig.__name__)
    _on_before_fetch.__doc__ = orig.__doc__
    _on_before_fetch.__wrapped__ = orig
    _on_before_fetch._phaseprof = True
    loop_cls._on_before_fetch = _on_before_fetch
    return True


def _fail():
    """Recording code failed: close what is open, stop for this fit."""
    try:
        _unwrap_profiler()
    except Exception:
        pass
    try:
        _close_all()
    except Exception:
        pass
    F.active = False
    try:
        N.mark("phaseprof lightning adapter stopped")
    except Exception:
        pass


# ---- the callback's hooks (bodies; each runs under _hook) ----

def _setup(trainer, pl_module, stage):
    if str(getattr(stage, "value", stage)) != "fit" or F.active:
        return
    F.__init__()
    F.active = True
    F.tid = threading.get_ident()
    m = type(pl_module).__name__
    _wrap_profiler(type(trainer.profiler))
    ACTIONS.update(("[LightningModule]%s.%s" % (m, h), (k, "LightningModule." + h))
                   for h, k in HOOKS.items())
    _claim()
    _open(SPAN, "Lightning set-up")


def _on_fit_start(trainer, pl_module):
    _unwrap_profiler()
    _close("Lightning set-up")


def _on_sanity_check_start(trainer, pl_module):
    _open(SPAN, "Lightning sanity check")


def _on_sanity_check_end(trainer, pl_module):
    _close("Lightning sanity check")


def _on_train_start(trainer, pl_module):
    acc = getattr(trainer, "accumulate_grad_batches", 1) or 1
    F.per_batch = acc <= 1 or not getattr(pl_module, "automatic_optimization", True)
    if F.own and F.claimed:
        _steps.set_unit("Lightning training batch" if F.per_batch else
                        "Lightning optimizer step (accumulate_grad_batches=%d training batches)" % acc)


def _on_train_epoch_start(trainer, pl_module):
    _end_step()
    _open(SPAN, "Lightning training epoch %d" % trainer.current_epoch)
    F.in_epoch = True
    F.armed = True


def _on_validation_start(trainer, pl_module):
    _end_step()
    _open(SPAN, "Lightning validation (sanity check)" if trainer.sanity_checking
          else "Lightning validation")


def _on_validation_end(trainer, pl_module):
    _close("Lightning validation (sanity check)" if trainer.sanity_checking
           else "Lightning validation")
    F.armed = True


def _on_train_epoch_end(trainer, pl_module):
    F.in_epoch = False
    _end_step()
    for name in reversed(F.stack):
        if name.startswith("Lightning training epoch "):
            _close(name)
            break


def _on_train_end(trainer, pl_module):
    F.in_epoch = False
    _end_step()


def _on_exception(trainer, pl_module, exception):
    """The fit raised: as in the PyTorch adapter, the step it broke stays
    open (and the phases around it), so that it is not counted as a step;
    the steps before it are kept. Recording stops for this fit."""
    N.mark("Lightning fit raised %s" % type(exception).__name__)
    _unwrap_profiler()
    F.stack = []
    F.step = None
    F.active = False


def _teardown(trainer, pl_module, stage):
    if str(getattr(stage, "value", stage)) != "fit":
        return
    _unwrap_profiler()
    _close_all()
    F.active = False


_BODIES = {
    "on_fit_start": _on_fit_start,
    "on_sanity_check_start": _on_sanity_check_start,
    "on_sanity_check_end": _on_sanity_check_end,
    "on_train_epoch_start": _on_train_epoch_start,
    "on_validation_start": _on_validation_start,
    "on_validation_end": _on_validation_end,
    "on_train_epoch_end": _on_train_epoch_end,
    "on_train_end": _on_train_end,
    "on_exception": _on_exception,
    "teardown": _teardown,
}


def _hook(body):
    def hook(self, trainer, *args, **kwargs):
        if _here():
            try:
                body(trainer, *args, **kwargs)
            except Exception:
                _fail()
    hook.__name__ = body.__name__.lstrip("_")
    return hook


def _setup_hook(self, trainer, pl_module, stage):
    try:
        if not F.active:
            _setup(trainer, pl_module, stage)
    except Exception:
        _fail()


def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
    # per batch: no argument packing
    if F.active and threading.get_ident() == F.tid:
        try:
            if F.armed:
                _next_step()
            if F.per_batch:
                F.armed = True
        except Exception:
            _fail()


def on_before_optimizer_step(self, trainer, pl_module, optimizer):
    if not F.per_batch and F.active and F.in_epoch and threading.get_ident() == F.tid:
        F.armed = True


def on_train_start(self, trainer, pl_module):
    if F.active and threading.get_ident() == F.tid:
        try:
            _on_train_start(trainer, pl_module)
            # a hook that is not callable is skipped by Lightning, without
            # its per-call cost (a profiler context, a name formatted)
            if F.per_batch:
                self.on_before_optimizer_step = None
            else:
                self.__dict__.pop("on_before_optimizer_step", None)
        except Exception:
            _fail()


# Per-batch hooks the callback does not use: None, so that Lightning skips
# them (it calls every callable hook of every callback, each inside a
# profiler context: ~4 us a call on this project's machine).
UNUSED = ("on_train_batch_end", "on_before_backward", "on_after_backward", "on_before_zero_grad",
          "on_validation_batch_start", "on_validation_batch_end", "on_test_batch_start",
          "on_test_batch_end", "on_predict_batch_start", "on_predict_batch_end")


def _callback_class(callback_base):
    ns = {name: _hook(body) for name, body in _BODIES.items()}
    ns.update(dict.fromkeys(UNUSED))
    ns["setup"] = _setup_hook
    ns["on_train_start"] = on_train_start
    ns["on_train_batch_start"] = on_train_batch_start
    ns["on_before_optimizer_step"] = on_before_optimizer_step
    ns["__doc__"] = "phaseprof: Trainer.fit's steps and phases (added under phaseprof record)."
    ns["__module__"] = __name__
    return type("PhaseprofCallback", (callback_base,), ns)


# ---- attaching the callback to every Trainer ----

def _attach_reorder(conn, cls):
    """Wraps the connector's ordering of the callbacks (a staticmethod): the
    list it orders gets the phaseprof callback first, as a new list."""
    C = getattr(conn, "_CallbackConnector", None)
    raw = C.__dict__.get("_reorder_callbacks") if C is not None else None
    if not isinstance(raw, staticmethod):
        return False
    orig = raw.__func__
    if getattr(orig, "_phaseprof", False):
        return True

    def _reorder_callbacks(callbacks, *args, **kwargs):
        try:
            if isinstance(callbacks, list) and not any(type(c) is cls for c in callbacks):
                callbacks = callbacks + [cls()]
        except Exception:
            pass
        try:
            return orig(callbacks, *args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise

    _reorder_callbacks.__wrapped__ = orig
    _reorder_callbacks.__doc__ = orig.__doc__
    _reorder_callbacks.__name__ = orig.__name__
    _reorder_callbacks.__qualname__ = getattr(orig, "__qualname__", orig.__name__)
    _reorder_callbacks._phaseprof = True
    C._reorder_callbacks = staticmethod(_reorder_callbacks)
    return True


def _attach_init(trainer_cls, cls):
    """Fallback: appends the callback after Trainer.__init__."""
    orig = trainer_cls.__dict__.get("__init__")
    if orig is None or getattr(orig, "_phaseprof", False):
        return
    import functools

    @functools.wraps(orig)
    def __init__(self, *args, **kwargs):
        try:
            orig(self, *args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise
        try:
            cbs = self.callbacks
            if not any(type(c) is cls for c in cbs):
                cbs.append(cls())
        except Exception:
            pass

    __init__._phaseprof = True
    trainer_cls.__init__ = __init__


def install(module):
    """Instruments pytorch_lightning or lightning.pytorch; raises only when
    it could not attach (the boot records why)."""
    if not N.enabled:
        return
    name = module.__name__
    mods = sys.modules
    callback_base = getattr(mods.get(name + ".callbacks.callback"), "Callback", None) \
        or getattr(module, "Callback")
    cls = _callback_class(callback_base)
    loop = mods.get(name + ".loops.training_epoch_loop")
    if not _wrap_fetch(getattr(loop, "_TrainingEpochLoop", None)):
        N.meta("python.adapter.%s.fetch" % name,
               "no _TrainingEpochLoop._on_before_fetch: steps begin at on_train_batch_start")
    conn = mods.get(name + ".trainer.connectors.callback_connector")
    if conn is None or not _attach_reorder(conn, cls):
        _attach_init(getattr(module, "Trainer"), cls)
        N.meta("python.adapter.%s.route" % name, "Trainer.__init__")
