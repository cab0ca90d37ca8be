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


def _install(name, module):
    """Import the adapter of `name` and call its install(module), once."""
    if name in _done:
        return
    _done.add(name)
    n = _native._m
    try:
        target = ADAPTERS[name]
        __import__(target)
        adapter = sys.modules[target]
        adapter.install(module)
        n.meta("python.adapter." + name, "installed")
    except BaseException as e:  # an adapter never breaks the program
        why = "%s: %s" % (type(e).__name__, e)
        n.meta("python.adapter." + name, "failed: " + why[:300])
        n.mark("phaseprof adapter %s failed" % name)


def boot():
    n = _native._m
    n.watch_imports(tuple(ADAPTERS), _install)
    for name in ADAPTERS:
        mod = sys.modules.get(name)
        if mod is not None:
            _install(name, mod)
