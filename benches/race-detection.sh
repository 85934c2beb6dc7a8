#!/bin/bash
# Which races each detector reports on guest-programs/races/ (C and C++; issue 23's detection table):
# `rtgrind --tool=race --harm=no` (pairs of lines), helgrind and DRD (error contexts), and the
# program built with -fsanitize=thread (warnings; run with ASLR off, as TSan needs here). Each
# program is built -O1 -g (the flag-polling `unjoined_result` -O0: -O1 hoists its load out of
# the loop); programs that fail on purpose are run as they are. One table row per program.
# Usage: bash benches/race-detection.sh
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
rt=$root/target/release/rtgrind
work=$(mktemp -d /tmp/rtgrind-race-detection.XXXXXX)
trap 'rm -rf "$work"' EXIT
[ -x "$rt" ] || (cd "$root" && cargo build --release -q)

echo "| program | rtgrind (pairs of lines) | helgrind (contexts) | DRD (contexts) | TSan (warnings) |"
echo "|---|---:|---:|---:|---:|"
for src in "$root"/guest-programs/races/*.c "$root"/guest-programs/races/*.cpp; do
    name=$(basename "${src%.*}")
    cc=gcc
    [ "${src##*.}" = cpp ] && cc=g++
    case $name in libcounter | uses_library) continue ;; esac
    opt=-O1
    [ "$name" = unjoined_result ] && opt=-O0
    extra=""
    grep -q omp "$src" && extra=-fopenmp
    $cc -g $opt -pthread $extra -o "$work/$name" "$src" 2>/dev/null || continue
    $cc -g $opt -pthread $extra -fsanitize=thread -o "$work/$name-tsan" "$src" 2>/dev/null
    r=$(timeout 300 "$rt" --tool=race --harm=no "$work/$name" 2>&1 >/dev/null | grep -o 'race: [0-9]* data races' | grep -o '[0-9]*' | tail -1)
    contexts() { grep -o 'from [0-9]* contexts' | grep -o '[0-9]*' | tail -1; }
    h=$(timeout 300 valgrind --tool=helgrind "$work/$name" 2>&1 >/dev/null | contexts)
    d=$(timeout 300 valgrind --tool=drd "$work/$name" 2>&1 >/dev/null | contexts)
    t=-
    if [ -x "$work/$name-tsan" ]; then
        t=$(timeout 300 setarch -R "$work/$name-tsan" 2>&1 >/dev/null | grep -c 'WARNING: ThreadSanitizer: data race')
    fi
    echo "| $name | ${r:--} | ${h:--} | ${d:--} | $t |"
done
