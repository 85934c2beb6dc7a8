#!/bin/bash
# Short runs (issue 29): what translation costs a run that is over in milliseconds natively.
# Medians of RUNS runs (default 5) of each program natively, under every rtgrind tool that
# has a run of its own (none, count, taint, one untraced and one traced suppression run as a
# search makes them, race) and under Valgrind's none, memcheck and lackey, all from this one
# run of the script; their ratios to native and to rtgrind's none; then, from `--stats`, code
# bytes per guest instruction and (python3 -c pass) translation time by phase, per tool.
# The runs are interleaved (each round runs every cell once). With RTGRIND_BEFORE=PATH (an
# rtgrind built at an earlier commit), the timed tables get a "TOOL (before)" column beside
# each rtgrind tool's, from the same rounds. Builds rtgrind (release) first.
#   [RTGRIND_BEFORE=PATH] bash benches/short-runs.sh [RUNS]
set -eu
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/benches/timing.sh"
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
rt=${CARGO_TARGET_DIR:-$root/target}/release/rtgrind
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Small crashing guest bugs the suppression tests use, built as benches/suppress-bugs.sh does.
for b in null_return heap_overflow use_after_free; do
    gcc -g -O0 -fno-stack-protector -w -pthread -o "$dir/$b" "$root/guest-programs/bugs/$b.c"
done
A() { printf "%${1}s" | tr ' ' A; }
# A suppression run's plans: one that suppresses nothing and does not trace (a search's first
# run), and the same traced (the run a search analyses the failure from).
: > "$dir/plain"
printf 'trace\n' > "$dir/traced"

python=/usr/bin/python3
labels=("/bin/true" "python3 -c pass" "perl -e 1" "gcc --version" "null_return three" "heap_overflow A*42" "use_after_free x")
cmd() {
    case $1 in
        0) echo /bin/true ;;
        1) echo "$python -c pass" ;;
        2) echo "perl -e 1" ;;
        3) echo "gcc --version" ;;
        4) echo "$dir/null_return three" ;;
        5) echo "$dir/heap_overflow $(A 42)" ;;
        6) echo "$dir/use_after_free x" ;;
    esac
}
runners=(native none count taint "suppress untraced" "suppress traced" race "vg none" memcheck lackey)
if [ -n "${RTGRIND_BEFORE:-}" ]; then
    runners=(native none "none (before)" count "count (before)" taint "taint (before)" "suppress untraced" "suppress untraced (before)" "suppress traced" "suppress traced (before)" race "race (before)" "vg none" memcheck lackey)
fi
# Medians to the millisecond (some of these runs take 10 ms).
median_decimals=3

# run RUNNER PROGRAM...: one run of PROGRAM under RUNNER.
run() {
    local r=$1 rt=$rt
    shift
    if [ "${r% (before)}" != "$r" ]; then
        r=${r% (before)}
        rt=$RTGRIND_BEFORE
    fi
    case $r in
        native) "$@" ;;
        none | count | taint) "$rt" -q --tool="$r" "$@" ;;
        race) "$rt" -q --tool=race --harm=no "$@" ;;
        "suppress untraced") "$rt" -q --tool=suppress --suppress-plan="$dir/plain" --suppress-out="$dir/out" "$@" ;;
        "suppress traced") "$rt" -q --tool=suppress --suppress-plan="$dir/traced" --suppress-out="$dir/out" "$@" ;;
        "vg none") valgrind -q --tool=none "$@" ;;
        memcheck) valgrind -q --tool=memcheck "$@" ;;
        lackey) valgrind -q --tool=lackey "$@" ;;
    esac
}
stats() {
    local r=$1
    shift
    case $r in
        none | count | taint) "$rt" --stats --tool="$r" "$@" ;;
        race) "$rt" --stats --tool=race --harm=no "$@" ;;
        "suppress untraced") "$rt" --stats --tool=suppress --suppress-plan="$dir/plain" --suppress-out="$dir/out" "$@" ;;
        "suppress traced") "$rt" --stats --tool=suppress --suppress-plan="$dir/traced" --suppress-out="$dir/out" "$@" ;;
    esac
}

echo "load: $(uptime | sed 's/.*load average: //')"
# Interleaved: each round times every cell once; a cell's figure is the median of its rounds.
declare -A t samples
for _ in $(seq "$runs"); do
    for i in "${!labels[@]}"; do
        for r in "${runners[@]}"; do
            s=$(date +%s.%N)
            # shellcheck disable=SC2046
            run "$r" $(cmd "$i") > /dev/null 2>&1 || :
            e=$(date +%s.%N)
            samples[$i,$r]+="$(echo "$e - $s" | bc) "
        done
    done
done
for i in "${!labels[@]}"; do
    for r in "${runners[@]}"; do
        # shellcheck disable=SC2086
        t[$i,$r]=$(printf '%s\n' ${samples[$i,$r]} | median_of)
    done
done
echo "load: $(uptime | sed 's/.*load average: //')"

# header FIRST COLUMN...: a table's header, its first column named FIRST.
header() {
    printf '| %s |' "$1"
    shift
    for r in "$@"; do printf ' %s |' "$r"; done
    printf '\n|---|'
    for _ in "$@"; do printf -- '---:|'; done
    echo
}
echo
echo "Median wall time (s) of $runs runs:"
echo
header program "${runners[@]}"
for i in "${!labels[@]}"; do
    printf '| %s |' "${labels[$i]}"
    for r in "${runners[@]}"; do printf ' %s |' "${t[$i,$r]}"; done
    echo
done
for base in native none; do
    echo
    echo "Ratio to $base:"
    echo
    header program "${runners[@]}"
    for i in "${!labels[@]}"; do
        printf '| %s |' "${labels[$i]}"
        b=${t[$i,$base]}
        for r in "${runners[@]}"; do
            if [ "$(echo "$b > 0" | bc)" = 1 ]; then printf ' %.1f |' "$(echo "scale=3; ${t[$i,$r]} / $b" | bc)"; else printf ' - |'; fi
        done
        echo
    done
done

tools=(none count taint "suppress untraced" "suppress traced" race)
echo
echo "Code bytes per guest instruction (--stats, one run each):"
echo
header program "${tools[@]}"
for i in "${!labels[@]}"; do
    printf '| %s |' "${labels[$i]}"
    for r in "${tools[@]}"; do
        # shellcheck disable=SC2046
        b=$(stats "$r" $(cmd "$i") 2>&1 > /dev/null | sed -n 's/.*; \([0-9.]*\) bytes of code per guest instruction.*/\1/p' | tail -1)
        printf ' %s |' "${b:--}"
    done
    echo
done

echo
echo "python3 -c pass, translation time by phase (--stats, median-total run of $runs):"
echo
for r in "${tools[@]}"; do
    for k in $(seq "$runs"); do
        # shellcheck disable=SC2046
        stats "$r" $(cmd 1) 2>&1 > /dev/null | grep 'stats:' | sed 's/^==[0-9]*== //' > "$dir/stats.$k"
        sed -n 's/^stats: translation \([0-9.]*\) ms.*/\1 '"$k"'/p' "$dir/stats.$k"
    done | sort -n | awk '{ a[NR] = $2 } END { print a[int((NR + 1) / 2)] }' > "$dir/med"
    cp "$dir/stats.$(cat "$dir/med")" "$dir/phases.$r" 2> /dev/null || : > "$dir/phases.$r"
done
header phase "${tools[@]}"
phases=("fetch" "decode" "flag liveness" "flag look-ahead" "register analyses" "tool hooks" "encode (iced)" "emit and bookkeeping" "commit" "(timing itself)")
for p in "${phases[@]}"; do
    printf '| %s |' "$p"
    for r in "${tools[@]}"; do
        v=$(grep -F "stats:   $p " "$dir/phases.$r" | sed 's/.*  *\([0-9.]*\) ms  *\([0-9.]*\)%.*/\1 ms (\2%)/')
        printf ' %s |' "$v"
    done
    echo
done
row() {
    printf '| %s |' "$1"
    for r in "${tools[@]}"; do printf ' %s |' "$(sed -n "$2" "$dir/phases.$r" | head -1)"; done
    echo
}
row "translation total" 's/^stats: translation \([0-9.]*\) ms of the run.s \([0-9.]*\) ms.*/\1 of \2 ms/p'
row "per guest instruction" 's/.* \([0-9]*\) ns per guest instruction.*/\1 ns/p'
row "linking, page protection" 's/.*linking \([0-9.]*\) ms, write-protecting code pages \([0-9.]*\) ms.*/\1, \2 ms/p'
row "decodes per instruction (block, look-ahead, tool)" 's/.*decodes per translated instruction \([0-9.]*\) (block \([0-9.]*\), flag look-ahead \([0-9.]*\), tool \([0-9.]*\)).*/\1 (\2, \3, \4)/p'
row "body passes per block; two-version blocks" 's/.*; \([0-9.]*\) passes over each block.s body, \([0-9]*\) blocks with two versions.*/\1; \2/p'
row "code bytes per guest instruction" 's/.*; \([0-9.]*\) bytes of code per guest instruction.*/\1/p'
