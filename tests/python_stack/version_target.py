# Target of versions.py (CPython 3.12 / 3.13): imports json, four steps
# through phaseprof.step(), CPU time in a named function. Line numbers are
# asserted by the test: edit with care.
import json, sys, time
import phaseprof


def busy_leaf(seconds):
    end = time.thread_time() + seconds
    s = 0
    while time.thread_time() < end:
        for i in range(2000):
            s += i * i % 7
    return s


def busy_caller(seconds):
    return busy_leaf(seconds)


cpu = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1
for i in range(4):
    phaseprof.step()
    busy_caller(cpu / 4)
phaseprof.step_end()
print("done", json.dumps({"steps": 4}))
