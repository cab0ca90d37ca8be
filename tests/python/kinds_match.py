"""The phase kinds are written in C (record/include/phaseprof.h, PP_KINDS: the
pp_kind enum and the names the store writes into phase_kinds) and in Python
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
body = re.search(r"#define PP_KINDS\(X\)(.*?)\n\s*\n", src, re.S).group(1)
body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
header = {}
# X(ENUM, name): values in order from 0; name is what pp_kind_name returns
for value, (enum, name) in enumerate(re.findall(r"\bX\(\s*([A-Z_]+)\s*,\s*([a-z_]+)\s*\)", body)):
    header[enum.lower()] = value
    if name != enum.lower():
        print("FAIL: phaseprof.h: PP_%s is named %r" % (enum, name))
        sys.exit(1)

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
