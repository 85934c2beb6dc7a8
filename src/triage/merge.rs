//! `rtgrind triage merge RESULT...`: the results of a corpus's shards (`--shard=I/N`, each
//! run on its own machine: a CI matrix, a job array) combined into the one a single machine
//! would have made. Inputs go back into their order in the whole corpus (`Input::index`), and
//! groups are made again from the fingerprints the shards gave them; a group's check does not
//! depend on which member is first (its members share the root-cause instruction), so it holds.

use super::groups::{self, Known};
use super::model::Triage;
use super::{finish, read_triage};
use clap::Parser;
use std::ffi::OsString;
use std::path::PathBuf;

/// Combine the results of a corpus's shards into one.
#[derive(Parser, Debug)]
#[command(name = "rtgrind triage merge", version, about, after_help = "Example: rtgrind triage merge -o all shard-0 shard-1 shard-2")]
struct Options {
    #[command(flatten)]
    results: super::ResultOptions,

    /// The shards' results: their output directories or triage.json files.
    #[arg(required = true, value_name = "RESULT")]
    shards: Vec<PathBuf>,
}

pub fn main(args: &[OsString]) -> i32 {
    let opts: Options = match crate::cli::parse_command("triage merge", args, "rtgrind triage merge [-o OUT] RESULT...") {
        Ok(o) => o,
        Err(code) => return code,
    };
    match run(&opts) {
        Ok(code) => code,
        Err(e) => crate::cli::command_error(&format!("triage merge: {e}")),
    }
}

fn run(opts: &Options) -> Result<i32, String> {
    let parts: Vec<Triage> = opts.shards.iter().map(|p| read_triage(p)).collect::<Result<_, _>>()?;
    let first = &parts[0];
    if let Some((k, _)) = parts.iter().enumerate().find(|(_, p)| p.command != first.command || p.tool != first.tool) {
        return Err(format!("'{}' is a triage of another command or tool than '{}'", opts.shards[k].display(), opts.shards[0].display()));
    }
    let shards: Vec<(u64, u64)> = parts.iter().filter_map(|p| p.shard).collect();
    if let Some(&(_, n)) = shards.first() {
        let mut seen: Vec<u64> = shards.iter().filter(|s| s.1 == n).map(|s| s.0).collect();
        seen.sort_unstable();
        seen.dedup();
        if shards.len() != parts.len() || seen.len() != parts.len() || seen.len() as u64 != n {
            let missing: Vec<String> = (0..n).filter(|i| !seen.contains(i)).map(|i| format!("{i}/{n}")).collect();
            return Err(format!(
                "the results are not the {n} shards of one corpus, each once (missing: {})",
                if missing.is_empty() { "none".into() } else { missing.join(", ") }
            ));
        }
    }
    let (outputs, baseline) = opts.results.prepare()?;
    let known: Known = parts.iter().flat_map(|p| &p.groups).map(|g| (g.fingerprint.clone(), (g.what.clone(), g.place.clone()))).collect();
    let mut inputs: Vec<_> = parts.iter().flat_map(|p| p.inputs.iter().cloned()).collect();
    inputs.sort_by_key(|i| i.index);
    if inputs.windows(2).any(|w| w[0].index == w[1].index) {
        return Err("an input is in two of the results".into());
    }
    let mut triage = Triage {
        schema: super::model::VERSION,
        tool: first.tool.clone(),
        command: first.command.clone(),
        groups: groups::collect(&inputs, &known),
        inputs,
        shard: None,
        comparison: None,
        seconds: parts.iter().map(|p| p.seconds).sum(),
    };
    finish(&mut triage, baseline.as_ref().zip(opts.results.baseline.as_deref()), &outputs)
}
