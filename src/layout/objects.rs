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
/// by offset from rbp; `top` is where they may reach up to (0, or below the registers the
/// prologue pushes after setting rbp).
#[derive(Clone, Debug)]
pub struct Frame {
    pub function: String,
    pub low: u64,
    pub high: u64,
    pub locals: Vec<Var>,
    pub top: i64,
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

/// At most this many locals' frames are looked at (a large program's DWARF).
const MAX_FRAMES: usize = 100_000;

impl Objects {
    /// The movable globals and frames of the ELF file at `path`; None if it cannot be read.
    pub fn of(path: &str) -> Option<Objects> {
        let file = std::fs::read(path).ok()?;
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
        for (f, reason) in frames {
            match reason {
                Some(r) => o.fixed_frames.push((f.function, r)),
                None => match checked_frame(&elf, &file, &f) {
                    Ok(top) if f.locals.iter().all(|l| l.at + l.size as i64 <= top) => o.frames.push(Frame { top, ..f }),
                    Ok(_) => o.fixed_frames.push((f.function, "a local overlaps the registers the prologue saves".into())),
                    Err(r) => o.fixed_frames.push((f.function, r)),
                },
            }
        }
        o.frames.sort_by_key(|f| f.low);
        Some(o)
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
type Declared = (HashMap<u64, (Kind, u64)>, Vec<(Frame, Option<String>)>);

fn dwarf_variables(path: &str) -> Declared {
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum Found {
        Global(u64, Kind, u64),
        Function(String, u64, u64, Vec<Var>, Option<String>),
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
                        if let Some((Place::Address(a), kind, size, _)) = variable(&unit, entry)? {
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
                        locals_of(dwarf, &unit, child, &mut locals, &mut why, &mut statics)?;
                        out.extend(statics.into_iter().map(|(a, k, s)| Found::Global(a, k, s)));
                        if locals.is_empty() {
                            continue;
                        }
                        let Some(base) = base else {
                            out.push(Found::Function(name, low, high, Vec::new(), Some("its frame base is not rbp's".into())));
                            continue;
                        };
                        for l in &mut locals {
                            l.at += base;
                            l.align = l.align.min(1 << (l.at.trailing_zeros().min(4)));
                        }
                        locals.sort();
                        if why.is_none() && locals.windows(2).any(|w| w[0].at + w[0].size as i64 > w[1].at) {
                            why = Some("locals share frame slots".into());
                        }
                        out.push(Found::Function(name, low, high, locals, why));
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
            Found::Function(function, low, high, locals, why) => frames.push((Frame { function, low, high, locals, top: 0 }, why)),
        }
    }
    (globals, frames)
}

/// Where a variable lives: a fixed address, or an offset from the frame base.
enum Place {
    Address(u64),
    Frame(i64),
}

/// A variable's place, kind, size and alignment, if its location is one of those.
fn variable(unit: &Unit<'_>, entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'_>>) -> Result<Option<(Place, Kind, u64, u64)>, gimli::Error> {
    let Some(AttributeValue::Exprloc(expr)) = entry.attr_value(gimli::DW_AT_location)? else { return Ok(None) };
    let mut ops = expr.operations(unit.encoding());
    let place = match ops.next()? {
        Some(Operation::Address { address }) => Place::Address(address),
        Some(Operation::FrameOffset { offset }) => Place::Frame(offset),
        _ => return Ok(None),
    };
    if ops.next()?.is_some() {
        return Ok(None);
    }
    let Some(ty) = entry_type(entry)? else { return Ok(None) };
    Ok(type_info(unit, ty, 0)?.map(|(k, size, align)| (place, k, size, align)))
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
/// if one has no fixed frame slot (a variable-length array, a register).
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
                let name = entry.attr_value(gimli::DW_AT_name)?.and_then(|v| dwarf.attr_string(unit, v).ok()).map(|s| s.to_string_lossy().into_owned());
                match variable(unit, entry)? {
                    Some((Place::Frame(at), kind, size, align)) => out.push(Var { at, size, align, kind, name: name.unwrap_or_default() }),
                    Some((Place::Address(a), kind, size, _)) => statics.push((a, kind, size)),
                    None if entry.attr_value(gimli::DW_AT_location)?.is_some() && why.is_none() => {
                        *why = Some(format!("local '{}' has no fixed frame slot", name.unwrap_or_default()));
                    }
                    None => {}
                }
            }
            gimli::DW_TAG_lexical_block => locals_of(dwarf, unit, child, out, why, statics)?,
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

/// What to add to a frame-base offset for an offset from rbp: the CFA is rbp+16 once the
/// standard prologue ran (checked in `checked_frame`); None for another frame base.
fn frame_base(v: Option<AttributeValue<Slice<'_>>>, encoding: gimli::Encoding) -> Option<i64> {
    let Some(AttributeValue::Exprloc(expr)) = v else { return None };
    let mut ops = expr.operations(encoding);
    let base = match ops.next().ok()?? {
        Operation::CallFrameCFA => 16,
        Operation::Register { register } if register.0 == 6 => 0,
        Operation::RegisterOffset { register, offset, .. } if register.0 == 6 => offset,
        _ => return None,
    };
    ops.next().ok()?.is_none().then_some(base)
}

/// Whether the function's code lets its locals move: it sets up rbp as the frame pointer
/// (`push rbp; mov rbp, rsp`, after an `endbr64`), and every access below rbp is inside a
/// local DWARF describes (else an unnamed slot, a temporary, could be overlapped). The top of
/// its locals: below the registers pushed right after (`push rbx`: a local moved over its
/// slot would be restored into the caller's rbx).
fn checked_frame(elf: &Elf, file: &[u8], f: &Frame) -> Result<i64, String> {
    use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, Mnemonic, OpKind, Register};
    let code = elf
        .program_headers
        .iter()
        .find(|p| p.p_type == goblin::elf::program_header::PT_LOAD && p.p_vaddr <= f.low && f.high <= p.p_vaddr + p.p_filesz)
        .and_then(|p| file.get((f.low - p.p_vaddr + p.p_offset) as usize..(f.high - p.p_vaddr + p.p_offset) as usize))
        .ok_or("its code is not in the file")?;
    let endbr = code.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]);
    let code = if endbr { &code[4..] } else { code };
    let code_start = f.low + if endbr { 4 } else { 0 };
    if !code.starts_with(&[0x55, 0x48, 0x89, 0xe5]) {
        return Err("no frame pointer (optimized code)".into());
    }
    let pushed = Decoder::with_ip(64, &code[4..], 0, DecoderOptions::NONE).into_iter().take_while(|i| i.mnemonic() == Mnemonic::Push).count();
    for ins in Decoder::with_ip(64, code, 0, DecoderOptions::NONE) {
        // rbp as a value (`add rax, rbp; sub rax, 0x68`: -O0's address of an array element)
        // makes a local's address no operand names: the frame cannot move.
        let frame_moves = matches!(ins.mnemonic(), Mnemonic::Push | Mnemonic::Pop)
            || (ins.mnemonic() == Mnemonic::Mov && [ins.op0_register(), ins.op1_register()].contains(&Register::RSP));
        let as_value = (0..ins.op_count())
            .any(|i| ins.op_kind(i) == OpKind::Register && matches!(ins.op_register(i), Register::RBP | Register::EBP | Register::BP | Register::BPL));
        if as_value && !frame_moves {
            return Err(format!("rbp is used as a value at {:#x} (a local's address computed apart from its access)", code_start + ins.ip()));
        }
        if ins.memory_base() != Register::RBP || (ins.memory_displacement64() as i64) >= 0 {
            continue;
        }
        let d = ins.memory_displacement64() as i64;
        // (The registers pushed after rbp are restored from their slots: `mov rbx, [rbp-8]`.)
        let saved = d >= -8 * pushed as i64;
        if !saved && !f.locals.iter().any(|l| l.at <= d && d < l.at + l.size as i64) {
            return Err(format!("a frame slot at rbp{d} is no local DWARF describes"));
        }
    }
    Ok(-8 * pushed as i64)
}
