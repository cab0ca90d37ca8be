#!/usr/bin/python3
"""Validates a phaseprof Chrome Trace Event JSON file.

usage: check_chrome.py TRACE.json[.gz] [--expect NAME=DUR_US ...] [--flows N]

Checks: top-level object with traceEvents; every event has name/ph/pid/tid
and a numeric ts; X events have dur >= 0; X slices on one (pid, tid) track
nest strictly; every track with slices has a thread_name; counters carry
numeric args; flow starts have a matching finish with bp=e. --expect asserts
an X event NAME with dur exactly DUR_US microseconds (units check)."""
import gzip, json, sys
from decimal import Decimal

def fail(msg):
    print("check_chrome: " + msg)
    sys.exit(1)

args = sys.argv[1:]
if not args:
    fail("usage: check_chrome.py TRACE.json [--expect NAME=DUR_US] [--flows N]")
path = args[0]
expects, min_flows = [], 0
i = 1
while i < len(args):
    if args[i] == "--expect":
        n, v = args[i + 1].rsplit("=", 1)
        expects.append((n, Decimal(v)))
        i += 2
    elif args[i] == "--flows":
        min_flows = int(args[i + 1])
        i += 2
    else:
        fail("unknown argument " + args[i])

raw = open(path, "rb").read()
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
doc = json.loads(raw.decode("utf-8"), parse_float=Decimal)
if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
    fail("top level must be an object with a traceEvents array")
if doc.get("displayTimeUnit") not in ("ms", "ns"):
    fail("displayTimeUnit must be ms or ns")
events = doc["traceEvents"]
tracks, named, flows_s, flows_f = {}, set(), {}, {}
counts = {}
for k, e in enumerate(events):
    for f in ("name", "ph", "pid", "tid", "ts"):
        if f not in e:
            fail("event %d lacks %s: %r" % (k, f, e))
    ph = e["ph"]
    counts[ph] = counts.get(ph, 0) + 1
    if not isinstance(e["pid"], int) or not isinstance(e["tid"], int):
        fail("event %d: pid/tid must be integers" % k)
    if not isinstance(e["ts"], (int, Decimal)) or e["ts"] < 0:
        fail("event %d: ts must be a non-negative number of microseconds" % k)
    if ph == "X":
        d = e.get("dur")
        if not isinstance(d, (int, Decimal)) or d < 0:
            fail("event %d: X needs dur >= 0" % k)
        tracks.setdefault((e["pid"], e["tid"]), []).append((Decimal(e["ts"]), Decimal(d), e["name"]))
    elif ph == "M":
        if e["name"] not in ("process_name", "thread_name", "process_sort_index", "thread_sort_index"):
            fail("event %d: unknown metadata %s" % (k, e["name"]))
        if not isinstance(e.get("args"), dict):
            fail("event %d: M needs args" % k)
        if e["name"] == "thread_name":
            named.add((e["pid"], e["tid"]))
    elif ph == "C":
        a = e.get("args")
        if not isinstance(a, dict) or not a:
            fail("event %d: C needs args" % k)
        for v in a.values():
            if v is not None and not isinstance(v, (int, Decimal)):
                fail("event %d: counter value must be numeric" % k)
    elif ph == "s":
        flows_s[e["id"]] = e
    elif ph == "f":
        if e.get("bp") != "e":
            fail("event %d: flow finish should bind to the enclosing slice (bp=e)" % k)
        flows_f[e["id"]] = e
    elif ph not in ("i", "I"):
        fail("event %d: unexpected ph %s" % (k, ph))

for key, sl in tracks.items():
    if key not in named:
        fail("track %r has slices but no thread_name" % (key,))
    sl.sort(key=lambda x: (x[0], -x[1]))
    stack = []
    for ts, dur, name in sl:
        end = ts + dur
        while stack and stack[-1][0] <= ts:
            stack.pop()
        if stack and end > stack[-1][0]:
            fail("track %r: %s [%s, %s] overlaps %s ending at %s without nesting"
                 % (key, name, ts, end, stack[-1][1], stack[-1][0]))
        stack.append((end, name))
for fid, s in flows_s.items():
    if fid not in flows_f:
        fail("flow %s starts but never finishes" % fid)
if len(flows_s) < min_flows:
    fail("expected at least %d flows, found %d" % (min_flows, len(flows_s)))
for name, dur in expects:
    found = [d for sl in tracks.values() for (t, d, n) in sl if n == name]
    if dur not in found:
        fail("no X event %s with dur %s us (found %s)" % (name, dur, sorted(set(found))[:8]))
print("check_chrome: ok: %d events (%s), %d tracks, %d flows"
      % (len(events), ", ".join("%s=%d" % kv for kv in sorted(counts.items())), len(tracks), len(flows_s)))
