#!/bin/bash
# The cost of one call-out from the code cache (issue 30): guest-programs/load/blocks.c (-O2, a
# loop whose body is one basic block, N iterations) run natively, under `--tool=count`, and
# under `--tool=count` with the hidden `--callout-bench=full` (`rtg_callout` to an empty
# function at every basic block's start: all general registers, flags, `fs`, MXCSR and the
# guest's ymm0-15) and `--callout-bench=light` (`rtg_callout_light`: the caller-saved
# general registers, flags and xmm0-15). The call-outs made are counted once with `--stats`;
# the timed runs do not count. Nanoseconds per call-out = (time - count's time) / call-outs.
# Median of RUNS (default 3) wall times per cell, from the same run of the script.
# Usage: bash benches/callout.sh [RUNS] [N]
set -u
runs=${1:-3}
n=${2:-20000000}
root=$(cd "$(dirname "$0")/.." && pwd)
rt=$root/target/release/rtgrind
work=$(mktemp -d /tmp/rtgrind-callout.XXXXXX)
trap 'rm -rf "$work"' EXIT
[ -x "$rt" ] || (cd "$root" && cargo build --release -q)

# shellcheck source=benches/timing.sh
. "$root/benches/timing.sh"

gcc -O2 -o "$work/blocks" "$root/guest-programs/load/blocks.c"
calls=$("$rt" -q --stats --tool=count --callout-bench=full --log-file="$work/log" "$work/blocks" "$n" >/dev/null &&
    sed -n 's/.*stats: \([0-9]*\) tool call-outs.*/\1/p' "$work/log")
native=$(median "$work/blocks" "$n")
count=$(median "$rt" -q --tool=count --log-file=/dev/null "$work/blocks" "$n")
full=$(median "$rt" -q --tool=count --callout-bench=full --log-file=/dev/null "$work/blocks" "$n")
light=$(median "$rt" -q --tool=count --callout-bench=light --log-file=/dev/null "$work/blocks" "$n")
ns() { printf '%.1f' "$(echo "scale=6; ($1 - $count) * 1000000000 / $calls" | bc)"; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $runs runs per cell; $calls call-outs a run"
echo
echo "| blocks ($n iterations) | native | --tool=count | + full call-out each block | + light call-out each block |"
echo "|---|---:|---:|---:|---:|"
echo "| time | $native s | $count s | $full s | $light s |"
echo "| per call-out | | | $(ns "$full") ns | $(ns "$light") ns |"
