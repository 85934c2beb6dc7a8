//! The suppression search's report: text on stderr (`==PID== suppress:` lines), and on request
//! JSON or SARIF 2.1.0 on stdout and the chain of runs as a Graphviz graph.

use super::driver::{added_places, describe_crash, failure_before, Search, Verdict};
use crate::report::model::{Finding, Report, Step, Used, VERSION};
use crate::tools::sarif;

/// The SARIF rule of the search's findings.
const RULE: sarif::Rule =
    sarif::Rule { id: "first-point-of-memory-corruption", description: "The first point of memory corruption behind a crash, found by execution suppression" };
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Clone, Debug, Default)]
pub struct Format {
    pub json: bool,
    pub sarif: bool,
    pub dot: Option<PathBuf>,
}

pub fn emit(s: &Search, command: &[std::ffi::OsString], format: &Format, pid: u32) {
    if let Verdict::CannotRun(_, line) = &s.verdict {
        // rtgrind's own one-line error, as for any other tool.
        eprintln!("{line}");
        return;
    }
    for line in text(s) {
        eprintln!("=={pid}== {line}");
    }
    let report = model(s, command);
    if format.json {
        println!("{}", report.to_json());
    }
    if format.sarif {
        println!("{}", sarif::document(RULE, &report));
    }
    if let Some(path) = &format.dot {
        if let Err(e) = std::fs::write(path, dot(s)) {
            eprintln!("=={pid}== suppress: cannot write {}: {e}", path.display());
        }
    }
}

fn text(s: &Search) -> Vec<String> {
    let mut out = Vec::new();
    match &s.verdict {
        Verdict::NoFailure => {
            out.push("suppress: the program did not fail (no crash); nothing to find. A corruption that does not crash in this memory layout would need variable re-ordering to show (planned as --tool=reorder, not available yet).".into());
            return out;
        }
        Verdict::NotReproducible(a, b, how) => {
            out.push(format!("suppress: the failure does not reproduce in repeatable mode: run 1: {a}; run 2: {b}; they differ in {how}"));
            return out;
        }
        Verdict::CannotRun(_, line) => {
            out.push(line.clone());
            return out;
        }
        Verdict::RootCause(roots) => {
            for r in roots {
                // A run that looped is not a run without the failure: said so.
                let looped = if r.looped { " (suppressing it made the program loop: no run ended without the failure)" } else { "" };
                // Nor is a run that failed anew on nothing defined.
                let otherwise = r
                    .failed_otherwise
                    .as_ref()
                    .map_or(String::new(), |f| format!(" (suppressing it avoided the failure, but the run then failed otherwise: {f})"));
                out.push(format!("suppress: first point of memory corruption: {}{looped}{otherwise}", r.place));
                let every = if r.every_instance {
                    " (suppressed in every instance)"
                } else if r.every_call {
                    " (every call from that line suppressed whole)"
                } else if r.whole_call {
                    " (the call suppressed whole)"
                } else {
                    ""
                };
                out.push(format!(
                    "suppress:    instruction `{}` at {:#x}, thread {}, {}{every}",
                    r.instruction,
                    r.point.pc,
                    r.point.thread,
                    r.point.describe_instance()
                ));
            }
        }
        Verdict::Inconclusive(_) => {}
    }
    let again = match s.traced_again {
        0 => String::new(),
        1 => ", 1 to trace a suppression run's failure".into(),
        n => format!(", {n} to trace suppression runs' failures"),
    };
    out.push(format!("suppress: {} runs (1 of them to check that the crash repeats{again}), {:.2} s:", s.runs, s.seconds));
    for (i, (added, o)) in s.chain.iter().enumerate() {
        let from = if added.is_empty() {
            "original run".to_string()
        } else {
            let every = if added.iter().all(|p| p.call_site().is_some()) {
                " (every call from that line, whole)"
            } else if added.iter().all(|p| p.instance == 0) {
                " (every instance)"
            } else if added.iter().all(|p| p.call()) {
                " (the whole call)"
            } else {
                ""
            };
            format!("suppressing from {}{every}", added_places(failure_before(&s.chain, i), added, &o.hits).join(" and "))
        };
        out.push(format!("suppress:   {}. {from}: {}", i + 1, describe_crash(o)));
        for d in &o.defs {
            out.push(format!("suppress:        it used {}, defined at {}", d.location, d.place));
        }
        if !o.suppressed.is_empty() {
            let list: Vec<String> = o.suppressed.iter().map(|(w, n)| format!("{n} {w}")).collect();
            out.push(format!("suppress:        suppressed: {}", list.join(", ")));
        }
    }
    if let Verdict::Inconclusive(why) = &s.verdict {
        out.push(format!("suppress: cannot conclude: {why}"));
    }
    out
}

/// The search as the one report model (`report::model`).
pub fn model(s: &Search, command: &[std::ffi::OsString]) -> Report {
    let (result, reason) = match &s.verdict {
        Verdict::NoFailure => ("no-failure", String::new()),
        Verdict::NotReproducible(a, b, how) => ("not-reproducible", format!("run 1: {a}; run 2: {b}; they differ in {how}")),
        Verdict::RootCause(_) => ("root-cause", String::new()),
        Verdict::Inconclusive(why) => ("inconclusive", why.clone()),
        Verdict::CannotRun(_, line) => ("cannot-run", line.clone()),
    };
    let findings = match &s.verdict {
        Verdict::RootCause(roots) => roots
            .iter()
            .map(|r| Finding {
                place: r.place.clone(),
                message: format!("first point of memory corruption: `{}` at {} ({} runs)", r.instruction, r.place, s.runs),
                own_place: Some(r.own_place.clone()),
                instruction: Some(r.instruction.clone()),
                pc: format!("{:#x}", r.point.pc),
                thread: r.point.thread,
                instance: r.point.instance & !super::plan::BY_BLOCK,
                by_block: r.point.block_instance().is_some(),
                call_site: (r.point.site != 0).then(|| format!("{:#x}", r.point.site)),
                every_instance: r.every_instance,
                whole_call: r.whole_call,
                every_call: r.every_call,
                looped: r.looped,
                failed_otherwise: r.failed_otherwise.clone(),
                ..Finding::default()
            })
            .collect(),
        _ => Vec::new(),
    };
    let chain = s
        .chain
        .iter()
        .enumerate()
        .map(|(i, (added, o))| Step {
            run: i as u32 + 1,
            suppressing_from: if i == 0 { Vec::new() } else { added_places(failure_before(&s.chain, i), added, &o.hits) },
            crash: o.crash.as_ref().map(|_| describe_crash(o)),
            used: o.defs.iter().map(|d| Used { location: d.location.clone(), defined_at: d.place.clone() }).collect(),
            suppressed: o.suppressed.iter().cloned().collect(),
        })
        .collect();
    Report {
        tool: "suppress".into(),
        result: result.into(),
        version: VERSION,
        command: command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        reason,
        findings,
        runs: s.runs,
        traced_again: s.traced_again,
        seconds: (s.seconds * 1000.0).round() / 1000.0,
        chain,
        ..Report::default()
    }
}

fn dot(s: &Search) -> String {
    let esc = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"");
    let mut g = String::from("digraph suppression {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
    for (i, (_, o)) in s.chain.iter().enumerate() {
        let _ = writeln!(g, "  run{i} [label=\"run {}: {}\", style=rounded];", i + 1, esc(&describe_crash(o)));
        for (k, d) in o.defs.iter().enumerate() {
            let _ = writeln!(g, "  def{i}_{k} [label=\"{}\"];", esc(&d.place));
            let _ = writeln!(g, "  run{i} -> def{i}_{k} [label=\"used {}\"];", esc(&d.location));
            if i + 1 < s.chain.len() {
                let _ = writeln!(g, "  def{i}_{k} -> run{} [label=\"suppressed\", style=dashed];", i + 1);
            }
        }
    }
    if let Verdict::RootCause(roots) = &s.verdict {
        for (k, r) in roots.iter().enumerate() {
            let _ = writeln!(g, "  root{k} [label=\"first point of memory corruption:\\n{}\", penwidth=2];", esc(&r.place));
        }
    }
    g.push_str("}\n");
    g
}
