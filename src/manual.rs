//! `rtgrind completions SHELL` and `rtgrind manpage`: a shell's completion script (clap_complete)
//! and the man page (clap_mangen, roff), both made from the clap definition of rtgrind's
//! options (`cli::Cli`), so they never disagree with `--help`. README says how to install them.

use clap::CommandFactory;
use std::ffi::OsString;

/// Runs `rtgrind completions SHELL`: the exit status.
pub fn completions(args: &[OsString]) -> i32 {
    let shells = "bash, zsh, fish, elvish or powershell";
    let shell = match args {
        [one] => one.to_str().and_then(|s| s.parse::<clap_complete::Shell>().ok()),
        _ => None,
    };
    let Some(shell) = shell else {
        let given = args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
        return crate::cli::command_error(&format!("completions: say which shell: {shells}, not '{given}' (usage: rtgrind completions SHELL)"));
    };
    clap_complete::generate(shell, &mut crate::cli::Cli::command(), "rtgrind", &mut std::io::stdout());
    0
}

/// Runs `rtgrind manpage`: the exit status. (Not `man`: a program of that name is run under
/// rtgrind as any other.)
pub fn man(args: &[OsString]) -> i32 {
    if !args.is_empty() {
        return crate::cli::command_error("manpage: takes no arguments (usage: rtgrind manpage > rtgrind.1)");
    }
    match clap_mangen::Man::new(crate::cli::Cli::command()).render(&mut std::io::stdout()) {
        Ok(()) => 0,
        Err(e) => crate::cli::command_error(&format!("manpage: cannot write it: {e}")),
    }
}
