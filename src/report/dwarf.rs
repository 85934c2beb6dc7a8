//! The DWARF of a program's file, read with `gimli`: what tools ask of its units (variables,
//! types, line rows), at the addresses the file has where it is mapped.

use gimli::{AttributeValue, EndianSlice, RunTimeEndian, SectionId, UnitOffset};

pub type Slice<'a> = EndianSlice<'a, RunTimeEndian>;
pub type Unit<'a> = gimli::Unit<Slice<'a>>;

/// What `f` collects from the DWARF of the ELF file at `path` (given the file too: the file's
/// addresses with sizes or ends, or instructions), sorted, and what to add to the file's addresses where it is mapped; none
/// without DWARF.
pub fn with_dwarf<T: Ord>(
    path: &str,
    mapped: u64,
    f: impl Fn(&gimli::Dwarf<Slice<'_>>, &goblin::elf::Elf<'_>, &[u8], &mut Vec<T>) -> Result<(), gimli::Error>,
) -> (Vec<T>, u64) {
    let Ok(file) = crate::loader::file::map(path) else { return (Vec::new(), 0) };
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
    let _ = f(&dwarf, &elf, &file, &mut out);
    out.sort_unstable();
    out.dedup();
    (out, bias)
}

/// An entry's `DW_AT_type`, within its unit.
pub fn entry_type(entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'_>>) -> Result<Option<UnitOffset>, gimli::Error> {
    Ok(match entry.attr_value(gimli::DW_AT_type)? {
        Some(AttributeValue::UnitRef(t)) => Some(t),
        _ => None,
    })
}

/// A type's size in bytes, through typedefs and qualifiers.
pub fn byte_size(unit: &Unit<'_>, ty: UnitOffset) -> Result<Option<u64>, gimli::Error> {
    let entry = unit.entry(ty)?;
    if let Some(size) = entry.attr_value(gimli::DW_AT_byte_size)?.and_then(|v| v.udata_value()) {
        return Ok(Some(size));
    }
    match entry_type(&entry)? {
        Some(t) => byte_size(unit, t),
        None => Ok(None),
    }
}
