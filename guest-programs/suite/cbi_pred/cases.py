# Test cases of cbi_pred: (args, stdin). A word longer than the width
# (predicate P1 true) always exposes the fault in split_word.  Predicate P2
# (word longer than half the width) is true whenever P1 is, and also in two
# passing runs (t10, t25), so it is redundant with P1.
TEXT = "the quick brown fox jumps over the lazy dog"
_C = [
    ([], TEXT + "\n"),
    (["10"], TEXT + "\n"),
    (["8"], "to be or not to be it is so\n"),
    (["4"], "a bb a bb\n"),
    (["4"], "a bb ccc ddddd\n"),                            # P1
    (["10"], "extraordinary claims\n"),                     # P1
    ([], "internationalizations is a long word\n"),         # P1
    ([], "short words only here\n"),
    (["12"], "one two three four five six seven eight nine ten\n"),
    (["12"], "abcdefghijkl fits exactly\n"),                # P2 in passing
    (["12"], "abcdefghijklm does not\n"),                   # P1
    (["6"], "aaa bbb ccc ddd\n"),
    (["6"], "aaaaaaaaaaaaaaaaaaaa\n"),                      # P1
    ([], ""),
    ([], "\n\n   \n"),
    (["3"], "abc\n"),
    (["61"], "abc\n"),
    (["x"], "abc\n"),
    (["60"], TEXT + " " + TEXT + "\n"),
    (["15"], TEXT + " " + TEXT + "\n"),
    (["15"], "pneumonoultramicroscopicsilicovolcanoconiosis\n"),  # P1
    (["30"], "a b c d e f g h i j k l m n o p q r s t u v w x y z\n"),
    (["5"], "hi yo ok\n"),
    (["5"], "hello worlds\n"),                              # P1
    (["20"], "twentycharacterslong exactly\n"),             # P2 in passing
    (["20"], "twentyonecharacterslo\n"),                    # P1
    (["9"], "x\ny\nz\n"),
    (["7"], "one two six ten\n"),
    (["7"], "six ten one two\n"),
    (["40"], "the end\n"),
    (["16"], "a\tb\tc\n"),
    (["11"], "antidisestablishmentarianism\n"),             # P1
    (["25"], TEXT + "\n"),
    (["13"], "ball ant bee\n"),
]
CASES = [{"name": f"t{i}", "args": a, "stdin": s} for i, (a, s) in enumerate(_C, 1)]

CBI_PREDICATES = [
    {"name": "P1", "condition": "len > width", "role": "best"},
    {"name": "P2", "condition": "len > width / 2", "role": "redundant"},
]

# vr_check.py: the width used to size the pieces.
VR = [{"line": 43, "expr": "width"}]
