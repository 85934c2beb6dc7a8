#!/usr/bin/env python3
"""Builds each subject's correct.c and writes its test suite in both formats.

usage: python3 gen.py [SUBJECT ...]     (default: every directory here with a cases.py)

For a subject directory D with D/cases.py (defining CASES, a list of dicts with
"name", "args" (list of strings) and optional "stdin" (text)), this writes, from
the output of D/correct.c built with `gcc -O0 -g`:
  D/inputs/NAME.in       stdin text of the case (only if it has one)
  D/expected/NAME.out    stdout of correct.c
  D/suite.jsonl          one JSON object per case
  D/tests/NAME/cmd       the arguments, one per line
  D/tests/NAME/stdin     (only if the case has stdin)
  D/tests/NAME/expected  stdout of correct.c
  D/tests/NAME/exit      the exit status of correct.c (only if it is not 0)
Every case runs with D as its working directory. Old inputs/, expected/ and
tests/ directories are removed first, so the output depends only on cases.py
and correct.c.
"""
import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def subjects(argv):
    if argv:
        return [os.path.basename(os.path.normpath(a)) for a in argv]
    return sorted(d for d in os.listdir(HERE)
                  if os.path.isfile(os.path.join(HERE, d, "cases.py")))


def load_cases(d):
    cases = runpy.run_path(os.path.join(d, "cases.py"))["CASES"]
    names = [c["name"] for c in cases]
    if len(set(names)) != len(names):
        sys.exit(f"{d}: duplicate case names")
    for c in cases:
        for a in c["args"]:
            if "\n" in a:
                sys.exit(f"{d}: {c['name']}: an argument holds a newline")
    return cases


def run(binary, case, cwd):
    stdin = case.get("stdin")
    p = subprocess.run([binary] + case["args"], cwd=cwd,
                       input=(stdin or "").encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=20)
    return p.stdout, p.returncode


def gen(name):
    d = os.path.join(HERE, name)
    cases = load_cases(d)
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "correct")
        subprocess.run(["gcc", "-O0", "-g", "-o", binary,
                        os.path.join(d, "correct.c")], check=True)
        for sub in ("inputs", "expected", "tests"):
            shutil.rmtree(os.path.join(d, sub), ignore_errors=True)
        os.makedirs(os.path.join(d, "expected"))
        lines = []
        for c in cases:
            out, rc = run(binary, c, d)
            if rc < 0:
                sys.exit(f"{name}: {c['name']}: correct.c died with signal {-rc}")
            rec = {"name": c["name"], "args": c["args"]}
            t = os.path.join(d, "tests", c["name"])
            os.makedirs(t)
            if c.get("stdin") is not None:
                os.makedirs(os.path.join(d, "inputs"), exist_ok=True)
                with open(os.path.join(d, "inputs", c["name"] + ".in"), "w") as f:
                    f.write(c["stdin"])
                with open(os.path.join(t, "stdin"), "w") as f:
                    f.write(c["stdin"])
                rec["stdin"] = "inputs/" + c["name"] + ".in"
            with open(os.path.join(d, "expected", c["name"] + ".out"), "wb") as f:
                f.write(out)
            with open(os.path.join(t, "expected"), "wb") as f:
                f.write(out)
            with open(os.path.join(t, "cmd"), "w") as f:
                f.write("".join(a + "\n" for a in c["args"]))
            rec["expected_stdout"] = "expected/" + c["name"] + ".out"
            rec["expected_exit"] = rc
            if rc != 0:
                with open(os.path.join(t, "exit"), "w") as f:
                    f.write(f"{rc}\n")
            lines.append(json.dumps(rec))
        with open(os.path.join(d, "suite.jsonl"), "w") as f:
            f.write("\n".join(lines) + "\n")
    print(f"{name}: {len(cases)} tests")


def main():
    for s in subjects(sys.argv[1:]):
        gen(s)


if __name__ == "__main__":
    main()
