#!/bin/bash
# Tools at full load (issue 30): workloads whose shadow state is live, in one same-run table.
#
# Taint: `gzip -6 -c` of a 10 MiB generated file (guest-programs/bench/gen_data.c), `sha256sum`
# of it, `python3 -c 'import json,sys; json.load(sys.stdin)'` of a generated 4 MB JSON, and the
# compress kernel (guest-programs/bench/compress.c, -O2) reading the first 4 MiB of the same
# file from stdin (`compress -`), each with stdin as input: native, `--tool=none`, taint with
# nothing tainted (`--taint-input=` a file the program never opens), taint with stdin tainted,
# the same with `--track-origins=yes`, `valgrind --tool=memcheck` and memcheck
# `--track-origins=yes`.
#
# Suppression: guest-programs/load/corrupt_copy.c (-O2 -g), whose overflowing name makes the
# length of a 10-million-iteration ring copy corrupt, beside its clean variant (a short name):
# native, `--tool=none`, the whole search (`--tool=suppress`), the search's trace run (plan
# `trace`) and a suppression run. The corrupt variant's suppression run is the search's own
# last one (its plan, taken from a search run once with RTGRIND_KEEP_RUNS=1: the loop then goes
# round with the length corrupt); the clean variant's is the engine bench's "run suppressing from
# main" (guest-programs/bench/plan-main: guards compiled in, nothing corrupt in the loop). The
# single runs are made as the search makes them (`--repeatable=yes`, the hidden
# `--suppress-plan`/`--suppress-out`).
#
# Median of RUNS (default 3) wall times per cell, each with its ratio to native, from the same
# run of the script; the load average at the start and end is printed. PART: `taint` or
# `suppress` for one table only (both by default).
# Usage: bash benches/live-load.sh [RUNS] [PART]
set -u
runs=${1:-3}
part=${2:-all}
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/timing.sh
. "$root/benches/timing.sh"
bench_setup live-load
need valgrind valgrind
py=/usr/bin/python3

gcc -O2 -o "$work/gen_data" "$root/guest-programs/bench/gen_data.c"
gcc -O2 -o "$work/compress" "$root/guest-programs/bench/compress.c"
gcc -O2 -g -fno-stack-protector -o "$work/corrupt_copy" "$root/guest-programs/load/corrupt_copy.c"
"$work/gen_data" "$work/in10" 10
: > "$work/unread"
"$py" -c '
import json, random
random.seed(30)
words = ["alpha", "beta", "gamma", "delta", "shadow", "taint", "origin", "block"]
recs = [{"id": i, "name": " ".join(random.choice(words) for _ in range(4)), "value": random.random() * 1e6,
         "tags": [random.choice(words) for _ in range(3)], "ok": i % 3 == 0, "none": None} for i in range(28000)]
json.dump({"records": recs}, open("'"$work"'/in.json", "w"))'

# from FILE COMMAND...: COMMAND with FILE as its standard input.
from() {
    local f=$1
    shift
    "$@" < "$f"
}
cell() { echo "$1 s ($(ratio "$1" "$2")x)"; }

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $runs runs per cell"
if [ "$part" != suppress ]; then
    echo
    echo "| workload (stdin) | native | --tool=none | taint, nothing tainted | taint, stdin tainted | taint + origins, stdin tainted | memcheck | memcheck --track-origins=yes |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    row() { # label, input, command...
        local label=$1 input=$2
        shift 2
        local n none clean taint orig mc mco
        n=$(median from "$input" "$@")
        none=$(median from "$input" "$rt" -q --tool=none "$@")
        clean=$(median from "$input" "$rt" -q --tool=taint --taint-input="$work/unread" --log-file=/dev/null "$@")
        taint=$(median from "$input" "$rt" -q --tool=taint --taint-input=stdin --log-file=/dev/null "$@")
        orig=$(median from "$input" "$rt" -q --tool=taint --taint-input=stdin --track-origins=yes --log-file=/dev/null "$@")
        mc=$(median from "$input" valgrind -q --tool=memcheck "$@")
        mco=$(median from "$input" valgrind -q --tool=memcheck --track-origins=yes "$@")
        echo "| $label | $n s | $(cell "$none" "$n") | $(cell "$clean" "$n") | $(cell "$taint" "$n") | $(cell "$orig" "$n") | $(cell "$mc" "$n") | $(cell "$mco" "$n") |"
    }
    row "gzip -6 -c (10 MiB)" "$work/in10" gzip -6 -c
    row "sha256sum (10 MiB)" "$work/in10" sha256sum
    row "python3 json.load ($((($(stat -c %s "$work/in.json") + 500000) / 1000000)) MB)" "$work/in.json" "$py" -c 'import json,sys; json.load(sys.stdin)'
    row "compress kernel (4 MiB of it)" "$work/in10" "$work/compress" -
fi
[ "$part" = taint ] && { echo; echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"; exit 0; }

# The suppression workload.
long=AAAAAAAAAAAAAAAA$'\x01\x01\x01\x01'
printf 'trace\n' > "$work/plan-trace"
search_dir=$(cd "$work" && RTGRIND_KEEP_RUNS=1 "$rt" --tool=suppress "$work/corrupt_copy" "$long" 2>&1 >/dev/null |
    sed -n "s/^rtgrind: the runs' files are kept in //p")
# The search's last run that suppressed without redzones: its plan has points and no `redzones`.
live_plan=$(grep -L -e redzones -e '^trace' "$search_dir"/plan-* 2>/dev/null | xargs -r grep -l '^point' | sort -t- -k2 -n | tail -1)
cp "$live_plan" "$work/plan-live"
rm -rf "$search_dir"
one() { # plan, program, argument
    "$rt" -q --tool=suppress --suppress-plan="$1" --suppress-out="$work/outcome" --repeatable=yes "$2" "$3"
}
search() { (cd "$work" && "$rt" -q --tool=suppress "$@"); }
echo
echo "| corrupt_copy (10,000,000 iterations) | native | --tool=none | whole search | trace run | suppression run |"
echo "|---|---:|---:|---:|---:|---:|"
srow() { # label, argument, suppression run's plan
    local n none s t r
    n=$(median "$work/corrupt_copy" "$2")
    none=$(median "$rt" -q "$work/corrupt_copy" "$2")
    s=$(median search "$work/corrupt_copy" "$2")
    t=$(median one "$work/plan-trace" "$work/corrupt_copy" "$2")
    r=$(median one "$3" "$work/corrupt_copy" "$2")
    echo "| $1 | $n s | $(cell "$none" "$n") | $(cell "$s" "$n") | $(cell "$t" "$n") | $(cell "$r" "$n") |"
}
srow "clean loop (\`ring\`; run suppressing from main)" ring "$root/guest-programs/bench/plan-main"
srow "corrupt length (a 20-byte name)" "$long" "$work/plan-live"
echo
echo "The corrupt length's suppression run: plan \`$(tr '\t\n' ' ;' < "$work/plan-live")\`."
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
