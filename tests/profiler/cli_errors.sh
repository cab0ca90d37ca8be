#!/usr/bin/env bash
# CLI error paths: each bad input gets a one-line error naming the problem and
# a non-zero exit, never a crash.
set -u
pp=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
expect() { # expect CODE PATTERN -- CMD...
	local code=$1 pat=$2; shift 3
	local out rc
	out=$("$@" 2>&1); rc=$?
	if [ "$rc" != "$code" ] || ! grep -q -- "$pat" <<<"$out"; then
		echo "FAIL: $* -> rc=$rc (want $code), output: $out"; fail=1
	else
		echo "ok: $*"
	fi
	if [ "$rc" -ge 128 ]; then echo "FAIL: crashed: $*"; fail=1; fi
}
expect 2 "unknown command 'frobnicate'" -- "$pp" frobnicate
expect 2 "usage: phaseprof" -- "$pp"
expect 0 "commands:" -- "$pp" --help
expect 0 "usage: phaseprof info" -- "$pp" help info
expect 2 "unknown option '--bogus'" -- "$pp" info --bogus x.db
expect 1 "$t/none.db: no such database" -- "$pp" info "$t/none.db"
echo "plain text" > "$t/text.db"
expect 1 "not an SQLite database" -- "$pp" info "$t/text.db"
sqlite3 "$t/foreign.db" "CREATE TABLE t(x); INSERT INTO t VALUES(1);"
expect 1 "another program" -- "$pp" info "$t/foreign.db"
exit $fail
