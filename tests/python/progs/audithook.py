# The program's own audit hook: sees its events, and its veto still works.
import sys

seen = []


def hook(event, args):
    if event == "open" and args and str(args[0]).endswith("audit-probe.txt"):
        seen.append(event)
    if event == "os.system":
        raise RuntimeError("os.system is forbidden here")


sys.addaudithook(hook)
try:
    open("/nonexistent/audit-probe.txt")
except OSError:
    pass
import os

try:
    os.system("true")
    print("not vetoed")
except RuntimeError as e:
    print("vetoed:", e)
import json  # an import after the program's hook
print("seen", seen, json.dumps([1]))
