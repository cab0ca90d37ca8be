#!/usr/bin/env bash
# The agent links a copy of the recorder whose libc calls are renamed to
# ppa_libc_* (record/agent/CMakeLists.txt, ppa_bypass): inside the agent
# they must not reach its own hooks (the recorder's writes would count as
# the program's I/O, its allocations as the program's, or recurse into the
# hook that called it). The list is kept by hand; this checks it. A function
# the agent exports (a hook: malloc, write, syscall…) that the renamed copy
# still calls by its plain name, and does not define itself, binds to the
# hook (-Bsymbolic): each one is a name missing from ppa_bypass.
# usage: bypass_names.sh AGENT_SO RENAMED_RECORDER_ARCHIVE
set -u
agent=$1 archive=$2
NM=${NM:-nm}
for f in "$agent" "$archive"; do
	[ -r "$f" ] || { echo "FAIL: cannot read $f"; exit 1; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/ppbypass-XXXXXX")
trap 'rm -rf "$dir"' EXIT

# functions the agent defines for the dynamic linker: its hooks and API
"$NM" -D --defined-only "$agent" | awk '$2 ~ /^[TtWwi]$/ {sub(/@.*/, "", $3); print $3}' |
	sort -u >"$dir/exported"
# what the recorder copy calls from outside itself
"$NM" -u "$archive" | awk 'NF >= 2 {sub(/@.*/, "", $2); print $2}' | sort -u >"$dir/undef"
"$NM" --defined-only "$archive" 2>/dev/null | awk 'NF >= 3 {print $3}' | sort -u >"$dir/own"
comm -23 "$dir/undef" "$dir/own" >"$dir/external"

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# the check is only as good as its inputs: hooks found, renaming applied
for h in malloc write open; do
	grep -qx "$h" "$dir/exported" || fail "the agent does not export $h: wrong file, or nm read nothing"
done
grep -qx ppa_libc_malloc "$dir/external" ||
	fail "the archive calls no ppa_libc_malloc: is it the renamed copy (libppa_recorder.a)?"

leaks=$(comm -12 "$dir/exported" "$dir/external")
for s in $leaks; do
	fail "the recorder copy calls $s unrenamed, and the agent hooks $s: add it to ppa_bypass" \
		"(record/agent/CMakeLists.txt) with a ppa_libc_$s"
done
if [ "$fails" -ne 0 ]; then
	exit 1
fi
echo "ok: $(wc -l <"$dir/exported") agent exports, $(wc -l <"$dir/external") external calls of the" \
	"recorder copy, none of them a hook"
