"""End-to-end tests of the CPython layer of `phaseprof record`.

usage: driver.py PHASEPROF PROGS_DIR FAKE_PYTHON TEST

Each test records a small Python program with /usr/bin/python3 (or
PP_TEST_PYTHON: the 3.12 and 3.13 cases), compares
what the program printed, its exit status and its stderr with a plain run
of the same program, and checks exact facts in the database.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from pp_pytest import (import_tree, importtime_tree, meta, program_stderr, q,  # noqa: E402
                       run_main, spans)


# the interpreter under test: /usr/bin/python3 (3.11), or PP_TEST_PYTHON (the
# 3.12 and 3.13 cases); an absent one is a skipped test (exit 77)
PY = os.environ.get("PP_TEST_PYTHON") or "/usr/bin/python3"
PHASEPROF, PROGS, FAKE, TEST = sys.argv[1:5]
if not (os.path.isfile(PY) and os.access(PY, os.X_OK)):
    print("SKIP: interpreter %s not installed" % PY)
    sys.exit(77)
VER = subprocess.run([PY, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                     capture_output=True, text=True).stdout.strip()
IMPORT, PROCESS_START, LIBRARY_LOAD, FIRST_STEP, STEP = 22, 1, 2, 15, 16
WEIGHT_LOAD, MODEL_BUILD = 10, 23
# what `record` itself adds to the environment (the agent needs it in children)
RECORD_VARS = ("LD_PRELOAD", "LD_AUDIT", "GLIBC_TUNABLES", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")

tmp = tempfile.mkdtemp(prefix="pp-python-test-")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def run(cmd, env=None, cwd=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    return p.returncode, p.stdout, p.stderr


def record(name, args, opts=(), env=None, cwd=None):
    db = os.path.join(tmp, name + ".db")
    if os.path.exists(db):
        os.unlink(db)
    rc, out, err = run([PHASEPROF, "record", "-o", db, *opts, "--", *args], env=env, cwd=cwd)
    return db, rc, out, err


PYDIR = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "python"))
# a plain run finds the no-op phaseprof package on PYTHONPATH
WITH_PHASEPROF = dict(os.environ, PYTHONPATH=PYDIR)


def same_as_plain(name, args, opts=(), env=None, cwd=None, compare_out=True, plain_env=None):
    """Records args and runs them plainly; output, status and stderr must match."""
    prc, pout, perr = run(args, env=plain_env or env, cwd=cwd)
    db, rc, out, err = record(name, args, opts, env=env, cwd=cwd)
    check(rc == prc, "%s: exit status %d under record, %d plain" % (name, rc, prc))
    if compare_out:
        check(out == pout, "%s: stdout differs:\n%r\nvs plain\n%r" % (name, out, pout))
    check(program_stderr(err) == perr,
          "%s: stderr differs:\n%r\nvs plain\n%r" % (name, program_stderr(err), perr))
    check(os.path.exists(db), "%s: no database (%s)" % (name, err))
    return db, out, pout


def ancestors(sp, i):
    out = []
    p = sp[i][2]
    while p:
        out.append(p)
        p = sp[p][2]
    return out


# ---------------------------------------------------------------- tests

def test_import_json():
    db, out, _ = same_as_plain("json", [PY, "-c", "import json"])
    check(meta(db, "python").startswith("CPython %s." % VER), "python meta: %r" % meta(db, "python"))
    sp = spans(db)
    js = [i for i, v in sp.items() if v[0] == IMPORT and v[1] == "json"]
    check(len(js) == 1, "one import of json, got %d" % len(js))
    if not js:
        return
    got = import_tree(sp, js[0])
    want = [t for t in importtime_tree(PY, "import json") if t[0] == "json"]
    check(len(want) == 1, "-X importtime shows json once")
    check(want and got == want[0], "import tree of json:\n%r\nvs -X importtime\n%r" % (got, want[:1]))
    # json is imported by the program: not inside the start-up phase
    startup = [i for i, v in sp.items() if v[0] == PROCESS_START]
    check(len(startup) == 1 and sp[startup[0]][1] == "python start-up", "one python start-up phase")
    if startup:
        check(startup[0] not in ancestors(sp, js[0]), "json is not in start-up")
        site = [i for i, v in sp.items() if v[0] == IMPORT and v[1] == "site"]
        check(len(site) == 1 and startup[0] in ancestors(sp, site[0]), "site's import is in start-up")
        enc = [i for i, v in sp.items() if v[0] == IMPORT and v[1] == "encodings"]
        check(len(enc) == 1 and startup[0] in ancestors(sp, enc[0]), "encodings is in start-up")
        check(sp[startup[0]][4] <= sp[js[0]][3], "start-up ends before the program's import")
    # the extension module's load nests inside its import
    lib = [i for i, v in sp.items() if v[0] == LIBRARY_LOAD and v[1].startswith("_json.cpython-")]
    check(len(lib) == 1, "one _json library load span, got %d" % len(lib))
    if lib:
        p = sp[lib[0]][2]
        check(p and sp[p][0] == IMPORT and sp[p][1] == "_json", "_json's load is inside import _json")
    # stats: the slowest imports
    rc, sout, serr = run([PHASEPROF, "stats", db])
    check(rc == 0 and "slowest imports by self time" in sout and "slowest imports by cumulative time" in sout,
          "stats lists the slowest imports: %s" % sout[-600:])
    check("python: CPython %s." % VER in sout, "stats says what python was seen")
    rc, jout, _ = run([PHASEPROF, "stats", "--json", db])
    doc = json.loads(jout)
    mods = {m["module"]: m for m in doc["runs"][0]["imports"]}
    check("json.decoder" in mods and mods["json"]["cumulative_ns"] >= mods["json.decoder"]["cumulative_ns"],
          "json's cumulative time holds json.decoder's")
    check(all(0 <= m["self_ns"] <= m["cumulative_ns"] for m in mods.values()), "self <= cumulative")
    # no moderate or high finding on this healthy program
    bad = [f["rule"] for f in doc["runs"][0]["findings"] if f["severity"] in ("moderate", "high")]
    check(not bad, "no moderate/high finding on import json: %s" % bad)
    # the Chrome trace carries the import spans
    trace = os.path.join(tmp, "json.trace.json")
    rc, _, err = run([PHASEPROF, "export", "--format", "chrome", db, "-o", trace])
    check(rc == 0, "chrome export: %s" % err)
    if rc == 0:
        ev = json.load(open(trace))
        ev = ev["traceEvents"] if isinstance(ev, dict) else ev
        names = {e.get("name") for e in ev}
        check({"json", "json.decoder", "python start-up"} <= names, "chrome trace shows the import tree")


def test_steps():
    db, out, pout = same_as_plain("steps", [PY, os.path.join(PROGS, "steps.py")], compare_out=False,
                                  plain_env=WITH_PHASEPROF)
    check(out.strip().endswith("enabled True"), "phaseprof.enabled() under record: %r" % out)
    check(pout.strip().endswith("enabled False"), "phaseprof is a no-op outside record: %r" % pout)
    check(out.split("enabled")[0] == pout.split("enabled")[0], "same output with and without record")
    sp = spans(db)
    steps = sorted((v[5], v[3], v[4], i) for i, v in sp.items() if v[0] == STEP)
    check([s[0] for s in steps] == list(range(20)), "exactly steps 0..19: %r" % [s[0] for s in steps])
    check(all(s[2] is not None for s in steps), "every step closed")
    first = [i for i, v in sp.items() if v[0] == FIRST_STEP]
    check(len(first) == 1, "one first_step phase, got %d" % len(first))
    if first and steps:
        check(sp[steps[0][3]][2] == first[0], "first_step wraps step 0")
        check(all(sp[s[3]][2] != first[0] for s in steps[1:]), "only step 0 in first_step")
    wl = [i for i, v in sp.items() if v[0] == WEIGHT_LOAD and v[1] == "load"]
    mb = [i for i, v in sp.items() if v[0] == MODEL_BUILD and v[1] == "build table"]
    check(len(wl) == 1 and len(mb) == 1 and sp[mb[0]][2] == wl[0], "phase() and @phase nest")
    check(q(db, "SELECT count(*) FROM marks m JOIN strings n ON n.id = m.name_id WHERE n.value = 'done'")[0][0] == 1,
          "one mark 'done'")
    check(q(db, "SELECT count(*) FROM counters c JOIN strings n ON n.id = c.name_id WHERE n.value = 'total'")[0][0] == 20,
          "20 counter samples")
    rc, jout, _ = run([PHASEPROF, "stats", "--json", db])
    check(json.loads(jout)["runs"][0]["steps"] == 20, "stats counts 20 steps")


def test_fail():
    db, out, _ = same_as_plain("fail", [PY, os.path.join(PROGS, "fail.py")], plain_env=WITH_PHASEPROF)
    r = q(db, "SELECT status, exit_code FROM runs WHERE id = 1")[0]
    check(r[1] == 1, "exit code 1 recorded: %r" % (r,))
    check(meta(db, "python.exception") == "ValueError: bad batch 7", "python.exception: %r" % meta(db, "python.exception"))
    # seen at exit: the audit hook (whose every event cost the program) left after start-up
    check((meta(db, "python.audit_hook") or "").startswith("removed after start-up"),
          "audit hook removed: %r" % meta(db, "python.audit_hook"))
    sp = spans(db)
    steps = sorted((v[5], v[4]) for v in sp.values() if v[0] == STEP)
    check([s[0] for s in steps] == list(range(8)), "steps 0..7 kept: %r" % steps)
    check(all(s[1] is not None for s in steps), "the failed step ended with its block")
    rc, iout, _ = run([PHASEPROF, "info", db])
    check("exit code 1" in iout, "info says the exit code: %s" % iout)


def test_isolated():
    db, out, _ = same_as_plain("isolated", [PY, "-I", "-S", "-c", "import json, sys; print(sys.flags.isolated, 'site' in sys.modules)"])
    check(out == "1 False\n", "-I -S as plain: %r" % out)
    sp = spans(db)
    check(not [v for v in sp.values() if v[0] == IMPORT and v[1] == "site"], "no site under -S")
    check([v for v in sp.values() if v[0] == IMPORT and v[1] == "json"], "imports seen under -I -S")
    check(meta(db, "python.boot") == "ok", "boot ran under -I -S: %r" % meta(db, "python.boot"))


def test_behaviour():
    # the program's own sitecustomize (PYTHONPATH) and usercustomize (user site)
    d = os.path.join(tmp, "custom")
    ub = os.path.join(tmp, "userbase")
    usite = os.path.join(ub, "lib", "python" + VER, "site-packages")
    os.makedirs(d, exist_ok=True)
    os.makedirs(usite, exist_ok=True)
    with open(os.path.join(d, "sitecustomize.py"), "w") as f:
        f.write("print('sitecustomize ran')\n")
    with open(os.path.join(usite, "usercustomize.py"), "w") as f:
        f.write("print('usercustomize ran')\n")
    env = dict(os.environ, PYTHONPATH=d, PYTHONUSERBASE=ub)
    prog = os.path.join(PROGS, "behave.py")
    for name, args in (("behave", [PY, prog, "a1"]), ("behave-E", [PY, "-E", prog]),
                       ("behave-s", [PY, "-s", prog])):
        db, out, pout = same_as_plain(name, args, env=env, compare_out=False)
        try:
            a = json.loads(out.splitlines()[-1])
            b = json.loads(pout.splitlines()[-1])
        except (ValueError, IndexError):
            check(False, "%s: no JSON line: %r / %r" % (name, out, pout))
            continue
        check(out.splitlines()[:-1] == pout.splitlines()[:-1], "%s: customize output: %r vs %r" % (name, out, pout))
        for k in RECORD_VARS:
            a["env"].pop(k, None)
        a["env"] = {k: v for k, v in a["env"].items() if not k.startswith("PHASEPROF_")}
        b["env"] = {k: v for k, v in b["env"].items() if not k.startswith("PHASEPROF_")}
        extra = set(a["modules"]) - set(b["modules"])
        check(extra <= {"phaseprof", "phaseprof._native", "phaseprof.kinds", "phaseprof._boot",
                        "phaseprof._steps", "phaseprof._loop", "phaseprof._wrapping",
                        "phaseprof.adapters",
                        "_phaseprof_native"},
              "%s: modules the program would not have: %s" % (name, sorted(extra)))
        check(set(b["modules"]) <= set(a["modules"]), "%s: modules missing: %s" % (name, set(b["modules"]) - set(a["modules"])))
        a.pop("modules")
        b.pop("modules")
        for k in sorted(b):
            if k == "env":
                diff = {e for e in set(a[k]) | set(b[k]) if a[k].get(e) != b[k].get(e)}
                check(not diff, "%s: environment differs in %s" % (name, sorted(diff)))
            else:
                check(a[k] == b[k], "%s: %s differs: %r vs plain %r" % (name, k, a[k], b[k]))
        ran = pout.splitlines()[:-1]
        if name == "behave":
            check(ran == ["sitecustomize ran", "usercustomize ran"], "customize modules ran: %r" % ran)
        if name == "behave-E":
            check(ran == ["usercustomize ran"], "-E ignores PYTHONPATH: %r" % ran)
        if name == "behave-s":
            check(ran == ["sitecustomize ran"], "-s skips the user site: %r" % ran)


def test_audithook():
    same_as_plain("audithook", [PY, os.path.join(PROGS, "audithook.py")])


def test_setprofile():
    db, out, _ = same_as_plain("setprofile", [PY, os.path.join(PROGS, "setprofile.py")])
    sp = spans(db)
    check([v for v in sp.values() if v[0] == IMPORT and v[1] == "textwrap"], "import under setprofile recorded")


def test_forkexec():
    db, out, _ = same_as_plain("forkexec", [PY, os.path.join(PROGS, "forkexec.py")])
    check(out == "child exit 3\nexec ok\n", "fork/exec output: %r" % out)
    runs = q(db, "SELECT id, parent_run, exit_code FROM runs ORDER BY id")
    check(len(runs) >= 3, "parent, forked child and exec'd Python are runs: %r" % runs)
    child = [r for r in runs if r[2] == 3]
    check(len(child) == 1 and child[0][1] is not None, "the forked child is a linked run: %r" % runs)
    if child:
        sp = spans(db, child[0][0])
        check([v for v in sp.values() if v[0] == IMPORT and v[1] == "csv"], "the child's import csv is in its run")
    # the exec'd Python has its own start-up and its imports
    execd = [r[0] for r in runs if meta(db, "python", r[0]) and r[2] == 0 and r[1] is not None]
    seen = False
    for rid in execd:
        sp = spans(db, rid)
        if [v for v in sp.values() if v[0] == PROCESS_START] and \
           [v for v in sp.values() if v[0] == IMPORT and v[1] == "json"]:
            seen = True
    check(seen, "the exec'd Python's start-up and import json are recorded")


def test_no_python():
    db, out, _ = same_as_plain("nopython", [PY, "-c", "import json; print(1)"], opts=["--no-python"])
    check(meta(db, "python").startswith("off (--no-python)"), "python meta: %r" % meta(db, "python"))
    check(q(db, "SELECT count(*) FROM spans WHERE kind IN (1, 22)")[0][0] == 0, "no start-up or import spans")
    check(q(db, "SELECT count(*) FROM libraries")[0][0] > 0, "native recording goes on")
    rc, iout, _ = run([PHASEPROF, "info", db])
    check("python: off (--no-python)" in iout, "info says the layer was off")


def test_boot_failure():
    # the package cannot be loaded (PHASEPROF_PYTHON names another folder):
    # the program runs as plain, imports are still seen, the reason is kept
    env = dict(os.environ, PHASEPROF_PYTHON=os.path.join(tmp, "missing"))
    db, out, _ = same_as_plain("bootfail", [PY, "-c", "import json, sys; print('phaseprof' in sys.modules)"], env=env)
    check(out == "False\n", "no phaseprof module: %r" % out)
    check((meta(db, "python.boot") or "").startswith("phaseprof package not loaded: "),
          "python.boot says why: %r" % meta(db, "python.boot"))
    check(q(db, "SELECT count(*) FROM spans s JOIN strings n ON n.id = s.name_id WHERE s.kind = 22 AND n.value = 'json'")[0][0] == 1,
          "imports still seen")


def test_boot_raises():
    # the package's _boot.py raises while it runs: the reason is kept and no
    # phaseprof module, half-loaded _boot included, is left in sys.modules
    root = os.path.join(tmp, "badboot")
    os.makedirs(os.path.join(root, "phaseprof"), exist_ok=True)
    with open(os.path.join(root, "phaseprof", "_boot.py"), "w") as f:
        f.write("raise RuntimeError('boot broke')\n")
    env = dict(os.environ, PHASEPROF_PYTHON=root)
    db, out, _ = same_as_plain("bootraises", [PY, "-c", "import sys; print([k for k in sys.modules if k.startswith('phaseprof')])"],
                               env=env)
    check(out == "[]\n", "no phaseprof module: %r" % out)
    check(meta(db, "python.boot") == "phaseprof package not loaded: boot broke",
          "python.boot says why: %r" % meta(db, "python.boot"))


def test_adapters():
    # the adapter interface on a copy of the package with two test adapters:
    # one for json (imports csv itself, so csv's adapter must fire too) and
    # one for csv that raises: recorded, the program unaffected
    root = os.path.join(tmp, "pkg")
    shutil.copytree(PYDIR, root, ignore=shutil.ignore_patterns("__pycache__"))
    ad = os.path.join(root, "phaseprof", "adapters")
    with open(os.path.join(ad, "__init__.py"), "a") as f:
        f.write("ADAPTERS = {'json': 'phaseprof.adapters.t_json', 'csv': 'phaseprof.adapters.t_csv'}\n")
    with open(os.path.join(ad, "t_json.py"), "w") as f:
        f.write("from phaseprof import _native\n"
                "def install(module):\n"
                "    _native.mark('json adapter saw ' + module.__name__)\n"
                "    import csv\n")
    with open(os.path.join(ad, "t_csv.py"), "w") as f:
        f.write("def install(module):\n    raise RuntimeError('csv adapter broken')\n")
    env = dict(os.environ, PHASEPROF_PYTHON=root)
    db, out, _ = same_as_plain("adapters", [PY, "-c", "import json; print(json.dumps(1))"], env=env)
    check(out == "1\n", "output: %r" % out)
    check(meta(db, "python.adapter.json") == "installed", "json adapter: %r" % meta(db, "python.adapter.json"))
    check(meta(db, "python.adapter.csv") == "failed: RuntimeError: csv adapter broken",
          "csv adapter failure recorded: %r" % meta(db, "python.adapter.csv"))
    marks = [r[0] for r in q(db, "SELECT n.value FROM marks m JOIN strings n ON n.id = m.name_id")]
    check("json adapter saw json" in marks, "the adapter got the module: %r" % marks)
    check("phaseprof adapter csv failed" in marks, "a mark for the failure: %r" % marks)


def test_importtime():
    # a program run with -X importtime prints the same modules, nested the
    # same: the phaseprof package is not loaded through the import system
    args = [PY, "-X", "importtime", "-c", "import json"]
    prc, pout, perr = run(args)
    db, rc, out, err = record("importtime", args)
    strip = lambda e: [re.sub(r"^import time:\s+\d+ \|\s+\d+ \|", "", l)
                       for l in e.splitlines() if l.startswith("import time:")]
    check(rc == prc == 0, "exit status")
    check(strip(program_stderr(err)) == strip(perr),
          "-X importtime output differs:\n%s\nvs plain\n%s" % (strip(program_stderr(err)), strip(perr)))
    sp = spans(db)
    check(not [v for v in sp.values() if v[0] == IMPORT and v[1].startswith("phaseprof")],
          "the package's own modules are not in the import tree")


def test_no_first_line():
    # an unknown option: Python exits 2 before its first line; the start-up
    # phase still ends, nothing is left open
    db, out, _ = same_as_plain("nofirst", [PY, "--no-such-option"])
    sp = spans(db)
    st = [v for v in sp.values() if v[0] == PROCESS_START]
    check(len(st) == 1 and st[0][4] is not None, "start-up phase closed: %r" % st)
    check(meta(db, "python.first_line") == "never reached", "python.first_line: %r" % meta(db, "python.first_line"))


def test_unknown():
    fake = os.path.join(tmp, "python3.99")
    shutil.copy(FAKE, fake)
    db, out, _ = same_as_plain("unknown", [fake])
    m = meta(db, "python") or ""
    check(m.startswith("not recognised:"), "python meta: %r" % m)
    check(q(db, "SELECT count(*) FROM libraries")[0][0] > 0, "native recording goes on")
    for cmd in ("info", "stats"):
        rc, sout, _ = run([PHASEPROF, cmd, db])
        check(("python: " + m) in " ".join(sout.split()), "%s says what was not seen: %s" % (cmd, sout))


TESTS = {n[5:]: f for n, f in list(globals().items()) if n.startswith("test_")}

run_main(TESTS, TEST, tmp, failures)
