//! Variable re-ordering (issue 24) on `guest-programs/reorder/`: memory corruption that does
//! not crash as the program is laid out. `--tool=reorder` must find the layout that exposes it
//! (or say none can, with how many it tried), the layout file must replay the failure under
//! another tool, and `--tool=suppress` (the complete technique) must end at the corrupting line.

use crate::common::{compile_snippet, repo_root, run_native, run_rtgrind, scratch_dir, Cmd};

/// `guest-programs/reorder/NAME.c`, built `-g -O0 -fno-stack-protector`.
fn program(name: &str) -> std::path::PathBuf {
    built(name, "-O0")
}

/// `guest-programs/reorder/NAME.c`, built `-g OPT -fno-stack-protector`.
fn built(name: &str, opt: &str) -> std::path::PathBuf {
    let source = std::fs::read_to_string(repo_root().join("guest-programs/reorder").join(format!("{name}.c"))).unwrap();
    compile_snippet(&format!("reorder_{name}"), "c", &source, &["-g", opt, "-fno-stack-protector"])
}

/// `reorder_NAME.c:LINE (FUNC)` of the line carrying `/* root */` (the program is compiled
/// under that name).
fn root(name: &str, func: &str) -> String {
    marked(name, "root", func)
}

/// `reorder_NAME.c:LINE (FUNC)` of the line carrying `/* MARK */`.
fn marked(name: &str, mark: &str, func: &str) -> String {
    let text = std::fs::read_to_string(repo_root().join("guest-programs/reorder").join(format!("{name}.c"))).unwrap();
    let line = text.lines().position(|l| l.contains(&format!("/* {mark} */"))).unwrap() + 1;
    format!("reorder_{name}.c:{line} ({func})")
}

fn headline(stderr: &str) -> String {
    stderr.lines().find(|l| l.contains("first point of memory corruption:")).unwrap_or_else(|| panic!("no root cause reported:\n{stderr}")).to_string()
}

/// Runs `--tool=reorder` saving the layout in a fresh directory: the run and the layout file.
fn reorder(exe: &std::path::Path, args: &[&str]) -> (crate::common::Output, std::path::PathBuf) {
    let layout = scratch_dir("reorder-layout").join("layout.json");
    let out = run_rtgrind(["--tool=reorder".to_string(), format!("--layout-out={}", layout.display())], &Cmd::new(exe).args(args));
    (out, layout)
}

/// The Fig. 5.6 shape: natively the overflow only lands on two ints that are set again. The
/// first layout tried puts the buffer right below the saved frame pointer and return address
/// and the run crashes; the layout file replays that crash under `--tool=none`; suppression,
/// searching layouts itself, ends at the strcpy.
#[test]
fn a_stack_overflow_onto_two_ints_is_exposed_by_a_layout_and_traced_to_the_copy() {
    let exe = program("stack_two_ints");
    let name = "a".repeat(31);
    let native = run_native(&Cmd::new(&exe).arg(&name));
    assert_eq!(native.status.code(), Some(0), "the overflow must not crash natively: {}", native.describe());

    let (out, layout) = reorder(&exe, &[&name]);
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(err.contains("reorder: under layout 1 of 4 the run fails: SIGBUS at ") && err.contains("reorder_stack_two_ints.c:21 (main)"), "{err}");
    assert!(err.contains("buffer 'tempname' of compress_name right below the saved frame pointer and return address"), "{err}");
    assert!(err.contains("1 layout tried of 4 made over 1 buffer and 6 address-related variables (1 global, 2 frames)"), "{err}");
    let replay = run_rtgrind(["--tool=none".to_string(), format!("--layout={}", layout.display())], &Cmd::new(&exe).arg(&name));
    assert!(replay.status.code().is_none() && replay.stderr_str().contains("Process terminating with default action of signal"), "{}", replay.describe());
    // Every tool reads it: the switch search fails under it too, and its replay command keeps it.
    let switched = run_rtgrind(["--tool=switch".to_string(), format!("--layout={}", layout.display())], &Cmd::new(&exe).arg(&name));
    let err = switched.stderr_str();
    assert!(err.contains("switch: the original run fails (signal 7") && err.contains(&format!("--repeatable=yes --layout={} --", layout.display())), "{err}");

    let kept = scratch_dir("reorder-kept").join("found.json");
    let out = run_rtgrind(["--tool=suppress".to_string(), format!("--layout-out={}", kept.display())], &Cmd::new(&exe).arg(&name));
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(headline(&err).contains(&root("stack_two_ints", "compress_name")), "{err}");
    assert!(err.contains(&format!("from run 3 on, the variables had the layout in {}: buffer 'tempname'", kept.display())), "{err}");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), std::fs::read_to_string(&layout).unwrap());
    assert!(err.contains("found after 1 layout tried in 2 runs over 1 buffer"), "{err}");
    let out = run_rtgrind(["--tool=suppress", "--reorder=no"], &Cmd::new(&exe).arg(&name));
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    assert!(out.stderr_str().contains("the program did not fail"), "{}", out.describe());
}

/// The same shape in code without a frame pointer (`-Og`): the frame's locals are found from
/// the CFA, which rsp locates at each pc by the call frame information, and a local's address
/// taken as a copy of rsp follows it. Natively the overflow only reaches a saved register the
/// caller no longer needs; the first layout puts the buffer right below that register and the
/// return address, and the return goes wild; suppression under it ends at the strcpy.
#[test]
fn a_stack_smash_in_code_without_a_frame_pointer_is_exposed_and_traced_to_the_copy() {
    let exe = built("stack_no_frame_pointer", "-Og");
    let name = "a".repeat(39);
    let native = run_native(&Cmd::new(&exe).arg(&name));
    assert_eq!(native.status.code(), Some(0), "the overflow must not crash natively: {}", native.describe());

    let (out, layout) = reorder(&exe, &[&name]);
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(err.contains("reorder: under layout 1 of 3 the run fails: SIGSEGV at 0x61616161616161"), "{err}");
    assert!(err.contains("buffer 'tempname' of compress_name right below the saved registers and return address"), "{err}");
    // tempname (24 bytes) at CFA-48 moves to CFA-40, right below rbx's slot at CFA-16.
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&layout).unwrap()).unwrap();
    let frame = &saved["frames"][0];
    assert_eq!(frame["function"], "compress_name", "{saved}");
    let moved = frame["locals"].as_array().unwrap().iter().find(|l| l["name"] == "tempname").unwrap();
    assert_eq!((moved["offset"].as_i64(), moved["to"].as_i64()), (Some(-48), Some(-40)), "{saved}");

    let kept = scratch_dir("reorder-kept-og").join("found.json");
    let out = run_rtgrind(["--tool=suppress".to_string(), format!("--layout-out={}", kept.display())], &Cmd::new(&exe).arg(&name));
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(headline(&err).contains(&root("stack_no_frame_pointer", "compress_name")), "{err}");
    assert!(err.contains("buffer 'tempname' of compress_name right below the saved registers and return address, found after 1 layout tried"), "{err}");
}

/// A frame without a frame pointer re-laid by random layouts: the addresses of its locals,
/// taken with `lea` from rsp and as a copy of rsp, follow them (the offset printed changes from
/// layout to layout) and no two locals overlap (the values printed stay intact).
#[test]
fn locals_of_a_frame_without_a_frame_pointer_move_with_their_addresses() {
    let exe = built("frame_addresses", "-Og");
    let native = run_native(&Cmd::new(&exe));
    assert_eq!(native.stdout_str(), "-48 first second 5\n", "{}", native.describe());
    let mut offsets = std::collections::BTreeSet::new();
    for seed in 1..=10 {
        let out = run_rtgrind(["-q".to_string(), format!("--layout=random:{seed}")], &Cmd::new(&exe));
        let line = out.stdout_str();
        let (offset, values) = line.trim_end().split_once(' ').unwrap_or_else(|| panic!("seed {seed}: {}", out.describe()));
        assert_eq!((values, out.status.code()), ("first second 5", native.status.code()), "seed {seed}: {}", out.describe());
        offsets.insert(offset.parse::<i64>().unwrap());
    }
    assert!(offsets.len() >= 3 && !offsets.contains(&0), "{offsets:?}");
}

/// A global off-by-one that writes the zero already there: no layout can expose it, and both
/// tools say so with the layouts tried and what they were over.
#[test]
fn a_global_off_by_one_writing_the_value_already_there_cannot_be_exposed() {
    let exe = program("global_same_value");
    let (out, layout) = reorder(&exe, &["x", "y"]);
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    assert!(err.contains("reorder: no layout exposed a failure: 3 layouts tried over 1 buffer and 7 address-related variables (4 globals, 1 frame)"), "{err}");
    assert!(!layout.exists());
    let out = run_rtgrind(["--tool=suppress"], &Cmd::new(&exe).args(["x", "y"]));
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    assert!(err.contains("nor under other layouts of its globals, frames and heap blocks (3 layouts tried in 3 runs over 1 buffer"), "{err}");
}

/// A global overflow natively lands in an array nobody reads; a layout puts the greeting
/// pointer after the buffer and printf dies on it; suppression ends at the strcpy.
#[test]
fn a_global_overflow_into_an_unused_array_becomes_a_pointer_corruption() {
    let exe = program("global_into_unused");
    let name = "a".repeat(28);
    let (out, layout) = reorder(&exe, &[&name]);
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(err.contains("reorder: under layout 1 of 2 the run fails: SIGSEGV"), "{err}");
    assert!(err.contains("global buffer 'line' followed by 'greeting'"), "{err}");
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&layout).unwrap()).unwrap();
    let moved: Vec<&str> = saved["globals"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert!(moved.contains(&"line") && moved.contains(&"greeting"), "{saved}");

    let out = run_rtgrind(["--tool=suppress", "--jobs=1"], &Cmd::new(&exe).arg(&name).cwd(scratch_dir("reorder-suppress")));
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(headline(&err).contains(&root("global_into_unused", "main")), "{err}");
    assert!(err.contains("the variables had the layout in rtgrind-layout.json: global buffer 'line' followed by 'greeting'"), "{err}");
    assert!(err.contains("found after 1 layout tried in 1 run over"), "{err}");
}

/// Bad layouts and layout options get a one-line error and status 2, before any run.
#[test]
fn bad_layouts_are_refused_with_one_line() {
    let exe = program("global_into_unused");
    let dir = scratch_dir("reorder-bad");
    let wrong = dir.join("wrong.json");
    std::fs::write(&wrong, r#"{"program":"x","globals":[{"name":"line","address":1,"size":16,"to":0}]}"#).unwrap();
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "not json").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![format!("--layout={}", dir.join("missing.json").display())], "--layout: cannot read"),
        (vec![format!("--layout={}", garbage.display())], "is not a layout"),
        (vec![format!("--layout={}", wrong.display())], "does not fit"),
        (vec!["--layout=random:x".into()], "is not a number"),
    ];
    for (opts, says) in cases {
        let out = run_rtgrind(opts.iter().map(String::as_str).chain(["--tool=none"]), &Cmd::new(&exe));
        let err = out.stderr_str();
        assert_eq!(out.status.code(), Some(2), "{}", out.describe());
        assert!(err.lines().count() == 1 && err.contains(says), "{err}");
    }
    let out = run_rtgrind(["--tool=reorder".to_string(), format!("--layout-out={}", garbage.display())], &Cmd::new(&exe));
    assert_eq!(out.status.code(), Some(2), "{}", out.describe());
    assert!(out.stderr_str().contains("exists; not overwriting it"), "{}", out.describe());
    assert_eq!(std::fs::read_to_string(&garbage).unwrap(), "not json");
}

/// A write through a stale pointer into a freed block: natively it lands in bytes the
/// allocator does not use. With freed blocks kept from reuse and filled (the heap's layout in
/// a suppression run), the changed fill is the failure, and suppression ends at the write.
#[test]
fn a_write_after_free_is_found_with_freed_blocks_kept_from_reuse() {
    let exe = program("heap_use_after_free");
    let native = run_native(&Cmd::new(&exe));
    assert_eq!(native.status.code(), Some(0), "{}", native.describe());
    let out = run_rtgrind(["--tool=suppress"], &Cmd::new(&exe));
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(headline(&err).contains(&root("heap_use_after_free", "touch")), "{err}");
    assert!(
        err.contains("1. original run: heap block of 24 bytes written after its free (found at the end of the run; freed blocks were kept from reuse)"),
        "{err}"
    );
    assert!(err.contains("it used byte 20 of the heap block of 24 bytes at "), "{err}");
    assert!(err.contains("no layout of globals, frames and heap blocks made the last run fail: no layout to try over 3 buffers and 7 address-related variables (2 globals, 2 frames, 3 allocation sites)"), "{err}");
}

/// A heap overflow natively lands in a block of counters that are set again: nothing shows
/// it. The layouts pair the blocks that held no pointer with those that did, by allocation
/// site; the first puts the table of entries right after the title (rtgrind's allocator places
/// them), the overflow corrupts an entry pointer and printing it crashes. The layout file
/// replays the crash, and suppression under it ends at the strcpy.
#[test]
fn a_heap_overflow_into_a_neighbour_is_exposed_by_a_changed_neighbour() {
    let exe = program("heap_neighbour");
    let title = "a".repeat(40);
    let native = run_native(&Cmd::new(&exe).arg(&title));
    assert_eq!(native.status.code(), Some(0), "the overflow must not crash natively: {}", native.describe());

    let (out, layout) = reorder(&exe, &[&title]);
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let crash = marked("heap_neighbour", "crash", "main");
    assert!(err.contains("reorder: under layout 1 of 4 the run fails: SIGSEGV at ") && err.contains(&crash), "{err}");
    let pair =
        format!("heap block from {} followed by the block from {}", marked("heap_neighbour", "buffer", "main"), marked("heap_neighbour", "follower", "main"));
    assert!(err.contains(&pair), "{err}");
    assert!(err.contains("1 layout tried of 4 made over 3 buffers and 11 address-related variables (1 global, 1 frame, 5 allocation sites)"), "{err}");
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&layout).unwrap()).unwrap();
    assert_eq!(saved["heap"][0]["buffer_size"], 24, "{saved}");

    let replay = run_rtgrind(["--tool=none".to_string(), format!("--layout={}", layout.display())], &Cmd::new(&exe).arg(&title));
    assert!(replay.status.code().is_none() && replay.stderr_str().contains("(SIGSEGV)"), "{}", replay.describe());
    let out = run_rtgrind(["--tool=suppress".to_string(), format!("--layout={}", layout.display())], &Cmd::new(&exe).arg(&title));
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(headline(&err).contains(&root("heap_neighbour", "main")), "{err}");
    assert!(err.contains("1. original run: SIGSEGV at ") && err.contains(&crash), "{err}");
}
