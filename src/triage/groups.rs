//! Inputs grouped by root cause. A group is named by a fingerprint of its root cause that
//! stays the same when inputs come and go and when the program is rebuilt without changes to
//! that code: a hash of the module's file name, the function holding the root-cause
//! instruction and the instruction's offset in it (not in the module: other functions may
//! move), and its source line.

use super::corpus::text_hash;
use super::model::{Group, Input};
use crate::report::model::Finding;
use std::path::Path;

/// Hex digits of the hash a fingerprint keeps.
const FINGERPRINT_LEN: usize = 16;

/// What a root cause's fingerprint is made of ("records:add_record+0x4b:records.c:41"), for
/// the finding a search reported in `program` (the module its `offset` is in).
pub fn what(f: &Finding, program: &Path) -> String {
    if f.kind == "data race" {
        return race(f);
    }
    let line = f.place.split(" (").next().unwrap_or(&f.place);
    let offset = f.offset.as_deref().and_then(|o| u64::from_str_radix(o.trim_start_matches("0x"), 16).ok());
    match (&f.module, offset) {
        (Some(module), Some(offset)) => {
            let at = match crate::report::symbols::in_file(&program.to_string_lossy(), offset) {
                Some((_, Some((function, delta)))) => format!("{function}+{delta:#x}"),
                _ => format!("{offset:#x}"),
            };
            format!("{module}:{at}:{line}")
        }
        // (No instruction of the program: its line.)
        _ => line.to_string(),
    }
}

/// What a race's fingerprint is made of: the places of its writes ("race write
/// jobs.c:31 (closer)"). One unsynchronized write races with every access on the other side
/// of an atomicity violation (the check and the use); which of those races a failing schedule
/// shows first is the schedule's choice, the write is the bug's.
fn race(f: &Finding) -> String {
    let (later, earlier) = f.race_writes();
    let mut places: Vec<&str> =
        [(later, Some(&f.place)), (earlier, f.earlier_place.as_ref())].into_iter().filter_map(|(w, p)| Some(p?.as_str()).filter(|_| w)).collect();
    places.sort_unstable();
    places.dedup();
    format!("race write {}", places.join(" | "))
}

/// Where a root cause is, for people: a race's two places, a write first.
fn place(f: &Finding) -> String {
    match &f.earlier_place {
        Some(earlier) if f.kind == "data race" => {
            let (first, second) = if f.race_writes().0 { (&f.place, earlier) } else { (earlier, &f.place) };
            format!("data race of {first} and {second}")
        }
        _ => f.place.clone(),
    }
}

/// The fingerprint of what `what` says.
pub fn fingerprint(what: &str) -> String {
    text_hash(what)[..FINGERPRINT_LEN].to_string()
}

/// What each fingerprint is made of and where its root cause is reported.
pub type Known = std::collections::HashMap<String, (String, String)>;

/// The groups of `inputs` (in order of their first member), each input with a root cause
/// given its group's fingerprint. A member that still failed with its group's root cause
/// suppressed (`confirmed: Some(false)`) is in a group of its own, by where it failed.
pub fn group(inputs: &mut [Input], program: &Path) -> Vec<Group> {
    let mut known = Known::new();
    for input in inputs.iter_mut() {
        input.group = None;
        let Some(finding) = input.report.as_ref().filter(|_| input.status.has_root_cause()).and_then(|r| r.findings.first()) else { continue };
        let mut what = what(finding, program);
        if input.confirmed == Some(false) {
            what = format!("{what} | still failing at {}", input.crash.as_deref().unwrap_or("?"));
        }
        let fingerprint = fingerprint(&what);
        known.entry(fingerprint.clone()).or_insert((what, place(finding)));
        input.group = Some(fingerprint);
    }
    collect(inputs, &known)
}

/// The groups of inputs whose fingerprints are known, in order of their first member (by
/// `index`: the inputs' order in the whole triage, however they were split and merged).
pub fn collect(inputs: &[Input], known: &Known) -> Vec<Group> {
    let mut order: Vec<&Input> = inputs.iter().collect();
    order.sort_by_key(|i| i.index);
    let mut groups: Vec<Group> = Vec::new();
    for input in order {
        let Some((fingerprint, (what, place))) = input.group.as_ref().and_then(|f| known.get_key_value(f)) else { continue };
        let g = match groups.iter().position(|g| &g.fingerprint == fingerprint) {
            Some(i) => &mut groups[i],
            None => {
                groups.push(Group { fingerprint: fingerprint.clone(), what: what.clone(), place: place.clone(), ..Group::default() });
                groups.last_mut().expect("just pushed")
            }
        };
        g.members.push(input.path.clone());
        g.confirmed += usize::from(input.confirmed == Some(true));
        g.unchecked += usize::from(input.confirmed.is_none());
        if let Some(site) = input.crash.as_ref().filter(|s| !g.crash_sites.contains(s)) {
            g.crash_sites.push(site.clone());
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::{Finding, Report};
    use crate::triage::model::Status;

    /// Inputs with one root cause are one group in the order they came, with their crash
    /// sites once each; one that still failed with that root cause suppressed is apart.
    #[test]
    fn a_member_that_still_fails_is_a_group_of_its_own() {
        let finding = Finding { place: "a.c:7 (main)".into(), module: Some("a".into()), offset: Some("0x1139".into()), ..Finding::default() };
        let input = |index: usize, crash: &str, confirmed: Option<bool>| Input {
            path: format!("in/{index}"),
            index,
            status: Status::RootCause,
            crash: Some(crash.into()),
            confirmed,
            report: Some(Report { findings: vec![finding.clone()], ..Report::default() }),
            ..Input::default()
        };
        let mut inputs =
            vec![input(2, "SIGSEGV at a.c:9 (f)", Some(true)), input(0, "SIGSEGV at a.c:9 (f)", None), input(1, "SIGSEGV at a.c:12 (g)", Some(false))];
        let groups = group(&mut inputs, Path::new("/nonexistent"));
        assert_eq!(groups.len(), 2);
        assert_eq!((groups[0].members.clone(), groups[0].confirmed), (vec!["in/0".to_string(), "in/2".into()], 1));
        assert_eq!(groups[0].crash_sites, ["SIGSEGV at a.c:9 (f)"]);
        assert_eq!((groups[1].members.clone(), groups[1].what.as_str()), (vec!["in/1".to_string()], "a:0x1139:a.c:7 | still failing at SIGSEGV at a.c:12 (g)"));
        assert_ne!(groups[0].fingerprint, groups[1].fingerprint);
        assert_eq!(inputs[2].group.as_ref(), Some(&groups[1].fingerprint));
    }

    /// A race is named by its writes: the clearing write's race with the check and its race
    /// with the use are one root cause, a race of another write another.
    #[test]
    fn races_with_one_write_have_one_fingerprint() {
        let race = |later: &str, access: &str, earlier: &str, earlier_access: &str| Finding {
            kind: "data race".into(),
            place: later.into(),
            access: Some(access.into()),
            earlier_place: Some(earlier.into()),
            earlier_access: Some(earlier_access.into()),
            ..Finding::default()
        };
        let p = Path::new("/nonexistent");
        let check = race("j.c:20 (reader)", "read of 8 bytes by thread 1", "j.c:31 (closer)", "write of 8 bytes by thread 2");
        let used = race("j.c:31 (closer)", "write of 8 bytes by thread 2", "j.c:22 (reader)", "read of 8 bytes by thread 1");
        let other = race("j.c:20 (reader)", "read of 8 bytes by thread 1", "j.c:36 (reloader)", "write of 8 bytes by thread 3");
        assert_eq!(what(&check, p), "race write j.c:31 (closer)");
        assert_eq!(fingerprint(&what(&check, p)), fingerprint(&what(&used, p)));
        assert_ne!(fingerprint(&what(&check, p)), fingerprint(&what(&other, p)));
    }
}
