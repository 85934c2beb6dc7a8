//! The HTML report (`--html=FILE`): one self-contained page (no scripts, no fetched files)
//! that a person opens in a browser: every root cause with its members and crash sites, and
//! its first member's chain of runs drawn as a graph (inline SVG), then the inputs without a
//! root cause. Made with `maud`, which escapes every value it puts in the page.

use super::model::{self, Group, Input, Triage};
use maud::{html, Markup, PreEscaped, DOCTYPE};

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:70em}\
section.group{border:1px solid #bbb;border-radius:6px;padding:0 1em 1em;margin:1em 0}\
.new{background:#c00;color:#fff;padding:0 .4em;border-radius:3px;font-size:.8em;margin-left:.5em}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}\
code{background:#eee;padding:0 .2em}svg text{font:12px sans-serif}";

/// The page.
pub fn page(t: &Triage) -> String {
    let new = |g: &Group| t.comparison.as_ref().is_some_and(|c| c.new.contains(&g.fingerprint));
    let input = |path: &String| t.inputs.iter().find(|i| &i.path == path);
    let without: Vec<&Input> = t.inputs.iter().filter(|i| i.group.is_none()).collect();
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "rtgrind triage: " (t.command.join(" ")) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { "rtgrind triage" }
                p { code { (t.command.join(" ")) } }
                p #summary { (t.inputs.len()) " inputs, " (t.groups.len()) " root causes, " (format!("{:.1}", t.seconds)) " s" }
                @if let Some(c) = &t.comparison {
                    p #comparison { "Against " code { (c.baseline) } ": " (c.new.len()) " new, " (c.fixed.len()) " fixed, " (c.unchanged.len()) " unchanged." }
                }
                @for (k, g) in t.groups.iter().enumerate() {
                    section.group id=(format!("group-{}", g.fingerprint)) {
                        h2 {
                            "Root cause " (k + 1) ": " (g.place)
                            @if new(g) { span.new { "new" } }
                        }
                        p { "Fingerprint " code { (g.fingerprint) } " (" (g.what) "). "
                            (g.members.len()) " inputs, " (g.crash_sites.len()) " crash sites; "
                            (model::checks(g)) " (no failure with the root cause suppressed from the start)." }
                        h3 { "Crash sites" }
                        ul.sites { @for s in &g.crash_sites { li { (s) } } }
                        h3 { "Inputs" }
                        table.members {
                            tr { th { "input" } th { "crash" } th { "failed runs" } th { "confirmed" } }
                            @for m in &g.members {
                                @let i = input(m);
                                tr {
                                    td { (m) }
                                    td { (i.and_then(|i| i.crash.clone()).unwrap_or_default()) }
                                    td { (i.map_or(String::new(), |i| format!("{} of {}", i.failed_runs, i.runs))) }
                                    td { (match i.map(|i| (i.confirmed, i.unchecked.as_deref())) {
                                        Some((Some(true), _)) => "yes".to_string(),
                                        Some((Some(false), _)) => "no".to_string(),
                                        Some((None, Some(why))) => format!("not checked: {why}"),
                                        _ => "not checked".to_string(),
                                    }) }
                                }
                            }
                        }
                        @if let Some(first) = g.members.first().and_then(&input) {
                            h3 { "How it was found (" (first.path) ")" }
                            (chain(first, g))
                        }
                    }
                }
                @if !without.is_empty() {
                    section #others {
                        h2 { "Inputs without a root cause" }
                        table {
                            tr { th { "input" } th { "status" } th { "why" } }
                            @for i in &without {
                                tr { td { (i.path) } td { (i.status.describe()) } td { (i.reason.clone().unwrap_or_default()) } }
                            }
                        }
                    }
                }
            }
        }
    }
    .into_string()
}

/// An input's chain of runs as a graph: a box per run (what it suppressed, how it ended), an
/// arrow to the next, and the root cause last.
fn chain(input: &Input, g: &Group) -> Markup {
    let mut boxes: Vec<(String, String)> = Vec::new();
    if let Some(r) = &input.report {
        for s in &r.chain {
            let did = if s.suppressing_from.is_empty() { "original run".to_string() } else { format!("suppressing from {}", s.suppressing_from.join(", ")) };
            boxes.push((format!("run {}: {did}", s.run), s.crash.clone().unwrap_or_else(|| "no failure".into())));
        }
    }
    boxes.push(("root cause".into(), g.place.clone()));
    let (w, h, gap) = (760, 44, 26);
    let height = boxes.len() * (h + gap);
    html! {
        svg.chain xmlns="http://www.w3.org/2000/svg" width=(w) height=(height) role="img" {
            defs { marker #arrow markerWidth="8" markerHeight="8" refX="4" refY="4" orient="auto" { path d="M0,0 L8,4 L0,8 z" fill="#555" {} } }
            @for (k, (head, body)) in boxes.iter().enumerate() {
                @let y = k * (h + gap);
                rect x="1" y=(y + 1) width=(w - 2) height=(h) rx="5" fill=(if k + 1 == boxes.len() { "#fde" } else { "#eef" }) stroke="#557" {}
                text x="10" y=(y + 18) font-weight="bold" { (head) }
                text x="10" y=(y + 36) { (body) }
                @if k + 1 < boxes.len() {
                    line x1=(w / 2) y1=(y + h + 1) x2=(w / 2) y2=(y + h + gap - 2) stroke="#555" marker-end="url(#arrow)" {}
                }
            }
        }
    }
}
