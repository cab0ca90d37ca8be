"""PyTorch adapter: framework phases and every training step, no annotation.

All PyTorch knowledge of phaseprof is here. ``install(torch)`` wraps a few
framework entry points (originals kept, every argument forwarded, return
values and exceptions unchanged):

  model_build      construction of a model: the ``__init__`` of an
                   ``nn.Module`` subclass defined after ``import torch`` (the
                   user's and later libraries'), and of ``nn.Sequential`` /
                   ``ModuleList`` / ``ModuleDict``; the outermost one only,
                   named by class. Loss modules and single built-in layers
                   are not models and get no phase.
  weight_load      ``torch.load`` (named by file; counter ``weight_load.bytes``
                   = the file's size) and ``Module.load_state_dict`` (counter
                   = bytes of the tensors in the state dict).
  optimizer_setup  ``Optimizer.__init__``; and the first ``step()`` of each
                   optimizer whose state is still empty: that call creates the
                   state lazily (Adam's moments, SGD's momentum buffers), so
                   it is recorded as optimizer_setup "<Class> lazy state"
                   instead of optimizer_step, with a mark giving the state's
                   tensors and bytes.
  compile          ``torch.jit.script`` / ``torch.jit.trace``, and the first
                   runs of a TorchScript module, in which the profiling
                   executor profiles and then optimises the graph
                   (``num_profiled_runs`` + 1 runs).
                   ``torch.compile`` does not exist in 1.13 (the only PyTorch
                   here) and is not wrapped: nothing could test it.

Steps (``step_begin``/``step_end``, so the first is a ``first_step``):

  * A training step ends when ``Optimizer.step`` returns (one step per
    ``step()`` call: a program stepping two optimizers per iteration gets two
    steps per iteration).
  * It begins at the first, after the previous step ended, of: a DataLoader
    ``__next__`` that will yield a batch, the outermost ``nn.Module`` call
    (forward), ``torch.autograd.backward`` - once an optimizer exists and
    gradients are enabled. ``zero_grad`` never begins a step: it is inside
    the step, or between two steps when called right after ``step()``.
  * Inside a step: data_wait (DataLoader ``__next__``), forward (outermost
    module call), backward, optimizer_step.
  * Inference (no optimizer created yet, gradients disabled): each outermost
    module call is one step. Forward calls under ``no_grad`` once an
    optimizer exists (validation) are forward phases between steps.
  * A DataLoader whose length is unknown (an IterableDataset without
    ``__len__``): its waits are data_wait phases before the step, which then
    begins when the batch arrives (a step must not begin for the
    ``StopIteration`` that ends the loop).
  * A step left open by an exception stays open: ingest keeps the steps
    before it and the run's exit status says it failed.

Per step, counters written just before the step ends:
  step.allocs, step.alloc_bytes   malloc calls and bytes during the step
                                  (agent hooks; PyTorch's CPU allocator is
                                  plain malloc/posix_memalign in 1.13, so
                                  tensor storage is included)
  step.rss_bytes                  resident memory at the end of the step
  torch.hooks                     forward/backward hooks on the models called
                                  in the step, plus global module hooks
  torch.graph_nodes               autograd nodes reachable from the tensors
                                  passed to backward (counted while the graph
                                  stays under 300 nodes, else every 10th step)
PyTorch 1.13 on CPU exposes no count of live tensor bytes (its allocator
statistics are CUDA-only; the CPU side reports to the profiler only while
torch.profiler runs with profile_memory), so none is recorded.

Everything runs on the thread that imported torch; calls from other threads
and from forked children (DataLoader workers) pass straight through.
"""

import functools
import os
import threading

from .. import _native as N
from ..kinds import (BACKWARD, COMPILE, DATA_WAIT, FORWARD, MODEL_BUILD,
                     OPTIMIZER_SETUP, OPTIMIZER_STEP, WEIGHT_LOAD)


class _State:
    def __init__(self):
        self.tid = threading.get_ident()
        self.pid = os.getpid()
        self.on = True
        self.have_opt = False
        self.in_step = False
        self.step_no = 0
        self.infer = False        # the open step is an inference step
        self.call_depth = 0       # nn.Module.__call__ nesting
        self.build_depth = 0
        self.opt_depth = 0
        self.inner = 0            # inside torch.load / jit.script / jit.trace
        self.alloc0 = (0, 0)
        self.models = {}          # id(module) -> (module, its modules list)
        self.graph_nodes = -1
        self.graph_every = 1
        self.script_runs = {}     # id(script module) -> runs so far
        self.profiled_runs = 1


S = _State()
_torch = None


def _here():
    """True when the adapter acts on this call: the installing thread of
    the installing process."""
    return S.on and threading.get_ident() == S.tid


def _safe(fn, *a):
    """Runs recording code that must never raise into the program."""
    try:
        return fn(*a)
    except Exception:
        return None


def _wrap(owner, attr, make):
    """Replaces owner.attr with make(original); no-op if already ours."""
    orig = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr, None)
    if orig is None or getattr(orig, "_phaseprof", False):
        return
    w = make(orig)
    w._phaseprof = True
    setattr(owner, attr, w)


# ---- steps ----

def _step_begin(infer=False):
    S.in_step = True
    S.infer = infer
    S.alloc0 = N.alloc_totals()
    N.step_begin(S.step_no)


def _step_stats():
    calls, nbytes = N.alloc_totals()
    N.counter("step.allocs", calls - S.alloc0[0])
    N.counter("step.alloc_bytes", nbytes - S.alloc0[1])
    N.counter("step.rss_bytes", N.rss())
    hooks = 0
    mm = _torch.nn.modules.module
    for g in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks"):
        hooks += len(getattr(mm, g, ()))
    for _, mods in S.models.values():
        for m in mods:
            hooks += len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks)
    N.counter("torch.hooks", hooks)
    if S.graph_nodes >= 0:
        N.counter("torch.graph_nodes", S.graph_nodes)
        S.graph_nodes = -1


def _step_end():
    _safe(_step_stats)
    S.in_step = False
    S.infer = False
    N.step_end()
    S.step_no += 1


def _maybe_begin_train():
    if not S.in_step and S.have_opt and _torch.is_grad_enabled():
        _step_begin()


def _remember_model(mod):
    k = id(mod)
    if k not in S.models:
        if len(S.models) >= 4:
            S.models.pop(next(iter(S.models)))
        S.models[k] = (mod, list(mod.modules()))


def _count_graph(tensors):
    if S.graph_every > 1 and S.step_no % S.graph_every:
        return
    t = _torch
    roots = [tensors] if isinstance(tensors, t.Tensor) else list(tensors)
    seen = set()
    todo = [x.grad_fn for x in roots if isinstance(x, t.Tensor) and x.grad_fn is not None]
    while todo and len(seen) < 5000:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        todo.extend(n for n, _ in fn.next_functions)
    S.graph_nodes = len(seen)
    S.graph_every = 1 if len(seen) < 300 else 10


# ---- wrappers ----

def _module_call(orig):
    @functools.wraps(orig)
    def __call__(self, *args, **kwargs):
        if not _here():
            return orig(self, *args, **kwargs)
        if S.call_depth or S.inner:
            S.call_depth += 1
            try:
                return orig(self, *args, **kwargs)
            finally:
                S.call_depth -= 1
        infer_step = False
        if not S.in_step:
            if S.have_opt:
                _maybe_begin_train()
            elif not _torch.is_grad_enabled():
                _step_begin(infer=True)
                infer_step = True
        if S.in_step:
            _safe(_remember_model, self)
        runs = -1
        if isinstance(self, _torch.jit.ScriptModule):
            runs = S.script_runs.get(id(self), 0)
            S.script_runs[id(self)] = runs + 1
        name = type(self).__name__
        N.begin(FORWARD, name)
        compiling = 0 <= runs <= S.profiled_runs
        if compiling:
            N.begin(COMPILE, "torchscript profiling run %d of %s" % (runs + 1, name))
        S.call_depth = 1
        try:
            out = orig(self, *args, **kwargs)
        finally:
            S.call_depth = 0
            if compiling:
                N.end()
            N.end()
        if infer_step:
            _step_end()
        return out
    return __call__


def _backward(orig):
    @functools.wraps(orig)
    def backward(tensors, *args, **kwargs):
        if not _here():
            return orig(tensors, *args, **kwargs)
        _maybe_begin_train()
        if S.in_step:
            _safe(_count_graph, tensors)
        N.begin(BACKWARD, "backward")
        try:
            return orig(tensors, *args, **kwargs)
        finally:
            N.end()
    return backward


def _state_size(opt):
    n = b = 0
    for st in opt.state.values():
        for v in st.values():
            if isinstance(v, _torch.Tensor):
                n += 1
                b += v.numel() * v.element_size()
    return n, b


def _keeps_state(opt):
    """False for the one 1.13 optimizer that keeps no tensors: SGD without
    momentum (its first step stores None buffers)."""
    if type(opt) is _torch.optim.SGD:
        return any(g.get("momentum", 0) for g in opt.param_groups)
    return True


def _opt_step(orig):
    @functools.wraps(orig)
    def step(self, *args, **kwargs):
        if S.opt_depth or not _here():
            return orig(self, *args, **kwargs)
        _maybe_begin_train()
        lazy = not self.state and _keeps_state(self)
        name = type(self).__name__
        N.begin(OPTIMIZER_SETUP if lazy else OPTIMIZER_STEP,
                name + " lazy state" if lazy else name + ".step")
        S.opt_depth += 1
        try:
            out = orig(self, *args, **kwargs)
        finally:
            S.opt_depth -= 1
            N.end()
        if lazy and self.state:
            sz = _safe(_state_size, self)
            if sz:
                N.mark("optimizer state created: %s, %d tensors, %d bytes" % (name, sz[0], sz[1]))
        if S.in_step and not S.infer:
            _step_end()
        return out
    return step


def _opt_init(orig):
    @functools.wraps(orig)
    def __init__(self, *args, **kwargs):
        if not _here():
            return orig(self, *args, **kwargs)
        N.begin(OPTIMIZER_SETUP, type(self).__name__)
        try:
            out = orig(self, *args, **kwargs)
        finally:
            N.end()
        S.have_opt = True
        _safe(_wrap, type(self), "step", _opt_step)
        return out
    return __init__


def _data_next(orig):
    @functools.wraps(orig)
    def __next__(self):
        if not _here():
            return orig(self)
        if not S.in_step and S.have_opt and _torch.is_grad_enabled():
            left = _safe(lambda: len(self) - self._num_yielded)
            if left is not None and left > 0:
                _step_begin()
        N.begin(DATA_WAIT, "DataLoader.__next__")
        try:
            out = orig(self)
        finally:
            N.end()
        _maybe_begin_train()
        return out
    return __next__


def _model_init(orig):
    @functools.wraps(orig)
    def __init__(self, *args, **kwargs):
        if not _here():
            return orig(self, *args, **kwargs)
        if S.build_depth:
            S.build_depth += 1
            try:
                return orig(self, *args, **kwargs)
            finally:
                S.build_depth -= 1
        N.begin(MODEL_BUILD, type(self).__name__)
        S.build_depth = 1
        try:
            return orig(self, *args, **kwargs)
        finally:
            S.build_depth = 0
            N.end()
    return __init__


def _file_size(f):
    if isinstance(f, (str, bytes, os.PathLike)):
        return os.path.getsize(f), os.path.basename(os.fsdecode(f))
    name = getattr(f, "name", None)
    if isinstance(name, str):
        return os.fstat(f.fileno()).st_size, os.path.basename(name)
    return None, type(f).__name__


def _torch_load(orig):
    @functools.wraps(orig)
    def load(f, *args, **kwargs):
        if S.inner or not _here():
            return orig(f, *args, **kwargs)
        size, name = _safe(_file_size, f) or (None, "?")
        N.begin(WEIGHT_LOAD, "torch.load " + name)
        S.inner += 1
        try:
            return orig(f, *args, **kwargs)
        finally:
            S.inner -= 1
            if size is not None:
                N.counter("weight_load.bytes", size)
            N.end()
    return load


def _dict_bytes(sd):
    return sum(v.numel() * v.element_size() for v in sd.values()
               if isinstance(v, _torch.Tensor))


def _load_state_dict(orig):
    @functools.wraps(orig)
    def load_state_dict(self, state_dict, *args, **kwargs):
        if not _here():
            return orig(self, state_dict, *args, **kwargs)
        N.begin(WEIGHT_LOAD, "load_state_dict " + type(self).__name__)
        try:
            return orig(self, state_dict, *args, **kwargs)
        finally:
            b = _safe(_dict_bytes, state_dict)
            if b is not None:
                N.counter("weight_load.bytes", b)
            N.end()
    return load_state_dict


def _jit_compile(label):
    def make(orig):
        @functools.wraps(orig)
        def compile_fn(obj, *args, **kwargs):
            if S.inner or not _here():
                return orig(obj, *args, **kwargs)
            N.begin(COMPILE, "%s %s" % (label, getattr(obj, "__name__", type(obj).__name__)))
            S.inner += 1
            try:
                return orig(obj, *args, **kwargs)
            finally:
                S.inner -= 1
                N.end()
        return compile_fn
    return make


def _init_subclass(cls, **kwargs):
    super(_torch.nn.Module, cls).__init_subclass__(**kwargs)
    if "__init__" in cls.__dict__:
        _safe(_wrap, cls, "__init__", _model_init)


def _after_fork():
    S.on = False


def _install(torch):
    global _torch
    _torch = torch
    S.profiled_runs = _safe(torch._C._jit_get_num_profiled_runs) or 1
    nn = torch.nn
    _wrap(nn.Module, "__call__", _module_call)
    for c in (nn.Sequential, nn.ModuleList, nn.ModuleDict):
        _wrap(c, "__init__", _model_init)
    if "__init_subclass__" not in nn.Module.__dict__:
        nn.Module.__init_subclass__ = classmethod(_init_subclass)
    _wrap(nn.Module, "load_state_dict", _load_state_dict)
    _wrap(torch.optim.Optimizer, "__init__", _opt_init)
    _wrap(torch.autograd, "backward", _backward)
    _wrap(torch.utils.data.dataloader._BaseDataLoaderIter, "__next__", _data_next)
    _wrap(torch, "load", _torch_load)
    _wrap(torch.jit, "script", _jit_compile("torch.jit.script"))
    _wrap(torch.jit, "trace", _jit_compile("torch.jit.trace"))
    os.register_at_fork(after_in_child=_after_fork)


def install(torch):
    """Instruments the imported torch module; never raises."""
    if not N.enabled:
        return
    try:
        _install(torch)
    except Exception as e:
        N.meta("python.adapter.torch.partial", "%s: %s" % (type(e).__name__, e))
