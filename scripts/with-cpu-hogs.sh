#!/usr/bin/env bash
# Runs CMD with N busy loops beside it (one per core: the machine as loaded
# as a CI runner shared with other jobs), and stops them when CMD ends,
# fails, or this script is interrupted; a hog whose script was killed
# (SIGKILL: no trap runs) ends itself within a fraction of a second.
# Exits with CMD's status.
# usage: with-cpu-hogs.sh N -- CMD [ARG...]
set -u
n=${1:?usage: with-cpu-hogs.sh N -- CMD [ARG...]}
shift
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { echo "usage: with-cpu-hogs.sh N -- CMD [ARG...]" >&2; exit 2; }
me=$$
hogs=()
stop_hogs() {
  [ ${#hogs[@]} -gt 0 ] || return 0
  kill "${hogs[@]}" 2>/dev/null
  wait "${hogs[@]}" 2>/dev/null
  hogs=()
}
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for ((i = 0; i < n; i++)); do
  # pure user-space spinning; every ~100,000 rounds it checks that this
  # script is still there
  sh -c 'while :; do i=0; while [ $i -lt 100000 ]; do i=$((i + 1)); done; kill -0 '"$me"' 2>/dev/null || exit 0; done' &
  hogs+=($!)
done
echo "with-cpu-hogs: $n busy loop(s) beside: $*" >&2
"$@"
rc=$?
stop_hogs
exit $rc
