//! `rtgrind schema report|triage [--markdown]`: the JSON Schema of a search's `--json` report or
//! of a triage's `triage.json`, made by schemars from the models' types and doc comments (what
//! `docs/schemas/` holds and a consumer validates with), or the same as Markdown tables, a
//! row per field (what `docs/REPORTS.md` holds). Tests check both are the files'.

use serde_json::Value;

/// Runs `rtgrind schema WHICH [--markdown]`: the exit status.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let args: Vec<&str> = args.iter().map(|a| a.to_str().unwrap_or("")).collect();
    let (which, markdown) = match args.as_slice() {
        [which] => (*which, false),
        [which, "--markdown"] => (*which, true),
        _ => ("", false),
    };
    let schema = match which {
        "report" => schemars::schema_for!(super::model::Report),
        "triage" => schemars::schema_for!(crate::triage::model::Triage),
        _ => {
            return crate::cli::command_error(
                "schema: say which: 'report' (a search's --json) or 'triage' (triage.json) (usage: rtgrind schema report|triage [--markdown])",
            )
        }
    };
    let value = serde_json::to_value(&schema).expect("a schema serializes");
    if markdown {
        // (A triage's tables leave out the report's objects, which the report's tables have.)
        let report = serde_json::to_value(schemars::schema_for!(super::model::Report)).expect("a schema serializes");
        let mut known: Vec<String> = report["definitions"].as_object().map(|d| d.keys().cloned().collect()).unwrap_or_default();
        known.push("Report".into());
        let known = if which == "triage" { known } else { Vec::new() };
        print!("{}", tables(&value, &known));
    } else {
        println!("{}", serde_json::to_string_pretty(&value).expect("a schema serializes"));
    }
    0
}

/// The schema's objects as Markdown: a heading and a table of fields each, the top one first;
/// not those named in `skip`.
fn tables(schema: &Value, skip: &[String]) -> String {
    let mut out = String::new();
    let title = schema["title"].as_str().unwrap_or("report");
    out += &table(title, schema);
    if let Some(defs) = schema["definitions"].as_object() {
        for (name, def) in defs {
            if def["properties"].is_object() && !skip.contains(name) {
                out += &table(name, def);
            }
        }
    }
    out
}

fn table(name: &str, object: &Value) -> String {
    let required: Vec<&str> = object["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let mut out = format!("### {name}\n\n");
    if let Some(d) = object["description"].as_str() {
        out += &format!("{}\n\n", one_line(d));
    }
    out += "| field | type | always there | what it is |\n|---|---|---|---|\n";
    for (field, p) in object["properties"].as_object().into_iter().flatten() {
        let always = if required.contains(&field.as_str()) { "yes" } else { "no" };
        out += &format!("| `{field}` | {} | {always} | {} |\n", kind(p), one_line(p["description"].as_str().unwrap_or("")));
    }
    out + "\n"
}

/// A field's type as a reader says it: `string`, `array of Finding`, `Step or null`.
fn kind(p: &Value) -> String {
    if let Some(r) = p["$ref"].as_str() {
        return r.rsplit('/').next().unwrap_or(r).to_string();
    }
    if let Some(any) = p["anyOf"].as_array().or(p["allOf"].as_array()) {
        return any.iter().map(kind).collect::<Vec<_>>().join(" or ");
    }
    let types: Vec<String> = match &p["type"] {
        Value::String(t) => vec![t.clone()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => vec!["any".into()],
    };
    let items = |t: &String| match (t.as_str(), &p["items"]) {
        ("array", Value::Array(tuple)) => format!("[{}]", tuple.iter().map(kind).collect::<Vec<_>>().join(", ")),
        ("array", items) if items.is_object() => format!("array of {}", kind(items)),
        ("object", _) if p["additionalProperties"].is_object() => format!("map to {}", kind(&p["additionalProperties"])),
        _ => t.clone(),
    };
    types.iter().map(items).collect::<Vec<_>>().join(" or ")
}

/// A description in one table cell.
fn one_line(d: &str) -> String {
    d.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}
