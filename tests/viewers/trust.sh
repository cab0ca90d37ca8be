#!/usr/bin/env bash
# A database or spool from outside is data, never code, and never blocks:
#  - SQL a database carries (a trigger, a view other than the schema's own,
#    a virtual table) is refused with one line naming it, by every command
#    that reads or appends, before anything runs; the trigger never fires
#  - a query on a file from outside is bounded in time (PHASEPROF_QUERY_TIMEOUT)
#  - a named pipe or device as database or spool is refused at once, and
#    record refuses it (and /dev/null) before it runs the program
#  - record, info and stats print names from a recording (executable,
#    arguments, op names) with their control bytes escaped
# usage: trust.sh PHASEPROF FIXTURE
set -u
pp=$1 fixture=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# refuse DESCRIPTION PATTERN -- CMD...: exits non-zero within 20 s with one
# stderr line matching PATTERN
refuse() {
  local what=$1 pat=$2; shift 3
  timeout 20 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  [ $rc -ne 124 ] || bad "$what: still running after 20 s"
  [ $rc -ne 0 ] || bad "$what: exit 0"
  [ "$(wc -l <"$tmp/err")" = 1 ] || bad "$what: not one error line: $(head -c 600 "$tmp/err")"
  grep -qE -- "$pat" "$tmp/err" || bad "$what: error lacks /$pat/: $(head -c 600 "$tmp/err")"
}
# clean FILE WHAT: no byte a terminal takes as a command
clean() {
  python3 - "$1" "$2" <<'PY' || bad "$2: control bytes in the output"
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

"$fixture" "$tmp/good.db" --steps 8 --single || { echo "FAIL: fixture"; exit 1; }

# ---- SQL in a database ----
# every command that reads or appends, for a database DB
commands() {
  local db=$1 what=$2 pat=$3
  refuse "info $what" "$pat" -- "$pp" info "$db"
  refuse "stats $what" "$pat" -- "$pp" stats "$db"
  refuse "report $what" "$pat" -- "$pp" report "$db" -o "$tmp/r.html"
  refuse "export $what" "$pat" -- "$pp" export --format csv "$db" -o "$tmp/r.csv"
  refuse "diff $what" "$pat" -- "$pp" diff "$db" "$tmp/good.db"
  refuse "merge $what" "$pat" -- "$pp" merge "$db" "$tmp/good.db" -o "$tmp/m.db"
  rm -f "$tmp/mark"
  refuse "record -o $what" "$pat" -- "$pp" record -o "$db" -- touch "$tmp/mark"
  [ ! -e "$tmp/mark" ] || bad "record -o $what: the program ran"
}
# a trigger that copies every new run's command line out and deletes the others
cp "$tmp/good.db" "$tmp/trigger.db"
sqlite3 "$tmp/trigger.db" "CREATE TABLE stolen(c TEXT);
  CREATE TRIGGER steal AFTER INSERT ON runs BEGIN
    INSERT INTO stolen VALUES (new.command); DELETE FROM runs WHERE id <> new.id; END;" || bad "sqlite3"
sum=$(sha256sum <"$tmp/trigger.db")
commands "$tmp/trigger.db" "with a trigger" "trigger.db: holds a trigger 'steal'"
[ "$(sha256sum <"$tmp/trigger.db")" = "$sum" ] || bad "the database with a trigger changed"
[ "$(sqlite3 "$tmp/trigger.db" 'SELECT count(*) FROM stolen')" = 0 ] || bad "the trigger ran"
# ingest -o into it: refused at the open, before any spool is read
refuse "ingest -o with a trigger" "trigger.db: holds a trigger 'steal'" -- "$pp" ingest -o "$tmp/trigger.db" "$tmp/none.spool"
# a view in place of a table, with an endless query
cp "$tmp/good.db" "$tmp/view.db"
sqlite3 "$tmp/view.db" "ALTER TABLE findings RENAME TO findings_old;
  CREATE VIEW findings AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
  SELECT x AS id, 1 AS run_id, 'r' AS rule, 'high' AS severity, 1.0 AS score, 't' AS title,
         'e' AS evidence, 'f' AS fix FROM c;" || bad "sqlite3"
commands "$tmp/view.db" "with a view" "view.db: holds a view 'findings'"
# the schema's own views, changed
cp "$tmp/good.db" "$tmp/ownview.db"
sqlite3 "$tmp/ownview.db" "DROP VIEW spans_v; CREATE VIEW spans_v AS SELECT * FROM spans WHERE 1;" || bad "sqlite3"
refuse "info with a changed spans_v" "holds a view 'spans_v'" -- "$pp" info "$tmp/ownview.db"
"$pp" info "$tmp/good.db" >/dev/null 2>"$tmp/err" || bad "the schema's own views refused: $(cat "$tmp/err")"
# a virtual table
cp "$tmp/good.db" "$tmp/virtual.db"
sqlite3 "$tmp/virtual.db" "CREATE VIRTUAL TABLE vt USING rtree(id, a, b);" || bad "sqlite3"
refuse "info with a virtual table" "holds a virtual table 'vt'" -- "$pp" info "$tmp/virtual.db"
refuse "record -o with a virtual table" "holds a virtual table 'vt'" -- "$pp" record -o "$tmp/virtual.db" -- true

# a bounded time for every query: 100,000 runs take info past 1 ms
cp "$tmp/good.db" "$tmp/big.db"
python3 - "$tmp/big.db" <<'PY' || bad "could not grow big.db"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in db.execute("PRAGMA table_info(runs)") if r[1] != 'id']
db.execute(f"INSERT INTO runs({','.join(cols)}) SELECT {','.join('r.' + c for c in cols)} FROM runs r, "
           "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) SELECT x FROM c)")
db.commit()
PY
refuse "info past the query time limit" "ran past .*PHASEPROF_QUERY_TIMEOUT" -- \
  env PHASEPROF_QUERY_TIMEOUT=0.001 "$pp" info "$tmp/big.db"
PHASEPROF_QUERY_TIMEOUT=60 "$pp" info "$tmp/good.db" >/dev/null 2>"$tmp/err" || bad "info with a 60 s limit: $(cat "$tmp/err")"

# ---- named pipes and devices ----
mkfifo "$tmp/fifo.db" "$tmp/fifo.spool"
refuse "info FIFO" "fifo.db: is a named pipe" -- "$pp" info "$tmp/fifo.db"
refuse "stats FIFO" "fifo.db: is a named pipe" -- "$pp" stats "$tmp/fifo.db"
refuse "report FIFO" "fifo.db: is a named pipe" -- "$pp" report "$tmp/fifo.db" -o "$tmp/r.html"
refuse "export FIFO" "fifo.db: is a named pipe" -- "$pp" export --format csv "$tmp/fifo.db" -o "$tmp/r.csv"
refuse "diff FIFO" "fifo.db: is a named pipe" -- "$pp" diff "$tmp/fifo.db" "$tmp/good.db"
refuse "merge FIFO" "fifo.db: is a named pipe" -- "$pp" merge "$tmp/fifo.db" "$tmp/good.db" -o "$tmp/m.db"
refuse "ingest FIFO spool" "fifo.spool: is a named pipe" -- "$pp" ingest -o "$tmp/i.db" "$tmp/fifo.spool"
[ ! -e "$tmp/i.db" ] || bad "ingest of a FIFO spool made the database"
rm -f "$tmp/mark"
refuse "record -o FIFO" "fifo.db: is a named pipe" -- "$pp" record -o "$tmp/fifo.db" -- touch "$tmp/mark"
[ ! -e "$tmp/mark" ] || bad "record -o FIFO: the program ran"
refuse "ingest -o FIFO" "fifo.db: is a named pipe" -- "$pp" ingest -o "$tmp/fifo.db" "$tmp/none.spool"
refuse "record -o /dev/null" "/dev/null: is a character device" -- "$pp" record -o /dev/null -- touch "$tmp/mark"
[ ! -e "$tmp/mark" ] || bad "record -o /dev/null: the program ran"
refuse "info /dev/null" "/dev/null: is a character device" -- "$pp" info /dev/null

# ---- terminal escapes ----
esc=$(printf 'x\033]0;pwned\007\033[2J\033[31m\r\x9b')
ln -s /bin/true "$tmp/$esc"
"$pp" record -o "$tmp/esc.db" -- "$tmp/$esc" "arg$esc" >"$tmp/rec.out" 2>&1 || bad "record of an escape-named program failed: $(cat "$tmp/rec.out")"
clean "$tmp/rec.out" "record"
grep -q 'x\\x1b\]0;pwned\\x07' "$tmp/rec.out" || bad "record: the name is not shown escaped: $(cat "$tmp/rec.out")"
"$pp" info "$tmp/esc.db" >"$tmp/info.out" 2>&1 || bad "info failed"
clean "$tmp/info.out" "info"
grep -q 'x\\x1b\]0;pwn' "$tmp/info.out" || bad "info: the name is not shown: $(cat "$tmp/info.out")"
"$pp" stats "$tmp/esc.db" >"$tmp/stats.out" 2>&1 || bad "stats failed"
clean "$tmp/stats.out" "stats"
# op names
cp "$tmp/good.db" "$tmp/ops.db"
sqlite3 "$tmp/ops.db" "UPDATE strings SET value = CAST(X'1b5d303b70776e6564071b5b324a' AS TEXT) || id" || bad "sqlite3"
"$pp" stats "$tmp/ops.db" >"$tmp/stats2.out" 2>&1 || bad "stats of escaped op names failed: $(head -c 300 "$tmp/stats2.out")"
clean "$tmp/stats2.out" "stats (op names)"
grep -q 'pwned' "$tmp/stats2.out" || bad "stats: op names not shown"
"$pp" info "$tmp/ops.db" >"$tmp/info2.out" 2>&1 || bad "info failed"
clean "$tmp/info2.out" "info (strings)"

[ $fails -eq 0 ] && echo "trust: all checks passed" || echo "trust: $fails failure(s)"
[ $fails -eq 0 ]
