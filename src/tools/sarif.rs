//! SARIF 2.1.0 documents of the searches' reports (`report::model`).

/// `("file", line)` of a "file:line (function)" place.
pub fn file_line(place: &str) -> Option<(String, u64)> {
    let loc = place.split(" (").next()?;
    let (file, line) = loc.rsplit_once(':')?;
    Some((file.to_string(), line.parse().ok()?))
}

/// The rule a tool's findings are results of.
pub struct Rule {
    pub id: &'static str,
    pub description: &'static str,
}

/// A SARIF 2.1.0 document of a report: one rule, and a result (error) per finding, at its
/// place's file and line where it has one.
pub fn document(rule: Rule, report: &crate::report::model::Report) -> String {
    let results: Vec<serde_json::Value> = report
        .findings
        .iter()
        .map(|f| {
            let locations: Vec<serde_json::Value> = file_line(&f.place)
                .map(|(uri, line)| serde_json::json!({"physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": line}}}))
                .into_iter()
                .collect();
            let mut result = serde_json::json!({"ruleId": rule.id, "level": "error", "message": {"text": f.message}, "locations": locations});
            // A race's two accesses, earlier first, as a code flow.
            if let (Some(earlier), Some(later)) = (f.earlier_place.as_deref().and_then(file_line), file_line(&f.place)) {
                let step = |(uri, line): (String, u64), what: &Option<String>| {
                    serde_json::json!({"location": {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": line}}, "message": {"text": what.clone().unwrap_or_default()}}})
                };
                let flow = [step(earlier, &f.earlier_access), step(later, &f.access)];
                result["codeFlows"] = serde_json::json!([{"threadFlows": [{"locations": flow}]}]);
            }
            result
        })
        .collect();
    let doc = serde_json::json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": {"name": "rtgrind", "version": env!("CARGO_PKG_VERSION"), "rules": [{"id": rule.id, "shortDescription": {"text": rule.description}}]}},
            "results": results,
        }],
    });
    doc.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_split_into_file_and_line() {
        assert_eq!(file_line("copy_paste.c:15 (main)"), Some(("copy_paste.c".into(), 15)));
        assert_eq!(file_line("strlen+0x10 in libc.so.6"), None);
    }
}
