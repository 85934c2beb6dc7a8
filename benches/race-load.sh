#!/bin/bash
# The race tool at full load (issue 30): the threaded bench kernel and `sort --parallel=2 -S 10M`
# of 200,000 shuffled lines, under native, `--tool=none`, `--tool=race --harm=no` (this build,
# and the build at $OLD if given, interleaved with it), helgrind and DRD. RUNS rounds (default
# 5), each running every column once in turn (so that load changes hit all columns alike); the
# median wall time per cell, and the race columns' tool call-outs from `--stats`.
# Usage: [OLD=path/to/old/rtgrind] bash benches/race-load.sh [RUNS]
set -u
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/timing.sh
. "$root/benches/timing.sh"
bench_setup race-load
need valgrind valgrind
gcc -O2 -pthread -o "$work/threads" "$root/guest-programs/bench/threads.c"
seq 1 200000 | shuf --random-source=<(yes) > "$work/lines"


columns=(native none race)
[ -n "${OLD:-}" ] && columns+=(race-old)
columns+=(helgrind drd)
command_of() { # column, program...
    local c=$1
    shift
    case $c in
        native) echo "$@" ;;
        none) echo "$rt -q --tool=none $*" ;;
        race) echo "$rt -q --tool=race --harm=no $*" ;;
        race-old) echo "$OLD -q --tool=race --harm=no $*" ;;
        helgrind) echo "valgrind -q --tool=helgrind $*" ;;
        drd) echo "valgrind -q --tool=drd $*" ;;
    esac
}
row() { # name, program...
    local name=$1
    shift
    for c in "${columns[@]}"; do : > "$work/t.$c"; done
    for _ in $(seq "$runs"); do
        for c in "${columns[@]}"; do
            # shellcheck disable=SC2046
            secs $(command_of "$c" "$@") >> "$work/t.$c"
        done
    done
    local n line="| $name"
    n=$(median_of < "$work/t.native")
    for c in "${columns[@]}"; do
        local t
        t=$(median_of < "$work/t.$c")
        line+=" | $(awk -v t="$t" -v n="$n" 'BEGIN { printf "%.2f s (%.1fx)", t, t / n }')"
    done
    echo "$line |"
    for c in race race-old; do
        [ "$c" = race-old ] && [ -z "${OLD:-}" ] && continue
        local bin=$rt
        [ "$c" = race-old ] && bin=$OLD
        echo "  $c call-outs: $("$bin" -q --stats --tool=race --harm=no "$@" 2>&1 >/dev/null | grep -E 'stats: +[0-9]+ race' | sed -E 's/.*stats: +//' | paste -sd, -)"
    done
}
echo "load: $(uptime | sed 's/.*load average/load average/')"
header="| program |"
for c in "${columns[@]}"; do header+=" $c |"; done
echo "$header"
echo "|---|$(printf -- '---:|%.0s' "${columns[@]}")"
row "threaded kernel (threads.c -O2)" "$work/threads"
row "sort --parallel=2 -S 10M (200,000 lines)" sort --parallel=2 -S 10M "$work/lines"
echo "load: $(uptime | sed 's/.*load average/load average/')"
