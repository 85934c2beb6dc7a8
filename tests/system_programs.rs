//! System programs run natively and under `rtgrind -q`: identical stdout, stderr and exit status.
//! Also rtgrind's own options that change what it prints: `--log-file`, `--stats`, `--help`,
//! `--version`, and that everything after the program belongs to the guest.

use std::path::Path;
use std::process::Command;

use crate::common::{self, assert_exit, assert_no_panic, assert_same, run_native, run_rtgrind, Cmd, Input};

/// Runs `cmd` natively (which must exit with `code`) and under `rtgrind -q OPTS`; asserts the
/// runs are identical. Returns the native stdout.
fn same_as_native(cmd: &Cmd, extra_opts: &[&str], code: i32) -> Vec<u8> {
    let native = run_native(cmd);
    assert_exit(&native, code);
    let mut opts = vec!["-q"];
    opts.extend_from_slice(extra_opts);
    let rt = run_rtgrind(&opts, cmd);
    assert_same(&native, &rt);
    native.stdout
}

/// A command with a stable environment for tools whose output depends on the locale.
fn sys(program: &str) -> Cmd {
    assert!(Path::new(program).exists(), "{program} is not installed (see .ci/run)");
    Cmd::new(program).env("LC_ALL", "C").env("TZ", "UTC")
}

/// Issue 24: system programs run the same under 20 random layouts (stripped, they have no
/// symbols or DWARF to move: the layout must change nothing, and the layout machinery must
/// not get in the way).
#[test]
fn system_programs_under_random_layouts() {
    let input = common::scratch_dir("layouts-sort").join("in");
    std::fs::write(&input, (0..2000).map(|i| format!("{}\n", (i * 7919) % 1000)).collect::<String>()).unwrap();
    for seed in 1..=20 {
        let layout = format!("--layout=random:{seed}");
        same_as_native(&sys("/usr/bin/sort").args(["-n", input.to_str().unwrap()]), &[&layout], 0);
        same_as_native(&sys("/usr/bin/sha256sum").arg(input.to_str().unwrap()), &[&layout], 0);
        same_as_native(&sys("/usr/bin/ls").args(["-l", "/usr/bin/ls"]), &[&layout], 0);
    }
}

#[test]
fn ls_la_usr_bin() {
    let out = same_as_native(&sys("/usr/bin/ls").args(["-la", "/usr/bin"]), &[], 0);
    assert!(out.len() > 1000, "ls printed too little");
}

#[test]
fn sort_generated_input() {
    // 20,000 lines: below GNU sort's threshold for sorting with threads (128 Ki lines).
    let input = common::Rng::new(7).text(20_000);
    let out = same_as_native(&sys("/usr/bin/sort").stdin(input.clone()), &[], 0);
    let mut lines: Vec<&[u8]> = input.split_inclusive(|&b| b == b'\n').collect();
    lines.sort();
    assert!(out == lines.concat(), "native sort disagrees with Rust's sort of the same lines");
}

#[test]
fn sha256sum_generated_file() {
    let dir = common::scratch_dir("sha256sum");
    let mut rng = common::Rng::new(11);
    let data: Vec<u8> = (0..4 << 20).map(|_| rng.next() as u8).collect();
    std::fs::write(dir.join("data.bin"), &data).unwrap();
    let out = same_as_native(&sys("/usr/bin/sha256sum").arg("data.bin").cwd(&dir), &[], 0);
    assert!(out.ends_with(b"  data.bin\n"), "unexpected sha256sum output");
}

#[test]
fn gzip_compress_then_decompress() {
    let dir = common::scratch_dir("gzip");
    let text = common::Rng::new(3).text(60_000);
    let file = dir.join("input.txt");
    std::fs::write(&file, &text).unwrap();
    // The compressed stream itself is identical to native gzip's.
    same_as_native(&sys("/usr/bin/gzip").args(["-9", "-c"]).arg(&file), &[], 0);
    // `rtgrind gzip -9 -c FILE | rtgrind gzip -d` gives back the file.
    let rt = |args: &[&str]| {
        let mut c = Command::new(common::rtgrind_bin());
        c.arg("-q").arg("/usr/bin/gzip").args(args);
        c
    };
    let mut first = rt(&["-9", "-c"]);
    first.arg(&file);
    let (compress, decompress) = common::run_pipeline(first, Input::Null, rt(&["-d"]));
    for o in [&compress, &decompress] {
        assert_exit(o, 0);
        assert_no_panic(o);
        assert!(o.stderr.is_empty(), "unexpected stderr:\n{}", o.describe());
    }
    assert!(decompress.stdout == text, "the round trip through two rtgrind'ed gzips changed the data:\n{}", common::diff(&text, &decompress.stdout));
}

const PYTHON_SCRIPT: &str = r#"
import hashlib, json, math, re, sys

class Shape:
    def area(self):
        raise NotImplementedError(type(self).__name__)
    def describe(self):
        return f"{type(self).__name__} area={self.area():.4f}"

class Rect(Shape):
    def __init__(self, w, h):
        self.w, self.h = w, h
    def area(self):
        return self.w * self.h

class Square(Rect):
    def __init__(self, a):
        super().__init__(a, a)

class Circle(Shape):
    def __init__(self, r):
        self.r = r
    def area(self):
        return math.pi * self.r ** 2

shapes = [Rect(2, 3), Square(4), Circle(1.5)]
for s in shapes:
    print(s.describe(), isinstance(s, Rect), [c.__name__ for c in type(s).__mro__])
data = {"shapes": [{"kind": type(s).__name__, "area": round(s.area(), 6)} for s in shapes], "n": len(shapes)}
text = json.dumps(data, sort_keys=True, indent=1)
print(text)
assert json.loads(text) == data
print(hashlib.sha256(text.encode()).hexdigest())
print(hashlib.md5(b"rtgrind" * 10000).hexdigest(), hashlib.sha1(b"").hexdigest())
print(re.findall(r"(\w+)=(\d+(?:\.\d+)?)", "a=1 b=2.5 c=x d=42"))
print(re.sub(r"(?P<v>[aeiou])", lambda m: m.group("v").upper(), "dynamic binary translation"))
try:
    Shape().area()
except NotImplementedError as e:
    print("caught", type(e).__name__, e)

class AppError(Exception):
    pass

try:
    try:
        1 / 0
    except ZeroDivisionError as e:
        raise AppError("wrapped") from e
except AppError as e:
    print("caught", e, "cause:", type(e.__cause__).__name__)
print(sum(i * i for i in range(200000)), sorted({"b": 2, "a": 1}.items()))
print("to stderr", file=sys.stderr)
sys.exit(3)
"#;

#[test]
fn python3_json_hashlib_re_classes_exceptions() {
    // /usr/bin/python3 itself, not a pyenv shim (a shell script that would exec it).
    let cmd = sys("/usr/bin/python3").args(["-c", PYTHON_SCRIPT]).env("PYTHONDONTWRITEBYTECODE", "1").env("PYTHONHASHSEED", "0");
    let out = same_as_native(&cmd, &[], 3);
    assert!(String::from_utf8_lossy(&out).contains("cause: ZeroDivisionError"), "unexpected python output");
}

/// Issue 29 (the translation cache's step 1): python3 and perl run the same with each block run
/// from a copy installed from its relocatable image (see
/// `differential::blocks_installed_from_their_images_run_the_same`).
#[test]
fn python3_and_perl_from_installed_images() {
    let cmd = sys("/usr/bin/python3").args(["-c", PYTHON_SCRIPT]).env("PYTHONDONTWRITEBYTECODE", "1").env("PYTHONHASHSEED", "0");
    same_as_native(&cmd.env("RTGRIND_REINSTALL", "1"), &[], 3);
    same_as_native(&sys("/usr/bin/perl").args(["-e", PERL_SCRIPT]).env("RTGRIND_REINSTALL", "1"), &[], 0);
}

const PERL_SCRIPT: &str = r#"
my %count;
$count{$_}++ for qw(apple banana cherry apple date banana apple elderberry);
for my $k (sort { $count{$b} <=> $count{$a} or $a cmp $b } keys %count) {
    printf("%-10s %3d %6.2f%%\n", $k, $count{$k}, 100 * $count{$k} / 8);
}
my $s = "The quick brown fox jumps over the lazy dog";
my @five = ($s =~ /\b(\w{5})\b/g);
print join(",", @five), "\n";
(my $t = $s) =~ s/(\w+)/\u\L$1/g;
print "$t\n";
my %h = map { $_ => length } split / /, $s;
print join(" ", map { "$_=$h{$_}" } sort keys %h), "\n";
print sprintf("%x %o %e %s %05.1f", 255, 8, 12345.678, join("-", map { $_ * 2 } 1 .. 5), 3.14159), "\n";
my $sum = 0; $sum += $_ * $_ for 1 .. 200000; print "$sum\n";
warn "a warning\n";
exit 0;
"#;

#[test]
fn perl_hashes_regex_sprintf() {
    same_as_native(&sys("/usr/bin/perl").args(["-e", PERL_SCRIPT]), &[], 0);
}

const BASH_SCRIPT: &str = "for i in $(seq 1 20); do echo $i; done | sort -n | tail -3; x=0; \
                           for j in 1 2 3; do x=$((x + j)); done; echo sum=$x >&2; exit 5";

#[test]
fn bash_loop_and_pipeline() {
    let out = same_as_native(&sys("/usr/bin/bash").args(["-c", BASH_SCRIPT]), &[], 5);
    assert_eq!(out, b"18\n19\n20\n");
}

#[test]
fn bash_loop_and_pipeline_trace_children() {
    same_as_native(&sys("/usr/bin/bash").args(["-c", BASH_SCRIPT]), &["--trace-children=yes"], 5);
}

const HELLO_C: &str = "#include <stdio.h>\nint main(void) { printf(\"hello, %s\\n\", \"world\"); return 0; }\n";

/// `gcc -c hello.c`: gcc runs cc1 and as through execve. Natively or under rtgrind (default:
/// children native; `--trace-children=yes`: children under rtgrind too), the object files must be
/// byte-identical (`-g0`: no paths in the object).
fn gcc_c(extra_opts: &[&str]) {
    let dir = common::scratch_dir("gcc-c");
    std::fs::write(dir.join("hello.c"), HELLO_C).unwrap();
    let gcc = |out: &str| sys("/usr/bin/gcc").args(["-g0", "-O2", "-c", "hello.c", "-o", out]).cwd(&dir);
    let native = run_native(&gcc("native.o"));
    assert_exit(&native, 0);
    let mut opts = vec!["-q"];
    opts.extend_from_slice(extra_opts);
    let rt = run_rtgrind(&opts, &gcc("rtgrind.o"));
    assert_same(&native, &rt);
    let a = std::fs::read(dir.join("native.o")).unwrap();
    let b = std::fs::read(dir.join("rtgrind.o")).unwrap_or_else(|e| panic!("gcc under rtgrind exited 0 but wrote no object file: {e}\n{}", rt.describe()));
    if a != b {
        let dump = |f: &str| run_native(&Cmd::new("/usr/bin/objdump").args(["-d", "-r", f]).cwd(&dir)).stdout;
        panic!("object files differ ({} vs {} bytes); objdump -d -r:\n{}", a.len(), b.len(), common::diff(&dump("native.o"), &dump("rtgrind.o")));
    }
}

#[test]
fn gcc_c_hello() {
    gcc_c(&[]);
}

#[test]
fn gcc_c_hello_trace_children() {
    gcc_c(&["--trace-children=yes"]);
}

const CXX_THROW: &str = r#"
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct Tracer {
    const char *name;
    explicit Tracer(const char *n) : name(n) { std::printf("enter %s\n", name); }
    ~Tracer() { std::printf("leave %s\n", name); }
};
struct AppError : std::runtime_error {
    int code;
    AppError(const std::string &m, int c) : std::runtime_error(m), code(c) {}
};
struct DeepError : AppError {
    using AppError::AppError;
};

[[gnu::noinline]] int deep(int n) {
    Tracer t("deep");
    if (n == 0) throw DeepError("bottom", 42);
    return deep(n - 1) + 1;
}

int main() {
    try { deep(4); } catch (const AppError &e) { std::printf("caught AppError '%s' code=%d\n", e.what(), e.code); }
    std::vector<int> v(3);
    try { v.at(10) = 1; } catch (const std::out_of_range &) { std::printf("caught out_of_range from libstdc++\n"); }
    try { std::stoi("not a number"); } catch (const std::invalid_argument &e) { std::printf("caught invalid_argument: %s\n", e.what()); }
    try {
        try { throw 7; } catch (int x) { std::printf("caught int %d, rethrowing\n", x); throw; }
    } catch (...) { std::puts("caught the rethrown int"); }
    try {
        auto p = std::make_unique<Tracer>("heap");
        throw std::logic_error("with a unique_ptr alive");
    } catch (const std::exception &e) { std::printf("caught %s\n", e.what()); }
    std::fprintf(stderr, "done\n");
    return 0;
}
"#;

#[test]
fn cxx_throw_and_catch() {
    for (name, flags) in [("cxx-throw-pie", &["-O2", "-g"][..]), ("cxx-throw-static", &["-O2", "-g", "-static"][..])] {
        let exe = common::compile_snippet(name, "cc", CXX_THROW, flags);
        let out = same_as_native(&Cmd::new(exe), &[], 0);
        assert!(String::from_utf8_lossy(&out).contains("caught AppError 'bottom' code=42"));
    }
}

// ---------------------------------------------------------------------------------------------
// rtgrind's own output

const TALKER_C: &str = r#"
#include <stdio.h>
int main(int argc, char **argv) {
    for (int i = 0; i < argc; i++) printf("argv[%d]=%s\n", i, argv[i]);
    fflush(stdout);
    fprintf(stderr, "a line on stderr\n");
    return 3;
}
"#;

fn talker() -> std::path::PathBuf {
    static EXE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| common::compile_snippet("talker", "c", TALKER_C, &["-O2", "-g"])).clone()
}

/// Without `-q` but with `--log-file=F`, the guest's stdout, stderr and status are untouched and
/// rtgrind's banner goes to F.
#[test]
fn log_file_takes_rtgrind_output() {
    let dir = common::scratch_dir("log-file");
    let log = dir.join("rtgrind.log");
    let cmd = Cmd::new(talker()).args(["one", "two"]);
    let native = run_native(&cmd);
    assert_exit(&native, 3);
    let rt = run_rtgrind([format!("--log-file={}", log.display())], &cmd);
    assert_same(&native, &rt);
    let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("no log file {}: {e}\n{}", log.display(), rt.describe()));
    assert!(text.to_lowercase().contains("rtgrind"), "the log file has no banner naming rtgrind:\n{text}");
}

/// `--log-file` names as Valgrind's: `%p` is rtgrind's pid (the `==PID==` of the lines in it),
/// `%q{VAR}` an environment variable's value; an escape it does not know is one line of error.
#[test]
fn log_file_names_take_the_pid_and_environment_variables() {
    let dir = common::scratch_dir("log-file-escapes");
    let cmd = Cmd::new(talker()).env("RTG_JOB", "nightly");
    let rt = run_rtgrind([format!("--log-file={}/%q{{RTG_JOB}}.%p.log", dir.display())], &cmd);
    assert_eq!(rt.status.code(), Some(3), "{}", rt.describe());
    let names: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let pid = names[0].strip_prefix("nightly.").and_then(|n| n.strip_suffix(".log")).unwrap_or_else(|| panic!("{names:?}"));
    assert!(pid.parse::<u32>().is_ok(), "{names:?}");
    let text = std::fs::read_to_string(dir.join(&names[0])).unwrap();
    assert!(text.lines().next().is_some_and(|l| l.starts_with(&format!("=={pid}== "))), "{text}");
    let bad = run_rtgrind([format!("--log-file={}/x%y", dir.display())], &Cmd::new(talker()));
    assert_eq!(bad.status.code(), Some(2), "{}", bad.describe());
    let err = bad.stderr_str();
    assert!(err.lines().count() == 1 && err.contains("is not followed by p, q{VAR} or %"), "{err}");
}

/// Options from where Valgrind users keep theirs, in Valgrind's order: `~/.rtgrindrc`, then
/// `$RTGRIND_OPTS`, then `./.rtgrindrc` (ignored unless the user's own regular file), each
/// overriding the ones before, and the command line overriding them all. A search's own runs
/// do not apply them again.
#[test]
fn options_come_from_rc_files_and_the_environment_in_valgrind_s_order() {
    let home = common::scratch_dir("rc-home");
    let work = common::scratch_dir("rc-work");
    std::fs::write(home.join(".rtgrindrc"), "# defaults\n--tool=count   # counting\n").unwrap();
    let tool = |opts: &[&str], env: Option<&str>| {
        let mut cmd = Cmd::new(talker()).env("HOME", &home).cwd(&work);
        if let Some(e) = env {
            cmd = cmd.env("RTGRIND_OPTS", e);
        }
        let out = run_rtgrind(opts, &cmd);
        let err = out.stderr_str();
        let banner = err.lines().find(|l| l.contains("a dynamic binary translator; tool: ")).unwrap_or_else(|| panic!("{}", out.describe()));
        banner.rsplit("tool: ").next().unwrap().to_string()
    };
    assert_eq!(tool(&[], None), "count", "~/.rtgrindrc");
    assert_eq!(tool(&[], Some("--tool=none")), "none", "$RTGRIND_OPTS over ~/.rtgrindrc");
    std::fs::write(work.join(".rtgrindrc"), "--tool=count\n").unwrap();
    assert_eq!(tool(&[], Some("--tool=none")), "count", "./.rtgrindrc over $RTGRIND_OPTS");
    assert_eq!(tool(&["--tool=none"], Some("--tool=count")), "none", "the command line over all");
    // A search: its runs take their options from it alone (a --tool=count default would
    // otherwise make them count, not run the program as the search asks).
    let exe = common::compile_snippet("rc_null", "c", "int main(int c, char **v) { int *p = 0; if (c > 1) p = &c; return *p; }\n", &["-g", "-O0"]);
    let out = run_rtgrind(["--tool=suppress"], &Cmd::new(exe).env("HOME", &home).cwd(&work));
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(out.stderr_str().contains("first point of memory corruption: rc_null.c:1 (main)"), "{}", out.describe());
}

/// Without `-q` and without a log file, rtgrind adds its banner on stderr and changes nothing else.
#[test]
fn banner_without_quiet() {
    let cmd = Cmd::new(talker());
    let native = run_native(&cmd);
    let rt = run_rtgrind(Vec::<&str>::new(), &cmd);
    assert_no_panic(&rt);
    assert_eq!(rt.status.code(), Some(3), "{}", rt.describe());
    assert_eq!(rt.stdout, native.stdout, "{}", rt.describe());
    let err = rt.stderr_str();
    assert!(err.contains("a line on stderr\n"), "the guest's stderr is missing:\n{}", rt.describe());
    assert!(err.len() > native.stderr.len() && err.to_lowercase().contains("rtgrind"), "no banner:\n{}", rt.describe());
}

/// A statistics line mentions blocks translated and has a positive count.
fn has_stats(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("blocks")
        && lower.contains("translated")
        && lower.lines().any(|l| {
            (l.contains("blocks") || l.contains("translated")) && l.split(|c: char| !c.is_ascii_digit()).any(|n| n.parse::<u64>().is_ok_and(|n| n > 0))
        })
}

#[test]
fn stats_on_stderr() {
    let cmd = Cmd::new(talker());
    let native = run_native(&cmd);
    let rt = run_rtgrind(["--stats"], &cmd);
    assert_no_panic(&rt);
    assert_eq!(rt.status.code(), Some(3), "{}", rt.describe());
    assert_eq!(rt.stdout, native.stdout, "--stats must not write to the guest's stdout");
    assert!(has_stats(&rt.stderr_str()), "--stats printed no `blocks ... translated` count:\n{}", rt.describe());
    // Translation time by phase: every phase named, their times (and the timing's own) adding
    // up to no more than the total (each printed rounded to 0.01 ms).
    let err = rt.stderr_str();
    let ms_after = |l: &str, key: &str| -> Option<f64> { l.split(key).nth(1)?.split_whitespace().next()?.parse().ok() };
    let total = err.lines().find_map(|l| ms_after(l, "stats: translation ")).unwrap_or_else(|| panic!("no translation time:\n{err}"));
    let phases = [
        "fetch",
        "decode",
        "flag liveness",
        "flag look-ahead",
        "register analyses",
        "tool hooks",
        "encode (iced)",
        "emit and bookkeeping",
        "commit",
        "(timing itself)",
    ];
    let mut sum = 0.0;
    for name in phases {
        let x = err.lines().find_map(|l| ms_after(l, &format!("stats:   {name} "))).unwrap_or_else(|| panic!("no phase `{name}`:\n{err}"));
        sum += x;
    }
    assert!(total > 0.0 && sum <= total + 0.005 * phases.len() as f64, "phases add up to {sum} ms, more than the translation's {total} ms:\n{err}");
    for key in ["bytes of code per guest instruction", "decodes per translated instruction"] {
        assert!(err.contains(key), "no `{key}`:\n{err}");
    }
}

#[test]
fn stats_in_log_file() {
    let dir = common::scratch_dir("stats-log");
    let log = dir.join("stats.log");
    let cmd = Cmd::new(talker());
    let native = run_native(&cmd);
    let rt = run_rtgrind(["--stats".to_owned(), format!("--log-file={}", log.display())], &cmd);
    assert_same(&native, &rt);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(has_stats(&text), "--stats --log-file=F wrote no `blocks ... translated` count to F:\n{text}");
}

#[test]
fn help_and_version() {
    let help = common::rtgrind_raw(["--help"]);
    assert_exit(&help, 0);
    let text = help.stdout_str();
    for opt in ["--tool", "--log-file", "--trace-children", "--stats", "-q"] {
        assert!(text.contains(opt), "--help does not mention {opt}:\n{text}");
    }
    let version = common::rtgrind_raw(["--version"]);
    assert_exit(&version, 0);
    assert!(version.stdout_str().contains(env!("CARGO_PKG_VERSION")), "{}", version.describe());
}

/// Options after the program are the guest's, even when they look like rtgrind's.
#[test]
fn arguments_after_the_program_belong_to_the_guest() {
    let cmd = Cmd::new(talker()).args(["--help", "-q", "--tool=none", "--stats", "--"]);
    let out = same_as_native(&cmd, &["--tool=none"], 3);
    assert!(String::from_utf8_lossy(&out).contains("argv[1]=--help"));
}
