"""The steps of this process: one numbering, one owner of the boundaries.

Steps come from three sources, in order of precedence:

  explicit  the program's own ``phaseprof.step()``, or a framework's own loop
            hooks (Lightning's batch callbacks). The first explicit step
            closes any step an adapter opened and from then on the adapters'
            boundaries are ignored: a step is never counted twice.
  auto      an adapter's boundaries (the PyTorch adapter's iterations).

Steps are numbered 0, 1, 2... per process whoever draws them, unless an
explicit ``begin(i)`` gives the number. Callbacks in ``on_end`` run just
before a step closes (the PyTorch adapter writes its per-step counters
there, for explicit steps too); they must not raise.

``set_unit`` records what one step is (an iteration, an optimizer step of
N micro-batches, a batch of inference...) as the run_meta ``python.step_unit``,
which the report shows beside the step statistics.
"""

from . import _native as N

explicit = False    # an explicit source owns the boundaries
is_open = False
number = -1         # the open (or last) step's number
_next = 0
_unit = None
on_begin = []       # callbacks(number), after a step opened
on_end = []         # callbacks(), before a step closes


def begin(i=None, source="auto"):
    """Opens the next step (closing the open one). Returns False, doing
    nothing, for an adapter's step once an explicit source owns them."""
    global explicit, is_open, number, _next
    if source == "auto":
        if explicit:
            return False
    elif not explicit:
        explicit = True
    if is_open:
        end()
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
    """Closes the open step, if any (an adapter's end is ignored once an
    explicit source owns the steps)."""
    global is_open
    if not is_open or (source == "auto" and explicit):
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
