//! The predicate-switching search on `guest-programs/switch/` programs: search time and the
//! number of switched runs for each order, fork search against plain re-execution. Prints a
//! markdown table and writes it to `target/bench-switch.md`.
//!
//! ```text
//! cargo bench --bench switch [-- FILTER...]
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// (program, arguments, expected output; None: a crash is the failure).
const PROGRAMS: [(&str, &[&str], Option<&str>); 8] = [
    ("decision", &["5", "7"], Some("no advisory\nclimb\n")),
    ("tokenizer", &["to be a"], Some("3\n")),
    ("word_match", &["cat", "concatenate the cat"], Some("match\n")),
    ("middle_instance", &[], Some("0\n")),
    ("bounds_crash", &["4"], None),
    ("loops", &[], Some("large 3\n")),
    ("many_branches", &[], Some("on 4165833\n")),
    ("dependent", &["100"], Some("price 1000\ncheck 6506\n")),
];

fn main() {
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = root.join("target/bench-bin/switch");
    std::fs::create_dir_all(&bin).unwrap();
    let rtgrind = env!("CARGO_BIN_EXE_rtgrind");
    let mut table = String::from("| program | candidates | order | fork: runs, time | re-execution: runs, time | speed-up |\n|---|---:|---|---:|---:|---:|\n");
    for (name, args, expected) in PROGRAMS {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let exe = bin.join(name);
        let st = Command::new("gcc").args(["-g", "-O0", "-o"]).arg(&exe).arg(root.join(format!("guest-programs/switch/{name}.c"))).status().unwrap();
        assert!(st.success(), "gcc failed on {name}");
        let exp: Option<PathBuf> = expected.map(|e| {
            let p = bin.join(format!("{name}.expected"));
            std::fs::write(&p, e).unwrap();
            p
        });
        for order in ["lefs", "last-instance-first", "prior"] {
            let mut cells = Vec::new();
            let mut candidates = String::new();
            for fork in ["yes", "no"] {
                let mut cmd = Command::new(rtgrind);
                cmd.arg("--tool=switch").arg(format!("--order={order}")).arg(format!("--fork={fork}"));
                if let Some(p) = &exp {
                    cmd.arg(format!("--expected-output={}", p.display()));
                }
                cmd.arg(&exe).args(args);
                let t = Instant::now();
                let out = cmd.output().unwrap();
                let secs = t.elapsed().as_secs_f64();
                let err = String::from_utf8_lossy(&out.stderr);
                let runs = err
                    .lines()
                    .find_map(|l| {
                        l.split("switch: ").nth(1).and_then(|r| {
                            r.strip_suffix("").filter(|r| r.contains(" switched runs of ")).map(|r| r.split_whitespace().next().unwrap_or("?").to_string())
                        })
                    })
                    .unwrap_or_else(|| "?".into());
                if candidates.is_empty() {
                    candidates = err.lines().find_map(|l| l.split("); ").nth(1).and_then(|r| r.split(' ').next()).map(str::to_string)).unwrap_or_default();
                }
                cells.push((runs, secs));
                eprintln!("{name} {order} fork={fork}: {} runs, {secs:.2} s", cells.last().unwrap().0);
            }
            table += &format!(
                "| {name} | {candidates} | {order} | {}, {:.2} s | {}, {:.2} s | {:.1}x |\n",
                cells[0].0,
                cells[0].1,
                cells[1].0,
                cells[1].1,
                cells[1].1 / cells[0].1
            );
        }
    }
    println!("{table}");
    let _ = std::fs::write(root.join("target/bench-switch.md"), &table);
}
