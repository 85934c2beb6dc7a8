//! The suppression search's report: text on stderr (`==PID== suppress:` lines), and on request
//! JSON or SARIF 2.1.0 on stdout and the chain of runs as a Graphviz graph.

use super::driver::{added_places, describe_crash, failure_before, Search, Verdict};
use crate::report::model::{Finding, Report, Step, Used, VERSION};
use crate::tools::sarif;

/// The SARIF rule of the search's findings.
const RULE: sarif::Rule = sarif::Rule {
    id: "first-point-of-memory-corruption",
    description: "The first point of memory corruption behind a crash, found by execution suppression",
    help: "Fix the write at this line (or the value it stores): suppressing it from here on made the run end without the failure. The code flow is the chain of runs: each run's failure, and what it used.",
};
use crate::tools::output::Output;

pub fn emit(s: &Search, command: &[std::ffi::OsString], output: &Output, pid: u32) {
    if let Verdict::CannotRun(_, line) = &s.verdict {
        // rtgrind's own one-line error, as for any other tool.
        eprintln!("{line}");
        return;
    }
    crate::tools::output::emit(&model(s, command), RULE, output, |line| eprintln!("=={pid}== {line}"));
}

/// The search as the one report model (`report::model`).
pub fn model(s: &Search, command: &[std::ffi::OsString]) -> Report {
    let (result, reason) = match &s.verdict {
        Verdict::NoFailure if s.redzones.is_some() => {
            let layouts = match &s.layouts_tried {
                Some(tried) => format!(", nor under other layouts of its globals, frames and heap blocks ({tried})"),
                None => " (layouts of its globals, frames and heap blocks were not tried: the program's file cannot be read, or --layout was given)".into(),
            };
            ("no-failure", format!("the program did not fail (no crash), with heap redzones either (16 bytes after each block, checked at free, realloc and the end of the run){layouts}; nothing to find."))
        }
        Verdict::NoFailure => ("no-failure", "the program did not fail (no crash); nothing to find (--reorder=no: heap redzones were not tried).".to_string()),
        Verdict::NotReproducible(a, b, how) => {
            ("not-reproducible", format!("the failure does not reproduce in repeatable mode: run 1: {a}; run 2: {b}; they differ in {how}"))
        }
        Verdict::RootCause(_) => ("root-cause", String::new()),
        Verdict::Inconclusive(why) => ("inconclusive", why.clone()),
        Verdict::CannotRun(_, line) => ("cannot-run", line.clone()),
    };
    let main = s.chain.first().map_or((0, 0), |(_, o)| o.main);
    let program = command.first().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let module = std::path::Path::new(&program).file_name().map(|n| n.to_string_lossy().into_owned());
    // (The program's instruction: a library's is named by the program's call.)
    let in_program = |pc: u64, site: u64| Some(if site != 0 { site } else { pc }).filter(|a| (main.0..main.1).contains(a)).map(|a| a - main.0);
    let findings = match &s.verdict {
        Verdict::RootCause(roots) => roots
            .iter()
            .map(|r| Finding {
                module: in_program(r.point.pc, r.point.site).and(module.clone()),
                offset: in_program(r.point.pc, r.point.site).map(|o| format!("{o:#x}")),
                kind: "first point of memory corruption".into(),
                place: r.place.clone(),
                message: format!("first point of memory corruption: `{}` at {} ({} runs)", r.instruction, r.place, s.runs),
                own_place: Some(r.own_place.clone()),
                instruction: Some(r.instruction.clone()),
                pc: format!("{:#x}", r.point.pc),
                frames: r.frames.clone(),
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
            how: suppressed_how(added),
            crash: o.crash.as_ref().map(|_| describe_crash(o)),
            stopped: o.stopped.clone(),
            used: o.defs.iter().map(|d| Used { location: d.location.clone(), defined_at: d.place.clone() }).collect(),
            suppressed: o.suppressed.iter().cloned().collect(),
        })
        .collect();
    Report {
        tool: "suppress".into(),
        result: result.into(),
        schema: VERSION,
        command: command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        reason,
        findings,
        runs: s.runs,
        traced_again: s.traced_again,
        seconds: (s.seconds * 1000.0).round() / 1000.0,
        chain,
        layout: layout_text(s),
        failure: s.chain.first().and_then(|(_, o)| failure_site(o, &program)),
        ..Report::default()
    }
}

/// Where the original run failed, its calls said by their source lines.
fn failure_site(o: &super::plan::Outcome, program: &str) -> Option<crate::report::model::FailureSite> {
    let c = o.crash.as_ref()?;
    // (A return address, as a file address, less one: the call's line.)
    let first_vaddr = crate::report::symbols::in_file(program, 0).map_or(0, |f| f.0);
    let lines = crate::report::lines::places(program, c.stack.iter().map(|r| r.wrapping_sub(1).wrapping_sub(o.main.0) + first_vaddr));
    let stack: Vec<String> = c.stack.iter().zip(lines).map(|(r, l)| l.unwrap_or_else(|| format!("{r:#x}"))).collect();
    let call = stack.first().filter(|_| !(o.main.0..o.main.1).contains(&c.pc)).cloned();
    let (signal, place, call) = match c.signal {
        // (Found on entry to the allocator: said where the program called it.)
        super::run::REDZONE_FAILURE => ("heap redzone overwritten".to_string(), stack.first().cloned().unwrap_or_else(|| c.place.clone()), None),
        s if s < 0 => (c.place.clone(), c.place.clone(), call),
        s => (crate::report::signal_name(s), c.place.clone(), call),
    };
    let frames = crate::report::lines::SourceLines::default().stack(&c.frames, &o.modules);
    Some(crate::report::model::FailureSite { signal, place, pc: format!("{:#x}", c.pc), call, stack, frames })
}

/// The layouts the runs had: heap redzones from some run on; each layout found, from some run
/// on; what the last layout search tried in vain.
fn layout_text(s: &Search) -> Option<String> {
    let zones = s.redzones.map(|(n, exposed)| {
        let zones = format!(
            "heap blocks had redzones, {} bytes after each, checked at free, realloc and the end of the run, and freed blocks were kept from reuse",
            super::redzones::REDZONE
        );
        match exposed {
            true => format!("from run {n} on, {zones}: run {} did not fail without them", n - 1),
            false => format!("run {n} was run {} again but its {zones}: it did not fail either", n - 1),
        }
    });
    let found =
        s.layouts.iter().map(|(n, file, pairs, tried)| format!("from run {n} on, the variables had the layout in {file}: {pairs}, found after {tried}"));
    let in_vain = match &s.layouts_tried {
        Some(tried) if !matches!(s.verdict, Verdict::NoFailure) => {
            let again = if s.layouts.is_empty() { "" } else { " (searched again from a run under the last layout found)" };
            Some(format!("no layout of globals, frames and heap blocks made the last run fail{again}: {tried}"))
        }
        _ => None,
    };
    let both: Vec<String> = zones.into_iter().chain(found).chain(in_vain).collect();
    (!both.is_empty()).then(|| both.join("; "))
}

/// How a run suppressed the points it added, when all of them alike: every call from their
/// line, every instance, or the whole call.
fn suppressed_how(added: &[super::plan::Point]) -> Option<String> {
    let how = if added.is_empty() {
        return None;
    } else if added.iter().all(|p| p.call_site().is_some()) {
        "every-call"
    } else if added.iter().all(|p| p.instance == 0) {
        "every-instance"
    } else if added.iter().all(|p| p.call()) {
        "whole-call"
    } else {
        return None;
    };
    Some(how.into())
}
