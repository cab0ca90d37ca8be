"""The phase kinds are written in C (record/include/phaseprof.h, pp_kind, and the
names the store writes into phase_kinds) and in Python
(python/phaseprof/kinds.py): the three must agree, value for value.

usage: kinds_match.py PHASEPROF REPO_ROOT
"""
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

pp, root = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(root, "python"))
from phaseprof import kinds  # noqa: E402

src = open(os.path.join(root, "record", "include", "phaseprof.h")).read()
body = re.search(r"typedef enum pp_kind \{(.*?)\} pp_kind;", src, re.S).group(1)
body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
header, value = {}, -1
for item in body.split(","):
    m = re.match(r"\s*PP_([A-Z_]+)\s*(?:=\s*(\d+))?\s*$", item)
    if not m:
        continue
    value = int(m.group(2)) if m.group(2) else value + 1
    if m.group(1) != "KIND_COUNT":
        header[m.group(1).lower()] = value

with tempfile.TemporaryDirectory() as d:
    db = os.path.join(d, "k.db")
    subprocess.run([pp, "record", "-q", "-o", db, "--", "true"], check=True)
    stored = {name: i for i, name in sqlite3.connect(db).execute("SELECT id, name FROM phase_kinds")}

bad = []
for what, table in (("phaseprof.h", header), ("the database's phase_kinds", stored)):
    if table != kinds.KIND:
        bad.append("%s and python/phaseprof/kinds.py differ: only in C %r, only in Python %r" % (
            what, sorted(set(table.items()) - set(kinds.KIND.items())),
            sorted(set(kinds.KIND.items()) - set(table.items()))))
for name, v in kinds.KIND.items():
    if getattr(kinds, name.upper(), v) != v:
        bad.append("kinds.%s = %r, KIND says %d" % (name.upper(), getattr(kinds, name.upper()), v))
if bad:
    print("FAIL: " + "\n".join(bad))
    sys.exit(1)
print("ok: %d kinds agree in phaseprof.h, phase_kinds and kinds.py" % len(header))
