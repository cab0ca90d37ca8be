# Cost the import hook adds to one import: imports of empty modules from an
# instant in-memory finder, through the agent's C wrapper of
# importlib._bootstrap._find_and_load vs the original it wraps (its
# __self__), alternated in rounds in one process. Prints ns per import
# (wrapped, original, added) twice: with module names never seen before
# (the recorder interns each new name once: what a real import pays) and
# with names seen already (the wrapper alone); "-" when the layer is off.
import sys
import time
import importlib._bootstrap as bs


class Instant:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.startswith("ppbench_"):
            return bs.ModuleSpec(name, cls)
        return None

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        pass


sys.meta_path.insert(0, Instant)
wrapped = bs._find_and_load
orig = getattr(wrapped, "__self__", None)
if orig is None or not callable(orig):
    print("- - - - - -")
    sys.exit(0)
N, ROUNDS = 1000, 11
k = 0
out = []
for fresh in (True, False):
    best = {"w": float("inf"), "o": float("inf")}
    for r in range(ROUNDS):
        for which, fn in (("w", wrapped), ("o", orig)):
            names = ["ppbench_%d" % ((k + i) if fresh else i) for i in range(N)]
            k += N
            t0 = time.perf_counter_ns()
            for n in names:
                fn(n, __import__)
            t1 = time.perf_counter_ns()
            best[which] = min(best[which], (t1 - t0) / N)
            for n in names:
                del sys.modules[n]
    out.append("%.0f %.0f %.0f" % (best["w"], best["o"], best["w"] - best["o"]))
print(" ".join(out))
