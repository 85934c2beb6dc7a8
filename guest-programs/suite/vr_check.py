#!/usr/bin/env python3
"""Checks that Value Replacement can work at each subject's fault line.

usage: python3 vr_check.py [SUBJECT ...]  (default: subjects whose cases.py has VR)

cases.py may define VR = [{"line": N, "expr": "grams"}, ...]: an expression
used on line N of prog.c.  This script builds a copy of prog.c in which that
use goes through a hook, then
  1. runs every test to collect the value profile of the use (all values it
     takes, in passing and failing runs alike);
  2. for every failing test and every dynamic instance of the use, replaces
     the value, at that one instance only, with each alternate "spanning"
     value (the smallest and largest profile values below the original, and
     the smallest and largest above it: Jeffrey 2009, sec. 4.2.2), and checks
     whether the run then passes (same stdout and exit status as expected).
A replacement that makes a failing run pass is an IVMP.  The results go into
answers.json under "vr_fault_line".  This is a source-level check of the
fault line only (the replaced value is the expression's value at that use;
memory is not written), not a Value Replacement ranking of every line.
"""
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

HOOK = r"""
#include <stdio.h>
#include <stdlib.h>
static long long vr_count;
static long long vr_use(long long v)
{
    static FILE *prof;
    static int init;
    static long long inst = -1, value;
    if (!init) {
        const char *p = getenv("VR_PROFILE"), *i = getenv("VR_INSTANCE");
        init = 1;
        if (p)
            prof = fopen(p, "a");
        if (i) {
            inst = atoll(i);
            value = atoll(getenv("VR_VALUE"));
        }
    }
    vr_count++;
    if (prof) {
        fprintf(prof, "%lld\n", v);
        fflush(prof);
    }
    if (vr_count == inst)
        return value;
    return v;
}
#define VR_USE(x) ((__typeof__(x))vr_use((long long)(x)))
#line 1
"""


def run(d, exe, t, env):
    stdin = b""
    if t.get("stdin"):
        with open(os.path.join(d, t["stdin"]), "rb") as f:
            stdin = f.read()
    p = subprocess.run([exe] + t["args"], cwd=d, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, env=dict(os.environ, **env), timeout=20)
    with open(os.path.join(d, t["expected_stdout"]), "rb") as f:
        exp = f.read()
    return p.stdout == exp and p.returncode == t.get("expected_exit", 0)


def spanning(orig, values):
    lo = sorted(v for v in values if v < orig)
    hi = sorted(v for v in values if v > orig)
    out = []
    for v in (lo[:1] + lo[-1:] + hi[:1] + hi[-1:]):
        if v not in out:
            out.append(v)
    return out


def check(name):
    d = os.path.join(HERE, name)
    spec = runpy.run_path(os.path.join(d, "cases.py")).get("VR")
    if not spec:
        return
    with open(os.path.join(d, "suite.jsonl")) as f:
        tests = [json.loads(l) for l in f if l.strip()]
    with open(os.path.join(d, "prog.c")) as f:
        src = f.readlines()
    results = []
    for s in spec:
        n, expr = s["line"], s["expr"]
        pat = r"(?<![\w.>])" + re.escape(expr) + r"(?!\w)"
        assert re.search(pat, src[n - 1]), (name, n, expr)
        mod = list(src)
        mod[n - 1] = re.sub(pat, lambda m: f"VR_USE({expr})", mod[n - 1], count=1)
        with tempfile.TemporaryDirectory() as tmp:
            c = os.path.join(tmp, "vr.c")
            with open(c, "w") as f:
                f.write(HOOK + "".join(mod))
            exe = os.path.join(tmp, "vr")
            subprocess.run(["gcc", "-O0", "-g", "-w", "-o", exe, c], check=True)
            profile, per_run, failing = set(), {}, []
            for t in tests:
                pf = os.path.join(tmp, "profile")
                if os.path.exists(pf):
                    os.remove(pf)
                ok = run(d, exe, t, {"VR_PROFILE": pf})
                vals = []
                if os.path.exists(pf):
                    with open(pf) as f:
                        vals = [int(x) for x in f.read().split()]
                profile |= set(vals)
                per_run[t["name"]] = vals
                if not ok:
                    failing.append(t)
            ivmps = {}
            for t in failing:
                found = []
                for k, orig in enumerate(per_run[t["name"]], 1):
                    for v in spanning(orig, profile):
                        if run(d, exe, t, {"VR_INSTANCE": str(k), "VR_VALUE": str(v)}):
                            found.append([k, orig, v])
                ivmps[t["name"]] = found
        r = {"line": n, "expr": expr, "profile": sorted(profile),
             "failing_runs": len(failing),
             "failing_runs_with_ivmp": sum(1 for v in ivmps.values() if v),
             "ivmps": ivmps}
        results.append(r)
        print(f"{name}: line {n} `{expr}`: {r['failing_runs_with_ivmp']} of "
              f"{len(failing)} failing runs have an IVMP")
    path = os.path.join(d, "answers.json")
    with open(path) as f:
        ans = json.load(f)
    ans["vr_fault_line"] = results
    with open(path, "w") as f:
        json.dump(ans, f, indent=1)
        f.write("\n")


def main():
    args = sys.argv[1:]
    subs = ([os.path.basename(os.path.normpath(a)) for a in args] if args else
            sorted(x for x in os.listdir(HERE)
                   if os.path.isfile(os.path.join(HERE, x, "cases.py"))))
    for s in subs:
        check(s)


if __name__ == "__main__":
    main()
