"""Run by the agent at the program's first line (``cpython.run_file`` and the
like), with ``_phaseprof_native`` already in sys.modules.

The agent loads this file first, as ``phaseprof._boot``, and calls
``start(root)``: the package's modules are loaded from their files one by
one and put in sys.modules before any import statement names them, so none
of them goes through the import system (the program's import tree and its
``-X importtime`` output stay its own) and sys.path is never consulted.
The agent's own code for this is a few lines compiled at every start; the
rest lives here, read from its cached bytecode.

Then it installs the post-import trigger of the framework adapters. It must
not change what the program sees (sys.path, os.environ, __main__) and never
raises: the agent runs it in a private namespace and records any failure.
"""

import sys

_native = None  # phaseprof._native, once the package is loaded
ADAPTERS = {}


def load(name, path, pkg=None, run=True):
    """The module `name` from the file `path`, in sys.modules (run: executed)."""
    s = sys.modules["_frozen_importlib_external"].spec_from_file_location(
        name, path, submodule_search_locations=pkg)
    m = sys.modules["_frozen_importlib"].module_from_spec(s)
    sys.modules[name] = m
    if run:
        try:
            s.loader.exec_module(m)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    return m


def start(root):
    """Loads the package under root (this module is its ``_boot``), then boots;
    on a failure no phaseprof module is left in sys.modules."""
    global _native, ADAPTERS
    d = root + "/phaseprof"
    p = load("phaseprof", d + "/__init__.py", [d], run=False)
    try:
        for n, f, k in (("kinds", "/kinds.py", None), ("_native", "/_native.py", None),
                        ("_wrapping", "/_wrapping.py", None), ("_steps", "/_steps.py", None),
                        ("_loop", "/_loop.py", None),
                        ("adapters", "/adapters/__init__.py", [d + "/adapters"])):
            setattr(p, n, load("phaseprof." + n, d + f, k))
        p._boot = sys.modules[__name__]
        p.__spec__.loader.exec_module(p)
    except BaseException:
        for n in [k for k in sys.modules if k == "phaseprof" or k.startswith("phaseprof.")]:
            del sys.modules[n]
        raise
    _native = p._native
    ADAPTERS = p.adapters.ADAPTERS
    boot(load)


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
            # from its file, not through the import system (see start)
            adapters = sys.modules["phaseprof.adapters"]
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
    """At exit (atexit, after the program's own handlers): the iteration of
    a loop still open ends; an exception nobody caught is left in
    sys.last_value when CPython printed it."""
    v = getattr(sys, "last_value", None)
    if v is None:
        try:
            sys.modules["phaseprof._loop"].at_exit()
        except BaseException:
            pass
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
