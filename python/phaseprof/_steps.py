"""The steps of this process: one numbering, one owner of the boundaries.

Steps come from three kinds of source, in order of precedence:

  "explicit"  the program's own ``phaseprof.step()``;
  a framework's loop hooks (any other name: "lightning" for Lightning's
            batch hooks), which know the loop better than a guess;
  "auto"    the PyTorch adapter's iterations (phaseprof._loop).

The first step (or ``claim``) of a higher source closes a step a lower one
opened, and from then on the lower sources' boundaries are ignored: a step
is never counted twice. ``explicit`` is true once anything above "auto"
owns the steps.

Steps are numbered 0, 1, 2... per process whoever draws them, unless an
explicit ``begin(i)`` gives the number. Callbacks in ``on_end`` run just
before a step closes (the PyTorch adapter writes its per-step counters
there, for explicit steps too); they must not raise.

``set_unit`` records what one step is (an iteration, an optimizer step of
N micro-batches, a batch of inference...) as the run_meta ``python.step_unit``,
which the report shows beside the step statistics.
"""

from . import _native as N

explicit = False    # a source above "auto" owns the boundaries
_owner = 0          # precedence of the source that owns them
is_open = False
number = -1         # the open (or last) step's number
_next = 0
_unit = None
on_begin = []       # callbacks(number), after a step opened
on_end = []         # callbacks(), before a step closes


def _precedence(source):
    return 0 if source == "auto" else 2 if source == "explicit" else 1


def claim(source):
    """From now on the steps are source's (unless a source of higher
    precedence has them): a step a lower source opened ends here. Returns
    True when source owns the steps."""
    global explicit, _owner
    p = _precedence(source)
    if p < _owner:
        return False
    if p > _owner:
        if is_open:
            end()
        _owner = p
        explicit = p > 0
    return True


def begin(i=None, source="auto"):
    """Opens the next step (closing the open one). Returns False, doing
    nothing, when a source of higher precedence owns the steps."""
    global is_open, number, _next
    if not claim(source):
        return False
    if is_open:
        # the open step's counters; the native step_begin then closes it
        # and opens the next at one instant, so steps that follow each
        # other leave no gap between them
        for cb in on_end:
            cb()
    if i is None:
        i = _next
    _next = i + 1
    number = i
    is_open = True
    N.step_begin(i)
    for cb in on_begin:
        cb(i)
    return True


def end(source=None):
    """Closes the open step, if any (a source's end is ignored when a source
    of higher precedence owns the steps; None: whoever owns them)."""
    global is_open
    if not is_open or (source is not None and _precedence(source) < _owner):
        return
    for cb in on_end:
        cb()
    is_open = False
    N.step_end()


def set_unit(text):
    """What one step is, once per process (the first word wins over later
    guesses only when it is explicit)."""
    global _unit
    if text != _unit:
        _unit = text
        N.meta("python.step_unit", text)
