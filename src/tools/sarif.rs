//! What the searches print for machines: JSON strings and SARIF 2.1.0 documents.

use std::fmt::Write as _;

/// A JSON string literal.
pub fn js(v: &str) -> String {
    let mut o = String::from("\"");
    for c in v.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// `("file", line)` of a "file:line (function)" place.
pub fn file_line(place: &str) -> Option<(String, u64)> {
    let loc = place.split(" (").next()?;
    let (file, line) = loc.rsplit_once(':')?;
    Some((file.to_string(), line.parse().ok()?))
}

/// A SARIF 2.1.0 document with one rule and a result (error) per (message, place).
pub fn document(rule: &str, description: &str, results: &[(String, String)]) -> String {
    let results: Vec<String> = results
        .iter()
        .map(|(msg, place)| {
            let loc = match file_line(place) {
                Some((f, l)) => format!("[{{\"physicalLocation\":{{\"artifactLocation\":{{\"uri\":{}}},\"region\":{{\"startLine\":{l}}}}}}}]", js(&f)),
                None => "[]".into(),
            };
            format!("{{\"ruleId\":{},\"level\":\"error\",\"message\":{{\"text\":{}}},\"locations\":{loc}}}", js(rule), js(msg))
        })
        .collect();
    format!(
        "{{\"version\":\"2.1.0\",\"$schema\":\"https://json.schemastore.org/sarif-2.1.0.json\",\"runs\":[{{\"tool\":{{\"driver\":{{\"name\":\"rtgrind\",\"version\":\"{}\",\"rules\":[{{\"id\":{},\"shortDescription\":{{\"text\":{}}}}}]}}}},\"results\":[{}]}}]}}",
        env!("CARGO_PKG_VERSION"),
        js(rule),
        js(description),
        results.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(js("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
    }

    #[test]
    fn places_split_into_file_and_line() {
        assert_eq!(file_line("copy_paste.c:15 (main)"), Some(("copy_paste.c".into(), 15)));
        assert_eq!(file_line("strlen+0x10 in libc.so.6"), None);
    }
}
