#!/usr/bin/env bash
# The hostile database: a recording with every text column of every table
# filled with hostile content (hostile_fill.py), then every output checked
# for what it must be whatever a name holds:
#   report    HTML: no element from the data (the browser test, check_hostile.js,
#             runs it in Chromium when BROWSER=1)
#   svg, dot  well-formed (XML; DOT parsed back by Graphviz)
#   chrome    JSON
#   csv       every text cell starting with = + - @ neutralised
#   info, stats, stats --json, diff: no control byte reaches the terminal
# usage: hostile.sh PHASEPROF FIXTURE [ARTIFACT_DIR]
set -u
pp=$1 fixture=$2 art=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
clean() {
  python3 - "$1" "$2" <<'PY' && ok "$2: no control bytes" || bad "$2: control bytes in the output"
import re, sys
b = open(sys.argv[1], 'rb').read()
bad = re.findall(rb'[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]', b)
try:
    b.decode('utf-8')
except UnicodeDecodeError as e:
    bad.append(repr(e).encode())
if bad:
    print(sys.argv[2] + ': ' + repr(bad[:5]))
    sys.exit(1)
PY
}

"$fixture" "$tmp/run.db" --steps 12 --ops 4 || { echo "FAIL: fixture"; exit 1; }
# stored findings (the fixture has none: the report would compute its own)
"$pp" report "$tmp/run.db" -o "$tmp/plain.html" || { echo "FAIL: plain report"; exit 1; }
# (eight rows a run: each of hostile_fill's eight payloads lands in each column)
sqlite3 "$tmp/run.db" "WITH RECURSIVE k(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM k WHERE x < 8)
  INSERT INTO findings(run_id, rule, severity, score, title, evidence, fix)
  SELECT id, 'r', 'high', 0.9, 't', 'e', 'f' FROM runs, k;
  WITH RECURSIVE k(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM k WHERE x < 8)
  INSERT INTO losses(run_id, source, count, detail) SELECT id, 's', 3, 'd' FROM runs, k;" || bad "sqlite3"
python3 "$here/hostile_fill.py" "$tmp/run.db" >"$tmp/filled" || { echo "FAIL: fill"; exit 1; }
# every text column of every table holds hostile content in at least one row
empty=$(python3 - "$tmp/run.db" "$tmp/filled" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.text_factory = bytes
for col in open(sys.argv[2]).read().split():
    t, c = col.split('.')
    if not db.execute(f'SELECT count(*) FROM "{t}" WHERE instr("{c}", CAST(\' #\' AS BLOB)) > 0').fetchone()[0]:
        print(col)
PY
)
ok "filled $(wc -l <"$tmp/filled") text columns; without a row: ${empty:-none}"
[ -n "$art" ] && mkdir -p "$art" && cp "$tmp/run.db" "$art/hostile.db"

# HTML report (its DOM is checked in Chromium by the browser test)
"$pp" report "$tmp/run.db" -o "$tmp/report.html" 2>"$tmp/err" || bad "report failed: $(cat "$tmp/err")"
[ -n "$art" ] && cp "$tmp/report.html" "$art/hostile.html"
python3 - "$tmp/report.html" <<'PY' && ok "report: no raw markup from the data" || bad "report: raw markup from the data"
import re, sys
h = open(sys.argv[1], 'rb').read()
bad = [m for m in (b'<img src=x', b'<b id=pwned', b'<script>alert', b'<svg onload', b'<style>body{display:none}')
       if m in h]
if bad:
    print(bad); sys.exit(1)
PY
# SVG of the graph: well-formed XML
"$pp" export --format svg "$tmp/run.db" -o "$tmp/g.svg" 2>"$tmp/err" || bad "export svg failed: $(cat "$tmp/err")"
python3 -c "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])" "$tmp/g.svg" 2>"$tmp/err" \
  && ok "svg: well-formed XML" || bad "svg: not well-formed: $(tail -1 "$tmp/err")"
grep -q 'pwned\|alert' "$tmp/g.svg" && ok "svg: shows the names" || bad "svg: the names are missing"
# DOT
"$pp" export --format dot "$tmp/run.db" -o "$tmp/g.dot" 2>"$tmp/err" || bad "export dot failed: $(cat "$tmp/err")"
if command -v dot >/dev/null; then
  dot -Tsvg "$tmp/g.dot" -o "$tmp/g2.svg" 2>"$tmp/err" && ok "dot: Graphviz reads it" || bad "dot: Graphviz cannot read it: $(head -2 "$tmp/err")"
fi
# Chrome trace: JSON
"$pp" export --format chrome "$tmp/run.db" -o "$tmp/t.json" 2>"$tmp/err" || bad "export chrome failed: $(cat "$tmp/err")"
python3 -c "import json, sys; json.load(open(sys.argv[1], encoding='utf-8'))" "$tmp/t.json" 2>"$tmp/err" \
  && ok "chrome: valid JSON" || bad "chrome: not JSON: $(tail -1 "$tmp/err")"
# CSV: text cells neutralised
"$pp" export --format csv "$tmp/run.db" -o "$tmp/s.csv" 2>"$tmp/err" || bad "export csv failed: $(cat "$tmp/err")"
python3 - "$tmp/s.csv" <<'PY' && ok "csv: formula cells neutralised" || bad "csv: a cell starts a formula"
import csv, re, sys
rows = list(csv.reader(open(sys.argv[1], encoding='utf-8', errors='replace', newline='')))
num = re.compile(r'^-?[0-9]+$')
bad = [c for r in rows[1:] for c in r if c and c[0] in '=+-@\t\r' and not num.match(c)]
hostile = [c for r in rows[1:] for c in r if c.startswith("'=") or c.startswith("'+")]
if bad or not hostile:
    print('formula cells:', bad[:3], 'neutralised cells seen:', len(hostile)); sys.exit(1)
PY
# folded: one stack per line
"$pp" export --format folded "$tmp/run.db" -o "$tmp/f.txt" 2>"$tmp/err" || bad "export folded failed: $(cat "$tmp/err")"
python3 - "$tmp/f.txt" <<'PY' && ok "folded: one stack and a count per line" || bad "folded: a line is not 'stack count'"
import re, sys
for l in open(sys.argv[1], 'rb').read().split(b'\n'):
    if l and not re.match(rb'^[^\r\n]* [0-9]+$', l):
        print(l[:200]); sys.exit(1)
PY
# the terminal
for c in "info" "stats" "stats --json" "diff"; do
  set -- $c
  if [ "$1" = diff ]; then args=("$tmp/run.db" "$tmp/run.db"); else args=("$tmp/run.db"); fi
  "$pp" "$@" "${args[@]}" >"$tmp/term.out" 2>&1
  rc=$?
  [ $rc -le 1 ] || bad "$c: exit $rc: $(head -c 300 "$tmp/term.out")"
  clean "$tmp/term.out" "$c"
done
# the same names arriving through a spool (tests/fuzz/corpus/spool/ok_hostile_names.spool)
"$pp" ingest -o "$tmp/spool.db" "$here/../fuzz/corpus/spool/ok_hostile_names.spool" >"$tmp/term.out" 2>&1 \
  || bad "ingest of the hostile spool failed: $(head -c 300 "$tmp/term.out")"
for c in info stats; do "$pp" $c "$tmp/spool.db" >>"$tmp/term.out" 2>&1 || bad "$c of the hostile spool's run failed"; done
clean "$tmp/term.out" "ingest, info, stats of the hostile spool"
"$pp" export --format svg "$tmp/spool.db" -o "$tmp/s.svg" 2>"$tmp/err" || bad "export svg of the spool's run failed: $(cat "$tmp/err")"
python3 -c "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])" "$tmp/s.svg" 2>"$tmp/err" \
  && ok "svg of the spool's run: well-formed XML" || bad "svg of the spool's run: not well-formed: $(tail -1 "$tmp/err")"
if [ "${BROWSER:-0}" = 1 ]; then
  NODE_PATH="$here/../browser/node_modules" node "$here/../browser/check_hostile.js" "$tmp/report.html" "${art:-$tmp/art}" \
    || bad "browser: the report from a hostile database is not inert"
fi
[ $fails -eq 0 ] && echo "hostile: all checks passed" || echo "hostile: $fails failure(s)"
[ $fails -eq 0 ]
