//! rtgrind: runs an x86-64 Linux program under a JIT and, with its tools, finds the root cause
//! of a failure by altering executions and re-running them.

#![warn(clippy::undocumented_unsafe_blocks)]

mod cli;
mod kernel;
mod layout;
mod loader;
mod manual;
mod report;
mod run;
mod shadow;
mod tools;
mod triage;

use kernel::memory::GuestMemory;
use kernel::signals::Signals;
use report::Reporter;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Exit status for bad usage (clap uses the same).
pub const EXIT_USAGE: i32 = 2;
/// Exit status when the guest executes an instruction rtgrind cannot run.
pub const EXIT_UNSUPPORTED: i32 = 125;
/// Exit status for internal failures (out of memory for the code cache and the like).
pub const EXIT_INTERNAL: i32 = 125;
/// The run used up its `--budget-blocks` (as timeout(1)).
pub const EXIT_BUDGET: i32 = 124;

fn fail(msg: &str, code: i32) -> ! {
    eprintln!("rtgrind: error: {msg}");
    std::process::exit(code);
}

/// Resolves a command name like the shell: a name without '/' is searched in PATH.
pub fn resolve(prog: &std::ffi::OsStr) -> PathBuf {
    let p = Path::new(prog);
    if prog.as_bytes().contains(&b'/') {
        return p.to_path_buf();
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let c = dir.join(p);
            if c.is_file() {
                return c;
            }
        }
    }
    p.to_path_buf()
}

/// rtgrind's own heap lives in its `brk` area, just above its binary, rather than in
/// `mmap`ed chunks and per-thread arenas among the guest's mappings: a guest that writes past
/// the end of its buffer (a runaway loop) then runs into a gap or a guard page and faults,
/// a result like any other, instead of overwriting the runtime's data. (The guest's own `brk`
/// is emulated with mappings after the guest program.) Freed memory at the heap's top is
/// kept, not given back to the kernel: a translation's large temporaries would be faulted in
/// again page by page (a traced suppression run of `python3 -c pass` gave back 20 MB and
/// took 3,700 page faults more).
fn keep_heap_apart() {
    // SAFETY: mallopt only sets allocator parameters; nothing has been allocated from an
    // mmapped chunk or another arena yet.
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}

/// `#!interp [arg]` scripts run their interpreter, as the kernel does.
fn shebang(path: &Path) -> Option<(PathBuf, Option<Vec<u8>>)> {
    use std::io::Read;
    // (Opening a FIFO would wait for a writer; the loader refuses what is not a file.)
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut f = std::fs::File::open(path).ok()?;
    let mut buf = [0u8; 256];
    let n = f.read(&mut buf).ok()?;
    if n < 2 || &buf[..2] != b"#!" {
        return None;
    }
    let line = buf[2..n].split(|&c| c == b'\n').next()?;
    let line = String::from_utf8_lossy(line).trim().to_string();
    let mut parts = line.splitn(2, [' ', '\t']);
    let interp = PathBuf::from(parts.next()?);
    let arg = parts.next().map(|s| s.trim().as_bytes().to_vec()).filter(|a| !a.is_empty());
    Some((interp, arg))
}

/// A command of rtgrind's own: its arguments to its exit status.
type Command = fn(&[std::ffi::OsString]) -> i32;

/// rtgrind's commands besides running a program, each with its own options.
const COMMANDS: [(&str, Command); 5] = [
    ("triage", triage::main),
    ("symbolize", report::symbolize::main),
    ("schema", report::schema::main),
    ("completions", manual::completions),
    ("manpage", manual::man),
];

fn main() {
    run::started();
    keep_heap_apart();
    // (`rtgrind triage ...`, `symbolize ...`, `schema ...`, `completions ...` and `manpage` are
    // commands of their own, with their own options.)
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some((_, command)) = COMMANDS.iter().find(|(name, _)| args.get(1).is_some_and(|a| a == name)) {
        std::process::exit(command(&args[2..]));
    }
    let (mut cli, matches, command) = parse_command_line();
    let spec = tools::spec(&cli.tool);
    if let Some((flag, owners)) = tools::foreign_option(spec, &matches, &command) {
        let owners: Vec<String> = owners.iter().map(|o| format!("--tool={o}")).collect();
        fail(&format!("{flag} is an option of {}, not of --tool={}", owners.join(" and "), spec.name), EXIT_USAGE);
    }
    if cli.count_in_memory {
        // (The suppression search passes it on to its runs.)
        rtgrind_jit::context::count_in_memory();
    }
    if let Some(search) = spec.search.as_ref().filter(|s| (s.wanted)(&cli)) {
        cli.run_options = cli::run_options(&matches, &command);
        std::process::exit((search.run)(&cli).unwrap_or_else(|e| fail(&e.message, e.code)));
    }
    prepare_host(&cli);
    // (Before rtgrind's own files are opened: they go to the range reserved for them.)
    kernel::fds::reserve();
    let log = cli.log_file.as_ref().map(|p| kernel::fds::own(open_log(p)));
    let reporter = Reporter::new(cli.quiet, log);
    let tool = (spec.make)(&cli).unwrap_or_else(|e| fail(&e.message, e.code));
    let mut guest = load_guest(&cli);
    let tool = under_layout(&cli, tool, &mut guest);
    let child_opts = cli::child_options(&matches, &command, spec.name);
    run_guest(&cli, spec, tool, guest, reporter, child_opts);
}

/// The command line, parsed: usage errors end the process with one line (help and version
/// print as clap does).
fn parse_command_line() -> (cli::Cli, clap::ArgMatches, clap::Command) {
    // (An option given twice, in a file and on the command line, is the later one.)
    let command = <cli::Cli as clap::CommandFactory>::command().args_override_self(true);
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if std::env::var_os(cli::CHILD_RUN).is_some() {
        // SAFETY: the process is single-threaded here; the program must not see the variable.
        std::env::remove_var(cli::CHILD_RUN);
    } else {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let cwd = std::env::current_dir().unwrap_or_default();
        let defaults = cli::default_options(home.as_deref(), std::env::var("RTGRIND_OPTS").ok().as_deref(), &cwd);
        args.splice(1..1, defaults.into_iter().map(std::ffi::OsString::from));
    }
    let matches = match command.clone().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                e.exit();
            }
            if e.kind() == ErrorKind::MissingRequiredArgument {
                fail("no program given (usage: rtgrind [options] --tool=NAME prog [args])", EXIT_USAGE);
            }
            let first = e.to_string().lines().next().unwrap_or("invalid usage").trim_start_matches("error: ").to_string();
            fail(&format!("{first} (usage: rtgrind [options] --tool=NAME prog [args]; see 'rtgrind --help')"), EXIT_USAGE);
        }
    };
    let cli = <cli::Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| fail(&e.to_string(), EXIT_USAGE));
    (cli, matches, command)
}

/// Standard input from `--stdin-file`, repeatable mode (no ASLR, a pid namespace), and what
/// the host must have.
fn prepare_host(cli: &cli::Cli) {
    if let Some(f) = &cli.stdin_file {
        if let Err(e) = kernel::repeat::stdin_from_file(f) {
            fail(&format!("--stdin-file: cannot use '{}': {e}", f.display()), EXIT_USAGE);
        }
    }
    if cli.repeatable == cli::YesNo::Yes {
        kernel::repeat::ensure_no_aslr();
        kernel::repeat::enter_pid_namespace();
    }
    if !rtgrind_jit::dispatch::host_has_bmi2() {
        fail("this CPU lacks BMI2, which rtgrind's translations use (x86-64-v3: Haswell or later)", EXIT_INTERNAL);
    }
    if !rtgrind_jit::dispatch::host_supported() {
        fail("this machine's kernel does not allow FSGSBASE instructions in user space (Linux 5.9+ needed)", EXIT_INTERNAL);
    }
}

/// The program loaded, with its initial stack.
struct Guest {
    argv: Vec<Vec<u8>>,
    exe_path: PathBuf,
    /// The name the kernel gives the program's process (`name_the_process`).
    name: Vec<u8>,
    own: kernel::procfs::Own,
    prog: loader::elf::LoadedProgram,
    mem: GuestMemory,
    rsp: u64,
    repeat: Option<kernel::repeat::Repeatable>,
}

/// Loads the program (a `#!` script's interpreter) and builds its initial stack.
fn load_guest(cli: &cli::Cli) -> Guest {
    let mut argv: Vec<Vec<u8>> = cli.command.iter().map(|a| a.as_bytes().to_vec()).collect();
    let mut path = resolve(&cli.command[0]);
    let name = path.file_name().map_or(b"".to_vec(), |n| n.as_bytes().to_vec());
    if let Some((interp, arg)) = shebang(&path) {
        let mut v = vec![interp.as_os_str().as_bytes().to_vec()];
        v.extend(arg);
        v.push(path.as_os_str().as_bytes().to_vec());
        v.extend(argv.drain(1..));
        argv = v;
        path = interp;
    }
    let exe_path = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let mut mem = GuestMemory::default();
    mem.keep_runtime_apart();
    let prog = match loader::elf::load(&path, &mut mem) {
        Ok(prog) => prog,
        // Past the kernel's point of no return: the program is killed, as natively.
        Err(e @ loader::elf::LoadError::Killed(..)) => {
            eprintln!("=={}== Process terminating with default action of signal 11 (SIGSEGV) before it started: {e}", std::process::id());
            kernel::raw::die_of_signal(libc::SIGSEGV)
        }
        Err(e) => fail(&e.to_string(), e.exit_code()),
    };
    mem.brk_start = prog.brk_start;
    mem.brk_cur = prog.brk_start;
    mem.reserve_brk();
    let envp: Vec<Vec<u8>> = std::env::vars_os()
        .map(|(k, v)| {
            let mut e = k.as_bytes().to_vec();
            e.push(b'=');
            e.extend_from_slice(v.as_bytes());
            e
        })
        .collect();
    let repeatable = cli.repeatable == cli::YesNo::Yes;
    let mut repeat = repeatable.then(|| kernel::repeat::Repeatable::new(cli.seed));
    let mut random = [0u8; 16];
    match &mut repeat {
        Some(r) => random.copy_from_slice(&r.bytes(16)),
        // SAFETY: getrandom into a local buffer.
        None => unsafe {
            libc::getrandom(random.as_mut_ptr() as *mut libc::c_void, 16, 0);
        },
    }
    let stack = loader::stack::build(&prog, &mut mem, path.as_os_str().as_bytes(), &argv, &envp, random, repeatable)
        .unwrap_or_else(|e| fail(&format!("cannot set up the initial stack: {e}"), EXIT_INTERNAL));
    let own = kernel::procfs::Own { args: stack.args, env: stack.env, auxv: stack.auxv };
    Guest { argv, exe_path, name, own, prog, mem, rsp: stack.rsp, repeat }
}

/// The run's tool under `--layout` (and `--layout-record`), if given.
fn under_layout(cli: &cli::Cli, tool: Box<dyn tools::ToolRun>, guest: &mut Guest) -> Box<dyn tools::ToolRun> {
    if cli.layout.is_none() && cli.layout_record.is_none() {
        return tool;
    }
    let exe = guest.exe_path.to_string_lossy().into_owned();
    let objects = layout::objects::Objects::of(&exe).unwrap_or_else(|| fail(&format!("--layout: cannot read the program '{exe}'"), EXIT_USAGE));
    let layout = match cli.layout.as_deref().map(|f| (f, f.to_str().and_then(|s| s.strip_prefix("random:")))) {
        Some((_, Some(seed))) => {
            let seed = seed.parse().unwrap_or_else(|_| fail(&format!("--layout=random:SEED: '{seed}' is not a number"), EXIT_USAGE));
            layout::pairs::random(&objects, &exe, seed)
        }
        Some((f, None)) => layout::Layout::read(f).unwrap_or_else(|e| fail(&e, EXIT_USAGE)),
        None => layout::Layout::default(),
    };
    let layered = layout::apply::Layered::new(tool, &layout, objects, &exe, &mut guest.mem, cli.layout_record.clone()).unwrap_or_else(|e| fail(&e, EXIT_USAGE));
    Box::new(layered)
}

/// Runs the loaded program under `tool` to its end.
fn run_guest(cli: &cli::Cli, spec: &tools::ToolSpec, tool: Box<dyn tools::ToolRun>, guest: Guest, mut reporter: Reporter, child_opts: Vec<String>) {
    let Guest { argv, exe_path, name, own, prog, mem, rsp, repeat } = guest;
    // (What the options name is checked before the banner: an error is the only line.)
    let (policy, recorded_quantum) = sched_policy(&cli.sched);
    let record = cli
        .record_schedule
        .as_ref()
        .map(|p| std::fs::File::create(p).unwrap_or_else(|e| fail(&format!("cannot create schedule file '{}': {e}", p.display()), EXIT_USAGE)))
        .map(kernel::fds::own);
    let stop_at = cli.stop_at.as_deref().map(parse_stop_at);
    reporter.info(&format!("rtgrind-{}, a dynamic binary translator; tool: {}", env!("CARGO_PKG_VERSION"), spec.name));
    reporter.info(&format!("Command: {}", argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ")));
    // Tools count blocks (the instance part of an origin) in the engine's per-thread counter.
    rtgrind_jit::context::set_counter_step(shadow::origin::BLOCK_STEP as u32);
    let mut ctx = rtgrind_jit::ThreadContext::new_boxed();
    ctx.gpr[rtgrind_jit::context::reg::RSP as usize] = rsp;
    ctx.rip = prog.start_pc();
    let mut cache = Box::new(rtgrind_jit::CodeCache::new());
    cache.virtual_tsc = repeat.is_some();
    cache.profile = cli.stats;
    // Full versions of two-version blocks are built when first needed (`RTGRIND_EAGER_FULL=1`:
    // with their fast versions, as before, for comparisons).
    cache.eager_full = std::env::var("RTGRIND_EAGER_FULL").is_ok_and(|v| v == "1");
    if let Some(dir) = &cli.code_cache {
        match rtgrind_jit::persist::DiskCache::open(dir, spec.name) {
            Ok(d) => cache.disk = Some(Box::new(d)),
            Err(e) => reporter.line(&format!("warning: translation cache '{}' not used: {e}", dir.display())),
        }
    }
    let sig = Signals::install(&mut ctx, &mut cache);
    kernel::signals::set_quiet(cli.quiet);
    let self_exe = std::fs::read_link("/proc/self/exe").unwrap_or_else(|_| PathBuf::from("rtgrind"));
    // A replay starts as the recorded run did.
    let quantum = recorded_quantum.unwrap_or(cli.quantum);
    // SAFETY: getpid/gettid have no preconditions; the main thread's tid is the pid.
    let main_tid = unsafe { libc::getpid() };
    let sched = kernel::sched::Scheduler::new(policy, quantum, record, main_tid, sig.inbox.clone());
    // A tool that forks children at points of the run gives each child the budget, not the run.
    let forks = tool.forks_children();
    if cli.stats {
        tools::callouts::enable();
    }
    let process = Box::leak(Box::new(run::Process {
        cache,
        mem,
        tool,
        exe_path,
        own,
        config: run::Config { trace_children: cli.trace_children == cli::YesNo::Yes, stats: cli.stats, self_exe, child_opts },
        report: reporter,
        stats: run::RunStats::default(),
        sched,
        contexts: Vec::new(),
        repeat,
        stop_at,
        budget: if forks { None } else { cli.budget_blocks },
        blocks_out: cli.blocks_out.clone(),
        created_log: cli.created_out.as_deref().and_then(kernel::created::CreatedLog::open),
        cpus: None,
    }));
    // A recorded or replayed schedule counts blocks from the start too: its decisions then
    // fall at the same instructions whatever the tool and the options of the run (a race
    // found under `--tool=race` replays under `--tool=suppress` and `--tool=none`).
    let schedule = cli.record_schedule.is_some() || cli.sched.starts_with("replay:");
    if process.budget.is_some() || process.blocks_out.is_some() || forks || schedule {
        // Budgets count block entries (backward, indirect and dispatched ones suffice: every
        // loop passes one).
        process.cache.set_preemption(true);
    }
    if schedule || cli.sched.starts_with("random:") || cli.sched.starts_with("pct:") {
        // Schedules that search for interleavings, and those recorded or replayed, may switch
        // at any block: between a check and its use in one loop body too.
        process.cache.count_all = true;
    }
    if process.stop_at.is_some() {
        // Instances are counts of block entries: count every one from the start.
        process.cache.set_preemption(true);
        process.cache.count_all = true;
    }
    let ctx_ptr = &mut *ctx as *mut rtgrind_jit::ThreadContext;
    process.contexts.push(ctx_ptr);
    ctx.quantum = 0;
    // SAFETY: the process is leaked (it lives as long as the program) and the scheduler is
    // only ever used through `&self` (its state is behind its own mutex).
    let sched: &'static kernel::sched::Scheduler = unsafe { &*(&process.sched as *const kernel::sched::Scheduler) };
    process.tool.attach(sched);
    process.tool.start(&mut ctx, &process.mem);
    name_the_process(&name);
    let mut rt = Box::new(run::Runtime::new(ctx, sig, 0, process));
    rt.set_quantum(quantum);
    rt.run();
}

/// Names the process (its main thread: threads the guest makes inherit it) as the kernel names
/// a program it starts, the file's name cut to 15 bytes, not "rtgrind": what `/proc/self/comm`,
/// `stat`, `status`, `prctl(PR_GET_NAME)` and `ps` show is the program's.
fn name_the_process(name: &[u8]) {
    let mut comm = [0u8; 16];
    let n = name.len().min(15);
    comm[..n].copy_from_slice(&name[..n]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, comm.as_ptr()) };
}

/// The `--log-file` FILE, appended to (nothing the user had is lost).
/// `--log-file`'s file (its name's `%p` and `%q{VAR}` replaced), opened to append.
fn open_log(template: &std::path::Path) -> std::fs::File {
    let name = cli::log_file_name(&template.to_string_lossy(), std::process::id(), &|v| std::env::var(v).ok()).unwrap_or_else(|e| fail(&e, EXIT_USAGE));
    std::fs::OpenOptions::new().create(true).append(true).open(&name).unwrap_or_else(|e| fail(&format!("cannot open log file '{name}': {e}"), EXIT_USAGE))
}

/// `--log-file` for a search's driver: everything it says (its report, progress, errors)
/// goes to the file, as a single run's messages do. Its runs write their own stderr to files
/// of the search, so standard error is the driver's alone.
fn log_to_file(cli: &cli::Cli) {
    let Some(p) = &cli.log_file else { return };
    let f = open_log(p);
    // SAFETY: dup2 of a descriptor this process owns onto standard error.
    if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&f), 2) } < 0 {
        fail(&format!("cannot write to log file '{}'", p.display()), EXIT_USAGE);
    }
}

/// `--stop-at=THREAD:INSTANCE`, validated.
fn parse_stop_at(spec: &str) -> (usize, u64) {
    let parsed = spec.split_once(':').and_then(|(t, n)| Some((t.parse().ok()?, n.parse().ok()?)));
    match parsed {
        Some((t, n)) if n > 0 => (t, n),
        _ => fail(&format!("invalid --stop-at value '{spec}' (expected THREAD:INSTANCE, e.g. 0:1000)"), EXIT_USAGE),
    }
}

/// `--sched=rr|random:SEED|pct:SEED:DEPTH|replay:FILE`, validated.
/// `--sched`'s policy, and for a replay the quantum the recorded run started with.
fn sched_policy(spec: &str) -> (kernel::sched::Policy, Option<u64>) {
    use kernel::sched::Policy;
    let bad = || -> ! { fail(&format!("invalid --sched value '{spec}' (expected rr, random:SEED, pct:SEED:DEPTH or replay:FILE)"), EXIT_USAGE) };
    let parts: Vec<&str> = spec.splitn(3, ':').collect();
    let policy = match parts.as_slice() {
        ["rr"] => Policy::RoundRobin,
        ["random", seed] => Policy::Random(seed.parse().unwrap_or_else(|_| bad())),
        ["pct", seed, depth] => Policy::Pct { seed: seed.parse().unwrap_or_else(|_| bad()), depth: depth.parse().unwrap_or_else(|_| bad()) },
        ["replay", ..] => {
            let file = &spec["replay:".len()..];
            let text = std::fs::read_to_string(file).unwrap_or_else(|e| fail(&format!("cannot read schedule '{file}': {e}"), EXIT_USAGE));
            let decisions = kernel::sched::read_schedule(&text).unwrap_or_else(|e| fail(&format!("bad schedule '{file}': {e}"), EXIT_USAGE));
            return (Policy::Replay(decisions), kernel::sched::schedule_quantum(&text));
        }
        _ => bad(),
    };
    (policy, None)
}
