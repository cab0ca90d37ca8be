# sys.setprofile and sys.settrace keep working and see what they saw before.
import sys

calls = []


def prof(frame, event, arg):
    if event == "call":
        calls.append(frame.f_code.co_name)


def f(x):
    return x + 1


def g():
    return f(1) + f(2)


sys.setprofile(prof)
g()
import textwrap  # an import under the profiler
sys.setprofile(None)
print("profile calls", calls[:3], len([c for c in calls if c in ("f", "g")]))
print("textwrap imported", "textwrap" in sys.modules)
