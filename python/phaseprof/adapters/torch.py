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

Steps are the loop's iterations (``phaseprof._loop`` finds them from where
these calls are made: any loop shape, no annotation; the first step is a
``first_step``):

  * One step spans one whole iteration of the loop, from its start to the
    next one's: data fetch, forward, backward, optimizer, and whatever the
    program does after (metrics, logging, building the next batch).
  * An iteration is complete with an ``Optimizer.step`` once an optimizer
    exists (gradient accumulation: the micro-batches are inside one step,
    and the step unit says so), else with a backward pass
    (``torch.autograd.backward``/``grad``: manual updates), else, with
    gradients disabled, with a model call (inference: one step per batch,
    however many modules it calls).
  * Validation passes, evaluation and the code after the loop are not steps
    (a batch from another DataLoader, a model call past the loop body, or
    outside the loop's frame, ends the open step).
  * The program's own ``phaseprof.step()`` (or a framework adapter's loop
    hooks) takes precedence: from its first call on, no step is drawn here.
  * Inside a step: data_wait (DataLoader ``__next__``), forward (outermost
    module call), backward, optimizer_step.
  * A DataLoader whose length is unknown (an IterableDataset without
    ``__len__``): its waits are data_wait phases before the step, which then
    begins when the batch arrives (a step must not begin for the
    ``StopIteration`` that ends the loop). One of known length ends the
    step at its last ``__next__``.
  * A step left open by an exception stays open: ingest keeps the steps
    before it and the run's exit status says it failed. One open at the
    process's normal exit ends there.

Per step, counters written just before the step ends:
  step.allocs, step.alloc_bytes   malloc calls and bytes during the step
                                  (agent hooks; PyTorch's CPU allocator is
                                  plain malloc/posix_memalign in 1.13, so
                                  tensor storage is included)
  step.rss_bytes                  resident memory at the end of the step
  torch.hooks                     forward/backward hooks on the models called
                                  in the step, plus global module hooks
  torch.graph_nodes               autograd nodes reachable from the tensors
                                  passed to backward (at each of the first 50
                                  steps, then every 10th)
  torch.cuda.allocated_bytes      once CUDA is initialised: the bytes
  torch.cuda.reserved_bytes       PyTorch's caching allocator gives to tensors
                                  and holds from the driver, current device
PyTorch 1.13 on CPU exposes no count of live tensor bytes (its allocator
statistics are CUDA-only; the CPU side reports to the profiler only while
torch.profiler runs with profile_memory), so none is recorded.

Everything runs on the thread that imported torch; calls from other threads
and from forked children (DataLoader workers) pass straight through, and
so do calls while ``torch.compile`` traces (Dynamo inlines the wrappers).
An exception passes through a wrapper with the wrapper's traceback entry
removed: the program's tracebacks are the ones a plain run prints.
"""

import functools
import os
import sys
import threading

from .. import _loop, _steps
from .. import _native as N
from .._wrapping import safe as _safe, strip as _strip, wrap as _wrap
from ..kinds import (BACKWARD, COMPILE, DATA_WAIT, FORWARD, MODEL_BUILD,
                     OPTIMIZER_SETUP, OPTIMIZER_STEP, WEIGHT_LOAD)


class _State:
    def __init__(self):
        self.tid = threading.get_ident()
        self.pid = os.getpid()
        self.on = True
        self.have_opt = False
        self.call_depth = 0       # nn.Module.__call__ nesting
        self.build_depth = 0
        self.opt_depth = 0
        self.inner = 0            # inside torch.load / jit.script / jit.trace
        self.global_hooks = ()   # torch's global module hook dicts
        self.models = {}          # id(module) -> (module, its modules list)
        self.graph_nodes = -1
        self.script_runs = {}     # id(script module) -> runs so far
        self.profiled_runs = 1
        self.cuda = None          # torch.cuda


S = _State()
_torch = None
# torch.compiler.is_compiling where it exists: Dynamo folds it to True while
# it traces, so a traced call takes the plain path; bool() is False (1.13)
_compiling = bool


def _here():
    """True when the adapter acts on this call: the installing thread of
    the installing process, outside a torch.compile trace."""
    return not _compiling() and S.on and threading.get_ident() == S.tid


# ---- steps ----

def _step_stats():
    # step.allocs, step.alloc_bytes and step.rss_bytes are the agent's
    # (N.step_counters): here only what needs the torch objects
    hooks = sum(map(len, S.global_hooks))
    for _, dicts in S.models.values():
        hooks += sum(map(len, dicts))
    N.counter("torch.hooks", hooks)
    if S.graph_nodes >= 0:
        N.counter("torch.graph_nodes", S.graph_nodes)
        S.graph_nodes = -1
    cuda = S.cuda
    # is_initialized: never the call that starts CUDA in a CPU program
    if cuda is not None and cuda.is_initialized():
        N.counter("torch.cuda.allocated_bytes", float(cuda.memory_allocated()))
        N.counter("torch.cuda.reserved_bytes", float(cuda.memory_reserved()))


def _on_step_end():
    if S.on:
        _safe(_step_stats)


def _remember_model(mod):
    k = id(mod)
    if k not in S.models:
        if len(S.models) >= 4:
            S.models.pop(next(iter(S.models)))
        # the hook dicts of its modules, which register_*_hook fill in place
        S.models[k] = (mod, [d for m in mod.modules()
                             for d in (m._forward_hooks, m._forward_pre_hooks, m._backward_hooks)])


def _count_graph(tensors):
    # every step for the first 50 (the rules' trends over a short run need
    # them all), then every 10th: a walk costs ~7 us even for a tiny graph
    if _steps.number >= 50 and _steps.number % 10:
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


# ---- wrappers ----

def _event(cls, f, loader=None):
    """Reports a framework event made by frame f to the loop tracker."""
    if not _steps.explicit:
        try:
            # an event may begin a step in training with gradients on, in
            # inference with them off
            g = _torch.is_grad_enabled()
            _loop.event(cls, f, not g if _loop.completing == _loop.FORWARD else g, loader)
        except Exception:
            pass


def compile_event(f):
    """torch.compile starts compiling a call made by frame f (the
    torch._dynamo adapter's hook): an event of the loop like a model call,
    so the compile is paid inside the iteration that called it. Inside a
    model call, that call was the event."""
    if (S.on and threading.get_ident() == S.tid and not S.call_depth and not S.inner
            and not S.opt_depth):
        _event(_loop.FORWARD, f)


def _module_call(orig):
    @functools.wraps(orig)
    def __call__(self, *args, **kwargs):
        if not _here():
            return orig(self, *args, **kwargs)
        if S.call_depth or S.inner:
            S.call_depth += 1
            try:
                return orig(self, *args, **kwargs)
            except BaseException as e:
                _strip(e)
                raise
            finally:
                S.call_depth -= 1
        _event(_loop.FORWARD, sys._getframe(1))
        if _steps.is_open:
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
            return orig(self, *args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise
        finally:
            S.call_depth = 0
            if compiling:
                N.end()
            N.end()
    return __call__


def _saw_backward():
    """A backward pass with gradients on and no optimizer: the loop's
    iterations are completed by backward passes (manual updates)."""
    if _loop.completing < _loop.BACKWARD and _torch.is_grad_enabled():
        _loop.set_completing(_loop.BACKWARD)


def _backward(label):
    def make(orig):
        @functools.wraps(orig)
        def backward(tensors, *args, **kwargs):
            # inside Optimizer.step(closure) (LBFGS, Lightning) a backward
            # pass is still one: its phase is recorded inside the step's
            if not _here() or S.call_depth or S.inner:
                return orig(tensors, *args, **kwargs)
            _safe(_saw_backward)
            _event(_loop.BACKWARD, sys._getframe(1))
            if _steps.is_open:
                _safe(_count_graph, tensors)
            N.begin(BACKWARD, label)
            try:
                return orig(tensors, *args, **kwargs)
            except BaseException as e:
                _strip(e)
                raise
            finally:
                N.end()
        return backward
    return make


def _func_transform(orig):
    """torch.func.grad / grad_and_value / vjp: the function they return
    computes gradients when called (a functional training loop's backward)."""
    @functools.wraps(orig)
    def transform(*targs, **tkw):
        inner = orig(*targs, **tkw)
        if not callable(inner):
            return inner

        @functools.wraps(inner)
        def run(*args, **kwargs):
            if not _here() or S.call_depth or S.inner:
                return inner(*args, **kwargs)
            _safe(_saw_backward)
            _event(_loop.BACKWARD, sys._getframe(1))
            N.begin(BACKWARD, orig.__name__)
            S.inner += 1
            try:
                return inner(*args, **kwargs)
            except BaseException as e:
                _strip(e)
                raise
            finally:
                S.inner -= 1
                N.end()
        return run
    return transform


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
        _event(_loop.OPTIMIZER, sys._getframe(1))
        lazy = not self.state and _keeps_state(self)
        name = type(self).__name__
        N.begin(OPTIMIZER_SETUP if lazy else OPTIMIZER_STEP,
                name + " lazy state" if lazy else name + ".step")
        S.opt_depth += 1
        try:
            out = orig(self, *args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise
        finally:
            S.opt_depth -= 1
            N.end()
        if lazy and self.state:
            sz = _safe(_state_size, self)
            if sz:
                N.mark("optimizer state created: %s, %d tensors, %d bytes" % (name, sz[0], sz[1]))
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
        except BaseException as e:
            _strip(e)
            raise
        finally:
            N.end()
        S.have_opt = True
        _safe(_loop.set_completing, _loop.OPTIMIZER)
        _safe(_wrap, type(self), "step", _opt_step)
        return out
    return __init__


def _batches_left(it):
    try:
        return len(it) - it._num_yielded
    except Exception:  # an IterableDataset without __len__
        return None


def _loader_id(it):
    """The DataLoader an iterator belongs to, across epochs (its batch
    sampler is made once per DataLoader)."""
    return id(getattr(it, "_index_sampler", None) or it)


def _data_next(orig):
    @functools.wraps(orig)
    def __next__(self):
        if not _here() or S.call_depth or S.inner:
            return orig(self)
        f = sys._getframe(1)
        left = _batches_left(self)
        if left == 0:
            _safe(_loop.loop_done)
        elif left is not None:
            _event(_loop.DATA, f, _loader_id(self))
        N.begin(DATA_WAIT, "DataLoader.__next__")
        try:
            out = orig(self)
        except StopIteration as e:
            if left is None:
                _safe(_loop.loop_done)
            _strip(e)
            raise
        except BaseException as e:
            _strip(e)
            raise
        finally:
            N.end()
        if left is None:
            _event(_loop.DATA, f, _loader_id(self))
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
            except BaseException as e:
                _strip(e)
                raise
            finally:
                S.build_depth -= 1
        N.begin(MODEL_BUILD, type(self).__name__)
        S.build_depth = 1
        try:
            return orig(self, *args, **kwargs)
        except BaseException as e:
            _strip(e)
            raise
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
        except BaseException as e:
            _strip(e)
            raise
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
        except BaseException as e:
            _strip(e)
            raise
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
            except BaseException as e:
                _strip(e)
                raise
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
    global _torch, _compiling
    _torch = torch
    S.cuda = getattr(torch, "cuda", None)
    comp = getattr(torch, "compiler", None)
    _compiling = getattr(comp, "is_compiling", None) or bool
    mm = torch.nn.modules.module
    S.global_hooks = [getattr(mm, g) for g in ("_global_forward_hooks", "_global_forward_pre_hooks",
                                               "_global_backward_hooks") if hasattr(mm, g)]
    N.step_counters(True)
    _steps.on_end.append(_on_step_end)
    S.profiled_runs = _safe(torch._C._jit_get_num_profiled_runs) or 1
    nn = torch.nn
    _wrap(nn.Module, "__call__", _module_call)
    for c in (nn.Sequential, nn.ModuleList, nn.ModuleDict):
        _wrap(c, "__init__", _model_init)
    if "__init_subclass__" not in nn.Module.__dict__:
        nn.Module.__init_subclass__ = classmethod(_init_subclass)
    _wrap(nn.Module, "load_state_dict", _load_state_dict)
    _wrap(torch.optim.Optimizer, "__init__", _opt_init)
    _wrap(torch.autograd, "backward", _backward("backward"))
    _wrap(torch.autograd, "grad", _backward("autograd.grad"))
    func = getattr(torch, "func", None)  # torch 2.x; functorch's in 1.13 is not wrapped
    if func is not None:
        for t in ("grad", "grad_and_value", "vjp"):
            _wrap(func, t, _func_transform)
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
