//! `rtgrind symbolize -e MODULE ADDR...`: file addresses of a module to `file:line (function)`,
//! as binutils' `addr2line -f -C` would say them but in-process (`debuginfo`: the module's own
//! DWARF or its separate debug file), one line per address; `??` where there is no line. For
//! the addresses of a report of a program without lines at hand, and to measure symbolizing.

use clap::Parser;
use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// Source lines of a module's addresses.
#[derive(Parser, Debug)]
#[command(name = "rtgrind symbolize", version, about, after_help = "Example: rtgrind symbolize -e ./prog 0x1139 0x1150")]
struct Options {
    /// The module (executable or shared library) the addresses are file addresses of.
    #[arg(short = 'e', long = "exe", value_name = "MODULE")]
    module: PathBuf,

    /// Addresses, hex (0x optional); without any, one a line from standard input.
    #[arg(value_name = "ADDR")]
    addrs: Vec<String>,
}

/// Runs `rtgrind symbolize ARGS`: the exit status.
pub fn main(args: &[OsString]) -> i32 {
    let opts: Options = match crate::cli::parse_command("symbolize", args, "rtgrind symbolize -e MODULE [ADDR...]") {
        Ok(o) => o,
        Err(code) => return code,
    };
    if let Err(e) = std::fs::File::open(&opts.module) {
        return crate::cli::command_error(&format!("symbolize: cannot read '{}': {e}", opts.module.display()));
    }
    let module = opts.module.to_string_lossy().into_owned();
    let parse = |a: &str| u64::from_str_radix(a.trim().trim_start_matches("0x"), 16).map_err(|_| format!("symbolize: '{}' is no hex address", a.trim()));
    let addrs: Result<Vec<u64>, String> = if opts.addrs.is_empty() {
        std::io::stdin().lock().lines().map_while(Result::ok).filter(|l| !l.trim().is_empty()).map(|l| parse(&l)).collect()
    } else {
        opts.addrs.iter().map(|a| parse(a)).collect()
    };
    let addrs = match addrs {
        Ok(a) => a,
        Err(e) => return crate::cli::command_error(&e),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in super::lines::places(&module, addrs.into_iter()) {
        let _ = writeln!(out, "{}", line.as_deref().unwrap_or("??"));
    }
    0
}
