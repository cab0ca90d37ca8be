# A Python program declaring its phases and 10 steps through phaseprof
# (recorded by an installed phaseprof: install_test.py).
import phaseprof


@phaseprof.phase("build table", kind="model_build")
def build():
    return [i * i for i in range(1000)]


with phaseprof.phase("load", kind="weight_load"):
    table = build()

total = 0
for i in range(10):
    with phaseprof.step():
        total += sum(table[: 100 + i])
phaseprof.mark("done")
print("total", total, "enabled", phaseprof.enabled())
