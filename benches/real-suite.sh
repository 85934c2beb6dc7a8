#!/bin/bash
# The test-suite tools (`--tool=spectra`, `--tool=cbi`, `--tool=vr`) on a real program nobody on
# the project wrote: Debian 12's ncal (bsdmainutils 12.1.8, its debian/patches applied), with a
# fault seeded Siemens-style into its calendar library (calendar.c, `firstweek`: a relational
# operator `<` made `<=`, so week numbers go wrong in the years whose first week is short).
# The suite is 35 runs of ncal on fixed months and years (plain, -w, -j, -3, -b, -e, -o, -p, -m,
# -M), its expected outputs those of the unseeded build. The script builds `-g -O0` and
# `-g -O2`, checks that the seeded build fails some tests and passes the others natively, runs
# each tool with `--json` and prints one row per tool and build: the fault line's rank (ties take
# their worst rank), a finding ranked first, the findings, and the time. vr runs with -j 2 and
# its default budget.
#
# Run from anywhere, on Debian 12 with access to the package archive (apt-get source; deb-src
# entries are added if apt has none, libbsd-dev/libncurses-dev installed: both need root):
#   cargo build --release && bash benches/real-suite.sh
# Environment: RTGRIND (binary), KEEP=1 (keep the scratch directory). Exits 0 whatever rtgrind
# answers: it is a benchmark, not a test.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
rtgrind=${RTGRIND:-$root/target/release/rtgrind}
work=$(mktemp -d "${TMPDIR:-/tmp}/rtgrind-real-suite.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
[ -x "$rtgrind" ] || { echo "real-suite: build rtgrind first (cargo build --release)" >&2; exit 2; }

if ! grep -rqs '^deb-src\|^Types:.*deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "real-suite: adding deb-src entries for bookworm" >&2
    echo "deb-src http://deb.debian.org/debian bookworm main" > /etc/apt/sources.list.d/rtgrind-src.list
    apt-get update -qq >&2
fi
for pkg in libbsd-dev libncurses-dev dpkg-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || apt-get install -y -qq "$pkg" >&2
done

cd "$work" || exit 2
apt-get source -qq bsdmainutils=12.1.8 >/dev/null 2>&1 || apt-get source -qq bsdmainutils >/dev/null 2>&1 || {
    echo "real-suite: apt-get source bsdmainutils failed" >&2; exit 2; }
src=$(ls -d bsdmainutils-*/ | head -1)
(cd "$src" && for p in $(cat debian/patches/series); do patch -p1 -s -N < "debian/patches/$p" >/dev/null || true; done)
mkdir ncal && cp "$src"/usr.bin/ncal/{ncal.c,calendar.c,calendar.h,easter.c} ncal/
cd ncal || exit 2
cp calendar.c calendar.correct.c
fault='if (7 - (wd = (weekday(nd) + 1 - weekstart) % 7) < days_first_week)'
line=$(grep -nF "$fault" calendar.c | cut -d: -f1)
[ -n "$line" ] || { echo "real-suite: the line to seed is not in this calendar.c" >&2; exit 2; }
sed -i "${line}s/< days_first_week)/<= days_first_week)/" calendar.c

build() { # OUT SOURCE OPT
    gcc "$3" -g -I. -D_GNU_SOURCE -include bsd/string.h -o "$1" ncal.c "$2" easter.c -ltinfo -lbsd
}
build correct calendar.correct.c -O0 || exit 2
for opt in O0 O2; do build "prog-$opt" calendar.c "-$opt" || exit 2; done

mkdir expected
: > suite.jsonl
i=0
fails=0
while read -r args; do
    i=$((i + 1))
    # shellcheck disable=SC2086 # the arguments are split on purpose
    ./correct $args > "expected/t$i.out"
    json=$(printf '%s\n' $args | python3 -c 'import sys, json; print(json.dumps(sys.stdin.read().split()))')
    echo "{\"name\": \"t$i\", \"args\": $json, \"expected_stdout\": \"expected/t$i.out\"}" >> suite.jsonl
    # shellcheck disable=SC2086
    cmp -s "expected/t$i.out" <(./prog-O0 $args) || fails=$((fails + 1))
done <<'EOF'
1 2024
2 2024
6 2025
12 2025
1 2026
7 1969
10 1582
9 1752
2 2000
3 1999
-w 1 2024
-w 12 2024
-w 1 2015
-w 6 2016
-w 1 2020
-w 5 2021
-w 1 2027
-w 3 2026
-w 11 1999
-w 1 1998
-w 8 2010
-j 2 2024
-j 12 1990
-3 6 2025
-b 4 2023
-b 10 2022
-b -w 1 2024
-b -w 2 2026
-e 2024
-o 2023
-p
-w 2 2001
-w 1 2004
-m 5 2011
-M 9 2019
EOF
echo "ncal (bsdmainutils 12.1.8), seeded fault at calendar.c:$line; $i tests, $fails failing natively (-O0)"

printf '| tool | build | the fault line\x27s rank, by kind of finding | a finding ranked 1 | findings | time |\n|---|---|---|---|---:|---:|\n'
for opt in O0 O2; do
    for tool in spectra cbi vr; do
        start=$(date +%s.%N)
        "$rtgrind" --tool=$tool --suite=suite.jsonl --json -j 2 "./prog-$opt" > "$tool-$opt.json" 2> "$tool-$opt.err"
        end=$(date +%s.%N)
        python3 - "$tool-$opt.json" "$line" "$tool" "$opt" "$start" "$end" <<'PY'
import json, sys
path, line, tool, opt, start, end = sys.argv[1:]
try:
    r = json.load(open(path))
except ValueError:
    print(f"| {tool} | -{opt} | (no report) | | |")
    sys.exit()
ranks = {}
for f in r.get("findings", []):
    if f.get("place", "").startswith(f"calendar.c:{line}") and f.get("rank"):
        k = f.get("kind", "line")
        ranks[k] = min(ranks.get(k, f["rank"]), f["rank"])
said = "; ".join(f"{k} {v}" for k, v in sorted(ranks.items())) or "not ranked"
top = next((f for f in r.get("findings", []) if f.get("rank") == 1), None)
first = top.get("message", top.get("place", "")).split("\n")[0][:70] if top else "-"
print(f"| {tool} | -{opt} | {said} | {first} | {len(r.get('findings', []))} | {float(end) - float(start):.1f} s |")
PY
    done
done
