"""The iterations of the program's loop, from where framework calls are made.

An adapter reports each framework event it sees (a batch fetched, a model
called, a backward pass, an optimizer step) with the Python frame that made
the call. From those alone this module finds the loop and draws one step per
iteration, whatever the loop's shape, with no change to the program:

- **The loop frame** is the frame whose code runs the loop: the deepest frame
  two calls of the same site (code and instruction, from the root down) have
  in common the first time a site repeats; learned again, further out, when
  a completing event is made outside it (an optimizer stepped by the caller
  of a gradient-accumulation helper).
- **An iteration starts over** when an event's position in the loop frame
  goes back (a lower instruction offset: the loop jumped back), when the
  loop frame or a frame below it is a new call of its code (an epoch
  function, a per-batch helper), or when the same call site is reached
  again.
- **A step is an iteration that completed**: it contains at least one event
  of the completing class (an optimizer step when the program has an
  optimizer, else a backward pass, else a model call), so gradient
  accumulation's micro-batches stay inside one step. Its boundaries are the
  iterations': the work after ``optimizer.step()`` (metrics, logging, the
  next batch built by hand) belongs to it.
- **Outside the loop** (an event with no loop frame on the stack, a batch
  from another DataLoader, or an event past the end of the loop body learned
  from completed iterations) the open step ends: validation passes and the
  code after the loop are not steps. The next step starts when the loop
  comes round again.

Every positional fact is an instruction offset (``f_lasti``) of a live frame;
frames are held only from a site's first call to its first repeat, once.
"""

from . import _steps

DATA, FORWARD, BACKWARD, OPTIMIZER = 0, 1, 2, 3
_DEPTH = 64
_WRAP, _ON = 0, 1

code = None         # the loop frame's code object, once learned
completing = FORWARD  # the class of event that completes an iteration
_last = None        # position of the last event: [(id(frame), f_lasti)...] from the loop frame
_extent = -1        # largest loop-frame offset of an event in a completed iteration
_step_max = -1      # largest loop-frame offset seen in the open step
_complete = False   # the open step saw a completing event
_sites = {}         # (code, lasti)... -> frames, until the loop is learned
_backwards = 0      # backward passes in the open step (micro-batches)
_loader = None      # id of the DataLoader whose batches a completed step took
_step_loader = None


def _stack(f):
    """The frames from the root down to f."""
    out = []
    while f is not None and len(out) < _DEPTH:
        out.append(f)
        f = f.f_back
    out.reverse()
    return out


def _learn(f):
    """Records f's site; at the first repeat of a site, learns the loop.
    Returns True when the loop was learned by this event."""
    global code
    frames = _stack(f)
    site = tuple((x.f_code, x.f_lasti) for x in frames)
    before = _sites.get(site)
    if before is None:
        if len(_sites) < 256:
            _sites[site] = frames
        return False
    common = None
    for a, b in zip(before, frames):
        if a is not b:
            break
        common = a
    _sites.clear()
    if common is None:
        return False
    code = common.f_code
    return True


def _position(f):
    """[(id, f_lasti)...] from the loop frame down to f, or None when no
    frame of the loop's code is on the stack."""
    path = []
    n = 0
    while f is not None and n < _DEPTH:
        path.append((id(f), f.f_lasti))
        if f.f_code is code:
            path.reverse()
            return path
        f = f.f_back
        n += 1
    return None


def _unlearn():
    """A completing event was made outside the loop frame (an optimizer
    stepped by the caller of a gradient-accumulation helper): the loop is
    further out. It is learned again at the next repeat of a site, which
    finds the common ancestor; the open step goes on meanwhile."""
    global code
    code = None
    _sites.clear()


def _compare(path):
    if _last is None:
        return _WRAP
    for (ia, oa), (ib, ob) in zip(path, _last):
        if ia != ib or oa < ob:
            return _WRAP
        if oa > ob:
            return _ON
    # one path is a prefix of the other: an event deeper than the last one
    # is made inside the call the last one reported (on); one at the same
    # instruction, or at the instruction of a call the last one was made
    # inside, is a new call from there: the frame came round again (ids of
    # freed frames are reused, so the deeper levels cannot tell)
    return _ON if len(path) > len(_last) else _WRAP


def _begin():
    global _complete, _step_max, _backwards, _step_loader
    _complete = False
    _step_max = -1
    _backwards = 0
    _step_loader = None
    _steps.begin()


def _finish(completed):
    """What a completed step teaches: the loop body's extent, the loader
    it takes batches from, what one step is."""
    global _extent, _loader
    if completed:
        if _step_max > _extent:
            _extent = _step_max
        if _step_loader is not None:
            _loader = _step_loader
        if completing == OPTIMIZER and _backwards > 1:
            _steps.set_unit("optimizer step of %d micro-batches" % _backwards)
        else:
            _steps.set_unit(_unit())


def _end(completed):
    _finish(completed)
    _steps.end("auto")


def _unit():
    if completing == OPTIMIZER:
        return "iteration (one optimizer step)"
    if completing == BACKWARD:
        return "iteration (one backward pass, no optimizer)"
    return "batch (inference: model calls between two loop iterations)"


def event(cls, f, may_begin, loader=None):
    """A framework event of class cls made by frame f (the caller of the
    framework function). may_begin: the event can start a step (the adapter
    knows the gradient mode); loader: id of the DataLoader for DATA events."""
    global _last
    if _steps.explicit:
        return
    if f.f_code is code:
        # the usual loop: the loop frame made the call itself (a step's
        # cost is a few such events; nothing to walk)
        off = f.f_lasti
        last = _last
        if (cls != DATA and _steps.is_open and last is not None and last[0][0] == id(f)
                and off > last[0][1] and not (_complete and 0 <= _extent < off and cls < completing)):
            # further on in the open step, in the loop body: what
            # _compare below would conclude, without the walk
            _last = ((id(f), off),)
            _note(cls, off, loader)
            return
        path = [(id(f), off)]
    else:
        if code is None:
            if not _learn(f):
                if not _steps.is_open and may_begin:
                    _begin()
                if _steps.is_open:
                    _note(cls, -1, loader)
                return
            _last = None
        path = _position(f)
    if path is None:
        if cls >= completing and _steps.is_open and not _complete:
            _unlearn()
            _note(cls, -1, loader)
            return
        if _steps.is_open:
            _end(_complete)
        _last = None
        return
    off = path[0][1]
    rel = _compare(path)
    _last = path
    if rel == _WRAP:
        if _steps.is_open and _complete:
            # the next step begins where this one ends: one boundary
            _finish(True)
            if may_begin and (_extent < 0 or off <= _extent):
                _begin()
            else:
                _steps.end("auto")
                return
        elif not _steps.is_open:
            if may_begin and (_extent < 0 or off <= _extent):
                _begin()
            else:
                return
    elif _steps.is_open:
        if _complete and 0 <= _extent < off and cls < completing:
            _end(True)
            return
        if (cls == DATA and _complete and loader is not None and _loader is not None
                and loader != _loader):
            _end(True)
            return
    elif may_begin and 0 <= off <= _extent:
        _begin()
    else:
        return
    _note(cls, off, loader)


def _note(cls, off, loader):
    global _step_max, _complete, _backwards, _step_loader
    if off > _step_max:
        _step_max = off
    if cls >= completing:
        _complete = True
    if cls == BACKWARD:
        _backwards += 1
    if cls == DATA and loader is not None and _step_loader is None:
        _step_loader = loader


def set_completing(cls):
    """The class of event that completes an iteration changed (an optimizer
    was created after an inference pass, a first backward pass with no
    optimizer): the loop is learned anew."""
    global completing, code, _last, _extent, _loader
    if cls == completing:
        return
    completing = cls
    code = None
    _last = None
    _extent = -1
    _loader = None
    _sites.clear()


def loop_done():
    """The loop's iterator is exhausted (a DataLoader's last batch was
    taken): the open step ends here."""
    global _last
    if _steps.is_open and not _steps.explicit:
        _end(_complete)
    _last = None


def at_exit():
    """The process ends: the last iteration ends with it."""
    if _steps.is_open and not _steps.explicit:
        _end(_complete)
