# A plain-Python loop declaring its phases and 20 steps through phaseprof.
import phaseprof


@phaseprof.phase("build table", kind="model_build")
def build():
    return [i * i for i in range(2000)]


with phaseprof.phase("load", kind="weight_load"):
    table = build()

total = 0
for i in range(20):
    phaseprof.step()
    total += sum(table[: 100 + i])
    phaseprof.counter("total", total)
phaseprof.step_end()
phaseprof.mark("done")
print("total", total, "enabled", phaseprof.enabled())
