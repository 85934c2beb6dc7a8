//! The text and Graphviz renderings of the report model (`model.rs`), the same for every
//! search: the lines a search says on standard error (each prefixed `TOOL: ` and, by the
//! caller, `==PID== `) and its chain of runs as a graph. JSON is the model itself; SARIF is
//! `tools::sarif`.

use super::model::{Finding, Report, Step};
use std::fmt::Write as _;

/// The report as text lines.
pub fn text(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    match r.result.as_str() {
        "no-failure" | "not-reproducible" | "cannot-run" | "already-fails" => out.push(r.reason.clone()),
        "exhausted" => out.push(format!(
            "{}: search exhausted after {} switched runs ({} stopped by their budget; {:.2} s)",
            r.reason,
            r.tried.unwrap_or(0),
            r.stopped.unwrap_or(0),
            r.seconds
        )),
        _ => {
            for (k, f) in r.findings.iter().enumerate() {
                out.extend(finding(r, f, k));
            }
            out.extend(summary(r));
            out.extend(r.explored.clone());
            if r.result == "root-cause" && !r.reason.is_empty() {
                out.push(r.reason.clone());
            }
            if r.result == "inconclusive" {
                out.push(format!("cannot conclude: {}", r.reason));
            }
        }
    }
    out.extend(unmoved(&r.unmoved));
    out.extend(no_lines_hint(r));
    out.into_iter().map(|l| format!("{}: {l}", r.tool)).collect()
}

/// One line, once, for the modules whose places the findings give without a line (`main+0x37
/// in prog`, `0x1139 in prog`): how to get lines.
fn no_lines_hint(r: &Report) -> Option<String> {
    let without_line = |place: &str| {
        let (at, module) = place.rsplit_once(" in ")?;
        let address = at.starts_with("0x") || at.rsplit_once("+0x").is_some_and(|(_, off)| u64::from_str_radix(off, 16).is_ok());
        (address && !module.contains(' ')).then(|| module.to_string())
    };
    let mut modules: Vec<String> = Vec::new();
    for m in r.findings.iter().filter_map(|f| without_line(&f.place)) {
        if !modules.contains(&m) {
            modules.push(m);
        }
    }
    (!modules.is_empty()).then(|| {
        format!(
            "hint: {} {} no debug info: build it with -g for file:line (for a distribution's program, install its debug symbols: Debian's -dbgsym package)",
            modules.join(", "),
            if modules.len() == 1 { "has" } else { "have" }
        )
    })
}

/// At most this many of the variables a layout could not move are said in text (all in JSON).
const UNMOVED_SAID: usize = 5;

/// What a layout could not move, the first few with why.
fn unmoved(all: &[String]) -> Vec<String> {
    if all.is_empty() {
        return Vec::new();
    }
    let more = if all.len() > UNMOVED_SAID { format!(", the first {UNMOVED_SAID} of {} (all in --json)", all.len()) } else { String::new() };
    let mut out = vec![format!("left where they are{more}:")];
    out.extend(all.iter().take(UNMOVED_SAID).map(|u| format!("   {u}")));
    out
}

/// A predicate of cbi's (the `k`-th finding): selected by the elimination, or ranked before it.
fn predicate(r: &Report, f: &Finding, k: usize) -> Vec<String> {
    let mut out = Vec::new();
    let first_of_kind = k == 0 || r.findings[k - 1].kind != f.kind;
    let selected = f.kind == "selected predicate";
    if first_of_kind {
        out.push(if selected {
            "the predicates the elimination selected, each explaining failing tests the ones before it did not:".into()
        } else {
            "the predicates by Importance before the elimination (a tie takes its worst rank):".into()
        });
    }
    let score = |m: &str| f.scores.get(m).map_or("-".to_string(), |s| format!("{s:.3}"));
    let what = f.message.split_once(": ").map_or(f.message.as_str(), |(_, w)| w);
    out.push(format!("{:>4}. {}: {what}", f.rank.unwrap_or(0), f.place));
    if let Some(src) = f.source.as_ref().filter(|s| !s.is_empty()) {
        out.push(format!("        {src}"));
    }
    out.push(format!(
        "        importance {}  increase {}  failure {}  context {}  (true in {} failing and {} passing tests, reached in {} and {})",
        score("importance"),
        score("increase"),
        score("failure"),
        score("context"),
        f.failed_tests.unwrap_or(0),
        f.passed_tests.unwrap_or(0),
        f.observed_failed.unwrap_or(0),
        f.observed_passed.unwrap_or(0)
    ));
    if selected {
        out.push(format!("        explains {} failing tests: {}", f.explains.len(), f.explains.join(", ")));
        if !f.tied_with.is_empty() {
            out.push(format!("        as important: {}", f.tied_with.join("; ")));
        }
        out.extend(f.baseline.as_ref().map(|b| format!("        {b}")));
    }
    out
}

/// IVMPs said in text for each of the top lines (all in JSON).
const IVMPS_SAID: usize = 3;

/// A line of value replacement's ranking (`--tool=vr`), with the IVMPs of the top ones.
fn vr_line(r: &Report, f: &Finding, k: usize) -> Vec<String> {
    let mut out = Vec::new();
    let first_of_fault = k == 0 || r.findings.get(k - 1).is_some_and(|p| p.fault != f.fault);
    if first_of_fault {
        let fault = f.fault.map_or(String::new(), |n| format!("fault {n}: "));
        out.push(format!("{fault}the lines failing tests ran, by the failing tests with an IVMP at them, then Tarantula (a tie takes its worst rank):"));
    }
    let ivmps = f.ivmps.len();
    out.push(format!(
        "{:>4}. {}  IVMPs in {ivmps} failing test{}  tarantula {:.3}  (ran by {} failing and {} passing tests)",
        f.rank.unwrap_or(0),
        f.place,
        if ivmps == 1 { "" } else { "s" },
        f.scores.get("tarantula").copied().unwrap_or(0.0),
        f.failed_tests.unwrap_or(0),
        f.passed_tests.unwrap_or(0)
    ));
    if !f.message.is_empty() {
        out.push(format!("        {}", f.message));
    }
    if f.rank.is_some_and(|n| n <= 5) {
        for i in f.ivmps.iter().take(IVMPS_SAID) {
            out.push(format!(
                "        at {} instance {} in test {}, `{}` {} -> {} makes it pass (`{}` at {})",
                f.place, i.instance, i.test, i.operand, i.from, i.to, i.instruction, i.pc
            ));
        }
        if ivmps > IVMPS_SAID {
            out.push(format!("        and {} more (all in --json)", ivmps - IVMPS_SAID));
        }
    }
    out
}

/// A finding's lines: its place, then what it is at (the `k`-th finding).
fn finding(r: &Report, f: &Finding, k: usize) -> Vec<String> {
    let mut out = Vec::new();
    if f.kind == "data race" {
        let or_none = |v: &Option<String>| v.clone().unwrap_or_default();
        if let Some(why) = &f.root {
            out.push(format!("root cause of the failure: the harmful data race below ({why})"));
        }
        out.push(format!("data race at {}: {} at {}", or_none(&f.address), or_none(&f.access), f.place));
        out.push(format!("   and an earlier {} at {}, with no synchronization between", or_none(&f.earlier_access), or_none(&f.earlier_place)));
        if let Some(o) = &f.object {
            out.push(format!("   the address is {o}"));
        }
        out.extend(stack(&f.frames, "   "));
        if !f.earlier_frames.is_empty() {
            out.push("   the earlier access (seen again when the schedule was replayed):".into());
            out.extend(stack(&f.earlier_frames, "   "));
        }
        if let Some(syncs) = &f.syncs {
            out.push(format!("   last synchronization: {syncs}"));
        }
        if let Some(v) = &f.verdict {
            out.push(format!("   {v}: {}", or_none(&f.harm)));
        }
        return out;
    }
    if f.kind == "selected predicate" || f.kind == "ranked predicate" {
        return predicate(r, f, k);
    }
    if f.kind == "suspicious line" {
        if k == 0 {
            out.push("the lines failing tests ran, the most suspicious first (a tie takes its worst rank):".into());
        } else if r.findings[k - 1].kind != f.kind {
            out.push("the baseline: spectra's ranking of the same runs' lines (a tie takes its worst rank):".into());
        }
        let score = |m: &str| f.scores.get(m).map_or("-".to_string(), |s| format!("{s:.3}"));
        out.push(format!(
            "{:>4}. {}  ochiai {}  tarantula {}  (ran by {} failing and {} passing tests)",
            f.rank.unwrap_or(0),
            f.place,
            score("ochiai"),
            score("tarantula"),
            f.failed_tests.unwrap_or(0),
            f.passed_tests.unwrap_or(0)
        ));
        if !f.message.is_empty() {
            out.push(format!("        {}", f.message));
        }
        return out;
    }
    if f.kind == "value replacement line" {
        out.extend(vr_line(r, f, k));
        return out;
    }
    if f.kind == "layout exposing a failure" {
        out.push(format!("{} (a layout of the variables exposed it)", f.message));
        out.extend(r.layout.iter().flat_map(|l| l.split("; ")).map(|pair| format!("   {pair}")));
        out.extend(f.replay.iter().map(|how| format!("   to find the root cause under it: {how}")));
        return out;
    }
    if f.kind == "critical predicate" {
        let head = if k == 0 { "critical predicate" } else { "also" };
        out.push(format!("{head}: {}, the branch at {}", f.place, f.pc));
        let was = f.outcome.as_ref().map_or(String::new(), |o| format!(", which was {o}"));
        out.push(format!("   instance {} of its site ({} from the failure){was}; inverting it makes the run pass", f.instance, f.from_failure.unwrap_or(0)));
        if let Some(replay) = &f.replay {
            out.push(format!("   to replay it: {replay}"));
        }
        if r.order.as_deref() == Some("prior") {
            out.push(match f.dependences {
                Some(d) => format!("   the failure depends on it through {d} dynamic dependences"),
                None => "   the failure does not depend on it (through the dependences traced)".into(),
            });
        }
        return out;
    }
    // A run that looped is not a run without the failure: said so; nor is a run that failed
    // anew on nothing defined.
    let looped = if f.looped { " (suppressing it made the program loop: no run ended without the failure)" } else { "" };
    let otherwise =
        f.failed_otherwise.as_ref().map_or(String::new(), |w| format!(" (suppressing it avoided the failure, but the run then failed otherwise: {w})"));
    out.push(format!("{}: {}{looped}{otherwise}", f.kind, f.place));
    let every = if f.every_instance {
        " (suppressed in every instance)"
    } else if f.every_call {
        " (every call from that line suppressed whole)"
    } else if f.whole_call {
        " (the call suppressed whole)"
    } else {
        ""
    };
    let instruction = f.instruction.as_deref().unwrap_or_default();
    out.push(format!("   instruction `{instruction}` at {}, thread {}, {}{every}", f.pc, f.thread, instance(f)));
    out.extend(stack(&f.frames, "   "));
    out
}

/// A call stack as Valgrind prints one: `at` its innermost frame, `by` each caller.
fn stack<'a>(frames: &'a [String], indent: &'a str) -> impl Iterator<Item = String> + 'a {
    frames.iter().enumerate().map(move |(i, f)| format!("{indent}{} {f}", if i == 0 { "at" } else { "by" }))
}

/// A suppression point's instance as the text says it.
fn instance(f: &Finding) -> String {
    match &f.call_site {
        _ if f.by_block => format!("block instance {}", f.instance),
        None if f.instance == 0 => "every execution".into(),
        None => format!("execution {}", f.instance),
        Some(site) => format!("call {} from the site returning to {site}", f.instance),
    }
}

/// How the search went: the candidates it tried (switch), or its chain of runs (suppress).
fn summary(r: &Report) -> Vec<String> {
    if let Some(summary) = &r.summary {
        // A chain too (the race tool's failure loop): the chain, then the summary.
        let mut out = if r.chain.is_empty() { Vec::new() } else { summary_of_chain(r) };
        out.push(summary.clone());
        return out;
    }
    summary_of_chain(r)
}

/// The candidates a search tried (switch), or its chain of runs (suppress).
fn summary_of_chain(r: &Report) -> Vec<String> {
    if let Some(tried) = r.tried {
        return vec![format!(
            "{tried} switched runs of {} candidates ({} order, {}; {} stopped by their budget), {} runs in all, {:.2} s",
            r.candidates.unwrap_or(0),
            r.order.as_deref().unwrap_or_default(),
            r.how.as_deref().unwrap_or_default(),
            r.stopped.unwrap_or(0),
            r.runs,
            r.seconds
        )];
    }
    let again = match r.traced_again {
        0 => String::new(),
        1 => ", 1 to trace a suppression run's failure".into(),
        n => format!(", {n} to trace suppression runs' failures"),
    };
    // (The race tool's runs are more than its suppression chain's: its own summary counts them.)
    let head = if r.tool == "race" {
        "the failure's suppression chain (the runs replay the schedule):".to_string()
    } else {
        format!("{} runs (1 of them to check that the crash repeats{again}), {:.2} s:", r.runs, r.seconds)
    };
    let mut out = vec![head];
    out.extend(r.layout.iter().map(|l| format!("  ({l})")));
    for step in &r.chain {
        let from = if step.suppressing_from.is_empty() {
            "original run".to_string()
        } else {
            let how = match step.how.as_deref() {
                Some("every-call") => " (every call from that line, whole)",
                Some("every-instance") => " (every instance)",
                Some("whole-call") => " (the whole call)",
                _ => "",
            };
            format!("suppressing from {}{how}", step.suppressing_from.join(" and "))
        };
        out.push(format!("  {}. {from}: {}", step.run, ended(step)));
        // (The original run's failure: where, under which calls.)
        if step.run == 1 {
            out.extend(r.failure.iter().flat_map(|s| stack(&s.frames, "       ")));
        }
        for u in &step.used {
            out.push(format!("       it used {}, defined at {}", u.location, u.defined_at));
        }
        if !step.suppressed.is_empty() {
            let list: Vec<String> = step.suppressed.iter().map(|(w, n)| format!("{n} {w}")).collect();
            out.push(format!("       suppressed: {}", list.join(", ")));
        }
    }
    out
}

/// How a run of the chain ended.
fn ended(step: &Step) -> String {
    match (&step.crash, &step.stopped) {
        (Some(c), _) => c.clone(),
        (None, Some(why)) => format!("the program looped ({why}), without the failure so far"),
        (None, None) => "no failure".into(),
    }
}

/// The report as a Graphviz graph: each run of the chain, the definitions its failure used
/// and the next run suppressing them; each data race as its two accesses; the root causes.
pub fn dot(r: &Report) -> String {
    let esc = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"");
    let name = if r.tool == "race" { "races" } else { "suppression" };
    let mut g = format!("digraph {name} {{\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
    for (i, step) in r.chain.iter().enumerate() {
        let _ = writeln!(g, "  run{i} [label=\"run {}: {}\", style=rounded];", i + 1, esc(&ended(step)));
        for (k, u) in step.used.iter().enumerate() {
            let _ = writeln!(g, "  def{i}_{k} [label=\"{}\"];", esc(&u.defined_at));
            let _ = writeln!(g, "  run{i} -> def{i}_{k} [label=\"used {}\"];", esc(&u.location));
            if i + 1 < r.chain.len() {
                let _ = writeln!(g, "  def{i}_{k} -> run{} [label=\"suppressed\", style=dashed];", i + 1);
            }
        }
    }
    for (k, f) in r.findings.iter().enumerate() {
        if f.kind == "data race" {
            // The earlier access, then the later one; the root cause drawn bold.
            let verdict = f.verdict.as_deref().map(|v| format!("{v} ")).unwrap_or_default();
            let (head, pen) = if f.root.is_some() { ("root cause: ", 2) } else { ("", 1) };
            let object = f.object.as_deref().or(f.address.as_deref()).unwrap_or("?");
            let _ = writeln!(
                g,
                "  race{k}_a [label=\"{}\\n{}\", penwidth={pen}];",
                esc(f.earlier_access.as_deref().unwrap_or("?")),
                esc(f.earlier_place.as_deref().unwrap_or("?"))
            );
            let _ = writeln!(g, "  race{k}_b [label=\"{}\\n{}\", penwidth={pen}];", esc(f.access.as_deref().unwrap_or("?")), esc(&f.place));
            let _ = writeln!(g, "  race{k}_a -> race{k}_b [label=\"{head}{verdict}data race\\n{}\", penwidth={pen}];", esc(object));
            if f.root.is_some() {
                // The chain's definitions that are one of the race's accesses lead to it.
                for (i, step) in r.chain.iter().enumerate() {
                    for (d, u) in step.used.iter().enumerate() {
                        for (side, place) in [("b", Some(&f.place)), ("a", f.earlier_place.as_ref())] {
                            if place == Some(&u.defined_at) {
                                let _ = writeln!(g, "  def{i}_{d} -> race{k}_{side} [label=\"is\", style=dotted];");
                            }
                        }
                    }
                }
            }
        } else if r.result == "root-cause" {
            let _ = writeln!(g, "  root{k} [label=\"{}:\\n{}\", penwidth=2];", esc(&f.kind), esc(&f.place));
        }
    }
    g.push_str("}\n");
    g
}

/// `--dot`'s graph written to `path` (a search's report); what went wrong, on rtgrind's
/// messages.
pub fn write_dot(path: &std::path::Path, r: &Report) {
    if let Err(e) = std::fs::write(path, dot(r)) {
        eprintln!("=={}== {}: cannot write {}: {e}", std::process::id(), r.tool, path.display());
    }
}
