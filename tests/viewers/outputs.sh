#!/usr/bin/env bash
# Outputs never destroy anything: report and export write a temporary file
# beside the destination and rename it into place only on success; a
# destination that is not a regular file, or is the database itself (also
# through a hard or symbolic link), is refused with one line; after any
# failure the destination is exactly what it was and no temporary is left.
# usage: outputs.sh PHASEPROF FIXTURE
set -u
pp=$1 fixture=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# refuse DESCRIPTION PATTERN -- CMD...: exits non-zero with one stderr line matching PATTERN
refuse() {
  local what=$1 pat=$2; shift 3
  timeout 60 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  [ $rc -ne 0 ] || bad "$what: exit 0"
  [ "$(wc -l <"$tmp/err")" = 1 ] || bad "$what: not one error line: $(cat "$tmp/err")"
  grep -qE -- "$pat" "$tmp/err" || bad "$what: error lacks /$pat/: $(cat "$tmp/err")"
}
no_temps() {
  local left
  left=$(find "$tmp" -name '*.tmp-*' | head -3)
  [ -z "$left" ] || bad "$1: temporary files left: $left"
}

"$fixture" "$tmp/run.db" --steps 12 || { echo "FAIL: fixture"; exit 1; }
sum=$(sha256sum <"$tmp/run.db")

# A directory and a named pipe are never written over or removed.
mkdir "$tmp/dir.html"
refuse "report -o DIR" "dir.html: is a directory" -- "$pp" report "$tmp/run.db" -o "$tmp/dir.html"
refuse "export -o DIR" "dir.html: is a directory" -- "$pp" export -f chrome "$tmp/run.db" -o "$tmp/dir.html"
[ -d "$tmp/dir.html" ] || bad "the directory was removed"
mkfifo "$tmp/fifo"
refuse "export -o FIFO" "fifo: is a named pipe" -- "$pp" export -f csv "$tmp/run.db" -o "$tmp/fifo"
[ -p "$tmp/fifo" ] || bad "the named pipe was removed"
# (no device node here: a regression would remove it, and CI may run as root)

# The database itself, a hard link to it and a symbolic link to it.
ln "$tmp/run.db" "$tmp/hard.html"
ln -s run.db "$tmp/soft.html"
refuse "report -o DB" "is the database being read" -- "$pp" report "$tmp/run.db" -o "$tmp/run.db"
refuse "report -o hard link of DB" "hard.html: is the database being read" -- "$pp" report "$tmp/run.db" -o "$tmp/hard.html"
refuse "export -o hard link of DB" "hard.html: is the database being read" -- "$pp" export -f chrome "$tmp/run.db" -o "$tmp/hard.html"
refuse "export -o symlink to DB" "soft.html: is the database being read" -- "$pp" export -f csv "$tmp/run.db" -o "$tmp/soft.html"
[ "$(sha256sum <"$tmp/run.db")" = "$sum" ] || bad "the database changed"
"$pp" stats "$tmp/run.db" >/dev/null 2>&1 || bad "the database no longer reads"

# A failure after the output was opened leaves an existing file as it was.
echo "precious" >"$tmp/keep.html"
refuse "report --run 99 over a file" "no run 99" -- "$pp" report "$tmp/run.db" --run 99 -o "$tmp/keep.html"
[ "$(cat "$tmp/keep.html")" = precious ] || bad "report truncated the existing output on failure"
refuse "export --run 99 over a file" "no run 99" -- "$pp" export -f chrome "$tmp/run.db" --run 99 -o "$tmp/keep.html"
[ -f "$tmp/keep.html" ] && [ "$(cat "$tmp/keep.html")" = precious ] || bad "export removed or changed the existing output on failure"
# a write that fails (file size limit: EFBIG) keeps the old file too
(trap '' XFSZ; ulimit -f 8; exec "$pp" report "$tmp/run.db" -o "$tmp/keep.html") >"$tmp/out" 2>"$tmp/err"
[ $? -ne 0 ] || bad "report under a 4 KB file size limit succeeded"
grep -q "keep.html: write failed" "$tmp/err" || bad "no write error named: $(cat "$tmp/err")"
[ "$(cat "$tmp/keep.html")" = precious ] || bad "a failed write replaced the existing output"
(trap '' XFSZ; ulimit -f 8; exec "$pp" export -f chrome "$tmp/run.db" -o "$tmp/keep.html") >"$tmp/out" 2>"$tmp/err"
[ $? -ne 0 ] || bad "export under a 4 KB file size limit succeeded"
[ "$(cat "$tmp/keep.html")" = precious ] || bad "a failed export replaced the existing output"
no_temps "after failures"

# Success replaces the file (its mode kept) and leaves no temporary.
chmod 640 "$tmp/keep.html"
"$pp" report "$tmp/run.db" -o "$tmp/keep.html" 2>"$tmp/err" || bad "report failed: $(cat "$tmp/err")"
grep -q '<html' "$tmp/keep.html" || bad "report did not replace the file"
[ "$(stat -c %a "$tmp/keep.html")" = 640 ] || bad "mode not kept: $(stat -c %a "$tmp/keep.html")"
"$pp" export -f chrome "$tmp/run.db" -o "$tmp/new.json" || bad "export to a new file failed"
[ -s "$tmp/new.json" ] || bad "export wrote nothing"
# a symbolic link to a file stays a link; its target gets the output
echo old >"$tmp/target.csv"
ln -s target.csv "$tmp/link.csv"
"$pp" export -f csv "$tmp/run.db" -o "$tmp/link.csv" || bad "export through a link failed"
[ -L "$tmp/link.csv" ] && [ "$(head -c 3 "$tmp/target.csv")" != old ] || bad "the link was replaced or its target not written"
no_temps "after success"

[ "$fails" = 0 ] && echo "outputs: all checks passed"
exit $((fails > 0))
