"""Run by the agent at the program's first line (``cpython.run_file`` and the
like), with ``_phaseprof_native`` already in sys.modules.

It installs the post-import trigger of the framework adapters. It must not
change what the program sees (sys.path, os.environ, __main__) and never
raises: the agent runs it in a private namespace and records any failure.
"""

import sys

from . import _native
from .adapters import ADAPTERS

_done = set()
_load = None  # the agent's file loader: load(name, path) -> module


def _install(name, module):
    """Import the adapter of `name` and call its install(module), once."""
    if name in _done:
        return
    _done.add(name)
    n = _native._m
    try:
        target = ADAPTERS[name]
        adapter = sys.modules.get(target)
        if adapter is None:
            # from its file, not through the import system (see the agent)
            from . import adapters
            leaf = target.rsplit(".", 1)[1]
            adapter = _load(target, adapters.__path__[0] + "/" + leaf + ".py")
            setattr(adapters, leaf, adapter)
        adapter.install(module)
        n.meta("python.adapter." + name, "installed")
    except BaseException as e:  # an adapter never breaks the program
        why = "%s: %s" % (type(e).__name__, e)
        n.meta("python.adapter." + name, "failed: " + why[:300])
        n.mark("phaseprof adapter %s failed" % name)


def _exit_check():
    """At exit (atexit, after the program's own handlers): an exception
    nobody caught is left in sys.last_value when CPython printed it."""
    v = getattr(sys, "last_value", None)
    if v is None:
        return
    try:
        s = str(v)
    except BaseException:
        s = ""
    name = type(v).__name__
    _native._m.exit_check((name + ": " + s if s else name)[:500])


def _register_exit_check():
    """The agent drops its audit hook after start-up (every audit event
    costs the program while one is installed); the uncaught exception the
    hook saw at sys.excepthook is then found at exit. The atexit module is
    left out of sys.modules when the program had not imported it."""
    had = "atexit" in sys.modules
    ax = sys.modules.get("atexit")
    if ax is None:
        ax = sys.modules["_frozen_importlib"]._builtin_from_name("atexit")
    try:
        ax.register(_exit_check)
    finally:
        if not had:
            sys.modules.pop("atexit", None)
    _native._m.exit_check()


def boot(load):
    global _load
    _load = load
    n = _native._m
    try:
        _register_exit_check()
    except BaseException as e:  # the hook then stays: exceptions still seen
        n.meta("python.exit_check", "not registered: %s: %s" % (type(e).__name__, e))
    n.watch_imports(tuple(ADAPTERS), _install)
    for name in ADAPTERS:
        mod = sys.modules.get(name)
        if mod is not None:
            _install(name, mod)
