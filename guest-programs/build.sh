#!/usr/bin/env bash
# Builds the guest programs into OUTDIR, following the `rtgrind-test:` directives in each file
# (see README.md):
#   correct/NAME.{c,cc,S} -> OUTDIR/NAME-VARIANT  (hello-pie, hello-static, asm_hello-nostdlib...)
#   bench/NAME.c          -> OUTDIR/NAME          (-O2, dynamic PIE); bench/*.py copied to OUTDIR
# With --check, every correct program is then run natively (twice) and checked: expected exit
# status or signal, identical output on both runs, identical output across its variants.
#
# usage: guest-programs/build.sh [--check] [-j N] OUTDIR
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
check=0
jobs="$(nproc 2>/dev/null || echo 2)"
while [[ $# -gt 0 ]]; do
    case "$1" in
    --check) check=1; shift ;;
    -j) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "build.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
if [[ $# -ne 1 ]]; then
    echo "usage: $0 [--check] [-j N] OUTDIR" >&2
    exit 2
fi
out="$1"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# directive_all FILE KEY: the values of every `rtgrind-test: KEY=VALUE` in the first 20 lines.
directive_all() {
    local re="^[[:space:]]*(//|#)[[:space:]]*rtgrind-test:[[:space:]]*$2=(.*)\$"
    head -n 20 "$1" | sed -n -E "s@$re@\2@p" | sed -E 's/[[:space:]]+$//'
}
# directive FILE KEY: the first value (cflags: all values joined, repeats accumulate).
directive() {
    if [[ "$2" == cflags ]]; then
        directive_all "$1" "$2" | paste -sd' ' -
    else
        directive_all "$1" "$2" | head -n 1
    fi
}

default_variants() {
    case "$1" in
    *.c) echo "pie,nopie,static,static-pie" ;;
    *.cc) echo "pie,static" ;;
    *.S) echo "nostdlib" ;;
    esac
}

variant_flags() {
    case "$1" in
    pie) echo "-O2 -g" ;;
    nopie) echo "-O2 -g -no-pie" ;;
    static) echo "-O2 -g -static" ;;
    static-pie) echo "-O2 -g -static-pie" ;;
    nostdlib) echo "-nostdlib -static -g" ;;
    *) return 1 ;;
    esac
}

compiler_for() {
    case "$1" in
    *.cc) echo "g++" ;;
    *) echo "gcc" ;;
    esac
}

# One compile command per line, run in parallel.
cmds="$(mktemp)"
trap 'rm -f "$cmds"' EXIT
for src in "$here"/correct/*.c "$here"/correct/*.cc "$here"/correct/*.S; do
    [[ -e "$src" ]] || continue
    file="$(basename "$src")"
    name="${file%.*}"
    variants="$(directive "$src" variants)"
    [[ -n "$variants" ]] || variants="$(default_variants "$file")"
    cflags="$(directive "$src" cflags)"
    for v in ${variants//,/ }; do
        if ! flags="$(variant_flags "$v")"; then
            echo "build.sh: $file: unknown variant '$v'" >&2
            exit 1
        fi
        echo "$(compiler_for "$file") $flags $src -o $out/$name-$v $cflags"
    done
done >"$cmds"
for src in "$here"/bench/*.c; do
    [[ -e "$src" ]] || continue
    name="$(basename "$src" .c)"
    echo "gcc -O2 $src -o $out/$name"
done >>"$cmds"
cp "$here"/bench/*.py "$out"/

if ! xargs -P "$jobs" -I CMD sh -c 'CMD || { echo "FAILED: CMD" >&2; exit 255; }' <"$cmds"; then
    echo "build.sh: build failed" >&2
    exit 1
fi
echo "built $(wc -l <"$cmds") programs into $out"
[[ $check -eq 1 ]] || exit 0

# ---- --check: run every correct program natively ----
ulimit -c 0
fail=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp" "$cmds"' EXIT
for src in "$here"/correct/*.c "$here"/correct/*.cc "$here"/correct/*.S; do
    [[ -e "$src" ]] || continue
    file="$(basename "$src")"
    name="${file%.*}"
    variants="$(directive "$src" variants)"
    [[ -n "$variants" ]] || variants="$(default_variants "$file")"
    # split like a shell would ("two words" is one argument), without expanding anything
    mapfile -t args < <(directive "$src" args | xargs -r printf '%s\n')
    stdin_text="$(directive "$src" stdin)"
    want_exit="$(directive "$src" exit)"
    want_sig="$(directive "$src" signal)"
    if [[ -n "$want_sig" ]]; then
        want_status=$((128 + $(kill -l "$want_sig")))
    else
        want_status="${want_exit:-0}"
    fi
    first=""
    for v in ${variants//,/ }; do
        bin="$out/$name-$v"
        ok=1
        printf '%b' "$stdin_text" >"$tmp/stdin"
        for run in 1 2; do
            set +e
            # The outer 2>/dev/null only silences bash's "Aborted"/"Segmentation fault" notices.
            { (cd "$tmp" && exec timeout 20 "$bin" "${args[@]}") <"$tmp/stdin" \
                >"$tmp/out$run" 2>"$tmp/err$run"; } 2>/dev/null
            status=$?
            set -e
            if [[ $status -ne $want_status ]]; then
                echo "FAIL $name-$v: run $run exit status $status, expected $want_status"
                ok=0
            fi
        done
        if ! cmp -s "$tmp/out1" "$tmp/out2" || ! cmp -s "$tmp/err1" "$tmp/err2"; then
            echo "FAIL $name-$v: output differs between two runs"
            ok=0
        fi
        if [[ -z "$first" ]]; then
            first="$v"
            cp "$tmp/out1" "$tmp/ref.out"
            cp "$tmp/err1" "$tmp/ref.err"
        elif ! cmp -s "$tmp/out1" "$tmp/ref.out" || ! cmp -s "$tmp/err1" "$tmp/ref.err"; then
            echo "FAIL $name-$v: output differs from $name-$first"
            ok=0
        fi
        if [[ $ok -eq 1 ]]; then
            echo "ok   $name-$v (status $status, $(wc -l <"$tmp/out1") stdout lines)"
        else
            fail=1
        fi
    done
done
if [[ $fail -ne 0 ]]; then
    echo "build.sh --check: FAILURES" >&2
    exit 1
fi
echo "build.sh --check: all correct programs behave as expected"
