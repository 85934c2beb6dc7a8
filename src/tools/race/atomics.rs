//! The program's own atomic globals, from its DWARF (`gimli`): C11's `_Atomic` variables, and
//! `_Atomic` members and elements of global structures and arrays. On x86-64 an acquire load
//! and a release store are plain `mov`s, which nothing in the code tells apart from a racy
//! access; the declared type does. The race tool treats these locations as it treats those a
//! `lock`-prefixed instruction touched: atomic, a load acquiring and a store releasing.
//! C++'s `std::atomic` (a class in DWARF) is found by its code instead: the loads and stores of
//! code whose lines are in libstdc++'s atomic headers, wherever the object is (`code`), and so
//! are OpenMP's `atomic read` and `write` (plain `mov`s): the statements an `omp atomic`
//! directive precedes in the source of a unit built with `-fopenmp`. (C11 atomics in heap
//! blocks or on the stack used with an explicit order are not found: their code is the
//! program's own, and nothing in it says atomic.)

use gimli::{AttributeValue, EndianSlice, Operation, RunTimeEndian, SectionId, UnitOffset};

type Slice<'a> = EndianSlice<'a, RunTimeEndian>;
type Unit<'a> = gimli::Unit<Slice<'a>>;

/// Elements of an array of atomics marked, at most (a larger array is marked in part).
const MAX_ELEMENTS: u64 = 4096;
/// Nesting of structures and arrays followed.
const MAX_DEPTH: u32 = 4;

/// The atomic objects the ELF file at `path` declares, with their sizes, at the addresses they
/// have once the file's lowest loaded page is mapped at `mapped`; none when it has no DWARF
/// (or it cannot be read).
pub fn declared(path: &str, mapped: u64) -> Vec<(u64, u64)> {
    let (found, bias) = with_dwarf(path, mapped, variables);
    found.into_iter().map(|(a, size)| (a.wrapping_add(bias), size)).collect()
}

/// The file's code that C++'s `std::atomic` operations compiled to (the rows of its line table
/// in libstdc++'s `atomic` headers, inlined or not), as address ranges where the file's lowest
/// loaded page is mapped at `mapped`. Its loads and stores are the atomic's, wherever the
/// object is (a global, a heap block, a stack).
pub fn code(path: &str, mapped: u64) -> Vec<(u64, u64)> {
    let (found, bias) = with_dwarf(path, mapped, atomic_header_rows);
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

/// What `f` collects from the DWARF of the ELF file at `path` (pairs of the file's addresses
/// and sizes or ends), sorted, and what to add to the file's addresses where it is mapped; none
/// without DWARF.
fn with_dwarf(path: &str, mapped: u64, f: impl Fn(&gimli::Dwarf<Slice<'_>>, &mut Vec<(u64, u64)>) -> Result<(), gimli::Error>) -> (Vec<(u64, u64)>, u64) {
    let Ok(file) = std::fs::read(path) else { return (Vec::new(), 0) };
    let Ok(elf) = goblin::elf::Elf::parse(&file) else { return (Vec::new(), 0) };
    let lowest = elf.program_headers.iter().filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD).map(|p| p.p_vaddr & !0xfff).min();
    let bias = mapped.wrapping_sub(lowest.unwrap_or(mapped));
    let section = |id: SectionId| -> Result<Slice<'_>, gimli::Error> {
        let data = elf
            .section_headers
            .iter()
            .find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(id.name()))
            .and_then(|s| file.get(s.sh_offset as usize..(s.sh_offset + s.sh_size) as usize))
            .unwrap_or(&[]);
        Ok(EndianSlice::new(data, RunTimeEndian::Little))
    };
    let Ok(dwarf) = gimli::Dwarf::load(section) else { return (Vec::new(), 0) };
    let mut out = Vec::new();
    let _ = f(&dwarf, &mut out);
    out.sort_unstable();
    out.dedup();
    (out, bias)
}

/// libstdc++'s headers whose code is `std::atomic`'s operations.
const ATOMIC_HEADERS: [&str; 3] = ["atomic_base.h", "atomic", "atomic_wait.h"];

/// The ranges of code whose line-table rows are atomic operations (start, end), into `out`:
/// rows in `ATOMIC_HEADERS`, and in a unit built with `-fopenmp`, the rows of a statement an
/// `omp atomic` directive precedes in its source (`read` and `write` compile to plain `mov`s,
/// relaxed; without the source, nothing says so).
fn atomic_header_rows(dwarf: &gimli::Dwarf<Slice<'_>>, out: &mut Vec<(u64, u64)>) -> Result<(), gimli::Error> {
    let mut sources: std::collections::HashMap<std::path::PathBuf, Vec<bool>> = std::collections::HashMap::new();
    let mut headers = dwarf.units();
    while let Some(header) = headers.next()? {
        let unit = dwarf.unit(header)?;
        let Some(program) = unit.line_program.clone() else { continue };
        let openmp = openmp_unit(dwarf, &unit)?;
        let comp_dir = unit.comp_dir.map(|d| std::path::PathBuf::from(d.to_string_lossy().into_owned()));
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
            let atomic = ATOMIC_HEADERS.contains(&name.rsplit('/').next().unwrap_or_default())
                || openmp
                    && row.line().is_some_and(|line| {
                        let mut path = comp_dir.clone().unwrap_or_default();
                        if let Some(dir) = file.directory(header).and_then(|d| dwarf.attr_string(&unit, d).ok()) {
                            path.push(dir.to_string_lossy().as_ref());
                        }
                        path.push(&name);
                        let marks =
                            sources.entry(path).or_insert_with_key(|p| std::fs::read_to_string(p).map(|text| omp_atomic_lines(&text)).unwrap_or_default());
                        marks.get(line.get() as usize).copied().unwrap_or(false)
                    });
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

/// An entry's `DW_AT_type`, within its unit.
fn entry_type(entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'_>>) -> Result<Option<UnitOffset>, gimli::Error> {
    Ok(match entry.attr_value(gimli::DW_AT_type)? {
        Some(AttributeValue::UnitRef(t)) => Some(t),
        _ => None,
    })
}

/// A type's size in bytes, through typedefs and qualifiers.
fn byte_size(unit: &Unit<'_>, ty: UnitOffset) -> Result<Option<u64>, gimli::Error> {
    let entry = unit.entry(ty)?;
    if let Some(size) = entry.attr_value(gimli::DW_AT_byte_size)?.and_then(|v| v.udata_value()) {
        return Ok(Some(size));
    }
    match entry_type(&entry)? {
        Some(t) => byte_size(unit, t),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::omp_atomic_lines;

    /// The statement after each `omp atomic` directive, to its `;`, and nothing else.
    #[test]
    fn the_statements_omp_atomic_directives_precede_are_marked() {
        let text =
            "int x;\n#pragma omp atomic write\n  x = 1;\ny = 2;\n  # pragma omp atomic read seq_cst\n\n  v =\n    x;\nz = 3;\n#pragma omp atomics\nw = 4;\n";
        let marked: Vec<usize> = omp_atomic_lines(text).iter().enumerate().filter(|m| *m.1).map(|m| m.0).collect();
        assert_eq!(marked, vec![3, 7, 8]);
    }
}
