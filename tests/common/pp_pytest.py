"""What the Python test drivers share (tests/python/driver.py,
tests/python_stack/versions.py): reading a recording, the program's own
stderr under `record`, import trees, and the driver's ending."""
import re
import shutil
import sqlite3
import subprocess
import sys

IMPORT = 22  # pp_kind PP_IMPORT


def q(db, sql, *args):
    c = sqlite3.connect(db)
    try:
        return c.execute(sql, args).fetchall()
    finally:
        c.close()


def meta(db, key, run=None):
    rows = q(db, "SELECT value FROM run_meta WHERE key = ?" + (" AND run_id = %d" % run if run else ""), key)
    return rows[-1][0] if rows else None


def spans(db, run=1):
    """id -> (kind, name, parent_id, start, end, step)"""
    rows = q(db, "SELECT s.id, s.kind, n.value, s.parent_id, s.start_ns, s.end_ns, s.step FROM spans s"
             " LEFT JOIN strings n ON n.id = s.name_id WHERE s.run_id = ? ORDER BY s.start_ns, s.id", run)
    return {r[0]: r[1:] for r in rows}


def program_stderr(err):
    """The program's own stderr from a `record` run: without record's lines."""
    lines = err.splitlines(keepends=True)
    if lines and lines[0].startswith("phaseprof: recording"):
        lines = lines[1:]
    for i, l in enumerate(lines):
        if l.startswith("phaseprof: ") and " recorded into " in l:
            lines = lines[:i]
            break
    return "".join(lines)


def import_tree(sp, root_id):
    """Nested (name, [children]) of the imports under an import span; other
    spans in between (library loads) are looked through."""
    kids = {}
    for i, v in sp.items():
        kids.setdefault(v[2], []).append(i)

    def walk(i):
        out = []
        for c in kids.get(i, []):
            if sp[c][0] == IMPORT:
                out.append((sp[c][1], walk(c)))
            else:
                out.extend(walk(c))
        return out

    return (sp[root_id][1], walk(root_id))


def importtime_tree(py, code, env=None):
    """The tree `python -X importtime` prints, as nested (name, [children])."""
    p = subprocess.run([py, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    pending = {}
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+\d+ \| (\s*)(\S+)$", line)
        if not m:
            continue
        level = len(m.group(1)) // 2
        pending.setdefault(level, []).append((m.group(2), pending.pop(level + 1, [])))
    return pending.get(0, [])


def run_main(tests, name, tmp, failures):
    """Runs the named test, keeps its databases when it failed (and says
    where); exits 0 / 1, or 2 for a name it does not know."""
    if name not in tests:
        print("unknown test %s (one of %s)" % (name, ", ".join(tests)), file=sys.stderr)
        sys.exit(2)
    try:
        tests[name]()
    finally:
        if not failures:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("databases kept in", tmp, file=sys.stderr)
    sys.exit(1 if failures else 0)
