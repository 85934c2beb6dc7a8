#!/bin/bash
# `--tool=vr` cost (issue 28): for each subject of guest-programs/suite/ (built -g -O0), the
# time of value replacement with -j 1 and -j 2, the whole runs it made (two per test and the forward
# runs), the replacements it ran (each a child forked at its instance), and what a search
# re-executing the program from the start would need: one run per replacement (every instance
# of every use, 4 alternates), more with every value of the profiles; the re-execution
# estimate is that count times the median time of one run of a failing test under rtgrind
# (repeatable, as the search runs it), over 2 jobs.
# Needs rtgrind built, gcc, python3. Usage: bash benches/vr.sh [SUBJECT...]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
rt=${RTGRIND:-$root/target/release/rtgrind}
work=$(mktemp -d "${TMPDIR:-/tmp}/rtgrind-vr-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ -x "$rt" ] || (cd "$root" && cargo build --release -q)
subjects=("$@")
[ ${#subjects[@]} -gt 0 ] || subjects=(relop offbyone missing_clause wrong_var crash two_faults)

echo "| subject | failing | vr -j 1 | vr -j 2 | whole runs | replacements run (forked) | from the start: runs (4 values) | every value | avoided by a line's first IVMP | re-execution estimate |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for name in "${subjects[@]}"; do
    dir="$root/guest-programs/suite/$name"
    gcc -g -O0 -o "$work/$name" "$dir/prog.c" || continue
    s=$(date +%s.%N)
    (cd "$dir" && "$rt" --tool=vr --json -j 1 --suite=suite.jsonl "$work/$name" >/dev/null 2>&1)
    s2=$(date +%s.%N)
    (cd "$dir" && "$rt" --tool=vr --json -j 2 --suite=suite.jsonl "$work/$name" >"$work/$name.json" 2>/dev/null)
    e=$(date +%s.%N)
    # One run of the first failing test, as the search runs it.
    one=$(python3 - "$dir" "$work/$name" "$rt" <<'PY'
import json, subprocess, sys, os, time
d, exe, rt = sys.argv[1:]
failing = json.load(open(os.path.join(d, "answers.json")))["failing_tests"][0]
t = [json.loads(l) for l in open(os.path.join(d, "suite.jsonl")) if json.loads(l)["name"] == failing][0]
stdin = os.path.join(d, t["stdin"]) if t.get("stdin") else "/dev/null"
times = []
for _ in range(3):
    s = time.time()
    subprocess.run([rt, "-q", "--tool=none", "--repeatable=yes", f"--stdin-file={stdin}", "--", exe] + t["args"], cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times.append(time.time() - s)
print(sorted(times)[1])
PY
)
    python3 - "$work/$name.json" "$name" "$(python3 -c "print($e - $s2)")" "$one" "$(python3 -c "print($s2 - $s)")" <<'PY'
import json, re, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
name, took, one, took1 = sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
failing = int(re.search(r"(\d+) failed", r["summary"]).group(1))
every = re.search(r"(\d+) with every value", r["summary"])
every = every.group(1) if every else "-"
naive = r["candidates"]
print(f"| {name} | {failing} | {took1:.1f} s | {took:.1f} s | {r['runs']} | {r['tried']} | {naive} | {every} | {r['runs_avoided']} | {naive * one / 2:.0f} s ({one:.2f} s a run) |")
PY
done
