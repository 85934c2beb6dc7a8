# Test cases of two_faults: (args, stdin).
# Fault A (median, integer division): a median of an even count whose two
#   middle values have an odd sum.
# Fault B (var, divides by n instead of n - 1): a variance of two or more
#   values that are not all equal.
# No case triggers both faults, so the two failing subsets are disjoint.
_C = [
    (["sum"], "1 2 3\n"),
    (["sum"], "-5 5 10\n"),
    (["mean"], "1 2\n"),
    (["mean"], "7\n"),
    (["minmax"], "3 1 4 1 5 9 2 6\n"),
    (["minmax"], "-1 -7 -3\n"),
    (["median"], "5 1 3\n"),                 # odd count
    (["median"], "4 2 8 6\n"),               # even, middle sum even
    (["median"], "1 2\n"),                   # A
    (["median"], "10 3 7 4\n"),              # A
    (["median"], "9\n"),
    (["median"], "2 2 2 2\n"),
    (["median"], "-3 0\n"),                  # A (negative)
    (["median"], "100 1 50 51 2 99\n"),      # A
    (["median"], "6 1 5 2 4 3 7\n"),         # odd count
    (["var"], "1 2 3 4\n"),                  # B
    (["var"], "5\n"),                        # n/a
    (["var"], "4 4 4\n"),                    # zero variance
    (["var"], "10 20\n"),                    # B
    (["var"], "-2 0 2 4 6\n"),               # B
    (["var"], "7 7\n"),                      # zero variance
    (["all"], "3\n"),
    (["all"], "1 3 5\n"),                    # B (var of 1 3 5 = 4 vs 2.67)
    (["all"], "8 8\n"),
    (["all"], "2 4 6 8\n"),                  # B
    (["all"], "1 1 1 1 1 1\n"),
    ([], "5 5 5\n"),
    (["sum"], ""),
    (["median"], "abc\n"),
    (["bogus"], "1 2 3\n"),
    (["minmax"], "42\n"),
    (["mean"], "-1 -2 -3 -4\n"),
    (["median"], "12 11 13 14 15 10\n"),     # A (12+13 odd)
    (["median"], "0 0 1 1 2 2\n"),           # A (1+1 even) -> passes
    (["sum"], "1000000 2000000 3000000\n"),
    (["var"], "3 3 3 3 3 9\n"),              # B
]
CASES = [{"name": f"t{i}", "args": a, "stdin": s} for i, (a, s) in enumerate(_C, 1)]

# vr_check.py: the divisor of the variance, and the upper middle value of the
# median (no value of it can give a .5 under integer division).
VR = [{"line": 55, "expr": "n"}, {"line": 46, "expr": "v[n / 2]"}]
