//! The tools: what a run does besides running the program. Each tool is one type that
//! instruments translations (the engine's `instrument::Tool`) and reacts to what the runtime
//! sees (syscalls, client requests, the end of the run) through [`ToolRun`].

pub mod address_hash;
pub mod callouts;
pub mod cbi;
pub mod checkpoints;
pub mod child;
pub mod count;
pub mod expected;
pub mod forward;
pub mod heap;
#[cfg(test)]
pub mod light_check;
pub mod oracle;
pub mod output;
pub mod progress;
pub mod race;
pub mod reorder;
pub mod sarif;
pub mod search;
pub mod spectra;
pub mod suite;
pub mod suppress;
pub mod switch;
pub mod taint;
pub mod vr;

use crate::kernel::memory::GuestMemory;
use crate::report::Reporter;
use rtgrind_jit::iced_x86::ConditionCode;
use rtgrind_jit::instrument::code_asm::{AsmRegister64, CodeAssembler};
use rtgrind_jit::instrument::{NoInstrumentation, Tool};
use rtgrind_jit::ThreadContext;
use std::path::PathBuf;

/// Why a tool cannot run as asked: a one-line message and rtgrind's exit status.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub message: String,
    pub code: i32,
}

impl Error {
    /// Bad usage (an option's value, a file that cannot be read).
    pub fn usage(message: String) -> Error {
        Error { message, code: crate::EXIT_USAGE }
    }
    /// rtgrind itself cannot go on (memory it cannot reserve).
    pub fn internal(message: String) -> Error {
        Error { message, code: crate::EXIT_INTERNAL }
    }
}

/// Options every search tool has (suppress, switch, race).
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Options of the searches (--tool=switch, --tool=suppress, --tool=race)")]
pub struct SearchOptions {
    /// Exit status when a root cause or critical predicate was reported.
    #[arg(long, default_value_t = 1)]
    pub error_exitcode: i32,

    /// Also print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    /// Also print the result as SARIF 2.1.0 on stdout.
    #[arg(long)]
    pub sarif: bool,

    /// Frames of a call stack to show (crash site, root cause, race), as Valgrind's.
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u16).range(1..=500))]
    pub num_callers: u16,

    /// A live progress line while the search runs: on a terminal without -q (auto), always,
    /// or never.
    #[arg(long, value_enum, default_value = "auto", value_name = "auto|always|never")]
    pub progress: progress::When,
}

/// The failure a root-cause search explains when it is not a crash (suppress, race).
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Options of the root-cause searches (--tool=suppress, --tool=race)")]
pub struct FailureOptions {
    /// The failure to explain when it is not a crash: exit-code (a non-zero exit status),
    /// stderr:REGEX (standard error matches), output:FILE (standard output differs from FILE).
    #[arg(long, value_name = "KIND")]
    pub failure: Option<String>,

    /// Write the chain of runs (and, for --tool=race, the races and the root cause) as a
    /// Graphviz graph to FILE.
    #[arg(long, value_name = "FILE")]
    pub dot: Option<PathBuf>,
}

impl FailureOptions {
    /// `--dot`'s file, checked before any run: never one that exists (nothing the user has is
    /// overwritten), and in a directory that exists.
    pub fn dot_file(&self) -> Result<Option<PathBuf>, Error> {
        let Some(d) = &self.dot else { return Ok(None) };
        if d.exists() {
            return Err(Error::usage(format!("--dot: '{}' exists; not overwriting it", d.display())));
        }
        let dir = match d.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => std::path::Path::new("."),
        };
        if !dir.is_dir() {
            return Err(Error::usage(format!("--dot: cannot write '{}': no directory '{}'", d.display(), dir.display())));
        }
        Ok(Some(d.clone()))
    }
}

/// The ids of an option group's arguments.
pub fn ids<T: clap::Args>() -> Vec<String> {
    T::augment_args(clap::Command::new("group")).get_arguments().map(|a| a.get_id().to_string()).collect()
}

/// A tool, as `main` sees it: its name, what it does, the options it owns, how to make the
/// run's instrumentation and, for a search, when the options ask for one and how to run it.
pub struct ToolSpec {
    pub name: &'static str,
    pub about: &'static str,
    /// Ids of the options only it takes (the others' are refused with it).
    pub options: fn() -> Vec<String>,
    pub make: fn(&crate::cli::Cli) -> Result<Box<dyn ToolRun>, Error>,
    pub search: Option<Search>,
}

/// A search over runs of the program: whether the options ask for it, and the search itself
/// (its exit status).
pub struct Search {
    pub wanted: fn(&crate::cli::Cli) -> bool,
    pub run: fn(&crate::cli::Cli) -> Result<i32, Error>,
}

fn none_make(_: &crate::cli::Cli) -> Result<Box<dyn ToolRun>, Error> {
    Ok(Box::new(NoInstrumentation))
}

/// Every tool, in `--help`'s order.
pub const TOOLS: &[ToolSpec] = &[
    ToolSpec { name: "none", about: "Run the program under the JIT with no instrumentation.", options: Vec::new, make: none_make, search: None },
    ToolSpec {
        name: "count",
        about: "Count instructions, blocks, loads, stores and conditional branches (inline counters).",
        options: ids::<count::Options>,
        make: count::make,
        search: None,
    },
    ToolSpec {
        name: "taint",
        about: "Track which branches, addresses and syscall arguments depend on input bytes.",
        options: ids::<taint::Options>,
        make: taint::make,
        search: None,
    },
    ToolSpec {
        name: "race",
        about: "Report the data races the run shows (happens-before from the binary's own synchronization), each tested for harm.",
        options: race::option_ids,
        make: race::make,
        search: Some(Search { wanted: race::wants_search, run: race::search }),
    },
    ToolSpec {
        name: "switch",
        about: "Invert the outcome of one instance of one conditional branch.",
        options: switch::option_ids,
        make: switch::make,
        search: Some(Search { wanted: switch::wants_search, run: switch::search }),
    },
    ToolSpec {
        name: "reorder",
        about: "Find a layout of the program's variables under which a run that corrupts memory quietly fails.",
        options: reorder::option_ids,
        make: reorder::make,
        search: Some(Search { wanted: reorder::wants_search, run: reorder::search }),
    },
    ToolSpec {
        name: "spectra",
        about: "Rank the program's source lines by how much more its failing tests run them than its passing ones (Ochiai, Tarantula).",
        options: spectra::option_ids,
        make: spectra::make,
        search: Some(Search { wanted: spectra::wants_search, run: spectra::search }),
    },
    ToolSpec {
        name: "cbi",
        about: "Isolate the predicates (branch directions, signs of values returned, pairs of locals) that predict a test suite's failures (statistical bug isolation).",
        options: cbi::option_ids,
        make: cbi::make,
        search: Some(Search { wanted: cbi::wants_search, run: cbi::search }),
    },
    ToolSpec {
        name: "vr",
        about: "Rank the program's source lines by the failing tests that one replaced value at the line makes pass (value replacement).",
        options: vr::option_ids,
        make: vr::make,
        search: Some(Search { wanted: vr::wants_search, run: vr::search }),
    },
    ToolSpec {
        name: "suppress",
        about: "Find the first point of memory corruption behind a crash (iterated suppression).",
        options: suppress::option_ids,
        make: suppress::make,
        search: Some(Search { wanted: suppress::wants_search, run: suppress::search }),
    },
];

/// The tool named `name` (clap checked it is one).
pub fn spec(name: &str) -> &'static ToolSpec {
    TOOLS.iter().find(|t| t.name == name).expect("a tool clap accepted")
}

/// `--tool`'s possible values, from the list.
pub fn tool_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(TOOLS.iter().map(|t| clap::builder::PossibleValue::new(t.name).help(t.about)))
}

/// The first option given on the command line that `tool` does not take but another tool
/// does: its flag and the tools that take it.
pub fn foreign_option(tool: &ToolSpec, matches: &clap::ArgMatches, command: &clap::Command) -> Option<(String, Vec<&'static str>)> {
    let own = (tool.options)();
    let given = |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
    let id = TOOLS.iter().flat_map(|t| (t.options)()).find(|id| !own.contains(id) && given(id))?;
    let owners = TOOLS.iter().filter(|t| (t.options)().contains(&id)).map(|t| t.name).collect();
    let long = command.get_arguments().find(|a| a.get_id().as_str() == id).and_then(|a| a.get_long()).unwrap_or(&id).to_string();
    Some((format!("--{long}"), owners))
}

/// Client request codes (must match `guest-programs/include/rtgrind.h`).
pub const REQ_RUNNING_ON_RTGRIND: u64 = 0x1000;
pub const REQ_TAINT: u64 = 0x2001;
pub const REQ_UNTAINT: u64 = 0x2002;
pub const REQ_GET_TAINT: u64 = 0x2003;
pub const REQ_GET_ORIGIN: u64 = 0x2004;

/// A tool as the runtime sees it. Hooks run on the thread holding the scheduler's baton.
pub trait ToolRun: Tool {
    /// The run's scheduler, before `start`: for a tool that holds a thread back where it
    /// stands (`Scheduler::hold`, from a call-out) to reorder two threads' accesses.
    fn attach(&mut self, _sched: &'static crate::kernel::sched::Scheduler) {}
    /// Before the main thread runs its first instruction.
    fn start(&mut self, _ctx: &mut ThreadContext, _mem: &GuestMemory) {}
    /// A new thread's context, a copy of its creator's (tool area included), before it runs.
    fn thread_start(&mut self, _child: &mut ThreadContext) {}
    /// Before a guest syscall `nr` with arguments `args` is emulated or passed through.
    /// `Some(ret)` suppresses it: it is not made and returns `ret`.
    fn syscall_pre(&mut self, _ctx: &mut ThreadContext, _nr: u64, _args: &[u64; 6]) -> Option<i64> {
        None
    }
    /// After it returned `ret` (a negative errno on failure).
    fn syscall_post(&mut self, _ctx: &mut ThreadContext, _nr: u64, _args: &[u64; 6], _ret: i64, _mem: &GuestMemory) {}
    /// A client request from the guest (`guest-programs/include/rtgrind.h`): `req[0]` is the
    /// code, the rest its arguments. The answer goes to the guest's rdx; None leaves the
    /// default the guest put there (what it gets natively).
    fn client_request(&mut self, _ctx: &mut ThreadContext, req: &[u64; 6], _mem: &GuestMemory) -> Option<u64> {
        (req[0] == REQ_RUNNING_ON_RTGRIND).then_some(1)
    }
    /// The guest's handler for signal `sig` is about to run on this thread (its frame built).
    fn signal_handler(&mut self, _ctx: &mut ThreadContext, _sig: i32) {}
    /// The guest dies of signal `sig` (`code` and fault address `addr` from its siginfo); the
    /// context is the dying thread's, at the faulting instruction for a synchronous fault.
    fn fatal_signal(&mut self, _ctx: &mut ThreadContext, _sig: i32, _code: i32, _addr: u64, _mem: &GuestMemory) {}
    /// Whether the tool forks children at points of the run (`fork_requested`), each of which
    /// gets `--budget-blocks` as its own budget (the run itself has none).
    fn forks_children(&self) -> bool {
        false
    }
    /// Polled by the dispatcher: true to have the process forked here (then `forked` tells
    /// each side which it is).
    fn fork_requested(&mut self) -> bool {
        false
    }
    /// After a fork the tool asked for: `child` is the child's pid in the parent, 0 in the
    /// child. The child may answer a block budget (blocks from now; the run ends with status
    /// 124 when used up).
    fn forked(&mut self, _ctx: &mut ThreadContext, _child: i64) -> Option<u64> {
        None
    }
    /// Polled by the dispatcher: a guest range whose translations are to be dropped (the tool
    /// changed what it instruments there); `(0, u64::MAX)` for all.
    fn retranslate_requested(&mut self) -> Option<(u64, u64)> {
        None
    }
    /// The run ends (exit, fatal signal, stop): print what the tool found.
    fn fini(&mut self, _report: &mut Reporter, _mem: &GuestMemory) {}
    /// After `fini`, when the program exits: the status to end with instead of the program's
    /// (a tool's error exit code for what it found).
    fn exit_code(&self) -> Option<i32> {
        None
    }
}

impl ToolRun for NoInstrumentation {}

/// `cmovCC dst, src` for a branch's condition code.
pub fn cmov_cc(asm: &mut CodeAssembler, cc: ConditionCode, dst: AsmRegister64, src: AsmRegister64) {
    type C = ConditionCode;
    match cc {
        C::o => asm.cmovo(dst, src),
        C::no => asm.cmovno(dst, src),
        C::b => asm.cmovb(dst, src),
        C::ae => asm.cmovae(dst, src),
        C::e => asm.cmove(dst, src),
        C::ne => asm.cmovne(dst, src),
        C::be => asm.cmovbe(dst, src),
        C::a => asm.cmova(dst, src),
        C::s => asm.cmovs(dst, src),
        C::ns => asm.cmovns(dst, src),
        C::p => asm.cmovp(dst, src),
        C::np => asm.cmovnp(dst, src),
        C::l => asm.cmovl(dst, src),
        C::ge => asm.cmovge(dst, src),
        C::le => asm.cmovle(dst, src),
        C::g => asm.cmovg(dst, src),
        C::None => Ok(()),
    }
    .unwrap();
}

/// The main program's path and mapped range (from its first to its last mapping).
pub fn main_module(mem: &GuestMemory, program: &str) -> (String, (u64, u64)) {
    let mut range = (u64::MAX, 0);
    let mut name = String::new();
    let mut same: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
    for (s, e, r) in mem.pieces(0, u64::MAX >> 16) {
        let Some(n) = r.name.as_deref() else { continue };
        let is = *same.entry(n.to_string()).or_insert_with(|| std::fs::canonicalize(n).is_ok_and(|c| c.to_string_lossy() == program));
        if is {
            range = (range.0.min(s), range.1.max(e));
            name = n.to_string();
        }
    }
    if range.0 > range.1 {
        range = (0, 0);
    }
    (name, range)
}

/// The return addresses on the stack from `sp` up to `top` (16 KiB at most), innermost first:
/// words that point just past a call instruction (`call rel32`, or `call` through a register or
/// memory), as a stack scan finds them (no frame pointers needed; a stale one left by an
/// earlier call may show).
pub fn return_addresses(sp: u64, top: u64) -> impl Iterator<Item = u64> {
    let len = top.saturating_sub(sp).clamp(8, 16 << 10);
    let mut bytes = vec![0u8; len as usize];
    let got = crate::kernel::guest_mem::read_some(sp, &mut bytes);
    bytes.truncate(got - got % 8);
    let words = (0..bytes.len() / 8).map(move |k| u64::from_le_bytes(bytes[8 * k..8 * k + 8].try_into().expect("8 bytes")));
    words.filter(|&w| {
        let mut before = [0u8; 7];
        if w < 0x10000 || !crate::kernel::guest_mem::read(w - 7, &mut before) {
            return false;
        }
        // call rel32 (e8); call r/m64 (ff /2) with a register, a disp8, a [rip+disp32] or a
        // disp32 operand (and a SIB byte for the last two forms' 7-byte encodings).
        let ff2 = |k: usize| before[k] == 0xff && (before[k + 1] >> 3) & 7 == 2;
        before[2] == 0xe8 || (ff2(5) && before[6] >> 6 == 3) || (ff2(4) && before[5] >> 6 == 1) || ff2(1) || ff2(0)
    })
}

/// The main program's mapped range (see `main_module`).
pub fn main_module_range(mem: &GuestMemory, program: &str) -> (u64, u64) {
    main_module(mem, program).1
}

/// Before a guest `execve` that rtgrind does not follow (`--trace-children=no`): the run of a
/// tool that reports at the end never ends under rtgrind, so it says why (a shell wrapper such
/// as a pyenv shim starting the real program is the usual case). If the execve fails, the run
/// goes on and reports as usual; the driver reads this line only when no outcome came.
pub fn note_exec(nr: u64, args: &[u64; 6]) {
    if nr as i64 == libc::SYS_execve {
        let path = crate::kernel::guest_mem::read_cstr(args[0], 4096).map(|p| String::from_utf8_lossy(&p).into_owned()).unwrap_or_default();
        eprintln!("rtgrind: error: the program replaces itself with '{path}' (execve), which this tool does not follow: run '{path}' under it directly");
    }
}

/// Whether a syscall ends the process, for tools that judge a run at its end: `exit_group`,
/// or `exit` of its last thread (a thread's `exit` is not the program's; a tool that took it
/// for the end saw a threaded python "end" before printing). Count threads with `started`.
#[derive(Default)]
pub struct Lifetime {
    created: u64,
    exited: u64,
}

impl Lifetime {
    pub fn started(&mut self) {
        self.created += 1;
    }

    /// Called once per syscall, before it runs.
    pub fn ends_process(&mut self, nr: u64) -> bool {
        match nr as i64 {
            libc::SYS_exit_group => true,
            libc::SYS_exit if self.exited < self.created => {
                self.exited += 1;
                false
            }
            libc::SYS_exit => true,
            _ => false,
        }
    }
}

/// Guest instructions the tools decoded themselves (`decode`, control-flow regions), for
/// `--stats`: most of it at translation time, inside the tools' hooks.
pub static TOOL_DECODES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The guest instruction at `pc`, if there is a valid one (none at 0 or unreadable memory).
pub fn decode(pc: u64) -> Option<rtgrind_jit::iced_x86::Instruction> {
    decode_read(pc, crate::kernel::guest_mem::read_some)
}

/// The guest instruction at `pc`, as `decode` finds it, for a tool's look-ahead at translation
/// time: the bytes are copied under the host's fault handler (`raw::copy_guarded`), with no
/// system call (`process_vm_readv` per instruction was a sixth of a traced suppression run).
/// Only where that handler catches a bad read: in a hook, not in a signal's handling.
pub fn decode_code(pc: u64) -> Option<rtgrind_jit::iced_x86::Instruction> {
    decode_read(pc, crate::kernel::raw::copy_guarded)
}

fn decode_read(pc: u64, read: fn(u64, &mut [u8]) -> usize) -> Option<rtgrind_jit::iced_x86::Instruction> {
    use rtgrind_jit::iced_x86::{Decoder, DecoderOptions};
    let mut buf = [0u8; 16];
    let n = if pc == 0 { 0 } else { read(pc, &mut buf) };
    // (A translation's look-ahead: the translation cache checks these bytes too.)
    rtgrind_jit::persist::note_read(pc, buf.len(), n);
    if n == 0 {
        return None;
    }
    TOOL_DECODES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ins = Decoder::with_ip(64, &buf[..n], pc, DecoderOptions::NONE).decode();
    (!ins.is_invalid()).then_some(ins)
}

#[cfg(test)]
mod claims_tests {
    /// Every tool's tool-area words and registers can be claimed in one process without a
    /// conflict (switch's fork mode used words inside the shadow registers' once).
    #[test]
    fn every_tools_claims_fit_together() {
        super::suppress::area::claim().unwrap();
        crate::shadow::claim_layout().unwrap();
        let fork = super::switch::fork::new(super::checkpoints::Checkpoints::read(std::path::PathBuf::from("/nonexistent"), 1), 1, None, String::new());
        assert!(fork.is_ok(), "{:?}", fork.err());
        assert!(super::switch::run::claim_outcome().is_ok());
        let vr = super::vr::fork::new(
            super::checkpoints::Checkpoints::read(std::path::PathBuf::from("/nonexistent"), 1),
            Default::default(),
            1,
            String::new(),
            None,
        );
        assert!(vr.is_ok(), "{:?}", vr.err());
        assert!(rtgrind_jit::claims::claim_area("the race detector", 16).is_ok());
        assert!(super::cbi::predicates::Predicates::new("/dev/null".into(), String::new(), Some(2), 1).is_ok());
        // A claim of the shadow's words by anyone else is refused.
        let e = rtgrind_jit::claims::claim("a new tool", rtgrind_jit::claims::Resource::Area { start: 8, len: 24 }).unwrap_err();
        assert!(e.to_string().contains("the shadow state has"), "{e}");
    }
}
