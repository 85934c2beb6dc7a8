//! A test suite, the input of the test-suite tools (`--tool=spectra`): the program's tests,
//! each its arguments, standard input, working directory and what it must give (an expected
//! standard output, an exit status, or an oracle command that judges the output).
//!
//! Two forms: `--suite=FILE`, one JSON object a line (`name`, `args`, `stdin`,
//! `expected_stdout`, `expected_exit`, `cwd`, `oracle`; paths relative to FILE's directory), and
//! `--suite-dir=DIR`, a directory per test holding `cmd` (the arguments, one a line), `stdin`
//! (optional), `expected` (the standard output) and `exit` (optional, the exit status if not 0).
//! A suite file's test runs in the file's directory unless its `cwd` says otherwise; a suite
//! directory's in rtgrind's. A test gives an oracle command, an expected output, an exit status
//! or several: all it gives must hold (`tools::oracle`).

use super::oracle::Oracle;
use super::search::{Ran, Request, RunOutcome, Runner, Search, Step, TestRun};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One line of a `--suite` file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    name: String,
    #[serde(default)]
    args: Vec<String>,
    stdin: Option<PathBuf>,
    expected_stdout: Option<PathBuf>,
    expected_exit: Option<i32>,
    cwd: Option<PathBuf>,
    oracle: Option<String>,
}

/// A test of the suite, its files resolved.
#[derive(Clone, Debug)]
pub struct Test {
    pub name: String,
    pub args: Vec<OsString>,
    pub stdin: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    /// What it must give: its standard output, its exit status (0 unless given, when no oracle
    /// command is), an oracle command's verdict (`tools::oracle`, the judge of every search).
    pub judge: Oracle,
}

impl Test {
    /// Whether the run passes (a run ended by its budget or its time limit fails).
    pub fn passes(&self, run: &RunOutcome) -> bool {
        self.judge.judges(&run.stdout, &run.stderr, &run.ending)
    }

    /// How the test runs: its arguments, input (none: /dev/null) and directory.
    pub fn run(&self) -> TestRun {
        TestRun { args: self.args.clone(), stdin: self.stdin.clone().unwrap_or_else(|| "/dev/null".into()), cwd: self.cwd.clone() }
    }

    /// A run of the test under rtgrind's `args` (the tool's run of it), its log kept, within
    /// `time`.
    pub fn request(&self, args: Vec<OsString>, time: Duration, progress: String) -> Request {
        let mut r = Request { args, progress, test: Some(self.run()), ..Request::default() };
        r.limits.log = true;
        r.limits.time = Some(time);
        r
    }

    /// The outcome of the test's run, or why the test cannot be used (rtgrind could not run
    /// it, or refused it).
    pub fn outcome<'r>(&self, ran: &'r Ran) -> Result<&'r RunOutcome, String> {
        let run = ran.outcome.as_ref().map_err(|e| format!("test '{}': cannot run it: {e}", self.name))?;
        match run.error() {
            Some(e) => Err(format!("test '{}': {}", self.name, e.trim_start_matches("rtgrind: error: "))),
            None => Ok(run),
        }
    }
}

/// The first search of every test-suite tool: each test runs once, in one batch, under the
/// rtgrind arguments `args` gives for its index (its files named in the search's directory).
pub struct EveryTest<'a, F> {
    pub tests: &'a [Test],
    pub timeout: Duration,
    pub args: F,
    asked: bool,
}

impl<'a, F: Fn(&Runner, usize) -> Vec<OsString>> EveryTest<'a, F> {
    pub fn new(tests: &'a [Test], timeout: Duration, args: F) -> Self {
        EveryTest { tests, timeout, args, asked: false }
    }
}

impl<F: Fn(&Runner, usize) -> Vec<OsString>> Search for EveryTest<'_, F> {
    type Verdict = Vec<Ran>;

    fn next(&mut self, runner: &Runner, ran: Vec<Ran>) -> Step<Vec<Ran>> {
        if std::mem::replace(&mut self.asked, true) {
            return Step::Done(ran);
        }
        Step::Batch(self.tests.iter().enumerate().map(|(i, t)| t.request((self.args)(runner, i), self.timeout, format!("test {}", t.name))).collect())
    }
}

/// What a test says it must give: a judge, unless it says nothing.
fn judge(expected_stdout: Option<Vec<u8>>, expected_exit: Option<i32>, command: Option<String>, cwd: Option<PathBuf>) -> Option<Oracle> {
    if expected_stdout.is_none() && expected_exit.is_none() && command.is_none() {
        return None;
    }
    let exit = expected_exit.or(command.is_none().then_some(0));
    Some(Oracle { output: expected_stdout, stderr: None, exit, command, cwd })
}

/// Reads a `--suite` file: one JSON object a line (blank lines and lines starting with `#` are
/// skipped). An error names the file and line.
pub fn from_file(path: &Path) -> Result<Vec<Test>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the suite '{}': {e}", path.display()))?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tests = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |what: String| format!("suite '{}' line {}: {what}", path.display(), n + 1);
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let l: Line = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        let file = |p: &Option<PathBuf>, what: &str| -> Result<Option<PathBuf>, String> {
            let Some(p) = p else { return Ok(None) };
            let p = dir.join(p);
            if !p.exists() {
                return Err(at(format!("its {what} '{}' does not exist", p.display())));
            }
            Ok(Some(p))
        };
        let expected_stdout = match file(&l.expected_stdout, "expected_stdout")? {
            Some(p) => Some(std::fs::read(&p).map_err(|e| at(format!("cannot read '{}': {e}", p.display())))?),
            None => None,
        };
        // (A test runs in the suite file's directory unless it says where.)
        let cwd = file(&l.cwd, "cwd")?.unwrap_or(dir.to_path_buf());
        let cwd = Some(std::fs::canonicalize(&cwd).unwrap_or(cwd));
        let judge = judge(expected_stdout, l.expected_exit, l.oracle, cwd.clone())
            .ok_or_else(|| at(format!("test '{}' says nothing of what it must give (expected_stdout, expected_exit or oracle)", l.name)))?;
        let test = Test { args: l.args.into_iter().map(OsString::from).collect(), stdin: file(&l.stdin, "stdin")?, cwd, judge, name: l.name };
        tests.push(test);
    }
    check(tests, &path.display().to_string())
}

/// Reads a `--suite-dir`: each subdirectory (in name order) is a test named after it.
pub fn from_dir(dir: &Path) -> Result<Vec<Test>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read the suite directory '{}': {e}", dir.display()))?;
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    let mut tests = Vec::new();
    for d in dirs {
        let name = d.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let read = |f: &str| std::fs::read(d.join(f)).map_err(|e| format!("suite directory '{}': test '{name}': cannot read its {f}: {e}", dir.display()));
        let cmd = String::from_utf8_lossy(&read("cmd")?).into_owned();
        let stdin = d.join("stdin");
        let exit = match std::fs::read_to_string(d.join("exit")) {
            Ok(t) => Some(t.trim().parse::<i32>().map_err(|_| format!("suite directory '{}': test '{name}': its exit is not a number", dir.display()))?),
            Err(_) => None,
        };
        let judge = judge(Some(read("expected")?), exit, None, None).unwrap_or_default();
        tests.push(Test { args: cmd.lines().map(OsString::from).collect(), stdin: stdin.exists().then_some(stdin), cwd: None, judge, name });
    }
    check(tests, &dir.display().to_string())
}

/// A suite has tests, with names told apart.
fn check(tests: Vec<Test>, from: &str) -> Result<Vec<Test>, String> {
    if tests.is_empty() {
        return Err(format!("the suite '{from}' has no test"));
    }
    let mut names = std::collections::HashSet::new();
    if let Some(t) = tests.iter().find(|t| !names.insert(t.name.as_str())) {
        return Err(format!("the suite '{from}' has two tests named '{}'", t.name));
    }
    Ok(tests)
}

/// A test-suite tool's search set up (spectra, cbi, vr): the suite its options give, the program
/// by its absolute path (tests may run in directories of their own) and the runner of its runs.
pub struct SuiteSearch {
    pub tests: Vec<Test>,
    pub program: PathBuf,
    pub command: Vec<OsString>,
    pub runner: super::search::Runner,
    start: std::time::Instant,
}

impl SuiteSearch {
    pub fn new(cli: &crate::cli::Cli, tool: &str) -> Result<SuiteSearch, super::Error> {
        let tests = cli.spectra.tests(tool)?;
        let program = crate::resolve(&cli.command[0]);
        if !program.is_file() {
            return Err(super::Error { message: format!("{}: no such file", cli.command[0].to_string_lossy()), code: 127 });
        }
        let program = std::fs::canonicalize(&program).unwrap_or(program);
        let mut command = cli.command.clone();
        command[0] = program.clone().into_os_string();
        let options = cli.run_options.iter().map(Into::into).collect();
        let mut runner = super::search::Runner::with(tool, command.clone(), options, cli.seed, Some("/dev/null".into()))
            .map_err(|e| super::Error::internal(e.to_string()))?;
        runner.jobs = cli.switch.jobs as usize;
        runner.progress = super::progress::Progress::of(cli, tool);
        crate::log_to_file(cli);
        Ok(SuiteSearch { tests, program, command, runner, start: std::time::Instant::now() })
    }

    /// The program's path as the runs' memory maps name it.
    pub fn program_name(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }

    /// Puts the search's command, time and runs in its report.
    pub fn finish(&self, report: &mut crate::report::model::Report) {
        report.command = self.command.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        report.seconds = self.start.elapsed().as_secs_f64();
        report.runs = self.runner.runs;
    }
}

/// A ranking's exit status: `--error-exitcode` with one, 2 when the suite could not be ranked.
pub fn exit_status(cli: &crate::cli::Cli, report: &crate::report::model::Report) -> i32 {
    match report.result.as_str() {
        "found" => cli.search.error_exitcode,
        _ => crate::EXIT_USAGE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suite_file_resolves_paths_and_refuses_what_it_cannot_use() {
        let dir = std::env::temp_dir().join(format!("rtgrind-suite-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("t")).unwrap();
        std::fs::write(dir.join("t/out"), "7\n").unwrap();
        std::fs::write(dir.join("t/in"), "3 4\n").unwrap();
        let file = dir.join("suite.jsonl");
        std::fs::write(
            &file,
            "# a comment\n{\"name\":\"a\",\"args\":[\"-x\"],\"stdin\":\"t/in\",\"expected_stdout\":\"t/out\"}\n\n{\"name\":\"b\",\"expected_exit\":3}\n",
        )
        .unwrap();
        let tests = from_file(&file).unwrap();
        assert_eq!(tests.len(), 2);
        assert_eq!(
            (tests[0].args.clone(), tests[0].stdin.clone(), tests[0].judge.output.clone()),
            (vec![OsString::from("-x")], Some(dir.join("t/in")), Some(b"7\n".to_vec()))
        );
        assert_eq!((tests[0].judge.exit, tests[1].judge.exit, tests[1].judge.output.clone()), (Some(0), Some(3), None));
        for (bad, says) in [
            ("{\"name\":\"a\",\"expected_exit\":0,\"colour\":1}", "line 1: unknown field `colour`"),
            ("{\"name\":\"a\",\"expected_stdout\":\"nope\"}", "line 1: its expected_stdout"),
            ("{\"name\":\"a\"}", "line 1: test 'a' says nothing"),
            ("{\"name\":\"a\",\"expected_exit\":0}\n{\"name\":\"a\",\"expected_exit\":1}", "two tests named 'a'"),
            ("", "has no test"),
            ("not json", "line 1: expected"),
        ] {
            std::fs::write(&file, bad).unwrap();
            let e = from_file(&file).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        std::fs::create_dir_all(dir.join("d/t2")).unwrap();
        std::fs::create_dir_all(dir.join("d/t1")).unwrap();
        std::fs::write(dir.join("d/t1/cmd"), "1\n2\n").unwrap();
        std::fs::write(dir.join("d/t1/expected"), "3\n").unwrap();
        std::fs::write(dir.join("d/t2/cmd"), "5\n").unwrap();
        assert!(from_dir(&dir.join("d")).unwrap_err().contains("test 't2': cannot read its expected"));
        std::fs::write(dir.join("d/t2/expected"), "5\n").unwrap();
        std::fs::write(dir.join("d/t2/exit"), "x\n").unwrap();
        assert!(from_dir(&dir.join("d")).unwrap_err().contains("test 't2': its exit is not a number"));
        std::fs::write(dir.join("d/t2/exit"), "3\n").unwrap();
        let tests = from_dir(&dir.join("d")).unwrap();
        assert_eq!((tests[0].judge.exit, tests[1].judge.exit), (Some(0), Some(3)));
        assert_eq!(tests.iter().map(|t| (t.name.as_str(), t.args.len())).collect::<Vec<_>>(), [("t1", 2), ("t2", 1)]);
        let _ = std::fs::remove_dir_all(dir);
    }
}
