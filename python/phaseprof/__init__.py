"""phaseprof: declare the phases of a Python program.

Under ``phaseprof record -- python3 prog.py`` this package is loaded by the
agent before the program's first line (no installation, no change to
sys.path) and every call lands in the recording. Anywhere else it is a no-op
costing a function call.

    import phaseprof

    with phaseprof.phase("load weights", kind="weight_load"):
        state = load()

    @phaseprof.phase("build model", kind="model_build")
    def build(): ...

    for batch in data:
        phaseprof.step()          # step N starts here; step N-1 ends
        train(batch)
    phaseprof.step_end()          # optional: the last step ends here
                                  # (else at the next phase of the run's end)

    for batch in data:            # the same, as a block
        with phaseprof.step():
            train(batch)

    phaseprof.mark("checkpoint written")
    phaseprof.counter("loss", loss)

``step()`` starts the next step now (ending the previous one if it is still
open) and returns an object that ends it when used as a context manager.
Steps are numbered 0, 1, 2... per process unless ``step(i)`` gives the
number. The first step of the process is recorded as a ``first_step`` phase
around step 0, which is what the diagnostics expect. Steps and phases nest
per thread: close them on the thread that opened them.

kind: a name from ``phaseprof.kinds.KIND`` ("span", "compile",
"weight_load", "model_build", ...) or its int value.
"""

from . import _native, _steps
from .kinds import KIND, kind_value

__all__ = ["phase", "step", "step_end", "mark", "counter", "enabled", "KIND"]

_begin = _native.begin
_end = _native.end


def enabled():
    """True when running under ``phaseprof record`` with the Python layer on."""
    return _native.enabled


class phase:
    """A phase: ``with phase(name, kind=...)`` or ``@phase(name, kind=...)``."""

    __slots__ = ("name", "kind")

    def __init__(self, name, kind="span"):
        self.name = str(name)
        self.kind = kind_value(kind)

    def __enter__(self):
        _begin(self.kind, self.name)
        return self

    def __exit__(self, et, ev, tb):
        _end()
        return False

    def __call__(self, fn):
        import functools

        kind, name = self.kind, self.name

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            _begin(kind, name)
            try:
                return fn(*a, **kw)
            finally:
                _end()

        return wrapper


class _Step:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        step_end()
        return False


_STEP = _Step()


def step(i=None):
    """Start the next step now (ends the previous one if still open).

    Returns a context manager that ends this step at the end of its block.
    The program's own steps take precedence over the ones a framework
    adapter would draw: from the first call on, only these count.
    """
    if _steps.begin(i, "explicit"):
        _steps.set_unit("phaseprof.step()")
    return _STEP


def step_end():
    """End the open step, if any."""
    _steps.end("explicit")


def mark(name):
    """An instant event in the recording."""
    _native.mark(str(name))


def counter(name, value):
    """A counter sample (a float) in the recording."""
    _native.counter(str(name), float(value))
