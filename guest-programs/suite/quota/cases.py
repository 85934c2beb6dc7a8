# Test cases of quota: (args, stdin). A record whose used + reserved is over
# the limit (marked OVER) exposes the fault: the user is charged more than the
# limit.  Records within a tenth of the limit but not over it (NEAR) take the
# same "near the limit" branch in passing runs, so that branch predicts the
# failures less well than the scalar pair "charged > limit" at the fault line.
_C = [
    (["100"], "10 5\n20 30\n"),
    (["100"], "60 50\n"),                                   # OVER
    (["100"], "95 0\n"),                                    # NEAR
    (["100"], "50 50\n"),                                   # NEAR (at the limit)
    (["100"], "1 1\n2 2\n3 3\n4 4\n"),
    (["50"], "10 10\n20 20\n30 30\n"),                      # OVER
    (["50"], "40 5\n10 0\n"),                               # NEAR
    (["1000"], "500 400\n100 100\n700 200\n"),
    (["1000"], "999 2\n"),                                  # OVER
    (["1000"], "900 95\n"),                                 # NEAR
    (["10"], "1 2\n3 4\n5 4\n"),                            # NEAR
    (["10"], "11 0\n"),                                     # OVER
    (["10"], "0 0\n"),
    (["7"], "-1 3\n2 2\n"),
    (["7"], "3 -3\n"),
    (["7"], "3 3\n1 1\n0 7\n"),                             # NEAR (at the limit)
    (["7"], "4 4\n"),                                       # OVER
    (["0"], "1 1\n"),
    (["-5"], "1 1\n"),
    (["abc"], "1 1\n"),
    ([], "1 1\n"),
    (["20"], ""),
    (["20"], "x y\n"),
    (["20"], "5 5\n5 5\n5 5\n5 5\n5 5\n"),
    (["20"], "15 4\n1 1\n"),                                # NEAR
    (["20"], "12 12\n1 1\n"),                               # OVER
    (["300"], "100 100\n50 50\n120 150\n"),                 # NEAR
    (["300"], "100 100\n50 50\n200 150\n"),                 # OVER
    (["64"], "8 8\n16 16\n32 0\n"),
    (["64"], "32 32\n"),                                    # NEAR (at the limit)
    (["64"], "1 2 3 4\n"),
    (["64"], "40 40\n-2 1\n"),                              # OVER
]
CASES = [{"name": f"t{i}", "args": a, "stdin": s} for i, (a, s) in enumerate(_C, 1)]
