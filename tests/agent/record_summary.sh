#!/usr/bin/env bash
# `record`'s summary goes where the user says: stderr by default (mixed with
# the program's), into --summary FILE (written beside it, renamed into place
# when complete), or nowhere with -q. Under -q and --summary the program's
# stderr is byte for byte what a plain run writes, and so are its stdout
# and exit status.
# usage: record_summary.sh PHASEPROF
set -u
pp=$(realpath "$1")
dir=$(mktemp -d "${TMPDIR:-/tmp}/ppsummary-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cd "$dir" || exit 1

# A Python program and a shell one, each writing to both streams and
# exiting non-zero; the Python one also prints a traceback.
cat > prog.py <<'PY'
import sys
sys.stderr.write("to stderr\n")
print("to stdout")
sys.stderr.flush()
raise ValueError("the program's own error")
PY
progs=("/usr/bin/python3 prog.py" "/bin/sh -c 'echo out; echo err >&2; echo more err >&2; exit 5'")

for i in 0 1; do
  cmd=${progs[$i]}
  eval "$cmd" >plain.out 2>plain.err; plain_rc=$?

  eval "\"$pp\" record -q -o q$i.db -- $cmd" >q.out 2>q.err; rc=$?
  [ $rc = $plain_rc ] || fail "$cmd: record -q exited $rc, plain $plain_rc"
  cmp -s plain.err q.err || fail "$cmd: stderr under -q differs: $(diff plain.err q.err)"
  cmp -s plain.out q.out || fail "$cmd: stdout under -q differs"
  [ -s q$i.db ] || fail "$cmd: -q recorded nothing"

  eval "\"$pp\" record --summary sum$i.txt -o s$i.db -- $cmd" >s.out 2>s.err; rc=$?
  [ $rc = $plain_rc ] || fail "$cmd: record --summary exited $rc, plain $plain_rc"
  cmp -s plain.err s.err || fail "$cmd: stderr under --summary differs: $(diff plain.err s.err)"
  cmp -s plain.out s.out || fail "$cmd: stdout under --summary differs"
  grep -q "^phaseprof: recording .* into s$i.db" sum$i.txt || fail "$cmd: no recording line in the summary: $(cat sum$i.txt)"
  grep -q "^phaseprof: 1 run recorded into s$i.db" sum$i.txt || fail "$cmd: no summary in the file: $(cat sum$i.txt)"
  grep -q "wall time" sum$i.txt || fail "$cmd: no start-up figures in the summary"

  # the default is unchanged: the summary on stderr after the program's own
  eval "\"$pp\" record -o d$i.db -- $cmd" >d.out 2>d.err
  grep -q "^phaseprof: 1 run recorded into d$i.db" d.err || fail "$cmd: default summary not on stderr"
  grep -vq '^phaseprof\|^  ' d.err || fail "$cmd: the program's stderr is missing by default"
done

# nothing left beside the summary, and the file has a new file's mode
[ "$(ls -A | grep -c '^sum0\.txt\.')" = 0 ] || fail "temporary summary files left: $(ls -A)"
[ "$(stat -c %a sum0.txt)" = "$(printf "%o" $((0666 & ~0$(umask))))" ] \
  || fail "summary mode $(stat -c %a sum0.txt), umask $(umask)"

# an older summary is replaced whole
echo "old summary" > old.txt
"$pp" record --summary old.txt -o o.db -- /bin/true 2>o.err || fail "record /bin/true failed: $(cat o.err)"
grep -q "old summary" old.txt && fail "old summary kept"
grep -q "^phaseprof: 1 run recorded" old.txt || fail "new summary missing: $(cat old.txt)"
[ -s o.err ] && fail "stderr not empty under --summary: $(cat o.err)"

# a summary that cannot be written fails before the program runs (status 2,
# one line naming the file); --summary with -q is a usage error
out=$("$pp" record --summary "$dir/no/such/dir/s.txt" -o n.db -- /bin/sh -c 'touch ran' 2>&1); rc=$?
[ $rc = 2 ] || fail "unwritable --summary: exit $rc, wanted 2: $out"
[ -e ran ] && fail "the program ran although the summary could not be written"
printf '%s' "$out" | grep -q "no/such/dir/s.txt" || fail "error does not name the file: $out"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "error is not one line: $out"
out=$("$pp" record -q --summary x.txt -o n.db -- /bin/true 2>&1); rc=$?
[ $rc = 2 ] || fail "-q with --summary: exit $rc, wanted 2: $out"
[ -e x.txt ] && fail "-q with --summary wrote a file"

# --help names both
"$pp" record --help | grep -q -- "--summary FILE" || fail "--help lacks --summary"
"$pp" record --help | grep -q -- "-q, --quiet" || fail "--help lacks -q"

[ $fails = 0 ] && echo "record_summary: all checks passed"
exit $fails
