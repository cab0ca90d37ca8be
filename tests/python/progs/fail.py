# Raises in the middle of step 7.
import phaseprof

for i in range(20):
    with phaseprof.step():
        if i == 7:
            raise ValueError("bad batch 7")
        sum(range(1000))
