# Shared by the benchmark scripts (sourced): wall-time medians and ratios. `runs` is the
# number of runs per median (the script's RUNS argument).

# The median wall time (seconds, `median_decimals` of them: 2 unless set) of `runs` runs of
# the command, its output discarded.
median() {
    for _ in $(seq "$runs"); do
        local s e
        s=$(date +%s.%N)
        "$@" > /dev/null 2>&1
        e=$(date +%s.%N)
        echo "$e - $s" | bc
    done | median_of
}

# The median (`median_decimals` decimals, 2 unless set) of the numbers on stdin, one a line.
median_of() {
    sort -n | awk -v d="${median_decimals:-2}" '{ a[NR] = $1 } END { printf "%." d "f\n", a[int((NR + 1) / 2)] }'
}

# $1 / $2 with two decimals.
ratio() { printf '%.2f' "$(echo "scale=3; $1 / $2" | bc)"; }
