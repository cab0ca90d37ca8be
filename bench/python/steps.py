# Cost of step tracking: phaseprof.step() per iteration vs a bare loop, in
# the same process. Prints ns per step (run under record, and plain with
# the no-op package on PYTHONPATH).
import time

import phaseprof

N = 200_000
t0 = time.perf_counter_ns()
for i in range(N):
    pass
t1 = time.perf_counter_ns()
for i in range(N):
    phaseprof.step()
phaseprof.step_end()
t2 = time.perf_counter_ns()
print("%.0f" % ((t2 - t1 - (t1 - t0)) / N))
