"""The environment protocol has one list: common/include/pp_env.h. Fails
naming each PHASEPROF_* variable the Python package (python/phaseprof)
uses that pp_env.h does not declare, and each C source outside pp_env.h
that spells a "PHASEPROF_..." name as a string literal instead of its
PP_ENV_ macro.

usage: check_env.py REPO_ROOT"""
import os
import re
import sys

root = sys.argv[1]
header = os.path.join(root, "common", "include", "pp_env.h")
decl = re.compile(r'^\s*#\s*define\s+(PP_ENV_[A-Z0-9_]+)\s+"(PHASEPROF_[A-Z0-9_]+)"', re.M)
declared = {}
for macro, name in decl.findall(open(header).read()):
    if name in declared.values():
        print("FAIL: %s declared twice in pp_env.h" % name)
        sys.exit(1)
    declared[macro] = name
if len(declared) < 10:
    print("FAIL: pp_env.h declares only %d PHASEPROF_* names: the check cannot read it" % len(declared))
    sys.exit(1)
names = set(declared.values())

bad = []
# the Python package: any PHASEPROF_ name it spells (os.environ, getenv, docs)
used = re.compile(r"\bPHASEPROF_[A-Z0-9_]*[A-Z0-9]")
pkg = os.path.join(root, "python", "phaseprof")
npy = 0
for d, _, files in os.walk(pkg):
    for n in sorted(files):
        if not n.endswith(".py"):
            continue
        npy += 1
        p = os.path.join(d, n)
        for i, line in enumerate(open(p, errors="replace"), 1):
            for v in used.findall(line):
                if v not in names:
                    bad.append("%s:%d: %s is not declared in common/include/pp_env.h"
                               % (os.path.relpath(p, root), i, v))
if npy == 0:
    print("FAIL: no Python files under %s" % pkg)
    sys.exit(1)

# the C sides: the names go through the macros (a literal is a second list)
lit = re.compile(r'"(PHASEPROF_[A-Z0-9_]+)')
for top in ("common", "record", "ingest", "store", "diag", "session", "viewers", "demo", "cli"):
    for d, _, files in os.walk(os.path.join(root, top)):
        for n in sorted(files):
            if not n.endswith((".c", ".h", ".cu")) or n == "pp_env.h":
                continue
            p = os.path.join(d, n)
            for i, line in enumerate(open(p, errors="replace"), 1):
                for v in lit.findall(line):
                    bad.append('%s:%d: "%s" spelled out: use its PP_ENV_ macro (pp_env.h)'
                               % (os.path.relpath(p, root), i, v))

if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("ok: %d PHASEPROF_* names in pp_env.h; the Python package (%d files) and the C sources use no other"
      % (len(names), npy))
