//! What a layout may move in a program's file: its global objects (the symbol table; DWARF
//! says which are buffers and which pointers) and the locals of its frames (DWARF), each one
//! left where it is with the reason when moving it is not known to be safe. Addresses are the
//! file's own (link-time); `Placed` adds where the file is mapped.

use crate::report::dwarf::{entry_type, with_dwarf, Slice, Unit};
use gimli::{AttributeValue, Operation, UnitOffset};
use goblin::elf::Elf;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What a variable is to the pairing heuristic: a buffer an overflow runs out of, or an
/// address-related variable (a pointer, or an integer that may index) it may run into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Kind {
    Buffer,
    Pointer,
    Integer,
    Other,
}

/// A variable: a global's file address or a local's offset from the frame pointer, its size,
/// the alignment it keeps wherever it goes, and its kind.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Var {
    pub at: i64,
    pub size: u64,
    pub align: u64,
    pub kind: Kind,
    pub name: String,
}

/// A function whose locals can be re-laid: its code range (file addresses) and its locals,
/// by offset from its base; `top` is where they may reach up to (below what the function
/// saves in its frame: the return address, a frame pointer, callee-saved registers).
#[derive(Clone, Debug)]
pub struct Frame {
    pub function: String,
    pub low: u64,
    pub high: u64,
    pub locals: Vec<Var>,
    pub top: i64,
    pub base: FrameBase,
}

/// What a frame's local offsets are from, and so which operands name its locals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameBase {
    /// rbp, the frame pointer its prologue sets (`-O0`).
    Rbp,
    /// The CFA, located from rsp at each pc (code without a frame pointer: `-Og`, `-O2`).
    Cfa(super::cfa::StackFrame),
}

impl Frame {
    /// A local's place for the reader: "rbp-24", "CFA-48".
    pub fn place(&self, offset: i64) -> String {
        let base = if self.base == FrameBase::Rbp { "rbp" } else { "CFA" };
        format!("{base}{offset:+}")
    }
}

/// What can move in one file, and what cannot (with why).
#[derive(Default, Debug, Clone)]
pub struct Objects {
    pub globals: Vec<Var>,
    pub fixed_globals: Vec<(String, String)>,
    pub frames: Vec<Frame>,
    pub fixed_frames: Vec<(String, String)>,
    /// The slots the dynamic loader fills with addresses (RELATIVE, 64, GLOB_DAT): pointers
    /// stored in data, which must follow what they point to.
    pub pointer_slots: Vec<u64>,
    /// Where every data symbol starts, moved or not, zero-sized ones too (`__TMC_END__`): an
    /// address one past a moved global's end that is one of these means that symbol.
    pub starts: Vec<u64>,
    /// The file's entry point and its lowest loaded page (file addresses).
    pub entry: u64,
    pub first_vaddr: u64,
}

/// The integer locals and parameters (2, 4 or 8 bytes) of the functions of the ELF file at
/// `path` whose code sets up rbp as its frame pointer (`-O0`), by offset from rbp, with no
/// check of what a layout needs (`--tool=cbi`'s scalar pairs compare them).
pub fn rbp_integer_locals(path: &str) -> Vec<Frame> {
    let Ok(file) = crate::loader::file::map(path) else { return Vec::new() };
    let Ok(elf) = Elf::parse(&file) else { return Vec::new() };
    let code_of = |f: &Frame| {
        let p =
            elf.program_headers.iter().find(|p| p.p_type == goblin::elf::program_header::PT_LOAD && p.p_vaddr <= f.low && f.high <= p.p_vaddr + p.p_filesz)?;
        file.get((f.low - p.p_vaddr + p.p_offset) as usize..(f.high - p.p_vaddr + p.p_offset) as usize)
    };
    let mut out = Vec::new();
    for (mut f, base) in dwarf_variables(path).1 {
        let Some(code) = code_of(&f) else { continue };
        let endbr = if code.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) { 4 } else { 0 };
        if !code[endbr..].starts_with(&[0x55, 0x48, 0x89, 0xe5]) {
            continue;
        }
        // `push rbp; mov rbp, rsp`: the CFA is rbp+16 from then on.
        let shift = match base {
            Ok(DwarfBase::Cfa) => 16,
            Ok(DwarfBase::Rbp(k)) => k,
            Err(_) => continue,
        };
        f.locals.retain(|l| l.kind == Kind::Integer && matches!(l.size, 2 | 4 | 8) && !l.name.contains('/'));
        f.locals.iter_mut().for_each(|l| l.at += shift);
        if !f.locals.is_empty() {
            out.push(f);
        }
    }
    out.sort_by_key(|f| f.low);
    out
}

/// At most this many locals' frames are looked at (a large program's DWARF).
const MAX_FRAMES: usize = 100_000;

impl Objects {
    /// The movable globals and frames of the ELF file at `path`; None if it cannot be read.
    pub fn of(path: &str) -> Option<Objects> {
        let file = crate::loader::file::map(path).ok()?;
        let elf = Elf::parse(&file).ok()?;
        let mut o = Objects {
            entry: elf.header.e_entry,
            first_vaddr: elf.program_headers.iter().filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD).map(|p| p.p_vaddr & !0xfff).min()?,
            ..Objects::default()
        };
        let pie = elf.header.e_type == goblin::elf::header::ET_DYN;
        let (declared, frames) = dwarf_variables(path);
        o.globals_from(&elf, pie, &declared);
        o.fix_ambiguous_ends(&elf, &file);
        if pie {
            use goblin::elf::reloc::{R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_RELATIVE};
            o.pointer_slots =
                elf.dynrelas.iter().filter(|r| matches!(r.r_type, R_X86_64_RELATIVE | R_X86_64_64 | R_X86_64_GLOB_DAT)).map(|r| r.r_offset).collect();
            o.pointer_slots.sort_unstable();
        }
        let cfi = super::cfa::Cfi::of(&elf, &file);
        for (f, base) in frames {
            let function = f.function.clone();
            match base.and_then(|base| super::frames::checked(&elf, &file, &cfi, f, base)) {
                Ok(f) => o.frames.push(f),
                Err(r) => o.fixed_frames.push((function, r)),
            }
        }
        o.frames.sort_by_key(|f| f.low);
        Some(o)
    }

    /// What cannot move, each with why: "frame of 'f': ...", "global 'g': ...".
    pub fn unmoved(&self) -> Vec<String> {
        let frames = self.fixed_frames.iter().map(|(f, why)| format!("frame of '{f}': {why}"));
        frames.chain(self.fixed_globals.iter().map(|(g, why)| format!("global '{g}': {why}"))).collect()
    }

    /// The data objects of the symbol table, each with its kind (DWARF's, else by size).
    fn globals_from(&mut self, elf: &Elf, pie: bool, declared: &HashMap<u64, (Kind, u64)>) {
        let exported: std::collections::HashSet<u64> = elf.dynsyms.iter().filter(|s| s.st_shndx != 0).map(|s| s.st_value).collect();
        let mut seen = std::collections::HashSet::new();
        // A symbol's section, if it is data.
        let data = |shndx: usize| {
            let section = elf.section_headers.get(shndx).and_then(|h| elf.shdr_strtab.get_at(h.sh_name)).unwrap_or("");
            [".data", ".bss", ".rodata"].iter().any(|p| section.starts_with(p)).then_some(section)
        };
        self.starts = elf.syms.iter().filter(|s| s.st_value != 0 && data(s.st_shndx).is_some()).map(|s| s.st_value).collect();
        self.starts.sort_unstable();
        self.starts.dedup();
        for s in elf.syms.iter() {
            if s.st_type() != goblin::elf::sym::STT_OBJECT || s.st_size == 0 || s.st_value == 0 || !seen.insert(s.st_value) {
                continue;
            }
            let Some(section) = data(s.st_shndx) else { continue };
            let name = elf.strtab.get_at(s.st_name).unwrap_or("?").to_string();
            let why = if section.starts_with(".rodata") {
                // (Nothing overflows into it, and the string literals after an object have no
                // symbol to tell an address past its end from theirs.)
                Some("read-only: no overflow corrupts it")
            } else if !pie {
                Some("the executable is not position-independent: the pointers to it in data are not known")
            } else if exported.contains(&s.st_value) {
                Some("other modules may refer to it (exported)")
            } else {
                None
            };
            if let Some(w) = why {
                self.fixed_globals.push((name, w.to_string()));
                continue;
            }
            let (kind, size) = match declared.get(&s.st_value) {
                Some(&(k, size)) if size == s.st_size => (k, size),
                _ if s.st_size > 8 => (Kind::Buffer, s.st_size),
                _ => (Kind::Integer, s.st_size),
            };
            // The alignment its address has, up to 64 (aligned vector loads may rely on it for
            // an array or a structure); a scalar's own size at most (nothing vectorizes it).
            let mut align = 1u64 << s.st_value.trailing_zeros().min(6);
            if matches!(kind, Kind::Pointer | Kind::Integer) {
                align = align.min(size.next_power_of_two().clamp(1, 16));
            }
            self.globals.push(Var { at: s.st_value as i64, size, align, kind, name });
        }
        self.globals.sort();
    }
}

impl Objects {
    /// Globals whose end is another's start, where the code takes that address (`lea`) or data
    /// holds it (a relocation's addend): which of the two it means (an array's end, or the next
    /// object) is not known, so neither moves.
    fn fix_ambiguous_ends(&mut self, elf: &Elf, file: &[u8]) {
        use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, Mnemonic};
        let mut taken: std::collections::HashSet<i64> = elf.dynrelas.iter().filter_map(|r| r.r_addend).collect();
        for p in elf.program_headers.iter().filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD && p.is_executable()) {
            let Some(code) = file.get(p.p_offset as usize..(p.p_offset + p.p_filesz) as usize) else { continue };
            for ins in Decoder::with_ip(64, code, p.p_vaddr, DecoderOptions::NONE) {
                if ins.mnemonic() == Mnemonic::Lea && ins.is_ip_rel_memory_operand() {
                    taken.insert(ins.ip_rel_memory_address() as i64);
                }
            }
        }
        let bound: std::collections::HashSet<usize> = self
            .globals
            .windows(2)
            .enumerate()
            .filter(|(_, w)| w[0].at + w[0].size as i64 == w[1].at && taken.contains(&w[1].at))
            .flat_map(|(i, _)| [i, i + 1])
            .collect();
        let globals = std::mem::take(&mut self.globals);
        for (i, g) in globals.into_iter().enumerate() {
            if bound.contains(&i) {
                self.fixed_globals
                    .push((g.name, "its end or start is an address the code takes that is also its neighbour's: which one is meant is not known".into()));
            } else {
                self.globals.push(g);
            }
        }
    }
}

/// The globals DWARF declares (file address: kind and size) and the functions with locals:
/// each with the reason it cannot be re-laid, if DWARF says so already.
/// The globals DWARF declares (kind and size by address), and the functions with locals: each
/// with its frame base, or why its locals cannot move.
type Declared = (HashMap<u64, (Kind, u64)>, Vec<(Frame, Result<DwarfBase, String>)>);

/// A function's frame base as DWARF says (`DW_AT_frame_base`): its locals' offsets are from
/// the CFA, or from rbp plus some offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DwarfBase {
    Cfa,
    Rbp(i64),
}

fn dwarf_variables(path: &str) -> Declared {
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum Found {
        Global(u64, Kind, u64),
        Function(String, u64, u64, Vec<Var>, Result<DwarfBase, String>),
    }
    let (found, _) = with_dwarf(path, 0, |dwarf, _, _, out| {
        let mut headers = dwarf.units();
        while let Some(header) = headers.next()? {
            let unit = dwarf.unit(header)?;
            let mut tree = unit.entries_tree(None)?;
            let root = tree.root()?;
            let mut children = root.children();
            while let Some(child) = children.next()? {
                let entry = child.entry();
                match entry.tag() {
                    gimli::DW_TAG_variable => {
                        if let Some((Place::Address(a), kind, size, _)) = variable(dwarf, &unit, entry)? {
                            out.push(Found::Global(a, kind, size));
                        }
                    }
                    gimli::DW_TAG_subprogram if out.len() < MAX_FRAMES => {
                        let Some((low, high)) = code_range(dwarf, &unit, entry)? else { continue };
                        let name =
                            entry.attr_value(gimli::DW_AT_name)?.and_then(|v| dwarf.attr_string(&unit, v).ok()).map(|s| s.to_string_lossy().into_owned());
                        let name = name.unwrap_or_else(|| format!("{low:#x}"));
                        let base = frame_base(entry.attr_value(gimli::DW_AT_frame_base)?, unit.encoding());
                        let (mut locals, mut why, mut statics) = (Vec::new(), None, Vec::new());
                        if let Err(e) = locals_of(dwarf, &unit, child, &mut locals, &mut why, &mut statics) {
                            why = Some(format!("its DWARF does not read: {e}"));
                        }
                        out.extend(statics.into_iter().map(|(a, k, s)| Found::Global(a, k, s)));
                        if locals.is_empty() {
                            continue;
                        }
                        let locals = sharing_merged(locals);
                        let base = match (why, base) {
                            (Some(why), _) => Err(why),
                            (None, None) => Err("its frame base is neither rbp nor the CFA".into()),
                            (None, Some(base)) => Ok(base),
                        };
                        out.push(Found::Function(name, low, high, locals, base));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    });
    let mut globals = HashMap::new();
    let mut frames = Vec::new();
    for f in found {
        match f {
            Found::Global(a, k, s) => {
                globals.insert(a, (k, s));
            }
            Found::Function(function, low, high, locals, base) => frames.push((Frame { function, low, high, locals, top: 0, base: FrameBase::Rbp }, base)),
        }
    }
    (globals, frames)
}

/// Locals by offset, those that share frame slots (optimized code gives variables whose lives
/// do not overlap the same slot) merged into one that moves as a whole: "a/b", the union of
/// their slots, of the first kind of theirs the pairing cares most about.
fn sharing_merged(mut locals: Vec<Var>) -> Vec<Var> {
    locals.sort();
    let mut out: Vec<Var> = Vec::with_capacity(locals.len());
    for l in locals {
        match out.last_mut() {
            Some(m) if l.at < m.at + m.size as i64 => {
                m.size = (m.at + m.size as i64).max(l.at + l.size as i64).wrapping_sub(m.at) as u64;
                m.align = m.align.max(l.align);
                m.kind = m.kind.min(l.kind);
                if !m.name.split('/').any(|n| n == l.name) {
                    m.name = format!("{}/{}", m.name, l.name);
                }
            }
            _ => out.push(l),
        }
    }
    out
}

/// Where a variable lives: a fixed address, or an offset from the frame base.
enum Place {
    Address(u64),
    Frame(i64),
}

/// A variable's place, kind, size and alignment, if its location is one of those (an
/// inlined function's copy of a variable has its type where its abstract origin says).
fn variable(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'_>>,
) -> Result<Option<(Place, Kind, u64, u64)>, gimli::Error> {
    let Some(location) = entry.attr_value(gimli::DW_AT_location)? else { return Ok(None) };
    let Some(place) = place(dwarf, unit, location)? else { return Ok(None) };
    let ty = match entry_type(entry)? {
        Some(ty) => ty,
        None => match origin(unit, entry)?.map(|o| entry_type(&o)) {
            Some(Ok(Some(ty))) => ty,
            _ => return Ok(None),
        },
    };
    Ok(type_info(unit, ty, 0)?.map(|(k, size, align)| (place, k, size, align)))
}

/// The place a location names: an expression that is one address or one frame slot, or a
/// location list whose entries name one frame slot and otherwise only registers and values
/// (optimized code: a parameter arrives in a register, then lives in its slot).
fn place(dwarf: &gimli::Dwarf<Slice<'_>>, unit: &Unit<'_>, location: AttributeValue<Slice<'_>>) -> Result<Option<Place>, gimli::Error> {
    let single = |expr: gimli::Expression<Slice<'_>>| -> Result<Option<Place>, gimli::Error> {
        let mut ops = expr.operations(unit.encoding());
        let place = match ops.next() {
            Ok(Some(Operation::Address { address })) => Place::Address(address),
            Ok(Some(Operation::FrameOffset { offset })) => Place::Frame(offset),
            _ => return Ok(None),
        };
        Ok(matches!(ops.next(), Ok(None)).then_some(place))
    };
    if let AttributeValue::Exprloc(expr) = location {
        return single(expr);
    }
    let Some(list) = dwarf.attr_locations_offset(unit, location)? else { return Ok(None) };
    let mut entries = dwarf.locations(unit, list)?;
    let mut slot = None;
    while let Some(entry) = entries.next()? {
        match single(entry.data)? {
            Some(Place::Frame(at)) if slot.is_none_or(|s| s == at) => slot = Some(at),
            Some(_) => return Ok(None),
            None if names_the_frame(dwarf, unit, AttributeValue::Exprloc(entry.data))? => return Ok(None),
            None => {}
        }
    }
    Ok(slot.map(Place::Frame))
}

/// The entry a concrete one (an inlined function's variable) takes its name and type from.
pub(crate) fn origin<'u>(
    unit: &'u Unit<'_>,
    entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'_>>,
) -> Result<Option<gimli::DebuggingInformationEntry<'u, 'u, Slice<'u>>>, gimli::Error> {
    match entry.attr_value(gimli::DW_AT_abstract_origin)? {
        Some(AttributeValue::UnitRef(o)) => unit.entry(o).map(Some),
        _ => Ok(None),
    }
}

/// An entry's name, or its abstract origin's (an inlined function's variable).
pub(crate) fn name_of(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'_>>,
) -> Result<Option<String>, gimli::Error> {
    let named = match entry.attr_value(gimli::DW_AT_name)? {
        Some(v) => Some(v),
        None => origin(unit, entry)?.map(|o| o.attr_value(gimli::DW_AT_name)).transpose()?.flatten(),
    };
    Ok(named.and_then(|v| dwarf.attr_string(unit, v).ok()).map(|s| s.to_string_lossy().into_owned()))
}

/// Whether a variable's location (an expression or a location list) names the frame anywhere:
/// a slot from the frame base, the CFA, rsp or rbp. One that does not (a register, a value
/// computed) is not in the frame's memory, and a layout has nothing of it to move.
fn names_the_frame(dwarf: &gimli::Dwarf<Slice<'_>>, unit: &Unit<'_>, location: AttributeValue<Slice<'_>>) -> Result<bool, gimli::Error> {
    let frame_op = |op: &Operation<Slice<'_>>| match op {
        Operation::FrameOffset { .. } | Operation::CallFrameCFA => true,
        Operation::RegisterOffset { register, .. } => matches!(register.0, 6 | 7),
        _ => false,
    };
    // (A value computed from rsp or rbp, `DW_OP_breg7 16; DW_OP_stack_value`, is no place in
    // the frame: a pointer to a local, say. An operation gimli does not know might be.)
    let in_expression = |expr: gimli::Expression<Slice<'_>>| -> Result<bool, gimli::Error> {
        let mut ops = expr.operations(unit.encoding());
        let mut named = false;
        loop {
            match ops.next() {
                Ok(Some(Operation::StackValue)) => return Ok(false),
                Ok(Some(op)) => named |= frame_op(&op),
                Ok(None) => return Ok(named),
                Err(_) => return Ok(true),
            }
        }
    };
    if let AttributeValue::Exprloc(expr) = location {
        return in_expression(expr);
    }
    let Some(list) = dwarf.attr_locations_offset(unit, location)? else { return Ok(true) };
    let mut entries = dwarf.locations(unit, list)?;
    while let Some(entry) = entries.next()? {
        if in_expression(entry.data)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A type's kind, size and alignment, through typedefs and qualifiers.
fn type_info(unit: &Unit<'_>, ty: UnitOffset, depth: u32) -> Result<Option<(Kind, u64, u64)>, gimli::Error> {
    if depth > 16 {
        return Ok(None);
    }
    let entry = unit.entry(ty)?;
    let size = entry.attr_value(gimli::DW_AT_byte_size)?.and_then(|v| v.udata_value());
    Ok(match entry.tag() {
        gimli::DW_TAG_typedef | gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type | gimli::DW_TAG_restrict_type | gimli::DW_TAG_atomic_type => {
            match entry_type(&entry)? {
                Some(t) => type_info(unit, t, depth + 1)?,
                None => None,
            }
        }
        gimli::DW_TAG_pointer_type => Some((Kind::Pointer, size.unwrap_or(8), 8)),
        gimli::DW_TAG_base_type | gimli::DW_TAG_enumeration_type => {
            let size = size.unwrap_or(0);
            let float = entry.attr_value(gimli::DW_AT_encoding)?.is_some_and(|e| e == AttributeValue::Encoding(gimli::DW_ATE_float));
            Some((if float { Kind::Other } else { Kind::Integer }, size, size.clamp(1, 16)))
        }
        gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type => size.map(|s| (Kind::Other, s, 8.min(s.next_power_of_two()).max(1))),
        gimli::DW_TAG_array_type => {
            let Some(elem) = entry_type(&entry)? else { return Ok(None) };
            let Some((_, esize, ealign)) = type_info(unit, elem, depth + 1)? else { return Ok(None) };
            let mut count = 1u64;
            let mut tree = unit.entries_tree(Some(ty))?;
            let mut subs = tree.root()?.children();
            while let Some(r) = subs.next()? {
                let r = r.entry();
                let n = r.attr_value(gimli::DW_AT_count)?.and_then(|v| v.udata_value());
                let n = n.or(r.attr_value(gimli::DW_AT_upper_bound)?.and_then(|v| v.udata_value()).map(|u| u + 1));
                // (A bound that is not a constant: a variable-length array.)
                let Some(n) = n else { return Ok(None) };
                count = count.saturating_mul(n);
            }
            Some((Kind::Buffer, size.unwrap_or(esize.saturating_mul(count)), ealign))
        }
        _ => None,
    })
}

/// The locals of a function (its formal parameters and variables, in nested blocks too), by
/// offset from its frame base; the static ones among them (fixed addresses) apart; `why` set
/// if one is in the frame but has no fixed slot there (a variable-length array, a location
/// list naming a slot). Those in registers only do not matter.
fn locals_of(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    node: gimli::EntriesTreeNode<'_, '_, '_, Slice<'_>>,
    out: &mut Vec<Var>,
    why: &mut Option<String>,
    statics: &mut Vec<(u64, Kind, u64)>,
) -> Result<(), gimli::Error> {
    let mut children = node.children();
    while let Some(child) = children.next()? {
        let entry = child.entry();
        match entry.tag() {
            gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter => {
                let name = name_of(dwarf, unit, entry)?;
                match variable(dwarf, unit, entry)? {
                    Some((Place::Frame(at), kind, size, align)) => out.push(Var { at, size, align, kind, name: name.unwrap_or_default() }),
                    Some((Place::Address(a), kind, size, _)) => statics.push((a, kind, size)),
                    None if why.is_none() => {
                        if let Some(location) = entry.attr_value(gimli::DW_AT_location)? {
                            if names_the_frame(dwarf, unit, location)? {
                                *why = Some(format!("local '{}' has no fixed frame slot", name.unwrap_or_default()));
                            }
                        }
                    }
                    None => {}
                }
            }
            // (An inlined function's locals are in the frame of the one it is inlined in.)
            gimli::DW_TAG_lexical_block | gimli::DW_TAG_inlined_subroutine => locals_of(dwarf, unit, child, out, why, statics)?,
            _ => {}
        }
    }
    Ok(())
}

/// A function's code range.
fn code_range(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'_>>,
) -> Result<Option<(u64, u64)>, gimli::Error> {
    let Some(low) = entry.attr_value(gimli::DW_AT_low_pc)? else { return Ok(None) };
    let Some(low) = dwarf.attr_address(unit, low)? else { return Ok(None) };
    let high = match entry.attr_value(gimli::DW_AT_high_pc)? {
        Some(AttributeValue::Udata(n)) => low + n,
        Some(v) => match dwarf.attr_address(unit, v)? {
            Some(h) => h,
            None => return Ok(None),
        },
        None => return Ok(None),
    };
    Ok((high > low).then_some((low, high)))
}

/// A function's frame base, if it is the CFA or rbp plus an offset.
pub(crate) fn frame_base(v: Option<AttributeValue<Slice<'_>>>, encoding: gimli::Encoding) -> Option<DwarfBase> {
    let Some(AttributeValue::Exprloc(expr)) = v else { return None };
    let mut ops = expr.operations(encoding);
    let base = match ops.next().ok()?? {
        Operation::CallFrameCFA => DwarfBase::Cfa,
        Operation::Register { register } if register.0 == 6 => DwarfBase::Rbp(0),
        Operation::RegisterOffset { register, offset, .. } if register.0 == 6 => DwarfBase::Rbp(offset),
        _ => return None,
    };
    ops.next().ok()?.is_none().then_some(base)
}
