"""phaseprof as its users install it.

usage: install_test.py relocated CMAKE BUILD_DIR SOURCE_DIR PYTHON CPROG [mpi]
       install_test.py pip SOURCE_DIR PYTHON

relocated: `cmake --install BUILD_DIR` into a fresh prefix, the prefix moved
elsewhere, then a Python and a C program recorded with the moved
bin/phaseprof: everything must find everything else relatively (the agent
beside the binary's ../lib/phaseprof, the Python package beside the agent),
no source or build path involved.

pip: `pip install SOURCE_DIR` (scikit-build-core builds the CMake project)
into a fresh venv, then `venv/bin/phaseprof record -- venv/bin/python
prog.py` and `import phaseprof` outside record. Needs PyPI (the build
backend): skipped (77) when it cannot be reached.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
from pp_pytest import meta, q, spans  # noqa: E402

FIRST_STEP, STEP, WEIGHT_LOAD, MODEL_BUILD = 15, 16, 10, 23
PROG = os.path.join(HERE, "prog.py")

tmp = tempfile.mkdtemp(prefix="pp-install-test-")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def run(cmd, timeout=300, **kw):
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    return p.returncode, p.stdout, p.stderr


def clean_env(**extra):
    """The caller's environment without what would point the programs at
    the source tree (a user's shell has none of it) or keep Python from
    rewriting a stale .pyc (which the bytecode check would then miss)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PHASEPROF_PYTHON", "PHASEPROF_AGENT", "LD_PRELOAD",
                        "LD_LIBRARY_PATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(extra)
    return env


def pycache(d):
    """The .pyc files under d: path -> (mtime, size)."""
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            if n.endswith(".pyc"):
                st = os.stat(os.path.join(root, n))
                out[os.path.join(root, n)] = (st.st_mtime_ns, st.st_size)
    return out


def check_python_run(phaseprof, python, want_dir, name, compiled):
    """Records prog.py with `phaseprof record`; the run, its steps and phases
    must be in the database, the package loaded from want_dir (compiled:
    from the bytecode installed with it, none written again)."""
    db = os.path.join(tmp, name + ".db")
    before = pycache(want_dir)
    if compiled:
        check(any("_boot." in f for f in before), "%s: the installed package is byte-compiled" % name)
    rc, out, err = run([phaseprof, "record", "-o", db, "--", python, PROG], cwd=tmp, env=clean_env())
    if compiled:
        check(pycache(want_dir) == before, "%s: the installed .pyc files were used as they are" % name)
    check(rc == 0, "%s: record exited %d: %s" % (name, rc, err[-2000:]))
    check(out.strip().endswith("enabled True"), "%s: phaseprof.enabled() under record: %r" % (name, out))
    if not check(os.path.exists(db), "%s: no database" % name):
        return
    check(q(db, "SELECT count(*) FROM runs")[0][0] == 1, "%s: one run" % name)
    check(q(db, "SELECT exit_code FROM runs")[0][0] == 0, "%s: exit code 0 stored" % name)
    check(meta(db, "python.boot") == "ok", "%s: python.boot %r" % (name, meta(db, "python.boot")))
    check(meta(db, "python.dir") == want_dir,
          "%s: package loaded from %r, not %r" % (name, meta(db, "python.dir"), want_dir))
    sp = spans(db)
    steps = sorted(v[5] for v in sp.values() if v[0] == STEP)
    check(steps == list(range(10)), "%s: steps 0..9: %r" % (name, steps))
    first = [i for i, v in sp.items() if v[0] == FIRST_STEP]
    check(len(first) == 1, "%s: one first_step phase, got %d" % (name, len(first)))
    wl = [i for i, v in sp.items() if v[0] == WEIGHT_LOAD and v[1] == "load"]
    mb = [i for i, v in sp.items() if v[0] == MODEL_BUILD and v[1] == "build table"]
    check(len(wl) == 1 and len(mb) == 1 and sp[mb[0]][2] == wl[0], "%s: phase() and @phase nest" % name)
    rc, sout, serr = run([phaseprof, "stats", db], env=clean_env())
    check(rc == 0 and "python" in sout, "%s: stats: %s" % (name, serr[-500:]))


def test_relocated(cmake, build, source, python, cprog, mpi):
    p1 = os.path.join(tmp, "prefix")
    rc, out, err = run([cmake, "--install", build, "--prefix", p1])
    if not check(rc == 0, "cmake --install: %s%s" % (out[-2000:], err[-2000:])):
        return
    files = ["bin/phaseprof", "bin/phaseprof-scenarios", "lib/phaseprof/libphaseprof-agent.so",
             "lib/phaseprof/python/phaseprof/__init__.py", "lib/phaseprof/python/phaseprof/_boot.py",
             "lib/phaseprof/python/phaseprof/adapters/torch.py"]
    if mpi:
        files.append("lib/phaseprof/libphaseprof-mpi.so")
    for f in files:
        check(os.path.isfile(os.path.join(p1, f)), "installed: %s" % f)
    # no lookup path into the source or build tree compiled in (debug
    # information names the sources, never these folders)
    for d, _, names in os.walk(p1):
        for n in names:
            data = open(os.path.join(d, n), "rb").read()
            for bad in (source + "/python", build + "/python"):
                check(bad.encode() not in data, "%s holds %s" % (os.path.join(d, n), bad))

    # moved elsewhere, the old path gone
    p2 = os.path.join(tmp, "moved", "elsewhere")
    os.makedirs(os.path.dirname(p2))
    os.rename(p1, p2)
    p2 = os.path.realpath(p2)
    phaseprof = os.path.join(p2, "bin", "phaseprof")

    check_python_run(phaseprof, python, os.path.join(p2, "lib", "phaseprof", "python"), "relocated-python",
                     True)

    db = os.path.join(tmp, "c.db")
    rc, out, err = run([phaseprof, "record", "-o", db, "--", cprog], cwd=tmp, env=clean_env())
    check(rc == 3, "C program: record hands back its status 3, got %d: %s" % (rc, err[-2000:]))
    check(out == "sum %.0f\n" % (sum(range(100000)) + 5 * sum(i * 0.5 for i in range(100000))),
          "C program's output: %r" % out)
    if check(os.path.exists(db), "C program: no database"):
        check(q(db, "SELECT count(*) FROM runs")[0][0] == 1, "C program: one run")
        check(q(db, "SELECT exit_code FROM runs")[0][0] == 3, "C program: exit code 3 stored")
        check(meta(db, "agent") == "libphaseprof-agent", "C program: recorded by the agent")
        sp = spans(db)
        check(sorted(v[5] for v in sp.values() if v[0] == STEP) == list(range(5)), "C program: steps 0..4")
        check(len([v for v in sp.values() if v[0] == WEIGHT_LOAD and v[1] == "load"]) == 1,
              "C program: its weight_load phase")

    # the scenario commands: phaseprof-scenarios beside the moved binary
    rc, out, err = run([phaseprof, "list"], env=clean_env())
    check(rc == 0 and out.strip(), "phaseprof list from the moved prefix: %s" % err[-500:])
    rc, out, err = run([phaseprof, "doctor"], env=clean_env())
    check(os.path.join(p2, "lib", "phaseprof", "libphaseprof-agent.so") in out,
          "doctor names the moved agent: %s" % out[-800:])


def test_pip(source, python):
    venv = os.path.join(tmp, "venv")
    rc, out, err = run([python, "-m", "venv", venv])
    if not check(rc == 0, "python -m venv: %s" % err[-1000:]):
        return
    vpy, vbin = os.path.join(venv, "bin", "python"), os.path.join(venv, "bin")
    env = clean_env(PIP_DISABLE_PIP_VERSION_CHECK="1")
    # the build backend comes from PyPI (pip's isolated build)
    rc, out, err = run([vpy, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "-d",
                        os.path.join(tmp, "dl"), "scikit-build-core"], timeout=300, env=env)
    if rc != 0:
        print("SKIP: PyPI cannot be reached (pip download scikit-build-core failed): %s" % err[-600:])
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(77)
    # a full build of the project: minutes on a small machine
    rc, out, err = run([vpy, "-m", "pip", "install", source], timeout=3300, cwd=tmp, env=env)
    if not check(rc == 0, "pip install: %s%s" % (out[-3000:], err[-3000:])):
        return
    phaseprof = shutil.which("phaseprof", path=vbin)
    check(phaseprof == os.path.join(vbin, "phaseprof"), "phaseprof on the venv's PATH: %r" % phaseprof)
    check(os.path.isfile(os.path.join(venv, "lib", "phaseprof", "libphaseprof-agent.so")), "the agent installed")
    # import phaseprof outside record: a no-op API, from the venv's own copy
    rc, out, err = run([vpy, "-c",
                        "import phaseprof\n"
                        "with phaseprof.phase('a', kind='compile'): pass\n"
                        "with phaseprof.step(): pass\n"
                        "phaseprof.step(); phaseprof.step_end(); phaseprof.mark('m'); phaseprof.counter('c', 1)\n"
                        "print(phaseprof.enabled(), phaseprof.__file__)"], cwd=tmp, env=env)
    check(rc == 0 and out.startswith("False ") and "/site-packages/phaseprof/" in out,
          "import phaseprof in the venv: %r %s" % (out, err[-1000:]))
    if phaseprof:
        check_python_run(phaseprof, vpy, os.path.join(os.path.realpath(venv), "lib", "phaseprof", "python"),
                         "pip-python", False)


def main():
    mode = sys.argv[1]
    try:
        if mode == "relocated":
            cmake, build, source, python, cprog = sys.argv[2:7]
            test_relocated(cmake, os.path.realpath(build), os.path.realpath(source), python, cprog,
                           len(sys.argv) > 7 and sys.argv[7] == "mpi")
        elif mode == "pip":
            test_pip(os.path.realpath(sys.argv[2]), sys.argv[3])
        else:
            sys.exit("unknown mode " + mode)
    except subprocess.TimeoutExpired as e:
        failures.append("timed out: %s" % e)
    if failures:
        print("%d failure(s); files kept in %s" % (len(failures), tmp))
        sys.exit(1)
    shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


main()
