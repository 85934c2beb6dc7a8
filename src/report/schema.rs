//! `rtgrind schema report|triage`: the JSON Schema of a search's `--json` report or of a
//! triage's `triage.json`, made by schemars from the models' types and doc comments. What
//! `docs/schemas/` holds (a test checks they are the same) and what a consumer validates with.

/// Runs `rtgrind schema WHICH`: the exit status.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let schema = match args.first().and_then(|a| a.to_str()) {
        Some("report") if args.len() == 1 => schemars::schema_for!(super::model::Report),
        Some("triage") if args.len() == 1 => schemars::schema_for!(crate::triage::model::Triage),
        _ => {
            return crate::cli::command_error("schema: say which: 'report' (a search's --json) or 'triage' (triage.json) (usage: rtgrind schema report|triage)")
        }
    };
    println!("{}", serde_json::to_string_pretty(&schema).expect("a schema serializes"));
    0
}
