#!/usr/bin/env bash
# One step summary (diag/include/diag_steps.h) read by every surface: for
# each run, the steady median stats prints per run, in its rank table and in
# --json, the report's "steady step (median)" card and diff's "step median"
# row agree; so do the step count and the first step.
# usage: steps_agree.sh PHASEPROF FIXTURE
set -u
pp=$1 fixture=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# 21 steps: 20 steady ones, an even count (a median between two steps)
"$fixture" "$tmp/run.db" --steps 21 || { echo "FAIL: fixture"; exit 1; }
# both runs as the ranks of one job, so stats prints its rank table
/usr/bin/python3 - "$tmp/run.db" <<'PY' || { echo "FAIL: rank rows"; exit 1; }
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for run, rank in ((1, 0), (2, 1)):
    db.executemany("INSERT INTO run_meta(run_id, key, value) VALUES (?, ?, ?)",
                   [(run, "rank", str(rank)), (run, "world_size", "2"), (run, "job", "agree")])
db.commit()
PY
"$pp" stats "$tmp/run.db" >"$tmp/stats.txt" || { echo "FAIL: stats"; exit 1; }
"$pp" stats --json "$tmp/run.db" >"$tmp/stats.json" || { echo "FAIL: stats --json"; exit 1; }
"$pp" report "$tmp/run.db" -o "$tmp/r.html" 2>/dev/null || { echo "FAIL: report"; exit 1; }
"$pp" diff "$tmp/run.db" --json >"$tmp/diff.json" || [ $? -eq 1 ] || { echo "FAIL: diff"; exit 1; }
/usr/bin/python3 - "$tmp" <<'PY'
import json, re, sys
tmp = sys.argv[1]
txt = open(tmp + "/stats.txt").read()
js = json.load(open(tmp + "/stats.json"))
html = open(tmp + "/r.html").read()
diff = json.load(open(tmp + "/diff.json"))
fails = 0
def check(ok, what):
    global fails
    print(("ok: " if ok else "FAIL: ") + what)
    fails += not ok
# stats text: per run "(first step X, steady Y)", rank table "rank run ... steps median"
per_run = dict((int(m.group(1)), (m.group(2), m.group(3)))
               for m in re.finditer(r"^run (\d+)[^\n]*\(first step ([^,]+), steady ([^)]+)\)", txt, re.M))
ranks = dict((int(m.group(1)), (int(m.group(2)), m.group(3)))
             for m in re.finditer(r"^\s+\d+\s+(\d+)\s+\S+\s+complete\s+.*?\s(\d+)\s+(\d+(?:\.\d+)? \S+)\s*$", txt, re.M))
check(sorted(per_run) == [1, 2] and sorted(ranks) == [1, 2], "stats prints both runs and both ranks")
runs = {r["id"]: r for r in js["runs"]}
# the report: each run panel's cards
panels = dict((int(m.group(1)), m.group(2)) for m in
              re.finditer(r'<section class="panel" id="run-(\d+)">(.*?)</section>', html, re.S))
for run in (1, 2):
    first, steady = per_run.get(run, ("?", "?"))
    check(ranks.get(run, (0, ""))[1] == steady, f"run {run}: rank table step median {ranks.get(run)} = steady {steady}")
    check(ranks.get(run, (0, ""))[0] == runs[run]["steps"] == 21, f"run {run}: 21 steps in the rank table and --json")
    p = panels.get(run, "")
    card = re.search(r'steady step \(median\)</div><div class="v">([^<]+)<', p)
    check(card is not None and card.group(1) == steady, f"run {run}: report steady median {card and card.group(1)} = {steady}")
    fcard = re.search(r'<div class="k">first step</div><div class="v">([^<]+)<', p)
    check(fcard is not None and fcard.group(1) == first, f"run {run}: report first step = {first}")
    check(runs[run]["first_step_ns"] > 0 and runs[run]["steady_step_ns"] > 0, f"run {run}: --json has first and steady")
row = [r for r in diff["rows"] if r["name"] == "step median"]
check(len(row) == 1, "diff has a step median row")
if row:
    # diff rounds the exact median to whole ns, stats truncates: at most 1 ns apart
    check(abs(row[0]["a_ns"] - runs[1]["steady_step_ns"]) <= 1 and abs(row[0]["b_ns"] - runs[2]["steady_step_ns"]) <= 1,
          f"diff step median {row[0]['a_ns']}/{row[0]['b_ns']} = stats {runs[1]['steady_step_ns']}/{runs[2]['steady_step_ns']}")
print("steps_agree.sh: " + ("all passed" if not fails else f"{fails} failed"))
sys.exit(1 if fails else 0)
PY
