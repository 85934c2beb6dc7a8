#!/bin/bash
# Cost of heap redzones (issue 24's allocator interposition) in a suppression run: the
# malloc-heavy kernel (guest-programs/correct/malloc_heavy.c, -O2: malloc/calloc/realloc/free of
# varied sizes, every block filled and verified) run natively, under `--tool=none`, as one
# suppression run without points (the search's untraced run), the same with heap redzones,
# under `--tool=none` with rtgrind's own allocator replacing the library's (a layout placing
# the heap: `heap_seed`), and under `valgrind --tool=memcheck` (which also replaces the
# allocator and keeps redzones).
# Median of RUNS (default 3) wall times per column, each with its ratio to native and to
# `--tool=none`, from the same run of the script. Usage: bash benches/redzones.sh [RUNS]
set -u
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
rt=$root/target/release/rtgrind
work=$(mktemp -d /tmp/rtgrind-redzones.XXXXXX)
trap 'rm -rf "$work"' EXIT
[ -x "$rt" ] || (cd "$root" && cargo build --release -q)
gcc -O2 -g -o "$work/malloc_heavy" "$root/guest-programs/correct/malloc_heavy.c"
: > "$work/plan-plain"
printf 'redzones\n' > "$work/plan-redzones"
printf '{"program":"%s","heap_seed":1}\n' "$work/malloc_heavy" > "$work/heap-layout.json"

# shellcheck source=benches/timing.sh
. "$root/benches/timing.sh"

p=$work/malloc_heavy
native=$(median "$p")
none=$(median "$rt" -q "$p")
plain=$(median "$rt" -q --tool=suppress --suppress-plan="$work/plan-plain" --suppress-out="$work/out" "$p")
zones=$(median "$rt" -q --tool=suppress --suppress-plan="$work/plan-redzones" --suppress-out="$work/out" "$p")
placed=$(median "$rt" -q --layout="$work/heap-layout.json" "$p")
memcheck=$(median valgrind -q --tool=memcheck "$p")
echo "| program | native | --tool=none | suppression run | with redzones | rtgrind's allocator | memcheck |"
echo "|---|---:|---:|---:|---:|---:|---:|"
echo "| malloc_heavy (-O2) | ${native} s | ${none} s ($(ratio "$none" "$native")x) | ${plain} s ($(ratio "$plain" "$native")x) | ${zones} s ($(ratio "$zones" "$native")x; $(ratio "$zones" "$none")x none) | ${placed} s ($(ratio "$placed" "$native")x; $(ratio "$placed" "$none")x none) | ${memcheck} s ($(ratio "$memcheck" "$native")x) |"
