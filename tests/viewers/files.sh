#!/usr/bin/env bash
# Files phaseprof makes and appends to (issue 22, item 3):
#  - every new database (record -o, ingest -o, merge -o) and every new
#    output (report -o, export -o in each format) is the owner's only, 0600
#    (as perf writes perf.data), whatever the umask; an existing output
#    replaced keeps its mode (outputs.sh)
#  - a database owned by another user is not appended to by record -o or
#    ingest -o unless --force (refused with one line naming the file, the
#    file unchanged); merge -o never writes over an existing file
# usage: files.sh PHASEPROF FIXTURE
set -u
pp=$1 fixture=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
mode_is() { # FILE WANT WHAT
  local m
  m=$(stat -c %a "$1" 2>/dev/null)
  [ "$m" = "$2" ] || bad "$3: mode ${m:-missing}, want $2"
}
# refuse DESCRIPTION PATTERN -- CMD...: exits non-zero with one stderr line matching PATTERN
refuse() {
  local what=$1 pat=$2; shift 3
  timeout 60 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  [ $rc -ne 0 ] || bad "$what: exit 0"
  [ "$(wc -l <"$tmp/err")" = 1 ] || bad "$what: not one error line: $(head -c 600 "$tmp/err")"
  grep -qE -- "$pat" "$tmp/err" || bad "$what: error lacks /$pat/: $(head -c 600 "$tmp/err")"
}
cd "$tmp" || exit 1
# the usual umask of a shared machine: new files would be 0644 (0664)
umask 022

"$fixture" a.db --steps 6 || { echo "FAIL: fixture"; exit 1; }
"$fixture" b.db --steps 6 || { echo "FAIL: fixture"; exit 1; }

# ---- new files are 0600 ----
"$pp" record -o rec.db --keep-spools -- /bin/true 2>rec.err || bad "record: $(cat rec.err)"
mode_is rec.db 600 "record -o"
dir=$(sed -n 's/^phaseprof: spool files kept in \([^ ]*\).*/\1/p' rec.err)
spool=$(ls "$dir"/*.spool 2>/dev/null | head -n1)
if [ -f "$spool" ]; then
  cp "$spool" left.spool
  rm -rf "$dir"
  "$pp" ingest -o ing.db left.spool >/dev/null 2>ing.err || bad "ingest: $(cat ing.err)"
  mode_is ing.db 600 "ingest -o"
else
  bad "record --keep-spools left no spool: $(cat rec.err)"
fi
"$pp" merge --force --no-diag a.db b.db -o m.db >/dev/null 2>merge.err || bad "merge: $(cat merge.err)"
mode_is m.db 600 "merge -o"
"$pp" report a.db -o r.html 2>rep.err || bad "report: $(cat rep.err)"
mode_is r.html 600 "report -o"
for f in chrome perfetto folded dot svg csv html; do
  "$pp" export -f "$f" a.db -o "x.$f" 2>exp.err || { bad "export -f $f: $(cat exp.err)"; continue; }
  mode_is "x.$f" 600 "export -f $f -o"
done
"$pp" export -f chrome --gzip a.db -o x.json.gz 2>exp.err || bad "export --gzip: $(cat exp.err)"
mode_is x.json.gz 600 "export --gzip -o"
# no sidecar of SQLite's left readable by others
for f in *-wal *-shm *-journal; do
  [ -e "$f" ] || continue
  mode_is "$f" 600 "$f"
done

# ---- another user's database ----
if [ "$(id -u)" = 0 ]; then
  chmod 777 "$tmp"
  cp a.db theirs.db && chown 65534:65534 theirs.db
  sum=$(sha256sum <theirs.db)
  refuse "ingest -o another user's db" "theirs.db: belongs to another user \(uid 65534\).*--force" -- \
    "$pp" ingest -o theirs.db left.spool
  [ "$(sha256sum <theirs.db)" = "$sum" ] || bad "ingest changed another user's database"
  rm -f mark
  refuse "record -o another user's db" "theirs.db: belongs to another user \(uid 65534\).*--force" -- \
    "$pp" record -o theirs.db -- touch mark
  [ ! -e mark ] || bad "record -o another user's db: the program ran"
  [ "$(sha256sum <theirs.db)" = "$sum" ] || bad "record changed another user's database"
  refuse "merge -o another user's db" "theirs.db exists" -- "$pp" merge --force a.db b.db -o theirs.db
  [ "$(sha256sum <theirs.db)" = "$sum" ] || bad "merge changed another user's database"
  # asked for: appended, the owner and mode left as they were
  "$pp" ingest --force -o theirs.db left.spool >/dev/null 2>ing.err || bad "ingest --force: $(cat ing.err)"
  "$pp" record -q --force -o theirs.db -- /bin/true 2>rec.err || bad "record --force: $(cat rec.err)"
  [ "$(sqlite3 theirs.db 'SELECT count(*) FROM runs')" -ge 3 ] 2>/dev/null || bad "--force did not append"
  [ "$(stat -c %u theirs.db)" = 65534 ] || bad "--force changed the owner"
else
  echo "skipped: another user's database (not root)"
fi

# ---- an existing database in a folder that cannot be written ----
# SQLite writes its journal beside the file: record must refuse before the
# program runs (it ran, then failed): a file the user may write in a folder
# he may not, as another user (root writes anywhere), where that user can
# run this build's phaseprof.
if [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$pp" 2>/dev/null; then
  chmod 755 "$tmp"
  mkdir ro && cp a.db ro/a.db && chown 65534:65534 ro/a.db && chmod 755 ro
  mkdir marks && chmod 777 marks
  setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$pp" record -o ro/a.db -- touch marks/m >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  [ $rc -ne 0 ] || bad "record -o into a folder not writable: exit 0"
  [ ! -e marks/m ] || bad "record -o into a folder not writable: the program ran"
  grep -q "ro/a.db: its folder ro is not writable" "$tmp/err" || bad "folder not writable: $(head -c 600 "$tmp/err")"
else
  echo "skipped: a folder not writable (needs root, and $pp runnable by uid 65534)"
fi

[ $fails = 0 ] && echo "files: ok"
exit $((fails > 0))
