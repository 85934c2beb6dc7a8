//! The program's own atomic globals, from its DWARF (`gimli`): C11's `_Atomic` variables, and
//! `_Atomic` members and elements of global structures and arrays. On x86-64 an acquire load
//! and a release store are plain `mov`s, which nothing in the code tells apart from a racy
//! access; the declared type does. The race tool treats these locations as it treats those a
//! `lock`-prefixed instruction touched: atomic, a load acquiring and a store releasing.
//! C++'s `std::atomic` (a class in DWARF) is found by its code instead: the loads and stores of
//! code whose lines are in libstdc++'s atomic headers, wherever the object is (`code`), and so
//! are OpenMP's `atomic read` and `write` (plain `mov`s): the statements an `omp atomic`
//! directive precedes in the source of a unit built with `-fopenmp`. C11's loads and stores
//! with an explicit order (`atomic_load_explicit`, GCC's `__atomic_store_n`...) on objects in
//! heap blocks or frames are found by their source instead (`c_accesses`): the instruction of
//! the operation's own line and column that loads or stores (outside the frame if one does). (A plain
//! expression of an `_Atomic` object in a heap block, a sequentially consistent load, is a
//! plain `mov` that nothing marks: it is not found.)

use crate::report::dwarf::{byte_size, entry_type, with_dwarf, Slice, Unit};
use gimli::{AttributeValue, Operation, UnitOffset};

/// Elements of an array of atomics marked, at most (a larger array is marked in part).
const MAX_ELEMENTS: u64 = 4096;
/// Nesting of structures and arrays followed.
const MAX_DEPTH: u32 = 4;

/// The atomic objects the ELF file at `path` declares, with their sizes, at the addresses they
/// have once the file's lowest loaded page is mapped at `mapped`; none when it has no DWARF
/// (or it cannot be read).
pub fn declared(path: &str, mapped: u64) -> Vec<(u64, u64)> {
    let (found, bias) = with_dwarf(path, mapped, |dwarf, _, _, out| variables(dwarf, out));
    found.into_iter().map(|(a, size)| (a.wrapping_add(bias), size)).collect()
}

/// The file's code that C++'s `std::atomic` operations compiled to (the rows of its line table
/// in libstdc++'s `atomic` headers, inlined or not), as address ranges where the file's lowest
/// loaded page is mapped at `mapped`. Its loads and stores are the atomic's, wherever the
/// object is (a global, a heap block, a stack).
pub fn code(path: &str, mapped: u64) -> Vec<(u64, u64)> {
    let (found, bias) = with_dwarf(path, mapped, |dwarf, _, _, out| atomic_header_rows(dwarf, out));
    let mut ranges: Vec<(u64, u64)> = found.into_iter().map(|(a, b)| (a.wrapping_add(bias), b.wrapping_add(bias))).collect();
    // Adjacent rows make one range (binary search over them in `within`).
    ranges.dedup_by(|b, a| {
        let joined = b.0 <= a.1;
        if joined {
            a.1 = a.1.max(b.1);
        }
        joined
    });
    ranges
}

/// Whether `pc` is in one of the sorted, disjoint `ranges`.
pub fn within(ranges: &[(u64, u64)], pc: u64) -> bool {
    let i = ranges.partition_point(|r| r.1 <= pc);
    ranges.get(i).is_some_and(|r| r.0 <= pc)
}

/// The instructions of the ELF file at `path` (its lowest loaded page mapped at `mapped`) that
/// are the loads and stores of C11's and GCC's atomic operations the source calls by name
/// (`C_OPS`): on x86-64 a plain `mov`, an acquire load or a release store, on whatever object
/// the pointer names. The operation's code is the rows of its line and column (the column of
/// the call's name, where GCC puts a macro's or a builtin's expansion); of those, the access is
/// the last load (a load operation) or store (a store), outside the frame if one is: the others
/// are its arguments' loads and, unoptimized, the temporaries of `stdatomic.h`'s macros.
pub fn c_accesses(path: &str, mapped: u64) -> Vec<u64> {
    let (found, bias) = with_dwarf(path, mapped, |dwarf, elf, file, out| {
        let mut rows = Vec::new();
        c_atomic_rows(dwarf, &mut rows)?;
        out.extend(rows.into_iter().filter_map(|(start, end, op)| access_in(elf, file, start, end, op)));
        Ok(())
    });
    found.into_iter().map(|pc| pc.wrapping_add(bias)).collect()
}

/// The source files a unit's line table names, each read once (by its path: the unit's
/// compilation directory, the file's directory, its name) and what `facts` says of each of its
/// lines (index = line number); nothing for a file that cannot be read.
struct Sources<T> {
    read: std::collections::HashMap<std::path::PathBuf, std::rc::Rc<Vec<T>>>,
    facts: fn(&str) -> Vec<T>,
}

impl<T> Sources<T> {
    fn new(facts: fn(&str) -> Vec<T>) -> Sources<T> {
        Sources { read: Default::default(), facts }
    }

    /// The facts of the file a row of `unit`'s line table (`header`) names.
    fn of(
        &mut self,
        dwarf: &gimli::Dwarf<Slice<'_>>,
        unit: &Unit<'_>,
        header: &gimli::LineProgramHeader<Slice<'_>>,
        file: &gimli::FileEntry<Slice<'_>>,
    ) -> Result<std::rc::Rc<Vec<T>>, gimli::Error> {
        let mut path = unit.comp_dir.map(|d| std::path::PathBuf::from(d.to_string_lossy().into_owned())).unwrap_or_default();
        if let Some(dir) = file.directory(header).and_then(|d| dwarf.attr_string(unit, d).ok()) {
            path.push(dir.to_string_lossy().as_ref());
        }
        path.push(dwarf.attr_string(unit, file.path_name())?.to_string_lossy().as_ref());
        let facts = self.facts;
        Ok(self.read.entry(path).or_insert_with_key(|p| std::rc::Rc::new(std::fs::read_to_string(p).map(|text| facts(&text)).unwrap_or_default())).clone())
    }
}

/// What a C11 or GCC atomic operation that compiles to a plain `mov` does to its object.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Op {
    Load,
    Store,
}

/// The atomic operations that compile to a plain `mov` on x86-64, by the name the source calls
/// (`stdatomic.h`'s macros and GCC's builtins; the read-modify-writes are `lock`-prefixed or
/// `xchg`, known without this).
const C_OPS: [(&str, Op); 10] = [
    ("atomic_load", Op::Load),
    ("atomic_load_explicit", Op::Load),
    ("__atomic_load_n", Op::Load),
    ("__atomic_load", Op::Load),
    ("atomic_store", Op::Store),
    ("atomic_store_explicit", Op::Store),
    ("__atomic_store_n", Op::Store),
    ("__atomic_store", Op::Store),
    ("atomic_flag_clear_explicit", Op::Store),
    ("__atomic_clear", Op::Store),
];

/// A line's calls of `C_OPS`: their columns and what each does.
type Calls = Vec<(u64, Op)>;

/// For each line of a C source (index = line number), the columns (from 1, in bytes, as GCC
/// counts them) where it calls one of `C_OPS`, with what the call does.
fn c_atomic_calls(text: &str) -> Vec<Calls> {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut calls = vec![Vec::new()];
    for line in text.lines() {
        let bytes = line.as_bytes();
        let mut here = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if !ident(bytes[i]) || (i > 0 && ident(bytes[i - 1])) {
                i += 1;
                continue;
            }
            let end = (i..bytes.len()).find(|&j| !ident(bytes[j])).unwrap_or(bytes.len());
            let name = &line[i..end];
            let called = line[end..].trim_start().starts_with('(');
            if let Some(&(_, op)) = C_OPS.iter().find(|(n, _)| *n == name).filter(|_| called) {
                here.push((i as u64 + 1, op));
            }
            i = end;
        }
        calls.push(here);
    }
    calls
}

/// The code ranges of the rows at a call of one of `C_OPS` (start, end, what it does), into
/// `out`.
fn c_atomic_rows(dwarf: &gimli::Dwarf<Slice<'_>>, out: &mut Vec<(u64, u64, Op)>) -> Result<(), gimli::Error> {
    let mut sources = Sources::new(c_atomic_calls);
    let mut headers = dwarf.units();
    while let Some(header) = headers.next()? {
        let unit = dwarf.unit(header)?;
        let Some(program) = unit.line_program.clone() else { continue };
        let mut rows = program.rows();
        let mut open: Option<(u64, Op)> = None;
        // The file of the rows before (most rows follow one of the same file), and its calls.
        let mut current: Option<(u64, std::rc::Rc<Vec<Calls>>)> = None;
        while let Some((header, row)) = rows.next_row()? {
            if let Some((start, op)) = open.take() {
                if row.address() > start {
                    out.push((start, row.address(), op));
                }
            }
            if row.end_sequence() {
                continue;
            }
            let (Some(file), Some(line), gimli::ColumnType::Column(column)) = (row.file(header), row.line(), row.column()) else { continue };
            let calls = match &current {
                Some((index, calls)) if *index == row.file_index() => calls.clone(),
                _ => {
                    let calls = sources.of(dwarf, &unit, header, file)?;
                    current = Some((row.file_index(), calls.clone()));
                    calls
                }
            };
            let here = calls.get(line.get() as usize).map(Vec::as_slice).unwrap_or_default();
            open = here.iter().find(|(c, _)| *c == column.get()).map(|&(_, op)| (row.address(), op));
        }
    }
    Ok(())
}

/// The instruction in the file's code from `start` to `end` that is an atomic operation's
/// access `op`: the last load or store there outside the frame (not through the stack pointer,
/// nor below the frame pointer: unoptimized, the macros' temporaries), else the last in it;
/// thread-local storage and gathers aside.
fn access_in(elf: &goblin::elf::Elf<'_>, file: &[u8], start: u64, end: u64, op: Op) -> Option<u64> {
    use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, InstructionInfoFactory, OpAccess, Register};
    let segment =
        elf.program_headers.iter().find(|p| p.p_type == goblin::elf::program_header::PT_LOAD && (p.p_vaddr..p.p_vaddr + p.p_filesz).contains(&start))?;
    let from = (segment.p_offset + start - segment.p_vaddr) as usize;
    let to = (segment.p_offset + end.min(segment.p_vaddr + segment.p_filesz) - segment.p_vaddr) as usize;
    let mut decoder = Decoder::with_ip(64, file.get(from..to)?, start, DecoderOptions::NONE);
    let mut factory = InstructionInfoFactory::new();
    // The last such access outside the frame, else the last in it (a builtin's on a local
    // of the function itself: the macros reach even those through a pointer).
    let (mut outside, mut inside) = (None, None);
    for ins in &mut decoder {
        for m in factory.info(&ins).used_memory() {
            let access = match op {
                Op::Load => matches!(m.access(), OpAccess::Read | OpAccess::CondRead),
                Op::Store => matches!(m.access(), OpAccess::Write | OpAccess::CondWrite),
            };
            if !access || matches!(m.segment(), Register::FS | Register::GS) || m.index().is_vector_register() {
                continue;
            }
            let frame = m.base() == Register::RSP || m.base() == Register::RBP && (m.displacement() as i64) < 0;
            *if frame { &mut inside } else { &mut outside } = Some(ins.ip());
        }
    }
    outside.or(inside)
}

/// libstdc++'s headers whose code is `std::atomic`'s operations.
const ATOMIC_HEADERS: [&str; 3] = ["atomic_base.h", "atomic", "atomic_wait.h"];

/// The ranges of code whose line-table rows are atomic operations (start, end), into `out`:
/// rows in `ATOMIC_HEADERS`, and in a unit built with `-fopenmp`, the rows of a statement an
/// `omp atomic` directive precedes in its source (`read` and `write` compile to plain `mov`s,
/// relaxed; without the source, nothing says so).
fn atomic_header_rows(dwarf: &gimli::Dwarf<Slice<'_>>, out: &mut Vec<(u64, u64)>) -> Result<(), gimli::Error> {
    let mut sources = Sources::new(omp_atomic_lines);
    let mut headers = dwarf.units();
    while let Some(header) = headers.next()? {
        let unit = dwarf.unit(header)?;
        let Some(program) = unit.line_program.clone() else { continue };
        let openmp = openmp_unit(dwarf, &unit)?;
        let mut rows = program.rows();
        // The row before: its address, and whether its code is atomic.
        let mut open: Option<u64> = None;
        while let Some((header, row)) = rows.next_row()? {
            if let Some(start) = open.take() {
                if row.address() > start {
                    out.push((start, row.address()));
                }
            }
            if row.end_sequence() {
                continue;
            }
            let Some(file) = row.file(header) else { continue };
            let name = dwarf.attr_string(&unit, file.path_name())?.to_string_lossy().into_owned();
            let omp_atomic = match row.line() {
                Some(line) if openmp => sources.of(dwarf, &unit, header, file)?.get(line.get() as usize).copied().unwrap_or(false),
                _ => false,
            };
            let atomic = ATOMIC_HEADERS.contains(&name.rsplit('/').next().unwrap_or_default()) || omp_atomic;
            if atomic {
                open = Some(row.address());
            }
        }
    }
    Ok(())
}

/// Whether the unit was compiled with `-fopenmp` (GCC records its options in the producer).
fn openmp_unit(dwarf: &gimli::Dwarf<Slice<'_>>, unit: &Unit<'_>) -> Result<bool, gimli::Error> {
    let mut entries = unit.entries();
    let Some((_, root)) = entries.next_dfs()? else { return Ok(false) };
    let Some(producer) = root.attr_value(gimli::DW_AT_producer)? else { return Ok(false) };
    Ok(dwarf.attr_string(unit, producer).is_ok_and(|p| p.to_string_lossy().contains("-fopenmp")))
}

/// For each line of a C or C++ source (index = line number), whether it is part of the
/// statement an `omp atomic` directive precedes: from the next line that is not blank to the
/// first that holds a `;`.
fn omp_atomic_lines(text: &str) -> Vec<bool> {
    let lines: Vec<&str> = text.lines().collect();
    let mut marks = vec![false; lines.len() + 1];
    let mut inside = false;
    for (i, line) in lines.iter().enumerate() {
        let words: Vec<&str> = line.trim_start().trim_start_matches('#').split_whitespace().collect();
        let directive = line.trim_start().starts_with('#') && words.len() >= 3 && words[0] == "pragma" && words[1] == "omp" && words[2] == "atomic";
        if directive {
            inside = true;
            continue;
        }
        if inside && !line.trim().is_empty() {
            marks[i + 1] = true;
            inside = !line.contains(';');
        }
    }
    marks
}

/// Every global variable's atomic parts, into `out`.
fn variables<'a>(dwarf: &gimli::Dwarf<Slice<'a>>, out: &mut Vec<(u64, u64)>) -> Result<(), gimli::Error> {
    let mut headers = dwarf.units();
    while let Some(header) = headers.next()? {
        let unit = dwarf.unit(header)?;
        let mut entries = unit.entries();
        while let Some((_, entry)) = entries.next_dfs()? {
            if entry.tag() != gimli::DW_TAG_variable {
                continue;
            }
            let (Some(AttributeValue::Exprloc(expr)), Some(AttributeValue::UnitRef(ty))) =
                (entry.attr_value(gimli::DW_AT_location)?, entry.attr_value(gimli::DW_AT_type)?)
            else {
                continue;
            };
            // A static address and nothing else (not a TLS or computed location).
            let mut ops = expr.operations(unit.encoding());
            let address = match ops.next()? {
                Some(Operation::Address { address }) => address,
                Some(Operation::AddressIndex { index }) => dwarf.address(&unit, index)?,
                _ => continue,
            };
            if ops.next()?.is_none() {
                parts(&unit, ty, address, out, 0)?;
            }
        }
    }
    Ok(())
}

/// The atomic parts of an object of type `ty` at `at`.
fn parts(unit: &Unit<'_>, ty: UnitOffset, at: u64, out: &mut Vec<(u64, u64)>, depth: u32) -> Result<(), gimli::Error> {
    let entry = unit.entry(ty)?;
    match entry.tag() {
        gimli::DW_TAG_atomic_type => {
            let size = entry_type(&entry)?.map(|t| byte_size(unit, t)).transpose()?.flatten().unwrap_or(8);
            out.push((at, size));
        }
        gimli::DW_TAG_typedef | gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type => {
            if let Some(t) = entry_type(&entry)? {
                parts(unit, t, at, out, depth)?;
            }
        }
        gimli::DW_TAG_structure_type if depth < MAX_DEPTH => {
            let mut tree = unit.entries_tree(Some(ty))?;
            let mut members = tree.root()?.children();
            while let Some(member) = members.next()? {
                let m = member.entry();
                let offset = m.attr_value(gimli::DW_AT_data_member_location)?.and_then(|v| v.udata_value());
                if let (gimli::DW_TAG_member, Some(offset), Some(t)) = (m.tag(), offset, entry_type(m)?) {
                    parts(unit, t, at + offset, out, depth + 1)?;
                }
            }
        }
        gimli::DW_TAG_array_type if depth < MAX_DEPTH => {
            let Some(element) = entry_type(&entry)? else { return Ok(()) };
            let size = byte_size(unit, element)?.unwrap_or(0);
            let mut tree = unit.entries_tree(Some(ty))?;
            let mut ranges = tree.root()?.children();
            let mut count = None;
            while let Some(range) = ranges.next()? {
                let r = range.entry();
                count = r.attr_value(gimli::DW_AT_count)?.and_then(|v| v.udata_value());
                count = count.or(r.attr_value(gimli::DW_AT_upper_bound)?.and_then(|v| v.udata_value()).map(|u| u + 1));
            }
            // An element with atomic parts of its own: each element's.
            let mut first = Vec::new();
            parts(unit, element, at, &mut first, depth + 1)?;
            if size > 0 && !first.is_empty() {
                for i in 0..count.unwrap_or(1).min(MAX_ELEMENTS) {
                    out.extend(first.iter().map(|&(a, s)| (a + i * size, s)));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{c_atomic_calls, omp_atomic_lines, Op};

    /// The columns of the calls of atomic loads and stores by name, and nothing else: not a
    /// longer name, not a name that is not called, not a read-modify-write.
    #[test]
    fn the_columns_of_atomic_loads_and_stores_are_found() {
        let text = "int x = *q + atomic_load_explicit(p, memory_order_acquire);\n\tatomic_store_explicit (p, 1, memory_order_release);\nmy_atomic_load(p); atomic_load_x(p); atomic_fetch_add(p, 1);\nvoid *f = atomic_load; x += __atomic_load_n(q, 2) + __atomic_store_n(q, 1, 3);\n";
        let calls = c_atomic_calls(text);
        assert_eq!(calls[1], vec![(14, Op::Load)]);
        assert_eq!(calls[2], vec![(2, Op::Store)]);
        assert!(calls[3].is_empty());
        assert_eq!(calls[4], vec![(29, Op::Load), (53, Op::Store)]);
    }

    /// The statement after each `omp atomic` directive, to its `;`, and nothing else.
    #[test]
    fn the_statements_omp_atomic_directives_precede_are_marked() {
        let text =
            "int x;\n#pragma omp atomic write\n  x = 1;\ny = 2;\n  # pragma omp atomic read seq_cst\n\n  v =\n    x;\nz = 3;\n#pragma omp atomics\nw = 4;\n";
        let marked: Vec<usize> = omp_atomic_lines(text).iter().enumerate().filter(|m| *m.1).map(|m| m.0).collect();
        assert_eq!(marked, vec![3, 7, 8]);
    }
}
