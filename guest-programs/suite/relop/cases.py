# Test cases of relop: (args, stdin). Parcels exactly at a tier limit
# (500, 1000, 2000, 5000 g) expose the fault; each failing case holds one.
_C = [
    (["1"], "120\n"),
    (["1"], "499\n"),
    (["1"], "500\n"),                     # boundary
    (["2"], "501\n750\n"),
    (["2"], "999\n1001\n"),
    (["2"], "1000\n"),                    # boundary
    (["3"], "1500\n1999\n"),
    (["3"], "2000\n"),                    # boundary
    (["3"], "4999\n"),
    (["1"], "5000\n"),                    # boundary: rejected as too heavy
    (["1"], "5001\n12000\n"),
    (["2"], "# comment\n\n300\n2500\n"),
    (["3"], "abc\n700\n"),
    (["1"], "-5\n0\n42\n"),
    (["-s", "1"], "100\n600\n1200\n3000\n"),
    (["-s", "2"], "100\n200\n300\n"),
    (["-s", "3"], "2000\n30\n"),          # boundary
    (["-s", "1"], "7000\n8000\n"),
    ([], "100\n"),
    (["4"], "100\n"),
    (["0"], "100\n"),
    (["2"], ""),
    (["-s", "2"], ""),
    (["1"], "10\n20\n30\n40\n50\n"),
    (["2"], "1100\n1800\n2400\n4800\n"),
    (["3"], "250\n1000\n"),               # boundary
    (["1"], "4000\n4500\n"),
    (["2"], "12x\n"),
    (["3"], "600\n900\n950\n"),
    (["1"], "2001\n"),
]
CASES = [{"name": f"t{i}", "args": a, "stdin": s} for i, (a, s) in enumerate(_C, 1)]

# vr_check.py: the weight used in the faulty comparison.
VR = [{"line": 23, "expr": "grams"}]
