#!/usr/bin/env bash
# Regenerates the database seeds for SQL a file carries and hostile text
# (committed; run by hand when they change), from corpus/db/ok_small.db:
#   bad_trigger.db      a trigger on runs (would run at every append)
#   bad_view_endless.db findings replaced by a view with an endless query
#                       (would hang every reader)
#   bad_view_own.db     the schema's spans_v changed
#   bad_virtual.db      a virtual table (rtree)
#   bad_trigger_delete.db a trigger on another table and event (BEFORE DELETE
#                       ON spans; record's and merge's clean-ups delete)
#   bad_trigger_update.db a trigger that writes into meta on UPDATE OF runs
#   bad_view_runs.db    runs replaced by a view (every reader's first query)
#   bad_virtual_fts.db  an FTS5 virtual table (shadow tables of its own)
#   ok_index_expr.db    an index on an expression of built-in innocuous
#                       functions (what trusted_schema=OFF still allows): reads
#   ok_hostile_text.db  every text column hostile (tests/viewers/hostile_fill.py):
#                       opens and reads like any other
set -eu
here=$(cd "$(dirname "$0")" && pwd)
d=$here/corpus/db
mk() { rm -f "$d/$1"; cp "$d/ok_small.db" "$d/$1"; sqlite3 "$d/$1" "$2"; }
mk bad_trigger.db "CREATE TABLE stolen(c TEXT);
  CREATE TRIGGER steal AFTER INSERT ON runs BEGIN INSERT INTO stolen VALUES (new.command); END;"
mk bad_view_endless.db "ALTER TABLE findings RENAME TO findings_old;
  CREATE VIEW findings AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
  SELECT x AS id, 1 AS run_id, 'r' AS rule, 'high' AS severity, 1.0 AS score, 't' AS title,
         'e' AS evidence, 'f' AS fix FROM c;"
mk bad_view_own.db "DROP VIEW spans_v; CREATE VIEW spans_v AS SELECT * FROM spans WHERE 1;"
mk bad_virtual.db "CREATE VIRTUAL TABLE vt USING rtree(id, a, b);"
mk bad_trigger_delete.db "CREATE TRIGGER keep BEFORE DELETE ON spans BEGIN SELECT RAISE(IGNORE); END;"
mk bad_trigger_update.db "CREATE TRIGGER upd AFTER UPDATE OF status ON runs BEGIN
  UPDATE meta SET value = new.command WHERE key = 'schema_version'; END;"
mk bad_view_runs.db "ALTER TABLE runs RENAME TO runs_old; CREATE VIEW runs AS SELECT * FROM runs_old;"
mk bad_virtual_fts.db "CREATE VIRTUAL TABLE ft USING fts5(body); INSERT INTO ft VALUES ('x');"
mk ok_index_expr.db "CREATE INDEX spans_len ON spans(length(hex(zeroblob(start_ns % 1000))));"
rm -f "$d/ok_hostile_text.db"
cp "$d/ok_small.db" "$d/ok_hostile_text.db"
python3 "$here/../viewers/hostile_fill.py" "$d/ok_hostile_text.db" >/dev/null
for f in bad_trigger bad_view_endless bad_view_own bad_virtual bad_trigger_delete bad_trigger_update \
         bad_view_runs bad_virtual_fts ok_index_expr ok_hostile_text; do
  sqlite3 "$d/$f.db" "VACUUM"
done
