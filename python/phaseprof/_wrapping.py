"""What every adapter's wrappers share: never raise into the program, wrap
once, and leave tracebacks as a plain run prints them.

Loaded by the boot like the package's other modules (never through the
import system); adapters use it as ``from .. import _wrapping as W``.
"""

import sys


def safe(fn, *a):
    """Runs recording code that must never raise into the program."""
    try:
        return fn(*a)
    except Exception:
        return None


def wrap(owner, attr, make):
    """Replaces owner.attr with make(original), marked as ours; no-op when
    the attribute is missing or already ours."""
    orig = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr, None)
    if orig is None or getattr(orig, "_phaseprof", False):
        return
    w = make(orig)
    w._phaseprof = True
    setattr(owner, attr, w)


def strip(e):
    """Removes the calling wrapper's own entry from e's traceback, so that a
    bare ``raise`` after it (which adds no entry) leaves the traceback a
    plain run prints. Call it from the wrapper's ``except`` block."""
    tb = e.__traceback__
    if tb is not None and tb.tb_frame is sys._getframe(1):
        e.__traceback__ = tb.tb_next
