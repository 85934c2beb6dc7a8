#!/usr/bin/env python3
"""Computes the reference answers (answers.json) of each subject from gcov.

usage: python3 spectra.py [SUBJECT ...]   (default: every directory with a suite.jsonl)

For each subject D:
  1. builds D/prog.c (the faulty version) with `gcc -g -O0 --coverage
     -fexceptions -fnon-call-exceptions`, linked with a small helper that dumps
     the gcov counters when the program dies of SIGSEGV/SIGBUS/SIGFPE/SIGABRT
     (otherwise a crashing run leaves no .gcda).  The two exception flags give
     every trapping instruction and call its own counted exit arc, so a run
     that dies in the middle of a basic block still gets consistent counts:
     without them gcov's flow solver credits the unfinished block's missing
     outflow to some other arc, e.g. reports a loop's exit path as executed
     in a run that crashed inside the loop.  (A fault inside a libc function
     that gcc treats as nothrow, such as strcmp, is still not covered by
     this; the crash subject dereferences the bad pointer in its own code.)
  2. runs every test of D/suite.jsonl (working directory D), removing the .gcda
     before each, and decides pass/fail by comparing stdout and exit status
     (a death by signal is a failure) with the expected ones;
  3. reads per-line and per-branch counts with `gcov --json-format --stdout -b`;
  4. scores every line gcov calls executable with Tarantula and Ochiai and
     ranks them pessimistically (a line's rank is the number of lines whose
     score is >= its own);
  5. scores CBI branch predicates (one per gcov branch arc) with Increase,
     Failure, Context and Importance, and runs the iterative elimination;
  6. writes D/answers.json.
Only the Python standard library, gcc and gcov are used.
"""
import json
import math
import os
import re
import runpy
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FAULT = re.compile(r"/\* FAULT \*/\s*$")

FLUSH_C = r"""
#include <signal.h>
extern void __gcov_dump(void);
static void on_fatal(int sig) { __gcov_dump(); signal(sig, SIG_DFL); raise(sig); }
__attribute__((constructor)) static void install(void) {
    signal(SIGSEGV, on_fatal); signal(SIGBUS, on_fatal);
    signal(SIGFPE, on_fatal); signal(SIGABRT, on_fatal);
}
"""


def marked_lines(path, pattern):
    with open(path) as f:
        return [i for i, l in enumerate(f, 1) if re.search(pattern, l)]


def build(d, tmp, source=None):
    src = os.path.join(tmp, "prog.c")
    shutil.copy(source or os.path.join(d, "prog.c"), src)
    with open(os.path.join(tmp, "flush.c"), "w") as f:
        f.write(FLUSH_C)
    subprocess.run(["gcc", "-g", "-O0", "--coverage", "-fexceptions", "-fnon-call-exceptions",
                    "-c", "prog.c", "-o", "prog.o"],
                   cwd=tmp, check=True)
    subprocess.run(["gcc", "-O0", "-c", "flush.c", "-o", "flush.o"], cwd=tmp, check=True)
    subprocess.run(["gcc", "--coverage", "prog.o", "flush.o", "-o", "prog"],
                   cwd=tmp, check=True)
    return os.path.join(tmp, "prog")


def run_test(d, tmp, binary, t):
    gcda = os.path.join(tmp, "prog.gcda")
    if os.path.exists(gcda):
        os.remove(gcda)
    stdin = b""
    if t.get("stdin"):
        with open(os.path.join(d, t["stdin"]), "rb") as f:
            stdin = f.read()
    cwd = os.path.join(d, t["cwd"]) if t.get("cwd") else d
    p = subprocess.run([binary] + t["args"], cwd=cwd, input=stdin,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=20)
    with open(os.path.join(d, t["expected_stdout"]), "rb") as f:
        expected = f.read()
    passed = p.stdout == expected and p.returncode == t.get("expected_exit", 0)
    g = subprocess.run(["gcov", "--json-format", "--stdout", "-b", "prog.gcda"],
                       cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       check=True)
    data = json.loads(g.stdout)
    lines = {}
    for f in data["files"]:
        if os.path.basename(f["file"]) != "prog.c":
            continue
        for l in f["lines"]:
            n = l["line_number"]
            c, br = lines.get(n, (0, []))
            lines[n] = (c + l["count"], br + [b["count"] for b in l["branches"]])
    return passed, p.returncode, lines


def rank(scores):
    """Pessimistic ranks: the number of lines scoring >= each line."""
    r = {}
    vals = [round(v, 12) for v in scores.values()]
    for k, v in scores.items():
        r[k] = sum(1 for x in vals if x >= round(v, 12))
    return r


def spectra(cov, runs, lines):
    totf = sum(1 for r in runs if not r["passed"])
    totp = len(runs) - totf
    tar, och, counts = {}, {}, {}
    for n in lines:
        f = sum(1 for r in runs if not r["passed"] and r["cov"].get(n, 0) > 0)
        p = sum(1 for r in runs if r["passed"] and r["cov"].get(n, 0) > 0)
        counts[n] = (p, f)
        fr = f / totf if totf else 0.0
        pr = p / totp if totp else 0.0
        tar[n] = fr / (fr + pr) if fr + pr > 0 else 0.0
        och[n] = f / math.sqrt(totf * (f + p)) if totf and f + p > 0 else 0.0
    return tar, och, counts


def cbi_scores(preds, runs):
    """preds: name -> (list of observed flags, list of true flags) per run."""
    numf = sum(1 for r in runs if not r["passed"])
    out = {}
    for name, (obs, tru) in preds.items():
        F = sum(1 for r, t in zip(runs, tru) if t and not r["passed"])
        S = sum(1 for r, t in zip(runs, tru) if t and r["passed"])
        Fo = sum(1 for r, o in zip(runs, obs) if o and not r["passed"])
        So = sum(1 for r, o in zip(runs, obs) if o and r["passed"])
        if F + S == 0 or Fo + So == 0:
            continue
        failure = F / (F + S)
        context = Fo / (Fo + So)
        inc = failure - context
        if inc > 0 and F > 1 and numf > 1:
            imp = 2 / (1 / inc + 1 / (math.log(F) / math.log(numf)))
        else:
            imp = 0.0
        out[name] = {"F": F, "S": S, "F_observed": Fo, "S_observed": So,
                     "failure": round(failure, 6), "context": round(context, 6),
                     "increase": round(inc, 6), "importance": round(imp, 6)}
    return out


def cbi_eliminate(preds, runs):
    """Liblit et al. 2005 iterative ranking: take the predicate of highest
    Importance among those with Increase > 0, drop every run in which it is
    true, and repeat while failing runs and such predicates remain."""
    alive = list(range(len(runs)))
    chosen = []
    while any(not runs[i]["passed"] for i in alive):
        sub = [runs[i] for i in alive]
        sp = {k: ([o[i] for i in alive], [t[i] for i in alive]) for k, (o, t) in preds.items()}
        sc = cbi_scores(sp, sub)
        cand = [(v["importance"], k) for k, v in sc.items()
                if v["increase"] > 0 and v["importance"] > 0]
        if not cand:
            break
        best = max(v for v, _ in cand)
        top = sorted(k for v, k in cand if v == best)
        k = top[0]
        chosen.append({"predicate": k, "importance": best, "tied_with": top[1:],
                       "runs_left": len(alive),
                       "failing_left": sum(1 for r in sub if not r["passed"])})
        t = preds[k][1]
        alive = [i for i in alive if not t[i]]
    return chosen


def measure(d, tests, source=None):
    """Runs every test on a coverage build of source (default D/prog.c)."""
    with tempfile.TemporaryDirectory() as tmp:
        binary = build(d, tmp, source)
        runs = []
        lines = set()
        for t in tests:
            passed, rc, cov = run_test(d, tmp, binary, t)
            lines |= set(cov)
            runs.append({"name": t["name"], "passed": passed, "exit": rc,
                         "cov": {n: c for n, (c, _) in cov.items()},
                         "br": {n: b for n, (_, b) in cov.items()}})
    return runs, lines


def dwarf_lines(d):
    """Source lines of prog.c in the DWARF line table of a plain `gcc -g -O0`
    build (what a binary tool maps instructions to), or None without objdump."""
    if shutil.which("objdump") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "prog")
        subprocess.run(["gcc", "-g", "-O0", "-o", exe, os.path.join(d, "prog.c")], check=True)
        out = subprocess.run(["objdump", "--dwarf=decodedline", exe],
                             stdout=subprocess.PIPE, text=True, check=True).stdout
    lines = set()
    for l in out.splitlines():
        f = l.split()
        if len(f) >= 3 and f[0] == "prog.c" and f[1].isdigit():
            lines.add(int(f[1]))
    return lines


def single_fault_versions(d, faults, tests):
    """For a subject with several faults: for each fault line, the version of
    the program holding only that fault (correct.c with that one line taken
    from prog.c), its failing tests, and the rank of its fault line."""
    with open(os.path.join(d, "prog.c")) as f:
        bad = f.readlines()
    with open(os.path.join(d, "correct.c")) as f:
        good = f.readlines()
    assert len(bad) == len(good), "prog.c and correct.c must have the same lines"
    out = {}
    for k in faults:
        src = list(good)
        src[k - 1] = bad[k - 1]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "only.c")
            with open(path, "w") as f:
                f.writelines(src)
            runs, lines = measure(d, tests, path)
        tar, och, _ = spectra(None, runs, sorted(lines))
        out[str(k)] = {
            "failing_tests": [r["name"] for r in runs if not r["passed"]],
            "tarantula_rank": rank(tar)[k], "ochiai_rank": rank(och)[k],
        }
    return out


def analyse(name):
    d = os.path.join(HERE, name)
    with open(os.path.join(d, "suite.jsonl")) as f:
        tests = [json.loads(l) for l in f if l.strip()]
    faults = marked_lines(os.path.join(d, "prog.c"), r"/\* FAULT \*/\s*$")
    cases_py = os.path.join(d, "cases.py")
    extra = runpy.run_path(cases_py) if os.path.exists(cases_py) else {}
    runs, lines = measure(d, tests)
    lines = sorted(lines)
    tar, och, counts = spectra(None, runs, lines)
    trank, orank = rank(tar), rank(och)
    failing = [r["name"] for r in runs if not r["passed"]]
    ans = {
        "fault_lines": faults,
        "tests": len(runs),
        "failing": len(failing),
        "passing": len(runs) - len(failing),
        "tarantula_rank": {str(n): trank[n] for n in faults},
        "ochiai_rank": {str(n): orank[n] for n in faults},
        "tarantula": {str(n): round(tar[n], 6) for n in faults},
        "ochiai": {str(n): round(och[n], 6) for n in faults},
        "failing_tests": failing,
        "crashing_tests": [r["name"] for r in runs if r["exit"] < 0],
        "executable_lines": len(lines),
        "tarantula_top": [[n, round(tar[n], 6), trank[n]]
                          for n in sorted(lines, key=lambda n: (-tar[n], n))[:10]],
        "ochiai_top": [[n, round(och[n], 6), orank[n]]
                       for n in sorted(lines, key=lambda n: (-och[n], n))[:10]],
        "line_counts": {str(n): {"passed": counts[n][0], "failed": counts[n][1]}
                        for n in lines},
    }
    # CBI branch predicates, one per gcov branch arc: "L:k" is true in a run
    # when arc k of line L was taken, observed when line L was executed.
    preds = {}
    nbr = {}
    for r in runs:
        for n, b in r["br"].items():
            nbr[n] = max(nbr.get(n, 0), len(b))
    for n, k in sorted(nbr.items()):
        for i in range(k):
            obs = [r["cov"].get(n, 0) > 0 or any(c > 0 for c in r["br"].get(n, []))
                   for r in runs]
            tru = [len(r["br"].get(n, [])) > i and r["br"][n][i] > 0 for r in runs]
            preds[f"{n}:{i}"] = (obs, tru)
    sc = cbi_scores(preds, runs)
    ranked = sorted((k for k in sc if sc[k]["increase"] > 0),
                    key=lambda k: (-sc[k]["importance"], k))
    ans["cbi_branch_arcs_top"] = [dict(predicate=k, **sc[k]) for k in ranked[:8]]
    ans["cbi_branch_arcs_elimination"] = cbi_eliminate(preds, runs)
    # Named source-level predicates (cases.py: CBI_PREDICATES): a branch
    # predicate "condition at line L is true" is observed in a run when the
    # line marked /* NAME */ ran and true when the line marked /* NAME taken */
    # (the first line of its then-branch) ran.
    named = {}
    info = {}
    for p in extra.get("CBI_PREDICATES", []):
        src = os.path.join(d, "prog.c")
        cl = marked_lines(src, r"/\* %s \*/" % re.escape(p["name"]))
        bl = marked_lines(src, r"/\* %s taken \*/" % re.escape(p["name"]))
        assert len(cl) == 1 and len(bl) == 1, (p, cl, bl)
        obs = [r["cov"].get(cl[0], 0) > 0 for r in runs]
        tru = [r["cov"].get(bl[0], 0) > 0 for r in runs]
        named[p["name"]] = (obs, tru)
        info[p["name"]] = {"line": cl[0], "taken_line": bl[0], "condition": p["condition"],
                           "role": p["role"]}
    if named:
        nsc = cbi_scores(named, runs)
        for k in info:
            info[k].update(nsc.get(k, {}))
        ans["cbi_predicates"] = info
        ans["cbi_elimination"] = cbi_eliminate(named, runs)
    dl = dwarf_lines(d)
    if dl is not None:
        # Lines a binary tool sees that gcov does not (a function's opening
        # and closing braces), and the reverse (gcov puts a function's entry
        # on the line of its name).
        ans["dwarf_lines_not_in_gcov"] = sorted(dl - set(lines))
        ans["gcov_lines_not_in_dwarf"] = sorted(set(lines) - dl)
    if len(faults) > 1:
        # Per fault: the failing tests of the single-fault version, and the
        # ranks of the fault line (a) in the two-fault program when only the
        # failing tests that fault causes are counted as failing, and (b) in
        # the single-fault version (what a find-fix-repeat iteration sees
        # after the other fault is fixed).
        single = single_fault_versions(d, faults, tests)
        per = {}
        for k in faults:
            own = set(single[str(k)]["failing_tests"])
            sub = [r for r in runs if r["passed"] or r["name"] in own]
            t2, o2, _ = spectra(None, sub, lines)
            per[str(k)] = {
                "failing_tests": single[str(k)]["failing_tests"],
                "own_failures_tarantula_rank": rank(t2)[k],
                "own_failures_ochiai_rank": rank(o2)[k],
                "single_fault_version_tarantula_rank": single[str(k)]["tarantula_rank"],
                "single_fault_version_ochiai_rank": single[str(k)]["ochiai_rank"],
            }
        ans["per_fault"] = per
    for k in ("NOTES",):
        if k in extra:
            ans["notes"] = extra[k]
    with open(os.path.join(d, "answers.json"), "w") as f:
        json.dump(ans, f, indent=1)
        f.write("\n")
    print(f"{name}: faults {faults}: {len(runs)} tests, {len(failing)} failing "
          f"({len(ans['crashing_tests'])} crash); tarantula rank "
          f"{ans['tarantula_rank']}, ochiai rank {ans['ochiai_rank']} "
          f"of {len(lines)} lines")
    return ans


def main():
    args = sys.argv[1:]
    subs = ([os.path.basename(os.path.normpath(a)) for a in args] if args else
            sorted(x for x in os.listdir(HERE)
                   if os.path.isfile(os.path.join(HERE, x, "suite.jsonl"))))
    for s in subs:
        analyse(s)


if __name__ == "__main__":
    main()
