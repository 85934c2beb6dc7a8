# Test cases of crash: (args, stdin). An operator name that is not in the
# table exposes the fault: the faulty lookup runs one slot past the table,
# reads its NULL terminator and dies of SIGSEGV, where the correct version
# reports the unknown operator and exits 0.
_C = [
    ["1", "2", "add"],
    ["7", "3", "sub"],
    ["6", "7", "mul"],
    ["20", "6", "div"],
    ["20", "6", "mod"],
    ["5", "neg"],
    ["4", "dup", "mul"],
    ["1", "2", "swap"],
    ["1", "2", "drop"],
    ["3", "9", "max", "4", "min"],
    ["1", "0", "div"],
    ["8", "0", "mod"],
    ["add"],
    ["1", "sub"],
    [],
    ["42"],
    ["-3", "-4", "mul"],
    ["1", "2", "pow"],                       # unknown operator
    ["1", "2", "+"],                         # unknown operator
    ["sqrt"],                                # unknown operator
    ["2", "3", "add", "avg"],                # unknown operator
    ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17"],
    ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "dup"],
    ["1", "2", "3", "add", "add", "dup", "add"],
    ["10", "3", "swap", "sub", "neg"],
    ["5", "MAX"],                            # unknown operator (case)
    ["9", "2", "min", "7", "max"],
    ["1", "-", "2"],                         # unknown operator
    ["100", "7", "mod", "3", "mul"],
    ["4", "drop", "drop"],
]
CASES = [{"name": f"t{i}", "args": a} for i, a in enumerate(_C, 1)]

# vr_check.py: the loop index used in the faulty loop condition.
VR = [{"line": 34, "expr": "i <= NOPS"}]
