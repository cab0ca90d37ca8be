# Forks a child that imports a module, then execs another Python.
import os
import sys

pid = os.fork()
if pid == 0:
    import csv  # noqa: F401 (the child's own import)
    os._exit(3)
_, st = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(st), flush=True)
os.execv(sys.executable, [sys.executable, "-c", "import json; print('exec ok')"])
