#!/usr/bin/env python3
"""Decodes a `phaseprof export --format perfetto` trace with a protobuf
wire-format reader of its own (no protobuf package needed) and checks it
against the database it came from: every span of every run is one slice,
with its name, kind (category), thread and exact begin/end in ns; slices nest
on each track; marks and counter samples are all there.

usage: check_perfetto.py TRACE DB    (exit 0 when they agree)
"""
import sqlite3
import struct
import sys
from collections import Counter, defaultdict


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """(field, wire type, value) of one message; value: int or bytes"""
    i = 0
    while i < len(b):
        tag, i = varint(b, i)
        f, w = tag >> 3, tag & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v = b[i:i + 8]
            i += 8
        elif w == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
            if len(v) != n:
                raise ValueError("truncated field %d" % f)
        elif w == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, w, v


def s32(v):
    v &= 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v >= 1 << 63 else v


def main():
    trace, dbpath = sys.argv[1], sys.argv[2]
    data = open(trace, "rb").read()
    names, cats = {}, {}
    tracks = {}            # uuid -> dict(pid, tid, parent, name, counter)
    events = []            # (ts, uuid, type, name_iid, cat_iids, value, order)
    first = True
    for f, w, pkt in fields(data):
        assert f == 1 and w == 2, "a Trace holds packets only"
        p = {}
        for pf, pw, pv in fields(pkt):
            p.setdefault(pf, []).append(pv)
        assert p.get(10) == [1], "one trusted sequence"
        flags = p.get(13, [0])[0]
        if first:
            assert flags == 1, "the first packet clears the incremental state"
            first = False
        for idata in p.get(12, []):
            for kf, _, kv in fields(idata):
                e = dict((a, b) for a, _, b in fields(kv))
                (names if kf == 2 else cats)[e[1]] = e[2].decode()
        if 60 in p:
            d = {"parent": 0, "pid": None, "tid": None, "name": "", "counter": False}
            for tf, _, tv in fields(p[60][0]):
                if tf == 1:
                    d["uuid"] = tv
                elif tf == 2:
                    d["name"] = tv.decode()
                elif tf == 5:
                    d["parent"] = tv
                elif tf == 8:
                    d["counter"] = True
                elif tf in (3, 4):
                    for xf, _, xv in fields(tv):
                        if xf == 1:
                            d["pid"] = s32(xv)
                        elif tf == 4 and xf == 2:
                            d["tid"] = s32(xv)
            assert d["uuid"] not in tracks, "track uuid used twice"
            tracks[d["uuid"]] = d
        if 11 in p:
            assert flags == 2, "events need the sequence's interned state"
            ev = {"cats": []}
            for ef, ew, ev_v in fields(p[11][0]):
                if ef == 3:
                    ev["cats"].append(ev_v)
                elif ef == 9:
                    ev["type"] = ev_v
                elif ef == 10:
                    ev["name"] = ev_v
                elif ef == 11:
                    ev["track"] = ev_v
                elif ef == 44:
                    ev["value"] = struct.unpack("<d", ev_v)[0]
            assert ev["track"] in tracks, "event before its track"
            events.append((p[8][0], ev))

    def thread_of(u):
        while tracks[u]["tid"] is None and tracks[u]["parent"]:
            u = tracks[u]["parent"]
        return tracks[u]

    # slices: begin/end per track in file order (timestamps never go back on a track)
    got = Counter()
    open_ = defaultdict(list)
    last = {}
    marks, ctrs = Counter(), Counter()
    for ts, ev in events:
        u, t = ev["track"], ev["type"]
        if t in (1, 2):
            assert ts >= last.get(u, ts), "time goes back on a track"
            last[u] = ts
        if t == 1:
            open_[u].append((ts, names[ev["name"]], cats[ev["cats"][0]]))
        elif t == 2:
            b, nm, cat = open_[u].pop()
            th = thread_of(u)
            got[(th["pid"], th["tid"], nm, cat, b, ts)] += 1
        elif t == 3:
            marks[(tracks[u]["pid"], names[ev["name"]], ts)] += 1
        elif t == 4:
            ctrs[(tracks[tracks[u]["parent"]]["pid"], tracks[u]["name"], ts, ev["value"])] += 1
    assert not any(open_.values()), "slices left open"

    db = sqlite3.connect(dbpath)
    want = Counter()
    wmarks, wctrs = Counter(), Counter()
    for rid, start, dur in db.execute("SELECT id, start_unix_ns, duration_ns FROM runs"):
        end_run = max(dur or 0, 0)
        for tid, nm, kind, s, e in db.execute(
                "SELECT tid, st.value, k.name, start_ns, end_ns FROM spans s JOIN strings st ON st.id = s.name_id"
                " JOIN phase_kinds k ON k.id = s.kind WHERE run_id = ?", (rid,)):
            e = end_run if e is None else e
            e = max(e, s)
            want[(rid, tid, nm, kind, start + s, start + e)] += 1
        for nm, ts in db.execute("SELECT st.value, ts_ns FROM marks m JOIN strings st ON st.id = m.name_id"
                                 " WHERE run_id = ?", (rid,)):
            wmarks[(rid, nm, start + ts)] += 1
        for nm, ts, v in db.execute("SELECT st.value, ts_ns, c.value FROM counters c JOIN strings st"
                                    " ON st.id = c.name_id WHERE run_id = ? AND c.value IS NOT NULL", (rid,)):
            wctrs[(rid, nm, start + ts, float(v))] += 1
    ok = True
    for what, a, b in (("spans", want, got), ("marks", wmarks, marks), ("counters", wctrs, ctrs)):
        if a != b:
            ok = False
            print("%s differ: %d in the database, %d in the trace; missing %s; extra %s" %
                  (what, sum(a.values()), sum(b.values()), list((a - b).items())[:5], list((b - a).items())[:5]))
    print("%d packets: %d slices, %d marks, %d counter samples, %d tracks" %
          (len(events), sum(got.values()), sum(marks.values()), sum(ctrs.values()), len(tracks)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
