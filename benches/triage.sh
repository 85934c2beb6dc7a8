#!/bin/bash
# `rtgrind triage` speed (issue 25) and its grouping against grouping by crash stack.
# Part 1: inputs per minute on the test corpus (guest-programs/corpus/: records, tokens, dice;
# -O0; and jobs with --tool=race), with -j 1 and -j 2. Part 2: a corpus of 200 generated inputs of a real program: unrtf
# 0.21.10 (Debian 12's source) with CVE-2016-10091 put back in its three functions
# (cmd_expand, cmd_emboss, cmd_engrave: `char str[10]; sprintf(str, "%d", param)`), built
# -O0; each input an RTF document of random words and control words, some with a number of
# ten characters or more after \expnd (cmd_expand, which prints a quarter of it) or \embo
# (cmd_emboss); \engr is no control word unrtf knows (cmd_engrave is \impr's). It prints the inputs per minute, the
# groups by root cause, and the groups the same crashes make by the top three frames of their
# crash stack (the crash's place and the two innermost calls: CASR's and crashwalk's way).
# Needs rtgrind built, gcc, python3, and the Debian source archive (apt-get source; cached in
# ${TMPDIR:-/tmp}/rtgrind-real-bugs-src, shared with real-bugs.sh).
# Usage: bash benches/triage.sh [INPUTS]   (INPUTS: the real corpus's size, default 200; 0: the
# test corpus only)
set -u
count=${1:-200}
root=$(cd "$(dirname "$0")/.." && pwd)
rt=${RTGRIND:-$root/target/release/rtgrind}
work=$(mktemp -d "${TMPDIR:-/tmp}/rtgrind-triage-bench.XXXXXX")
cache=${TMPDIR:-/tmp}/rtgrind-real-bugs-src
trap 'rm -rf "$work"' EXIT
[ -x "$rt" ] || (cd "$root" && cargo build --release -q)
say() { echo "triage-bench: $*" >&2; }

# Inputs per minute: $1 inputs in $2 seconds.
per_minute() { python3 -c "print(f'{$1 * 60 / $2:.1f}')"; }

echo "| corpus | inputs | -j | time | inputs/min |"
echo "|---|---:|---:|---:|---:|"
for p in records tokens dice jobs; do
    gcc -g -O0 -fno-stack-protector -o "$work/$p" "$root/guest-programs/corpus/$p.c"
done
n=$(ls "$root"/guest-programs/corpus/{records,tokens,dice} | grep -cv ':$\|^$')
races=$(ls "$root"/guest-programs/corpus/jobs | wc -l)
for j in 1 2; do
    s=$(date +%s.%N)
    for p in records tokens dice; do
        "$rt" triage -i "$root/guest-programs/corpus/$p" -j "$j" -t 3 -- "$work/$p" @@ 2> /dev/null
    done
    t=$(echo "$(date +%s.%N) - $s" | bc)
    echo "| test corpus (suppress) | $n | $j | $(printf '%.1f' "$t") s | $(per_minute "$n" "$t") |"
    s=$(date +%s.%N)
    "$rt" triage --tool=race -i "$root/guest-programs/corpus/jobs" -j "$j" -t 20 -- "$work/jobs" @@ 2> /dev/null
    t=$(echo "$(date +%s.%N) - $s" | bc)
    echo "| test corpus, jobs (race) | $races | $j | $(printf '%.1f' "$t") s | $(per_minute "$races" "$t") |"
done
[ "$count" -gt 0 ] || exit 0

# --- a real program: unrtf with CVE-2016-10091 put back ------------------------------------
mkdir -p "$cache/unrtf"
dsc=$(ls "$cache"/unrtf/unrtf_*.dsc 2> /dev/null | tail -1)
if [ -z "$dsc" ]; then
    (cd "$cache/unrtf" && apt-get source -q --download-only unrtf > /dev/null 2>&1)
    dsc=$(ls "$cache"/unrtf/unrtf_*.dsc 2> /dev/null | tail -1)
fi
[ -n "$dsc" ] || { say "cannot fetch unrtf's source (deb-src entries: see real-bugs.sh)"; exit 0; }
dpkg-source --no-check -x "$dsc" "$work/unrtf" > /dev/null 2>&1
sed -i '1850,1925s/char str\[20\];/char str[10];/; 1850,1925s/snprintf(str, 20, /sprintf(str, /' "$work/unrtf/src/convert.c"
say "building unrtf -O0"
(cd "$work/unrtf" && autoreconf -fi && ./configure -q CC=gcc CFLAGS="-g -O0 -fno-stack-protector -U_FORTIFY_SOURCE" --prefix="$work/unrtf/inst" && make -j2 && make install) > "$work/unrtf.build" 2>&1 \
    || { say "unrtf did not build: $work/unrtf.build"; exit 0; }
mkdir -p "$work/in"
python3 - "$work/in" "$count" << 'EOF'
import random, sys
out, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(25)
words = ["hello", "world", "plain", "text", "rtf", "font", "para", "line"]
for k in range(n):
    parts = []
    for _ in range(rng.randint(1, 6)):
        word = rng.choice(["expnd", "embo", "engr", "b", "i", "fs", "par"])
        # Ten characters or more overflow str[10] in the three buggy functions.
        digits = rng.choice([rng.randint(0, 999), rng.randint(10**9, 2**31 - 1), -rng.randint(10**8, 2**31)])
        parts.append(f"{{\\{word}{digits} {rng.choice(words)}}}")
    with open(f"{out}/input-{k:03}.rtf", "w") as f:
        f.write("{\\rtf1\\ansi " + " ".join(parts) + "}\n")
EOF
s=$(date +%s.%N)
"$rt" triage -i "$work/in" -o "$work/out" -j 2 -t 5 -- "$work/unrtf/inst/bin/unrtf" @@ 2> "$work/triage.log"
t=$(echo "$(date +%s.%N) - $s" | bc)
echo "| unrtf (CVE-2016-10091) | $count | 2 | $(printf '%.1f' "$t") s | $(per_minute "$count" "$t") |"
echo
grep -v '^triage: \[' "$work/triage.log" | grep -v '^triage: no crash:' | sed 's/^triage: //'
echo
python3 - "$work/out/triage.json" << 'EOF'
import json, sys, collections
t = json.load(open(sys.argv[1]))
by_root = {g["fingerprint"]: g for g in t["groups"]}
stacks = collections.defaultdict(list)
for i in t["inputs"]:
    f = (i.get("report") or {}).get("failure")
    if i.get("group") and f:
        # (A crash inside a library: its innermost program call is the first frame.)
        frames = f["stack"] if f.get("call") else [f["place"] or f["pc"]] + f["stack"]
        stacks[" < ".join(frames[:3])].append(i)
print(f"By root cause: {len(by_root)} groups; by the top three frames of the crash stack: {len(stacks)} groups.")
for key, members in sorted(stacks.items(), key=lambda kv: -len(kv[1])):
    roots = collections.Counter(by_root[m["group"]]["place"].split(",")[0] for m in members)
    print(f"  {len(members):3} inputs at {key}: root causes {dict(roots)}")
EOF
