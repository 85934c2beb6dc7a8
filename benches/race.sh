#!/bin/bash
# Whole-process benchmark of `rtgrind --tool=race` against Valgrind's helgrind and DRD and
# ThreadSanitizer (issue 23): native, detection alone (`--harm=no`), the whole search (detection,
# then a reference run and one reversed run per race), helgrind, DRD, and the program built with
# -fsanitize=thread where it can be rebuilt (the threaded kernel). Median of RUNS (default 3)
# wall times per column, each with its ratio to native, from the same run of the script.
#
# Programs: the threaded bench kernel (guest-programs/bench/threads.c, -O2), `sort --parallel=2
# -S 10M` of 200,000 shuffled lines (coreutils), `xz -T2 -c -3` of 5.4 MB of base64 (xz-utils,
# installed with apt if missing). Usage: bash benches/race.sh [RUNS]
set -u
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/timing.sh
. "$root/benches/timing.sh"
bench_setup race-bench
need xz xz-utils
need valgrind valgrind

gcc -O2 -pthread -o "$work/threads" "$root/guest-programs/bench/threads.c"
gcc -O2 -pthread -fsanitize=thread -o "$work/threads-tsan" "$root/guest-programs/bench/threads.c" 2>/dev/null || true
seq 1 200000 | shuf --random-source=<(yes) > "$work/lines"
head -c 4000000 /dev/urandom | base64 > "$work/xzin"

cell() { # time, native
    awk -v t="$1" -v n="$2" 'BEGIN { if (t == "") print "-"; else printf "%.2f s (%.1fx)", t, t / n }'
}

echo "| program | native | race --harm=no | race (with harm tests) | helgrind | DRD | TSan |"
echo "|---|---:|---:|---:|---:|---:|---:|"
row() { # name, tsan binary or "", command...
    local name=$1 tsan=$2
    shift 2
    local n r h hg drd ts=""
    n=$(median "$@")
    r=$(median "$rt" -q --tool=race --harm=no "$@")
    h=$(median "$rt" -q --tool=race "$@")
    hg=$(median valgrind -q --tool=helgrind "$@")
    drd=$(median valgrind -q --tool=drd "$@")
    if [ -n "$tsan" ] && [ -x "$tsan" ]; then
        ts=$(setarch -R true 2>/dev/null && median setarch -R "$tsan")
    fi
    echo "| $name | $n s | $(cell "$r" "$n") | $(cell "$h" "$n") | $(cell "$hg" "$n") | $(cell "$drd" "$n") | $(cell "$ts" "$n") |"
}
row "threaded kernel (threads.c -O2)" "$work/threads-tsan" "$work/threads"
row "sort --parallel=2 -S 10M (200,000 lines)" "" sort --parallel=2 -S 10M "$work/lines"
row "xz -T2 -c -3 (5.4 MB)" "" xz -T2 -c -3 "$work/xzin"
