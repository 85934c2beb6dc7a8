#!/bin/bash
# Variable re-ordering (issue 24). Part 1: for each program of guest-programs/reorder/ (-O0; the
# one without a frame pointer -Og), the layouts `--tool=reorder` tried to expose its failure (or
# to say none can), the runs and the wall time of the search, and the same for the complete technique (`--tool=suppress`), against
# the dissertation's Table 5.4 (5 layouts for ncompress to 135 for xv). Part 2: the cost of a
# run under a layout: kernels of guest-programs/bench built -O0 (every local in its frame, found
# from rbp) and -Og (frames found from rsp) run natively, under `--tool=none`, and under
# `--layout=random:1`.
# Medians of RUNS (default 3) wall times, ratios from the same run.
# Usage: bash benches/reorder.sh [RUNS]
set -u
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
rt=$root/target/release/rtgrind
work=$(mktemp -d /tmp/rtgrind-reorder.XXXXXX)
trap 'rm -rf "$work"' EXIT
[ -x "$rt" ] || (cd "$root" && cargo build --release -q)

# shellcheck source=benches/timing.sh
. "$root/benches/timing.sh"

declare -A input=([stack_two_ints]=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa [stack_no_frame_pointer]=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa [global_into_unused]=aaaaaaaaaaaaaaaaaaaaaaaaaaaa [global_same_value]="x y" [heap_neighbour]=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa)
# (Built -O0 unless said here.)
declare -A opt=([stack_no_frame_pointer]=-Og)
echo "| program | reorder: result | layouts tried / made | runs | time | suppress: root cause | suppress: layout runs | time |"
echo "|---|---|---:|---:|---:|---|---:|---:|"
for name in stack_two_ints stack_no_frame_pointer global_into_unused global_same_value heap_neighbour; do
    gcc "${opt[$name]:--O0}" -g -fno-stack-protector -o "$work/$name" "$root/guest-programs/reorder/$name.c"
    cd "$work" || exit 1
    rm -f rtgrind-layout*.json
    s=$(date +%s.%N)
    # shellcheck disable=SC2086
    out=$("$rt" --tool=reorder "./$name" ${input[$name]} 2>&1 >/dev/null)
    t1=$(printf '%.2f' "$(echo "$(date +%s.%N) - $s" | bc)")
    if echo "$out" | grep -q "exposed it"; then
        result=found
        tried=$(echo "$out" | sed -n 's/.*reorder: \([0-9]*\) layouts\? tried of \([0-9]*\) made.*/\1 \/ \2/p')
        nruns=$(echo "$out" | sed -n 's/.*; \([0-9]*\) runs, .*/\1/p')
    else
        result="none exposed"
        tried=$(echo "$out" | sed -n 's/.*failure: \([0-9]*\) layouts\? tried.*/\1/p')
        nruns=$((tried + 1))
    fi
    rm -f rtgrind-layout*.json
    s=$(date +%s.%N)
    # shellcheck disable=SC2086
    sout=$("$rt" --tool=suppress "./$name" ${input[$name]} 2>&1 >/dev/null)
    t2=$(printf '%.2f' "$(echo "$(date +%s.%N) - $s" | bc)")
    root_cause=$(echo "$sout" | sed -n 's/.*first point of memory corruption: \([^ ]*\).*/\1/p' | head -1)
    [ -z "$root_cause" ] && root_cause="(no failure)"
    # (Every layout search's runs: the complete technique searches again after a layout found.)
    lruns=$(echo "$sout" | grep -o 'tried in [0-9]* runs\?' | grep -o '[0-9]\+' | paste -sd+ | bc)
    echo "| $name | $result | $tried | $nruns | ${t1} s | $root_cause | ${lruns:-0} | ${t2} s |"
done

echo
echo "| kernel | native | --tool=none | --layout=random:1 |"
echo "|---|---:|---:|---:|"
for o in -O0 -Og; do
    for k in sort hashtable strings recursion; do
        gcc "$o" -g -o "$work/$k" "$root/guest-programs/bench/$k.c" 2>/dev/null || continue
        p=$work/$k
        native=$(median "$p")
        none=$(median "$rt" -q "$p")
        laid=$(median "$rt" -q --layout=random:1 "$p")
        echo "| $k ($o) | ${native} s | ${none} s ($(ratio "$none" "$native")x) | ${laid} s ($(ratio "$laid" "$native")x; $(ratio "$laid" "$none")x none) |"
    done
done
