"""torch.compile adapter (torch 2.x): compile phases, recompilations, graph
breaks and compile caches, from torch._dynamo's own compile-event logger.

Installed right after ``import torch._dynamo`` completed (torch 1.13 has no
``torch._dynamo``, so nothing here ever runs there). Every compile-time
stage of PyTorch 2 goes through ``dynamo_timed`` / ``chromium_event_timed``,
which report to the one ``ChromiumEventLogger`` (``log_event_start`` /
``log_event_end``, a few hundred calls per compiled frame and none while
compiled code runs). The adapter wraps those two methods (originals kept, every argument
forwarded) and turns a few of the events into nested ``compile`` phases on
the compiling thread, each named by the frame being compiled:

  compile <frame>              Dynamo's ``dynamo`` event: the whole compile
                               of one frame (capture + backend)
    dynamo capture <frame>     ``bytecode_tracing``
    aot_autograd <frame>       ``create_aot_dispatcher_function``
      inductor <frame>         ``inductor_compile`` (compile_fx_inner)
        inductor lowering ...  ``GraphLowering.run``
        inductor codegen ...   ``code_gen`` (GraphLowering.compile_to_module)
          c++ compile ...      ``compile_file`` / ``async_compile.wait``,
                               outermost one only
  backward compile <frame>     ``entire_backward_compile``: AOTAutograd's
                               lazy backward compile at the first backward

<frame> is ``function (file:line)`` of the compiled code object, with its
qualified name (``Net.forward``); a compiled module's call is
``Net.__call__`` at the line of its forward; a resume function after a graph
break is named as Dynamo names it
(``Net.torch_dynamo_resume_in_forward_at_12``).

When a compile ends (from Dynamo's CompilationMetrics of that frame):

  mark  ``torch.compile recompile: <frame> #<n>: <guard that failed>`` for
        every compile of a frame already compiled (n: the frame's n-th
        compile, from Dynamo's compile id), the guard as Dynamo words it
        (``tensor 'x' size mismatch at index 0. expected 8, actual 12``)
  mark  ``torch.compile graph break: <frame>: <reason> at <file:line>
        (x<count>)`` for every new graph-break reason Dynamo counted during
        that compile; the line is the user's code where the graph broke, as
        Dynamo's own graph-break report gives it (the structured-trace
        artifact ``dynamo_graph_break_reason``, which Dynamo builds for
        every break and drops unless TORCH_TRACE is set: the adapter reads
        its first lines, torch's trace settings untouched)
  counters (cumulative) ``torch.compile.frames``, ``.recompiles``,
        ``.graph_breaks``, ``.fx_graph_cache_hits`` / ``_misses``,
        ``.aot_autograd_cache_hits`` / ``_misses``
  meta  ``torch.compile.first_frame``, ``torch.compile.compiler_config``
        (at the first compile), ``torch.compile.cache_dir``
        (TORCHINDUCTOR_CACHE_DIR when set)

While Dynamo traces, the torch adapter's nn.Module.__call__ wrapper takes
its plain path (see _plain_while_traced): its recorder calls would be graph
breaks the program does not have.

A compile that starts in a training program (an optimizer exists, gradients
on) with no step open begins the step (through the torch adapter), so that a
compiled *function* called first in the iteration pays its compile inside the
step, as a compiled module's call does.

Nothing here prints, logs or changes a torch setting; every hook swallows
its own errors.
"""

import os
import sys
import threading

from .. import _native as N
from ..kinds import COMPILE

# chromium event -> phase label; the events PyTorch 2 emits per stage
_PHASES = {
    "bytecode_tracing": "dynamo capture",
    "create_aot_dispatcher_function": "aot_autograd",
    "inductor_compile": "inductor",
    "GraphLowering.run": "inductor lowering",
    "code_gen": "inductor codegen",
    "compile_file": "c++ compile",
    "async_compile.wait": "c++ compile",
}
_OUTER = {"dynamo": "compile", "entire_backward_compile": "backward compile"}

_tls = threading.local()
_frames = {}          # compile id's frame part ("1/3" -> "1") -> frame label
_seen_breaks = {}     # graph-break reason -> count already reported
_break_locs = []      # (where "file:line", Dynamo's break report) not yet reported
_totals = {"frames": 0, "recompiles": 0}
_U = None             # torch._dynamo.utils
_MODULE_PY = os.path.join("torch", "nn", "modules", "module.py")
_here_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# torch's, phaseprof's and the standard library's folders (set at install)
_skip_dirs = (_here_dir,)


def _stack():
    s = getattr(_tls, "s", None)
    if s is None:
        s = _tls.s = []
    return s


def _code_label(code, frame):
    """``function (file:line)`` of the code Dynamo compiles (its qualified
    name where Python has one). A compiled module's call compiles
    nn.Module's ``_wrapped_call_impl``, or the torch adapter's wrapper of
    ``__call__``: it is named ``Class.__call__`` at the module's forward."""
    name = getattr(code, "co_qualname", code.co_name)
    fn, line = code.co_filename, code.co_firstlineno
    if frame is not None and (fn.startswith(_here_dir) or fn.endswith(_MODULE_PY)):
        obj = frame.f_locals.get("self")
        fwd = getattr(getattr(type(obj), "forward", None), "__code__", None)
        if fwd is not None:
            name = type(obj).__name__ + ".__call__"
            fn, line = fwd.co_filename, fwd.co_firstlineno
    return "%s (%s:%d)" % (name, os.path.basename(fn), line)


def _frame_of_compile():
    """The frame label of the compile that is starting: found in the locals
    of Dynamo's ``convert_frame._compile`` a few frames up."""
    f = sys._getframe(2)
    for _ in range(10):
        if f is None:
            break
        if f.f_code.co_name == "_compile" and "code" in f.f_locals:
            loc = f.f_locals
            return _code_label(loc["code"], loc.get("frame"))
        f = f.f_back
    return "?"


def _id_key(md):
    """'1/3' -> ('1', 3): the frame and the frame's compile number in a
    CompileId's text (0 the first compile, then one per recompile)."""
    cid = str(md.get("compile_id", "")) if md else ""
    parts = cid.strip("[]!").split("/")
    try:
        return parts[0], int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return parts[0], 0


def _caller():
    """The program's frame that called what is being compiled: the first
    frame up the stack outside torch, phaseprof and the standard library
    (Dynamo's callback runs before the compiled frame starts)."""
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_skip_dirs) and not fn.startswith("<"):
            return f
        f = f.f_back
    return None


def _loop_event():
    """A compile is an event of the loop, as the call of a model is: the
    iteration it belongs to has begun before it, so the compile is paid
    inside that iteration's step."""
    ta = sys.modules.get("phaseprof.adapters.torch")
    f = _caller()
    if ta is not None and f is not None:
        ta.compile_event(f)


def _on_start(name, md):
    s = _stack()
    outer = _OUTER.get(name)
    if outer is not None:
        if name == "dynamo":
            label = _frame_of_compile()
            _frames[_id_key(md)[0]] = label
            if not s:
                _loop_event()
        else:
            label = _frames.get(_id_key(md)[0], "?")
        N.begin(COMPILE, "%s %s" % (outer, label))
        s.append((name, label, outer, str(md.get("compile_id", "")) if md else ""))
        return
    if not s:
        return  # only stages of a compile opened on this thread
    what = _PHASES.get(name)
    if what is None or (what == "c++ compile" and s[-1][2] == what):
        return
    N.begin(COMPILE, "%s %s" % (what, s[0][1]))
    s.append((name, s[0][1], what, ""))


def _counter_totals():
    c = _U.counters
    ind, aot = c.get("inductor", {}), c.get("aot_autograd", {})
    N.counter("torch.compile.frames", _totals["frames"])
    N.counter("torch.compile.recompiles", _totals["recompiles"])
    N.counter("torch.compile.graph_breaks", sum(c.get("graph_break", {}).values()))
    N.counter("torch.compile.fx_graph_cache_hits", ind.get("fxgraph_cache_hit", 0))
    N.counter("torch.compile.fx_graph_cache_misses", ind.get("fxgraph_cache_miss", 0))
    N.counter("torch.compile.aot_autograd_cache_hits", aot.get("autograd_cache_hit", 0))
    N.counter("torch.compile.aot_autograd_cache_misses", aot.get("autograd_cache_miss", 0))


def _reason_text(reason):
    """Dynamo's reason without the failed entry's compile id ('1/0: ')."""
    r = (reason or "reason unknown").strip()
    head, sep, rest = r.partition(": ")
    if sep and head.replace("/", "").isdigit():
        r = rest
    return " ".join(r.split())[:400]


def _break_text(why):
    """A graph-break counter key: its type and explanation, not the hints."""
    t = " ".join(str(why).split())
    cut = t.find(" Hint:")
    return (t[:cut] if cut > 0 else t)[:400]


def _wrap_trace_structured(orig):
    """torch._logging.trace_structured: every call forwarded as it came;
    a graph-break report's location kept for the break's mark."""
    def trace_structured(name, *args, **kwargs):
        if name == "artifact" and len(_break_locs) < 64:
            md = args[0] if args else kwargs.get("metadata_fn")
            pf = kwargs.get("payload_fn")
            if md is not None and pf is not None:
                _safe_call(_note_break, md, pf)
        return orig(name, *args, **kwargs)
    trace_structured._phaseprof = True
    return trace_structured


def _note_break(metadata_fn, payload_fn):
    md = metadata_fn()
    if not isinstance(md, dict) or md.get("name") != "dynamo_graph_break_reason":
        return
    text = str(payload_fn())
    head = "Graph break in user code at "
    if text.startswith(head):
        where = text[len(head):text.find("\n")] if "\n" in text else text[len(head):]
        path, _, line = where.rpartition(":")
        _break_locs.append(("%s:%s" % (os.path.basename(path), line), text[:4000]))


def _break_where(why):
    """The user code lines of the breaks Dynamo reported for a counter key
    (matched by the key's first line in the report), taken off the list."""
    first = str(why).split("\n", 1)[0].strip()
    if not first:
        return ""
    found = []
    for e in list(_break_locs):
        if first in e[1]:
            _break_locs.remove(e)
            if e[0] not in found:
                found.append(e[0])
    return " at " + ", ".join(found) if found else ""


def _frame_done(label, cid):
    """After a frame's compile (cid: its compile id's text): recompile mark
    with the failed guard, new graph breaks, the cumulative counters."""
    nth = _id_key({"compile_id": cid})[1]
    m = None
    cm = getattr(_U, "_compilation_metrics", None)
    if cm and str(getattr(cm[-1], "compile_id", "")) == cid:
        m = cm[-1]  # Dynamo's metrics of this very compile
    _totals["frames"] += 1
    reason = getattr(m, "recompile_reason", None) if m is not None else None
    if nth > 0:
        _totals["recompiles"] += 1
        N.mark("torch.compile recompile: %s #%d: %s" % (label, nth + 1, _reason_text(reason)))
    if _totals["frames"] == 1:
        be = getattr(m, "compiler_config", None)
        N.meta("torch.compile.first_frame", label)
        if be:
            N.meta("torch.compile.compiler_config", str(be)[:300])
        d = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        if d:
            N.meta("torch.compile.cache_dir", d)
    gb = _U.counters.get("graph_break", {})
    for why, cnt in list(gb.items()):
        old = _seen_breaks.get(why, 0)
        if cnt > old:
            _seen_breaks[why] = cnt
            N.mark("torch.compile graph break: %s: %s%s (x%d)"
                   % (label, _break_text(why), _break_where(why), cnt - old))
    del _break_locs[:]
    _counter_totals()


def _on_end(name):
    s = _stack()
    if not s or not any(e[0] == name for e in s):
        return
    while s:
        ev, label, what, cid = s.pop()
        N.end()
        if ev == name:
            break
    if name == "dynamo":
        _frame_done(label, cid)
    elif name == "entire_backward_compile":
        _counter_totals()


def _safe_call(fn, *a):
    try:
        fn(*a)
    except Exception:
        pass


def _wrap_start(orig):
    def log_event_start(self, event_name, *args, **kwargs):
        out = orig(self, event_name, *args, **kwargs)
        if event_name in _OUTER or event_name in _PHASES:
            md = args[1] if len(args) > 1 else kwargs.get("metadata")
            _safe_call(_on_start, event_name, md)
        return out
    log_event_start._phaseprof = True
    return log_event_start


def _wrap_end(orig):
    def log_event_end(self, event_name, *args, **kwargs):
        try:
            return orig(self, event_name, *args, **kwargs)
        finally:
            if event_name in _OUTER or event_name in _PHASES:
                _safe_call(_on_end, event_name)
    log_event_end._phaseprof = True
    return log_event_end


def _install(dynamo):
    global _U, _skip_dirs
    torch_dir = os.path.dirname(os.path.abspath(sys.modules["torch"].__file__))
    _skip_dirs = (_here_dir, torch_dir, os.path.dirname(os.path.abspath(os.__file__)))
    U = sys.modules.get("torch._dynamo.utils") or getattr(dynamo, "utils", None)
    cls = getattr(U, "ChromiumEventLogger", None)
    if cls is None:
        N.meta("python.adapter.torch._dynamo.partial", "no ChromiumEventLogger")
        return
    _U = U
    for attr, make in (("log_event_start", _wrap_start), ("log_event_end", _wrap_end)):
        orig = cls.__dict__.get(attr)
        if orig is not None and not getattr(orig, "_phaseprof", False):
            setattr(cls, attr, make(orig))
    tl = sys.modules.get("torch._logging")
    orig = getattr(tl, "trace_structured", None)
    if orig is not None and not getattr(orig, "_phaseprof", False):
        tl.trace_structured = _wrap_trace_structured(orig)


def install(dynamo):
    """Instruments torch._dynamo's compile-event logger; never raises."""
    if not N.enabled:
        return
    try:
        _install(dynamo)
    except Exception as e:
        N.meta("python.adapter.torch._dynamo.partial", "%s: %s" % (type(e).__name__, e))
