//! How many of the instruction forms real programs contain the differential instruction tests
//! run: iced-x86 `Code` values decoded from the generated test programs (`tests/insn`, left in
//! `target/tmp/insn` by `cargo test --release --test tests -- insn::`) against those decoded
//! from the executable sections of the system programs and libraries the suite runs.
//!
//! `cargo run --release --example insn_coverage -- target/tmp/insn [ELF...]`
//! (without ELF arguments, the system programs of `tests/system_programs.rs` and their libraries).

use rtgrind_jit::iced_x86::{Code, Decoder, DecoderOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The programs `tests/system_programs.rs` runs and the libraries they load.
const SYSTEM: &[&str] = &[
    "/usr/bin/ls",
    "/usr/bin/sort",
    "/usr/bin/sha256sum",
    "/usr/bin/gzip",
    "/usr/bin/bash",
    "/usr/bin/perl",
    "/usr/bin/python3",
    "/usr/bin/objdump",
    "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/libm.so.6",
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/x86_64-linux-gnu/libstdc++.so.6",
    "/lib/x86_64-linux-gnu/libperl.so.5.36",
    "/lib/x86_64-linux-gnu/libz.so.1",
    "/lib/x86_64-linux-gnu/libcrypto.so.3",
];

/// Each form decoded in the executable sections of `path`, with how often it occurs; from
/// `start` (a symbol) on if given, since the test programs keep data at the start of `.text`.
fn forms(path: &Path, start: Option<&str>) -> Result<BTreeMap<Code, u64>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let elf = goblin::elf::Elf::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let from = start.and_then(|name| elf.syms.iter().find(|s| elf.strtab.get_at(s.st_name) == Some(name)).map(|s| s.st_value));
    let mut counts = BTreeMap::new();
    for sh in elf.section_headers.iter().filter(|sh| sh.is_executable() && sh.sh_type == goblin::elf::section_header::SHT_PROGBITS) {
        let Some(code) = bytes.get(sh.sh_offset as usize..(sh.sh_offset + sh.sh_size) as usize) else { continue };
        let skip = from.map_or(0, |f| f.saturating_sub(sh.sh_addr).min(sh.sh_size)) as usize;
        let mut decoder = Decoder::with_ip(64, &code[skip..], sh.sh_addr + skip as u64, DecoderOptions::NONE);
        for ins in &mut decoder {
            if !ins.is_invalid() {
                *counts.entry(ins.code()).or_insert(0) += 1;
            }
        }
    }
    Ok(counts)
}

fn main() {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let Some(tests) = args.next() else {
        eprintln!("usage: insn_coverage TEST_PROGRAM_DIR [ELF...]");
        std::process::exit(2);
    };
    let mut system: Vec<PathBuf> = args.collect();
    if system.is_empty() {
        system = SYSTEM.iter().map(PathBuf::from).filter(|p| p.exists()).collect();
    }
    let mut exercised = BTreeSet::new();
    let mut programs = 0;
    let entries = std::fs::read_dir(&tests).unwrap_or_else(|e| {
        eprintln!("insn_coverage: {}: {e}", tests.display());
        std::process::exit(2)
    });
    for entry in entries.flatten() {
        let p = entry.path();
        if p.extension().is_none() && p.is_file() {
            match forms(&p, Some("_start")) {
                Ok(f) => {
                    exercised.extend(f.into_keys());
                    programs += 1;
                }
                Err(e) => eprintln!("insn_coverage: skipped {e}"),
            }
        }
    }
    let mut found: BTreeMap<Code, u64> = BTreeMap::new();
    for p in &system {
        match forms(p, None) {
            Ok(f) => f.into_iter().for_each(|(c, n)| *found.entry(c).or_insert(0) += n),
            Err(e) => eprintln!("insn_coverage: skipped {e}"),
        }
    }
    let total: u64 = found.values().sum();
    let covered: Vec<(&Code, &u64)> = found.iter().filter(|(c, _)| exercised.contains(c)).collect();
    let covered_weight: u64 = covered.iter().map(|(_, n)| **n).sum();
    println!("test programs: {programs}, forms they exercise: {}", exercised.len());
    println!("system files: {}, forms in them: {}, instructions: {total}", system.len(), found.len());
    println!(
        "covered: {} of {} forms ({:.1}%), {:.2}% of the instructions",
        covered.len(),
        found.len(),
        100.0 * covered.len() as f64 / found.len().max(1) as f64,
        100.0 * covered_weight as f64 / total.max(1) as f64
    );
    let mut missing: Vec<(&Code, &u64)> = found.iter().filter(|(c, _)| !exercised.contains(c)).collect();
    missing.sort_by(|a, b| b.1.cmp(a.1));
    println!("most frequent forms not covered:");
    for (code, n) in missing.iter().take(40) {
        println!("  {n:>9}  {code:?}");
    }
}
