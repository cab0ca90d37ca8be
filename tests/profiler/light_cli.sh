#!/usr/bin/env bash
# The launcher stays light: `phaseprof record` (and every command but the
# scenario ones) neither links nor maps OpenBLAS/LAPACKE/Graphviz, which
# cost ~20,000 relocations at every start; `run` and `list` still answer
# through phaseprof (exec of phaseprof-scenarios: same output and status),
# and graphs still render (Graphviz loaded at the first one).
set -u
pp=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
heavy='openblas|lapack|gfortran|quadmath|libgvc|libcgraph|gvplugin|libstdc\+\+'

needed=$(readelf -d "$pp" | grep NEEDED)
grep -Eq "$heavy" <<<"$needed" && bad "phaseprof links a heavy library: $needed"
# what the launcher has mapped while the program runs: the program reads
# its parent's (the launcher's) maps
"$pp" record --no-python -o "$t/r.db" -- /bin/sh -c 'cat /proc/$PPID/maps > "$0"' "$t/maps" 2>"$t/err" ||
	bad "record failed: $(cat "$t/err")"
[ -s "$t/maps" ] || bad "no maps read"
grep -q 'phaseprof' "$t/maps" || bad "maps are not the launcher's: $(head -3 "$t/maps")"
grep -Eq "$heavy" "$t/maps" && bad "record's process maps: $(grep -E "$heavy" "$t/maps" | awk '{print $6}' | sort -u)"

# run/list: through the exec, same output as the helper's, same status
scn=$(dirname "$pp")/phaseprof-scenarios
[ -x "$scn" ] || bad "$scn missing"
"$pp" list > "$t/list1" || bad "list failed"
"$scn" list > "$t/list2"
cmp -s "$t/list1" "$t/list2" || bad "list differs through phaseprof"
grep -q '^startup' "$t/list1" || bad "list names no scenario: $(head -3 "$t/list1")"
"$pp" list --json | grep -q '"name"' || bad "list --json"
"$pp" run nosuch-scenario -o "$t/x.db" >"$t/out" 2>&1; rc=$?
[ "$rc" = 2 ] || bad "run of an unknown scenario: rc=$rc (want 2): $(cat "$t/out")"
grep -q "^phaseprof: " "$t/out" || bad "run's error is not phaseprof's: $(cat "$t/out")"
"$pp" help run | grep -q "usage: phaseprof run" || bad "help run"
"$pp" run --help | grep -q "usage: phaseprof run" || bad "run --help"
"$pp" help | grep -q "^  run .*built-in scenarios" || bad "help lists run with its summary"
"$pp" help | grep -q "^  list .*scenarios" || bad "help lists list with its summary"
# a scenario end to end, then its graph drawn (Graphviz by dlopen)
"$pp" run growing-graph --size smoke -o "$t/g.db" >"$t/out" 2>&1 || bad "run growing-graph: $(tail -5 "$t/out")"
"$pp" export --format svg "$t/g.db" -o "$t/g.svg" 2>"$t/err" || bad "export svg: $(cat "$t/err")"
grep -q '<svg' "$t/g.svg" 2>/dev/null || bad "export svg wrote no SVG"
"$pp" export --format dot "$t/g.db" | grep -q digraph || bad "export dot"
# without Graphviz: one line saying so (where a private mount can hide it)
gvc=$(ldconfig -p | awk '/libgvc\.so\.6 /{print $NF; exit}')
if [ -n "$gvc" ] && unshare -m true 2>/dev/null; then
	unshare -m sh -c 'mount --bind /dev/null "$(readlink -f "$1")" && exec "$2" export --format svg "$3" -o "$4"' \
		sh "$gvc" "$pp" "$t/g.db" "$t/h.svg" >"$t/out" 2>&1; rc=$?
	[ "$rc" = 1 ] && grep -q "^phaseprof: .*Graphviz is not installed" "$t/out" ||
		bad "export svg without Graphviz: rc=$rc $(cat "$t/out")"
else
	echo "skip: cannot hide libgvc here"
fi
[ $fail = 0 ] && echo "ok: light launcher"
exit $fail
