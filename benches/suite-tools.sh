#!/bin/bash
# Speed of the test-suite tools that run every test once (issue 28): time to rank each subject
# of guest-programs/suite/ (built -g -O0) with -j 1 and -j 2 under `--tool=spectra` (count's
# coverage) and `--tool=cbi` (its predicates counted inline; also with --sample=1/100), one run
# per test, and the native time of the same tests run one after another, medians of 3 runs from
# the same session. (`--tool=vr`, which runs many more, is benches/vr.sh.)
# Needs rtgrind built, gcc, python3. Usage: bash benches/suite-tools.sh
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
rt=${RTGRIND:-$root/target/release/rtgrind}
work=$(mktemp -d "${TMPDIR:-/tmp}/rtgrind-spectra-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ -x "$rt" ] || (cd "$root" && cargo build --release -q)

# Median wall time (seconds) of 3 runs of the command.
median() {
    for _ in 1 2 3; do
        local s=$(date +%s.%N); "$@" >/dev/null 2>&1; local e=$(date +%s.%N)
        python3 -c "print($e - $s)"
    done | sort -n | sed -n 2p
}

# The tests of a suite run natively, one after another (their input from the suite).
native_suite() {
    python3 - "$1" "$2" <<'PY'
import json, subprocess, sys, os
suite, exe = sys.argv[1], sys.argv[2]
d = os.path.dirname(suite)
for line in open(suite):
    t = json.loads(line)
    stdin = open(os.path.join(d, t["stdin"]), "rb") if t.get("stdin") else subprocess.DEVNULL
    subprocess.run([exe] + t.get("args", []), stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
PY
}

echo "| subject | tests | native (all tests) | spectra -j 1 | spectra -j 2 | cbi -j 1 | cbi -j 2 | cbi -j 2 --sample=1/100 | cbi -j 2 / native |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for dir in "$root"/guest-programs/suite/*/; do
    name=$(basename "$dir")
    gcc -g -O0 -o "$work/$name" "$dir/prog.c" || continue
    tests=$(grep -c . "$dir/suite.jsonl")
    n=$(median native_suite "$dir/suite.jsonl" "$work/$name")
    rank() { median "$rt" -q --tool="$1" -j "$2" "${@:3}" --suite="$dir/suite.jsonl" "$work/$name"; }
    s1=$(rank spectra 1); s2=$(rank spectra 2)
    c1=$(rank cbi 1); c2=$(rank cbi 2); c2s=$(rank cbi 2 --sample=1/100)
    printf "| %s | %d | %.2f s | %.2f s | %.2f s | %.2f s | %.2f s | %.2f s | %.1fx |\n" "$name" "$tests" "$n" "$s1" "$s2" "$c1" "$c2" "$c2s" "$(python3 -c "print($c2 / $n)")"
done
