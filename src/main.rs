//! rtgrind: runs an x86-64 Linux program under a JIT and, with its tools, finds the root cause
//! of a failure by altering executions and re-running them.

#![warn(clippy::undocumented_unsafe_blocks)]

mod cli;
mod kernel;
mod loader;
mod report;
mod run;
mod shadow;
mod tools;

use clap::Parser;
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
fn resolve(prog: &std::ffi::OsStr) -> PathBuf {
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
/// is emulated with mappings after the guest program.)
fn keep_heap_apart() {
    // SAFETY: mallopt only sets allocator parameters; nothing has been allocated from an
    // mmapped chunk or another arena yet.
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// `#!interp [arg]` scripts run their interpreter, as the kernel does.
fn shebang(path: &Path) -> Option<(PathBuf, Option<Vec<u8>>)> {
    use std::io::Read;
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

fn main() {
    keep_heap_apart();
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
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
    if cli.count_in_memory {
        // (The suppression search passes it on to its runs.)
        rtgrind_jit::context::count_in_memory();
    }
    if cli.tool == cli::ToolName::Switch && cli.switch_at.is_none() && cli.switch_trace.is_none() && cli.switch_fork.is_none() {
        std::process::exit(switch_search(&cli));
    }
    if cli.tool == cli::ToolName::Suppress && cli.suppress_plan.is_none() {
        // The search: runs of this program under rtgrind, each with a plan.
        if !resolve(&cli.command[0]).is_file() {
            fail(&format!("{}: no such file", cli.command[0].to_string_lossy()), 127);
        }
        let opts = tools::suppress::driver::Options { max_runs: cli.max_runs, error_exitcode: cli.error_exitcode, stdin_file: cli.stdin_file.clone(), seed: cli.seed, failure: cli.failure.clone(), show_output: !cli.json && !cli.sarif };
        if let Some(d) = &cli.dot {
            // Nothing the user has is overwritten without asking.
            if d.exists() {
                fail(&format!("--dot: '{}' exists; not overwriting it", d.display()), EXIT_USAGE);
            }
        }
        if let Some(f) = &cli.failure {
            let known = f == "exit-code" || f.strip_prefix("stderr:").is_some_and(|r| regex::Regex::new(r).is_ok()) || f.strip_prefix("output:").is_some_and(|p| std::path::Path::new(p).is_file());
            if !known {
                fail(&format!("invalid --failure '{f}' (expected exit-code, stderr:REGEX with a valid expression, or output:FILE naming a file)"), EXIT_USAGE);
            }
        }
        // The runs may not share the driver's idea of a relative path.
        let failure = cli.failure.clone().map(|f| match f.strip_prefix("output:") {
            Some(p) => format!("output:{}", std::fs::canonicalize(p).map(|c| c.display().to_string()).unwrap_or(p.to_string())),
            None => f,
        });
        let opts = tools::suppress::driver::Options { failure, ..opts };
        let format = tools::suppress::report::Format { json: cli.json, sarif: cli.sarif, dot: cli.dot.clone() };
        log_to_file(&cli);
        std::process::exit(tools::suppress::driver::drive(cli.command.clone(), opts, format));
    }
    let repeatable = cli.repeatable == cli::YesNo::Yes;
    if let Some(f) = &cli.stdin_file {
        if let Err(e) = kernel::repeat::stdin_from_file(f) {
            fail(&format!("--stdin-file: cannot use '{}': {e}", f.display()), EXIT_USAGE);
        }
    }
    if repeatable {
        kernel::repeat::ensure_no_aslr();
        kernel::repeat::enter_pid_namespace();
    }
    if !rtgrind_jit::dispatch::host_has_bmi2() {
        fail("this CPU lacks BMI2, which rtgrind's translations use (x86-64-v3: Haswell or later)", EXIT_INTERNAL);
    }
    if !rtgrind_jit::dispatch::host_supported() {
        fail("this machine's kernel does not allow FSGSBASE instructions in user space (Linux 5.9+ needed)", EXIT_INTERNAL);
    }
    let log = cli.log_file.as_ref().map(|p| open_log(p));
    let mut reporter = Reporter::new(cli.quiet, log);
    let tool = make_tool(&cli);

    let mut argv: Vec<Vec<u8>> = cli.command.iter().map(|a| a.as_bytes().to_vec()).collect();
    let mut path = resolve(&cli.command[0]);
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
    let prog = loader::elf::load(&path, &mut mem).unwrap_or_else(|e| fail(&e.to_string(), e.exit_code()));
    mem.brk_start = prog.brk_start;
    mem.brk_cur = prog.brk_start;

    let envp: Vec<Vec<u8>> = std::env::vars_os()
        .map(|(k, v)| {
            let mut e = k.as_bytes().to_vec();
            e.push(b'=');
            e.extend_from_slice(v.as_bytes());
            e
        })
        .collect();
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

    reporter.info(&format!("rtgrind-{}, a dynamic binary translator; tool: {:?}", env!("CARGO_PKG_VERSION"), cli.tool).to_lowercase());
    reporter.info(&format!("Command: {}", argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ")));

    // Tools count blocks (the instance part of an origin) in the engine's per-thread counter.
    rtgrind_jit::context::set_counter_step(shadow::origin::BLOCK_STEP as u32);
    let mut ctx = rtgrind_jit::ThreadContext::new_boxed();
    ctx.gpr[rtgrind_jit::context::reg::RSP as usize] = stack.rsp;
    ctx.rip = prog.start_pc();
    let mut cache = Box::new(rtgrind_jit::CodeCache::new());
    cache.virtual_tsc = repeatable;
    let sig = Signals::install(&mut ctx, &mut cache);

    let mut child_opts = vec![format!("--tool={:?}", cli.tool).to_lowercase(), "--trace-children=yes".to_string()];
    if cli.quiet {
        child_opts.push("-q".into());
    }
    if let Some(l) = &cli.log_file {
        child_opts.push(format!("--log-file={}", l.display()));
    }
    if cli.stats {
        child_opts.push("--stats".into());
    }
    child_opts.push(format!("--quantum={}", cli.quantum));
    if repeatable {
        child_opts.push("--repeatable=yes".into());
        child_opts.push(format!("--seed={}", cli.seed));
    }
    let self_exe = std::fs::read_link("/proc/self/exe").unwrap_or_else(|_| PathBuf::from("rtgrind"));
    let policy = sched_policy(&cli.sched);
    let record = cli.record_schedule.as_ref().map(|p| {
        std::fs::File::create(p).unwrap_or_else(|e| fail(&format!("cannot create schedule file '{}': {e}", p.display()), EXIT_USAGE))
    });
    // SAFETY: getpid/gettid have no preconditions; the main thread's tid is the pid.
    let main_tid = unsafe { libc::getpid() };
    let sched = kernel::sched::Scheduler::new(policy, cli.quantum, record, main_tid, sig.inbox.clone());
    let process = Box::leak(Box::new(run::Process {
        cache,
        mem,
        tool,
        exe_path,
        config: run::Config { trace_children: cli.trace_children == cli::YesNo::Yes, stats: cli.stats, self_exe, child_opts },
        report: reporter,
        stats: run::RunStats::default(),
        sched,
        contexts: Vec::new(),
        repeat,
        stop_at: cli.stop_at.as_deref().map(parse_stop_at),
        // In the fork search's forward pass the budget is each child's, not the run's.
        budget: if cli.switch_fork.is_some() { None } else { cli.budget_blocks },
        blocks_out: cli.blocks_out.clone(),
        cpus: None,
    }));
    if process.budget.is_some() || process.blocks_out.is_some() || cli.switch_fork.is_some() {
        // Budgets count block entries (backward, indirect and dispatched ones suffice: every
        // loop passes one).
        process.cache.set_preemption(true);
    }
    if process.stop_at.is_some() {
        // Instances are counts of block entries: count every one from the start.
        process.cache.set_preemption(true);
        process.cache.count_all = true;
    }
    let ctx_ptr = &mut *ctx as *mut rtgrind_jit::ThreadContext;
    process.contexts.push(ctx_ptr);
    ctx.quantum = 0;
    process.tool.start(&mut ctx, &process.mem);
    let mut rt = Box::new(run::Runtime::new(ctx, sig, 0, process));
    rt.set_quantum(cli.quantum);
    rt.run();
}

/// `--tool=switch` with an oracle: the predicate-switching search.
fn switch_search(cli: &cli::Cli) -> i32 {
    if !resolve(&cli.command[0]).is_file() {
        fail(&format!("{}: no such file", cli.command[0].to_string_lossy()), 127);
    }
    let read = |p: &PathBuf, what: &str| std::fs::read(p).unwrap_or_else(|e| fail(&format!("{what}: cannot read '{}': {e}", p.display()), EXIT_USAGE));
    let oracle = tools::switch::oracle::Oracle {
        output: cli.expected_output.as_ref().map(|p| read(p, "--expected-output")),
        stderr: cli.expected_stderr.as_ref().map(|p| read(p, "--expected-stderr")),
        exit: cli.expected_exit,
        command: cli.oracle.clone(),
    };
    let order = tools::switch::driver::Order::parse(&cli.order)
        .unwrap_or_else(|| fail(&format!("invalid --order '{}' (expected lefs, last-instance-first or prior)", cli.order), EXIT_USAGE));
    let opts = tools::switch::driver::Options {
        oracle,
        order,
        libs: cli.switch_libs == cli::YesNo::Yes,
        all: cli.all,
        budget_factor: cli.budget_factor,
        error_exitcode: cli.error_exitcode,
        seed: cli.seed,
        stdin_file: cli.stdin_file.clone(),
        expected_output_path: cli.expected_output.as_ref().map(|p| std::fs::canonicalize(p).unwrap_or(p.clone())),
        json: cli.json,
        sarif: cli.sarif,
        fork: cli.fork == cli::YesNo::Yes,
        jobs: cli.jobs,
    };
    log_to_file(cli);
    tools::switch::driver::drive(cli.command.clone(), opts)
}

/// The `--log-file` FILE, appended to (nothing the user had is lost).
fn open_log(p: &std::path::Path) -> std::fs::File {
    std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap_or_else(|e| fail(&format!("cannot open log file '{}': {e}", p.display()), EXIT_USAGE))
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

/// The tool `--tool` names, with its options.
fn make_tool(cli: &cli::Cli) -> Box<dyn tools::ToolRun> {
    match cli.tool {
        cli::ToolName::None => Box::new(rtgrind_jit::instrument::NoInstrumentation),
        cli::ToolName::Count => Box::new(tools::count::Count::new(cli.per_function)),
        cli::ToolName::Switch if cli.switch_fork.is_some() => {
            let expected = cli.expected_output.as_ref().map(|p| std::fs::read(p).unwrap_or_else(|e| fail(&format!("--expected-output: cannot read '{}': {e}", p.display()), EXIT_USAGE)));
            let program = std::fs::canonicalize(resolve(&cli.command[0])).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            let dir = cli.switch_fork.clone().unwrap_or_default();
            let at: Vec<u64> = std::fs::read_to_string(dir.join("at")).unwrap_or_default().split_whitespace().filter_map(|x| x.parse().ok()).collect();
            let budget = cli.budget_blocks.unwrap_or(1 << 40);
            Box::new(tools::switch::fork::SwitchFork::new(dir, at, cli.jobs as usize, budget, expected, program))
        }
        cli::ToolName::Switch if cli.switch_trace.is_some() => {
            let expected = cli.expected_output.as_ref().map(|p| std::fs::read(p).unwrap_or_else(|e| fail(&format!("--expected-output: cannot read '{}': {e}", p.display()), EXIT_USAGE)));
            let program = std::fs::canonicalize(resolve(&cli.command[0])).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            let mut trace = tools::switch::trace::SwitchTrace::new(cli.switch_trace.clone().unwrap_or_default(), cli.switch_libs == cli::YesNo::No, program, expected);
            if cli.switch_deps == cli::YesNo::Yes {
                let deps = tools::switch::deps::Deps::new(cli.switch_libs == cli::YesNo::No).unwrap_or_else(|e| fail(&format!("cannot reserve the dependence log: {e}"), 2));
                trace.deps = Some(deps);
            }
            Box::new(trace)
        }
        cli::ToolName::Switch => {
            let spec = cli.switch_at.as_deref().unwrap_or_else(|| fail("--tool=switch needs --switch-at=ADDR:N", EXIT_USAGE));
            let (site, n) = tools::switch::Switch::parse(spec)
                .unwrap_or_else(|| fail(&format!("invalid --switch-at value '{spec}' (expected ADDR:N, e.g. 0x401136:3)"), EXIT_USAGE));
            Box::new(tools::switch::Switch::new(site, n))
        }
        cli::ToolName::Suppress => {
            let path = cli.suppress_plan.as_ref().expect("a plan");
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(&format!("cannot read plan '{}': {e}", path.display()), EXIT_USAGE));
            let mut plan = tools::suppress::plan::Plan::parse(&text).unwrap_or_else(|e| fail(&format!("bad plan '{}': {e}", path.display()), EXIT_USAGE));
            plan.out = cli.suppress_out.clone();
            let program = std::fs::canonicalize(resolve(&cli.command[0])).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            match tools::suppress::run::SuppressRun::new(plan, program) {
                Ok(t) => Box::new(t),
                Err(e) => fail(&e, EXIT_USAGE),
            }
        }
        cli::ToolName::Taint => {
            let input = tools::taint::Input::parse(cli.taint_input.as_deref().unwrap_or("stdin"));
            if let tools::taint::Input::File(p) = &input {
                if !p.exists() {
                    fail(&format!("--taint-input: no such file '{}'", p.display()), EXIT_USAGE);
                }
            }
            match tools::taint::Taint::new(input, cli.track_origins == cli::YesNo::Yes) {
                Ok(t) => Box::new(t),
                Err(e) => fail(&format!("cannot reserve shadow memory: {e}"), EXIT_INTERNAL),
            }
        }
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
fn sched_policy(spec: &str) -> kernel::sched::Policy {
    use kernel::sched::Policy;
    let bad = || -> ! { fail(&format!("invalid --sched value '{spec}' (expected rr, random:SEED, pct:SEED:DEPTH or replay:FILE)"), EXIT_USAGE) };
    let parts: Vec<&str> = spec.splitn(3, ':').collect();
    match parts.as_slice() {
        ["rr"] => Policy::RoundRobin,
        ["random", seed] => Policy::Random(seed.parse().unwrap_or_else(|_| bad())),
        ["pct", seed, depth] => Policy::Pct { seed: seed.parse().unwrap_or_else(|_| bad()), depth: depth.parse().unwrap_or_else(|_| bad()) },
        ["replay", ..] => {
            let file = &spec["replay:".len()..];
            let text = std::fs::read_to_string(file).unwrap_or_else(|e| fail(&format!("cannot read schedule '{file}': {e}"), EXIT_USAGE));
            Policy::Replay(kernel::sched::read_schedule(&text).unwrap_or_else(|e| fail(&format!("bad schedule '{file}': {e}"), EXIT_USAGE)))
        }
        _ => bad(),
    }
}
