#!/usr/bin/env python3
"""gpu_compare.py: phaseprof's kernel count and total kernel time against a
reference on the same work; the CPU-side logic of scripts/gpu-check.sh,
tested in CI (tests/gpu/compare.sh) with fixtures, so it cannot rot between
GPU runs. Python 3 standard library only.

    gpu_compare.py --label NAME --db run.db [--run ID]
                   [--torch-trace trace.json[.gz]] [--ncu ncu.csv]
                   [--expect-kernels N] [--expect-steps N] [--missing WHAT=REASON]...
                   [--tolerance PCT] [--summary FILE]
    gpu_compare.py --label NAME --db run.db --info

phaseprof's side is read from the database with sqlite3: rows of
gpu_activity with kind 'kernel' (all runs, or --run ID), time = sum of
end_ns - start_ns. References:
  --torch-trace  torch.profiler's export_chrome_trace JSON: events with
                 ph 'X' and cat 'kernel' (dur in microseconds)
  --ncu          ncu --csv output (--log-file) with the metric
                 gpu__time_duration.sum: one kernel per (process, ID)
  --expect-kernels  the count the program says it launched (time not judged)
  --expect-steps    the steps the program ran: as many step phases must be
                 in the runs that launched kernels
  --missing      a reference that could not be had, and why: printed as a
                 'not compared' line, not a failure

One line per judgement, `LABEL WHAT: phaseprof A, REF B (D %): agree` or
`... : DISAGREE (beyond T %)`; the lines are appended to --summary too.
--info prints only what the database holds (kernels, gpu_status, the GPU
cold start, a detach from CUPTI) and judges nothing.
Exit status: 0 every judgement agrees, 1 one or more disagree (or nothing
was compared), 2 an input could not be read (one line saying which and why).
"""
import argparse
import csv
import gzip
import io
import json
import os
import sqlite3
import sys


class InputError(Exception):
    pass


def read_db(path, run_id=None):
    """(kernels, total ns, runs with kernels, status reasons) from a phaseprof db."""
    if not os.path.isfile(path):
        raise InputError("cannot read %s: no such file" % path)
    try:
        con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    except sqlite3.Error as e:
        raise InputError("cannot open %s: %s" % (path, e))
    try:
        where = "kind='kernel'"
        args = ()
        if run_id is not None:
            where += " AND run_id=?"
            args = (run_id,)
        n, ns, runs = con.execute(
            "SELECT count(*), coalesce(sum(CASE WHEN end_ns >= start_ns THEN end_ns - start_ns END), 0),"
            " count(DISTINCT run_id) FROM gpu_activity WHERE " + where, args).fetchone()
        unknown = con.execute(
            "SELECT count(*) FROM gpu_activity WHERE " + where + " AND (end_ns IS NULL OR end_ns < start_ns)",
            args).fetchone()[0]
        reasons = []
        q = "SELECT available, reason FROM gpu_status"
        for avail, reason in con.execute(q + (" WHERE run_id=?" if run_id is not None else ""), args):
            reasons.append(("available: " if avail else "unavailable: ") + (reason or "?"))
        dropped = con.execute(
            "SELECT coalesce(sum(count), 0) FROM losses WHERE source LIKE 'cupti%'"
            + (" AND run_id=?" if run_id is not None else ""), args).fetchone()[0]
        steps = con.execute(
            "SELECT count(*) FROM spans s JOIN phase_kinds k ON k.id = s.kind WHERE k.name = 'step'"
            " AND s.run_id IN (SELECT DISTINCT run_id FROM gpu_activity WHERE " + where + ")", args).fetchone()[0]
        meta = {}
        for k, v in con.execute(
                "SELECT key, value FROM run_meta WHERE key IN ('gpu.cold_start', 'gpu.detached')"
                + (" AND run_id=?" if run_id is not None else "") + " ORDER BY run_id", args):
            meta.setdefault(k, v)
    except sqlite3.Error as e:
        raise InputError("cannot read %s: %s (not a phaseprof database?)" % (path, e))
    finally:
        con.close()
    return {"kernels": n, "ns": ns, "runs": runs, "unknown_end": unknown,
            "reasons": reasons, "dropped": dropped, "meta": meta, "steps": steps}


def read_torch_trace(path):
    """(kernels, total ns) from torch.profiler's Chrome trace JSON."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError, EOFError) as e:
        raise InputError("cannot read %s: %s" % (path, e))
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise InputError("cannot read %s: no traceEvents list (not a Chrome trace)" % path)
    n, us = 0, 0.0
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        if str(ev.get("cat", "")).lower() != "kernel":
            continue
        n += 1
        try:
            us += float(ev.get("dur", 0))
        except (TypeError, ValueError):
            raise InputError("cannot read %s: kernel event with dur %r" % (path, ev.get("dur")))
    return {"kernels": n, "ns": us * 1000.0}


_UNIT_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
            "second": 1e9, "s": 1e9}


def read_ncu_csv(path):
    """(kernels, total ns) from `ncu --csv --metrics gpu__time_duration.sum` output."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e))
    # ncu's own ==PROF== lines and the program's output may come first
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        msg = next((l for l in lines if "==ERROR==" in l or "ERR_NVGPUCTRPERM" in l), None)
        raise InputError("cannot read %s: no ncu CSV header%s" % (path, (": " + msg.strip()) if msg else ""))
    rows = csv.DictReader(io.StringIO("\n".join(lines[start:])))
    seen = set()
    ns = 0.0
    for r in rows:
        if (r.get("Metric Name") or "") != "gpu__time_duration.sum":
            continue
        key = (r.get("Process ID"), r.get("ID"))
        if key in seen:
            continue
        seen.add(key)
        unit = (r.get("Metric Unit") or "nsecond").strip()
        if unit not in _UNIT_NS:
            raise InputError("cannot read %s: unknown unit %r for gpu__time_duration.sum" % (path, unit))
        try:
            v = float((r.get("Metric Value") or "").replace(",", ""))
        except ValueError:
            raise InputError("cannot read %s: metric value %r" % (path, r.get("Metric Value")))
        ns += v * _UNIT_NS[unit]
    if not seen:
        raise InputError("cannot read %s: no gpu__time_duration.sum rows" % path)
    return {"kernels": len(seen), "ns": ns}


def pct(a, ref):
    if ref == 0:
        return 0.0 if a == 0 else float("inf")
    return abs(a - ref) * 100.0 / ref


def fmt_ms(ns):
    return "%.3f ms" % (ns / 1e6)


def judge(label, what, ours, ref_name, ref, tol, fmt=str):
    """One verdict line; True if within tol percent."""
    if ours == 0 and ref == 0:
        return ("%s %s: phaseprof 0, %s 0: DISAGREE (nothing to compare: no kernels on either side)"
                % (label, what, ref_name)), False
    d = pct(ours, ref)
    ok = d <= tol
    ds = "inf" if d == float("inf") else "%.1f" % d
    return ("%s %s: phaseprof %s, %s %s (%s %%): %s" % (
        label, what, fmt(ours), ref_name, fmt(ref), ds,
        "agree" if ok else "DISAGREE (beyond %g %%)" % tol)), ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--run", type=int)
    ap.add_argument("--torch-trace")
    ap.add_argument("--ncu")
    ap.add_argument("--expect-kernels", type=int)
    ap.add_argument("--expect-steps", type=int,
                    help="the steps the program ran: phaseprof's step phases in the runs with kernels must be as many")
    ap.add_argument("--missing", action="append", default=[], metavar="WHAT=REASON")
    ap.add_argument("--tolerance", type=float, default=10.0, metavar="PCT")
    ap.add_argument("--summary")
    ap.add_argument("--info", action="store_true",
                    help="only say what the database holds (kernels, GPU status, cold start, detach): no judgement")
    a = ap.parse_args(argv)

    lines, ok_all, judged = [], True, 0

    def emit(line, ok=True):
        nonlocal ok_all
        lines.append(line)
        ok_all = ok_all and ok

    try:
        ours = read_db(a.db, a.run)
        refs = []
        if a.torch_trace:
            refs.append(("torch.profiler", read_torch_trace(a.torch_trace)))
        if a.ncu:
            refs.append(("ncu", read_ncu_csv(a.ncu)))
    except InputError as e:
        print("gpu_compare: %s: %s" % (a.label, e), file=sys.stderr)
        return 2

    detail = "%s phaseprof: %d kernels, %s in %d run(s)" % (
        a.label, ours["kernels"], fmt_ms(ours["ns"]), ours["runs"])
    if ours["unknown_end"]:
        detail += ", %d without an end time (not in the total)" % ours["unknown_end"]
    if ours["dropped"]:
        detail += ", %d CUPTI records or buffers lost (losses table)" % ours["dropped"]
    emit(detail)
    if ours["kernels"] == 0 or a.info:
        emit("%s %sgpu_status: %s" % (
            a.label, "phaseprof recorded no kernels; " if ours["kernels"] == 0 else "",
            "; ".join(ours["reasons"]) or "no row"))
    if "gpu.cold_start" in ours["meta"]:
        emit("%s GPU cold start (device_init phases): %s" % (a.label, ours["meta"]["gpu.cold_start"]))
    if "gpu.detached" in ours["meta"]:
        emit("%s detached from CUPTI at the %s (a CUPTI call did not return in time)" % (
            a.label, ours["meta"]["gpu.detached"]))
    if a.info:
        judged = -1

    if a.expect_kernels is not None and judged >= 0:
        judged += 1
        ok = ours["kernels"] == a.expect_kernels
        emit("%s kernels: phaseprof %d, the program launched %d: %s" % (
            a.label, ours["kernels"], a.expect_kernels, "agree" if ok else "DISAGREE (must be equal)"), ok)
    if a.expect_steps is not None and judged >= 0:
        judged += 1
        ok = ours["steps"] == a.expect_steps
        emit("%s steps: phaseprof %d, the program ran %d: %s" % (
            a.label, ours["steps"], a.expect_steps, "agree" if ok else "DISAGREE (must be equal)"), ok)
    for name, ref in (refs if judged >= 0 else []):
        judged += 2
        emit(*judge(a.label, "kernels", ours["kernels"], name, ref["kernels"], a.tolerance))
        emit(*judge(a.label, "kernel time", ours["ns"], name, ref["ns"], a.tolerance, fmt_ms))
    for m in (a.missing if judged >= 0 else []):
        what, _, why = m.partition("=")
        emit("%s %s: not compared: %s" % (a.label, what, why or "no reason given"))
    if judged == 0:
        emit("%s: nothing compared (no reference could be had)" % a.label, False)
    if judged >= 0:
        emit("%s verdict: %s" % (a.label, "PASS" if ok_all else "FAIL"), ok_all)

    out = "\n".join(lines) + "\n"
    sys.stdout.write(out)
    if a.summary:
        try:
            with open(a.summary, "a", encoding="utf-8") as f:
                f.write(out)
        except OSError as e:
            print("gpu_compare: cannot append to %s: %s" % (a.summary, e), file=sys.stderr)
            return 2
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
