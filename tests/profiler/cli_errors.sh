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
# Option tables: every command prints --help from its table and refuses an
# unknown option in one line naming the valid ones, exit 2; --opt=value works.
for c in record ingest run list stats diff report export info doctor; do
	expect 0 "-h, --help" -- "$pp" $c --help
	out=$("$pp" $c --bogus 2>&1); rc=$?
	if [ "$rc" != 2 ] || [ "$(printf '%s\n' "$out" | wc -l)" != 1 ] ||
	   ! grep -q -- "$c: unknown option '--bogus' (valid: .*--help)" <<<"$out"; then
		echo "FAIL: $c --bogus -> rc=$rc, output: $out"; fail=1
	else
		echo "ok: $c --bogus"
	fi
done
expect 2 "stats: unknown option '--bogus' (valid: --run N, --json, --width N, --help)" -- "$pp" stats --bogus x.db
expect 2 "--width: 'abc' is not a number" -- "$pp" stats --width=abc x.db
expect 2 "stats: --json takes no value" -- "$pp" stats --json=1 x.db
expect 2 "report: --run needs a value" -- "$pp" report x.db --run
expect 2 "diff: --runs needs two run ids" -- "$pp" diff x.db --runs 1
expect 2 "stats: unexpected argument 'y.db'" -- "$pp" stats x.db y.db
expect 1 "$t/none.db: no such database" -- "$pp" stats --width=100 "$t/none.db"
expect 0 "--max-graph-nodes N" -- "$pp" report --help
exit $fail
