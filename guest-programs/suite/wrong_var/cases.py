# Test cases of wrong_var: (args, stdin). Transposing a matrix that is not
# square exposes the fault. Failing cases are chosen so that the right value
# (the row count) is next to, or at an end of, the values the faulty line
# sees across the suite (1..5), i.e. one of the alternate "spanning" values.
def m(rows, cols, start=1):
    vals = [str(start + i * 3 % 7 - i) for i in range(rows * cols)]
    lines = [" ".join(vals[r * cols:(r + 1) * cols]) for r in range(rows)]
    return f"{rows} {cols}\n" + "\n".join(lines) + "\n"

_C = [
    (["sums"], m(2, 3)),
    (["sums"], m(1, 1)),
    (["sums"], m(4, 2, 5)),
    (["max"], m(3, 3)),
    (["max"], m(2, 5, -4)),
    (["max"], m(1, 4, 9)),
    (["transpose"], m(1, 1)),
    (["transpose"], m(2, 2)),
    (["transpose"], m(3, 3, 4)),
    (["transpose"], m(4, 4)),
    (["transpose"], m(5, 5, -2)),
    (["transpose"], m(2, 3)),          # non-square
    (["transpose"], m(4, 3, 2)),       # non-square
    (["transpose"], m(5, 2)),          # non-square
    (["transpose"], m(1, 4, 7)),       # non-square
    (["transpose"], m(3, 2, 1)),       # non-square
    (["trace"], m(3, 3)),
    (["trace"], m(2, 3)),
    (["trace"], m(5, 5, 10)),
    (["trace"], m(1, 1, 42)),
    (["bogus"], m(2, 2)),
    ([], m(2, 2)),
    (["sums"], "0 3\n"),
    (["transpose"], "6 1\n1 2 3 4 5 6\n"),
    (["transpose"], "2 2\n1 2 3\n"),
    (["max"], "x\n"),
    (["sums"], m(5, 1, 3)),
    (["sums"], m(3, 4, -1)),
    (["max"], m(4, 4, 2)),
    (["trace"], m(4, 4, -3)),
]
CASES = [{"name": f"t{i}", "args": a, "stdin": s} for i, (a, s) in enumerate(_C, 1)]

# vr_check.py: the (wrong) value assigned on the faulty line.
VR = [{"line": 66, "expr": "g->cols"}]
