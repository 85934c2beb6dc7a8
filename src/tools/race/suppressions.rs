//! `--suppressions=FILE`: races to leave out of the report, in the conventions users know from
//! ThreadSanitizer (`race:PATTERN` lines) and helgrind (`{ name  Helgrind:Race  fun:NAME ... }`
//! blocks, of which the `fun:`, `obj:` and `src:` lines are read). A pattern (`*` and `?` as
//! in a shell) names a function, a source file (by name or path), a `file:line`, or the module
//! of code without line information; a race is left out when either of its accesses matches.

/// The patterns of a suppressions file.
#[derive(Debug, Default)]
pub struct Suppressions {
    patterns: Vec<String>,
}

impl Suppressions {
    /// Reads FILE; a line that is neither a comment nor a suppression is an error, by number.
    pub fn load(path: &std::path::Path) -> Result<Suppressions, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read suppressions '{}': {e}", path.display()))?;
        Suppressions::parse(&text).map_err(|e| format!("bad suppressions '{}': {e}", path.display()))
    }

    fn parse(text: &str) -> Result<Suppressions, String> {
        let mut patterns = Vec::new();
        let mut in_block = false;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if in_block {
                if line == "}" {
                    in_block = false;
                } else if let Some(p) = ["fun:", "obj:", "src:"].iter().find_map(|k| line.strip_prefix(k)) {
                    patterns.push(p.trim().to_string());
                }
                // The block's name, its kind and `...` frames say nothing a pattern needs.
                continue;
            }
            if line == "{" {
                in_block = true;
            } else if let Some(p) = line.strip_prefix("race:").filter(|p| !p.trim().is_empty()) {
                patterns.push(p.trim().to_string());
            } else if !line.contains(':') || line.split(':').next().is_some_and(|kind| kind.contains(' ')) {
                return Err(format!("line {}: expected `race:PATTERN` or a `{{ ... }}` block, found `{line}`", n + 1));
            }
            // Other kinds of TSan suppressions (`thread:`, `mutex:`, ...) are not races: skipped.
        }
        if in_block {
            return Err("a `{` block is not closed".into());
        }
        Ok(Suppressions { patterns })
    }

    /// Whether a place as the report writes it ("a.c:12 (f)", "0x1a2b in prog") matches.
    pub fn matches(&self, place: &str) -> bool {
        let names = names(place);
        self.patterns.iter().any(|p| names.iter().any(|n| glob(p, n)))
    }
}

/// What a pattern may name in a place: the function, the file (path and name), `file:line`
/// (both ways), the module.
fn names(place: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((at, rest)) = place.split_once(" (") {
        out.push(rest.trim_end_matches(')').to_string());
        out.push(at.to_string());
        if let Some((file, line)) = at.rsplit_once(':') {
            let base = file.rsplit('/').next().unwrap_or(file);
            out.extend([file.to_string(), base.to_string(), format!("{base}:{line}")]);
        }
    } else if let Some((_, module)) = place.split_once(" in ") {
        let module = module.trim();
        out.extend([module.to_string(), module.rsplit('/').next().unwrap_or(module).to_string()]);
    }
    out
}

/// Shell-style match of `text` by `pattern` (`*` any run, `?` any one character).
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsan_and_helgrind_forms_name_functions_files_and_lines() {
        let s =
            Suppressions::parse("# known\nrace:bump\nrace:*/vendor/*\n{\n  mine\n  Helgrind:Race\n  fun:merge_*\n  ...\n}\nrace:log.c:12\nthread:x\n").unwrap();
        assert!(s.matches("counter.c:7 (bump)"));
        assert!(s.matches("/src/vendor/zlib.c:300 (deflate)"));
        assert!(s.matches("sort.c:40 (merge_tree)"));
        assert!(s.matches("/home/u/log.c:12 (append)"));
        assert!(!s.matches("/home/u/log.c:13 (append)"));
        assert!(!s.matches("main.c:3 (main)"));
        let m = Suppressions::parse("race:sort").unwrap();
        assert!(m.matches("0xb26c in sort") && !m.matches("0xb26c in xz"));
        assert!(Suppressions::parse("bump\n").is_err());
        assert!(Suppressions::parse("{\n fun:x\n").is_err());
    }

    #[test]
    fn globs_match_as_a_shell_does() {
        assert!(glob("a*c", "abbbc") && glob("*", "") && glob("a?c", "abc"));
        assert!(!glob("a*c", "abcd") && !glob("a?c", "ac"));
    }
}
