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
        // (No instruction of the program: its line, and the other access for a race.)
        _ => match &f.earlier_place {
            Some(other) => format!("{line}|{}", other.split(" (").next().unwrap_or(other)),
            None => line.to_string(),
        },
    }
}

/// The fingerprint of what `what` says.
pub fn fingerprint(what: &str) -> String {
    text_hash(what)[..FINGERPRINT_LEN].to_string()
}

/// The groups of `inputs` (in order of their first member), each input with a root cause
/// given its group's fingerprint.
pub fn group(inputs: &mut [Input], program: &Path) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for input in inputs.iter_mut() {
        let Some(finding) = input.report.as_ref().filter(|_| input.status.has_root_cause()).and_then(|r| r.findings.first()) else { continue };
        let what = what(finding, program);
        let fingerprint = fingerprint(&what);
        input.group = Some(fingerprint.clone());
        let g = match groups.iter().position(|g| g.fingerprint == fingerprint) {
            Some(i) => &mut groups[i],
            None => {
                groups.push(Group { fingerprint, what, place: finding.place.clone(), ..Group::default() });
                groups.last_mut().expect("just pushed")
            }
        };
        g.members.push(input.path.clone());
        if let Some(site) = input.crash.as_ref().filter(|s| !g.crash_sites.contains(s)) {
            g.crash_sites.push(site.clone());
        }
    }
    groups
}
