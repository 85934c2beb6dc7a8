#!/bin/bash
# Symbolizing (issue 26): `rtgrind symbolize` (in-process: the addr2line crate, gimli) against
# binutils' `addr2line -f -C` as one subprocess, on 10,000 addresses of glibc's text (its DWARF
# in libc6-dbg's file under /usr/lib/debug/.build-id/) and of a large program built with
# debug info (rtgrind's own release binary: Rust, line tables and inlining), and on 20
# addresses (what one report asks). Medians of 5 runs each, from one run of this script; the
# two symbolizers' outputs are compared too (how many addresses got the same `file:line
# (function)`; they differ where glibc's code is in a file another includes, which binutils
# 2.40 says at the including file, and where a function has aliases).
# Needs rtgrind built, binutils, python3, libc6-dbg (and gcc, with RTGRIND_BEFORE).
# Usage: [RTGRIND_BEFORE=/path/to/older/rtgrind] bash benches/symbolize.sh
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
rt=${RTGRIND:-$root/target/release/rtgrind}
work=$(mktemp -d "${TMPDIR:-/tmp}/rtgrind-symbolize-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ -x "$rt" ] || (cd "$root" && cargo build --release -q)
libc=$(ldd /bin/true | awk '/libc.so/ {print $3}')
cp "$rt" "$work/big"

# N addresses spread over the .text section of $1 (a fixed seed: the same every run).
addresses() {
    python3 - "$1" "$2" << 'PY'
import random, subprocess, sys
path, n = sys.argv[1], int(sys.argv[2])
out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
for l in out.splitlines():
    f = l.replace("[ ", "[").split()
    if len(f) > 5 and f[1] == ".text":
        start, size = int(f[3], 16), int(f[5], 16)
rng = random.Random(26)
for _ in range(n):
    print(hex(start + rng.randrange(size)))
PY
}

# Median wall time (s) of 5 runs of the command.
median() {
    for _ in 1 2 3 4 5; do
        s=$(date +%s.%N)
        "$@" > /dev/null 2>&1
        echo "$(date +%s.%N) - $s" | bc
    done | sort -n | sed -n 3p
}

echo "| module | addresses | addr2line (binutils) | rtgrind symbolize | ratio | same file:line |"
echo "|---|---:|---:|---:|---:|---:|"
for m in libc big; do
    module=$([ "$m" = libc ] && echo "$libc" || echo "$work/big")
    for n in 10000 20; do
        addresses "$module" "$n" > "$work/addrs"
        a=$(median xargs -a "$work/addrs" addr2line -f -C -e "$module")
        r=$(median sh -c "\"$rt\" symbolize -e \"$module\" < \"$work/addrs\"")
        # (binutils prints function, then place: made `file:line (function)` to compare.)
        xargs -a "$work/addrs" addr2line -f -C -e "$module" | paste - - |
            awk -F'\t' '{ sub(/ \(discriminator.*/, "", $2); n = split($2, p, "/"); if (index(p[n], "??") == 1) print "??"; else print p[n] " (" $1 ")" }' > "$work/binutils.out"
        "$rt" symbolize -e "$module" < "$work/addrs" | sed 's/, inlined into .*//' > "$work/rtgrind.out"
        same=$(paste "$work/binutils.out" "$work/rtgrind.out" | awk -F'\t' '$1 == $2' | wc -l)
        name=$([ "$m" = libc ] && echo "glibc ($(basename "$libc"))" || echo "rtgrind ($(du -h "$work/big" | cut -f1))")
        echo "| $name | $n | ${a} s | ${r} s | $(python3 -c "print(f'{$r / $a:.2f}')") | $same of $n |"
    done
done

# What the reports' call stacks cost a whole search: `--tool=suppress` on shipped bugs whose
# stacks go through glibc (each run symbolizes its failure's stack and the stacks of the points
# it reached), against an rtgrind without stacks given as RTGRIND_BEFORE (a build of an older
# commit; the comparison is left out without it).
if [ -n "${RTGRIND_BEFORE:-}" ]; then
    echo
    echo "| search (--tool=suppress) | before (no stacks) | with stacks | ratio |"
    echo "|---|---:|---:|---:|"
    # (program, its argument, its standard input)
    for bug in "frame_smash|-2147483648|" "copy_paste||1 2 3 100000000" "double_free||"; do
        IFS='|' read -r prog arg input <<< "$bug"
        gcc -g -O0 -fno-stack-protector -w -o "$work/$prog" "$root/guest-programs/bugs/$prog.c"
        b=$(median sh -c "echo '$input' | \"$RTGRIND_BEFORE\" --tool=suppress \"$work/$prog\" $arg")
        a=$(median sh -c "echo '$input' | \"$rt\" --tool=suppress \"$work/$prog\" $arg")
        echo "| $prog | ${b} s | ${a} s | $(python3 -c "print(f'{$a / $b:.2f}')") |"
    done
fi
