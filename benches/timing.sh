# Shared by the benchmark scripts (sourced): wall-time medians and ratios. `runs` is the
# number of runs per median (the script's RUNS argument).

# The median wall time (seconds, `median_decimals` of them: 2 unless set) of `runs` runs of
# the command, its output discarded.
median() {
    for _ in $(seq "$runs"); do
        secs "$@"
    done | median_of
}

# The seconds one run of the command takes, its output discarded.
secs() {
    local s e
    s=$(date +%s.%N)
    "$@" > /dev/null 2>&1
    e=$(date +%s.%N)
    echo "$e - $s" | bc
}

# The median (`median_decimals` decimals, 2 unless set) of the numbers on stdin, one a line.
median_of() {
    sort -n | awk -v d="${median_decimals:-2}" '{ a[NR] = $1 } END { printf "%." d "f\n", a[int((NR + 1) / 2)] }'
}

# $1 / $2 with two decimals.
ratio() { printf '%.2f' "$(echo "scale=3; $1 / $2" | bc)"; }

# The common start of a bench script (after `root` is set and this file sourced): `rt`, the
# rtgrind binary (built if missing), and `work`, a scratch directory named after the script
# ($1) and removed at exit.
bench_setup() {
    rt=$root/target/release/rtgrind
    work=$(mktemp -d "/tmp/rtgrind-$1.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    [ -x "$rt" ] || (cd "$root" && cargo build --release -q)
}

# need COMMAND PACKAGE: installs the Debian package with apt-get if the command is missing.
need() {
    command -v "$1" >/dev/null || { apt-get update -q && apt-get install -y -q "$2"; } >/dev/null
}
