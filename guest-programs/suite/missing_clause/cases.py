# Test cases of missing_clause: (args, stdin). An active item below the
# threshold with something already on order exposes the fault (the faulty
# version orders it again instead of reporting it pending); each failing case
# holds exactly one such item.
_C = [
    ([], "bolt 50 0 a\n"),
    ([], "nut 3 0 a\n"),
    ([], "washer 4 20 a\n"),                              # pending, active
    ([], "gear 0 0 d\n"),
    ([], "gear 0 5 d\n"),
    ([], "pin 2 0 d\n"),
    (["5"], "bolt 4 0 a\nnut 5 0 a\n"),
    (["5"], "bolt 1 10 a\n"),                             # pending, active
    (["20"], "a 19 0 a\nb 20 0 a\nc 21 0 a\n"),
    (["20"], "a 10 0 d\nb 0 0 d\nc 15 3 d\n"),
    ([], "# header\n\nscrew 9 0 a\n"),
    ([], "bad line\nscrew 9 0 a\n"),
    ([], "screw -1 0 a\nscrew 1 0 x\n"),
    ([], ""),
    (["0"], "bolt 1 0 a\n"),
    (["abc"], "bolt 1 0 a\n"),
    ([], "spring 12 0 a\nspring2 8 0 a\nspring3 7 0 d\n"),
    ([], "clip 6 1 a\nclip2 50 0 a\n"),                   # pending, active
    (["3"], "x 0 0 a\ny 1 0 a\nz 2 0 a\n"),
    (["3"], "x 3 9 a\ny 4 9 a\n"),
    ([], "hinge 10 0 a\nhinge2 9 4 d\n"),
    (["100"], "cable 99 0 a\ncable2 150 0 a\n"),
    (["100"], "cable 42 58 a\n"),                         # pending, active
    ([], "m1 1 0 a\nm2 2 0 a\nm3 3 0 a\nm4 4 0 a\n"),
    ([], "q 0 0 a\n"),
    (["2"], "r 1 1 d\ns 0 0 d\n"),
    ([], "lamp 5 0 a\nlamp2 9 2 a\nlamp3 30 0 a\n"),     # pending, active
    ([], "t 9 0 a\nu 11 4 a\n"),
]
CASES = [{"name": f"t{i}", "args": a, "stdin": s} for i, (a, s) in enumerate(_C, 1)]

# vr_check.py: the stock level and the active flag used in the faulty condition.
VR = [{"line": 37, "expr": "it->stock"}, {"line": 37, "expr": "active"}]
