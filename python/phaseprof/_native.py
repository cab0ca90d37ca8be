"""The agent's side of the phaseprof module.

Under ``phaseprof record`` the agent (libphaseprof-agent.so) creates a module
``_phaseprof_native`` through CPython's C API and puts it in ``sys.modules``
before the program's first line; its functions write straight into the
recorder. Anywhere else every function here is a no-op and ``enabled`` is
False.

Functions (all never raise on recorder trouble; they drop and count):

  begin(kind: int, name: str)   open a phase of that kind on this thread
  end()                         close the innermost phase of this thread
  step_begin(i: int)            open step i; the process's first step is also
                                wrapped in a ``first_step`` phase, as the
                                flow runtime records it
  step_end()                    close the open step (and the first_step
                                phase around the first one); no-op if none
  mark(name: str)               an instant event
  counter(name: str, v: float)  a counter sample
  meta(key: str, value: str)    a run_meta line (key/value of the run)
  step_counters(on: bool)       write step.allocs, step.alloc_bytes and
                                step.rss_bytes at each step's end (in C)
  alloc_totals() -> (calls, bytes)  process-wide malloc calls and bytes
                                allocated so far (agent hooks); (0, 0) unknown
  rss() -> int                  resident set size in bytes (0 if unknown)
  now() -> int                  recorder clock, nanoseconds (0 when absent)
  comm_row(op: str, start_ns, end_ns, nbytes, peer, comm_size)
                                a row of the ``comm`` table on this thread
                                (times from now(); peer -1 for collectives,
                                comm_size -1 when unknown)

Phases nest per thread: end() and step_end() must run on the thread that
opened them.
"""

import sys as _sys

_m = _sys.modules.get("_phaseprof_native")

if _m is not None:
    enabled = True
    begin = _m.begin
    end = _m.end
    step_begin = _m.step_begin
    step_end = _m.step_end
    mark = _m.mark
    counter = _m.counter
    meta = _m.meta
    alloc_totals = _m.alloc_totals
    step_counters = _m.step_counters
    rss = _m.rss
    now = _m.now
    comm_row = getattr(_m, "comm_row", None) or (lambda *a: None)
else:
    enabled = False

    def begin(kind, name):
        pass

    def end():
        pass

    def step_begin(i):
        pass

    def step_end():
        pass

    def mark(name):
        pass

    def counter(name, value):
        pass

    def meta(key, value):
        pass

    def alloc_totals():
        return (0, 0)

    def step_counters(on):
        pass

    def rss():
        return 0

    def now():
        return 0

    def comm_row(op, start_ns, end_ns, nbytes, peer, comm_size):
        pass

del _sys
