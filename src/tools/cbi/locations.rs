//! Where the main program's DWARF puts its integer variables at each pc, and what its
//! functions return: `predicates` compares a variable assigned in optimized code (no rbp frame:
//! location lists, a register or a frame slot per pc range) with the others of its function
//! live there, and counts a return value's sign only when the function called returns an
//! integer or a pointer. Read with gimli through `report::dwarf`.

use crate::layout::cfa::{Cfi, StackFrame};
use crate::layout::objects::{frame_base, name_of, origin, DwarfBase};
use crate::report::dwarf::{entry_type, with_dwarf, Slice, Unit};
use gimli::{AttributeValue, Operation, UnitOffset};
use std::collections::HashMap;

/// An integer's size in bytes and whether it is signed (a pointer is not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scalar {
    pub size: u8,
    pub signed: bool,
    pub pointer: bool,
}

/// Where a variable is: a register (numbered as iced numbers them from rax: rax 0, rcx 1,
/// rdx 2, rbx 3, rsp 4, rbp 5, rsi 6, rdi 7, r8 8, ...) or a slot at an offset from rsp, rbp
/// or the CFA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Place {
    Reg(u8),
    Slot(Base, i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Base {
    Rsp,
    Rbp,
    Cfa,
}

/// An integer variable or parameter: its name, its scope (its function's, or an inlined
/// function's instance: pairs are made within one), its type, and its places by pc range
/// `[low, high)` (file addresses).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Variable {
    pub name: String,
    pub scope: u32,
    pub ty: Scalar,
    pub places: Vec<(u64, u64, Place)>,
}

impl Variable {
    /// Its place before the instruction at `pc`, if it has one there.
    pub fn at(&self, pc: u64) -> Option<Place> {
        self.places.iter().find(|p| p.0 <= pc && pc < p.1).map(|p| p.2)
    }
}

/// A function's code range (one of them, for a function split in parts) and its integer
/// variables, in DWARF's order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Function {
    pub low: u64,
    pub high: u64,
    pub vars: Vec<Variable>,
}

/// What `predicates` asks of the main program's DWARF.
#[derive(Default)]
pub struct Program {
    /// The functions with integer variables, by start.
    functions: Vec<Function>,
    /// CFA - rsp through the functions (by start) that have variables in CFA slots.
    frames: HashMap<u64, StackFrame>,
    /// What each function DWARF describes returns, by its entry (file address): None when it
    /// is no integer or pointer (void, a float, a structure).
    pub returns: HashMap<u64, Option<Scalar>>,
}

impl Program {
    /// The function whose code holds file address `pc`.
    pub fn function(&self, pc: u64) -> Option<&Function> {
        let i = self.functions.partition_point(|f| f.low <= pc).checked_sub(1)?;
        self.functions.get(i).filter(|f| pc < f.high)
    }

    /// CFA - rsp before the instruction at `pc` of `f`.
    pub fn cfa_offset(&self, f: &Function, pc: u64) -> Option<i64> {
        self.frames.get(&f.low)?.offset_at(pc)
    }

    /// The DWARF of the ELF file at `path` (empty without).
    pub fn read(path: &str) -> Program {
        #[derive(PartialEq, Eq, PartialOrd, Ord)]
        enum Found {
            Function(Function),
            Returns(u64, Option<Scalar>),
        }
        let (found, _) = with_dwarf(path, 0, |dwarf, _, _, out| {
            let mut headers = dwarf.units();
            while let Some(header) = headers.next()? {
                let unit = dwarf.unit(header)?;
                let mut tree = unit.entries_tree(None)?;
                let mut functions = Vec::new();
                walk(dwarf, &unit, tree.root()?, &mut functions)?;
                for (entry, returns, f) in functions {
                    out.push(Found::Returns(entry, returns));
                    out.extend(f.into_iter().map(Found::Function));
                }
            }
            Ok(())
        });
        let mut program = Program::default();
        for f in found {
            match f {
                Found::Function(f) => program.functions.push(f),
                Found::Returns(at, r) => {
                    program.returns.insert(at, r);
                }
            }
        }
        let in_cfa_slots = |f: &Function| f.vars.iter().any(|v| v.places.iter().any(|p| matches!(p.2, Place::Slot(Base::Cfa, _))));
        if program.functions.iter().any(in_cfa_slots) {
            let file = std::fs::read(path).unwrap_or_default();
            if let Ok(elf) = goblin::elf::Elf::parse(&file) {
                let cfi = Cfi::of(&elf, &file);
                for f in program.functions.iter().filter(|f| in_cfa_slots(f)) {
                    if let Ok(frame) = cfi.stack_frame(f.low, f.high) {
                        program.frames.insert(f.low, frame);
                    }
                }
            }
        }
        program
    }
}

/// A function found: its entry, what it returns, and its parts with their variables.
type FoundFunction = (u64, Option<Scalar>, Vec<Function>);

/// The functions under `node` (a unit, a namespace, a class).
fn walk(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    node: gimli::EntriesTreeNode<'_, '_, '_, Slice<'_>>,
    out: &mut Vec<FoundFunction>,
) -> Result<(), gimli::Error> {
    let mut children = node.children();
    while let Some(child) = children.next()? {
        match child.entry().tag() {
            gimli::DW_TAG_subprogram => function(dwarf, unit, child, out)?,
            gimli::DW_TAG_namespace | gimli::DW_TAG_class_type | gimli::DW_TAG_structure_type => walk(dwarf, unit, child, out)?,
            _ => {}
        }
    }
    Ok(())
}

/// A function with code: what it returns and its integer variables.
fn function(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    node: gimli::EntriesTreeNode<'_, '_, '_, Slice<'_>>,
    out: &mut Vec<FoundFunction>,
) -> Result<(), gimli::Error> {
    let entry = node.entry();
    let mut ranges = Vec::new();
    let mut iter = dwarf.die_ranges(unit, entry)?;
    while let Some(r) = iter.next()? {
        if r.end > r.begin {
            ranges.push((r.begin, r.end));
        }
    }
    // (A declaration, an abstract instance: no code.)
    let Some(&(entry_pc, _)) = ranges.first() else { return Ok(()) };
    let returns = match type_of(unit, entry)? {
        Some(ty) => scalar(unit, ty, 0)?,
        None => None,
    };
    let base = frame_base(entry.attr_value(gimli::DW_AT_frame_base)?, unit.encoding());
    let span = (ranges.iter().map(|r| r.0).min().unwrap_or(0), ranges.iter().map(|r| r.1).max().unwrap_or(0));
    let mut c = Collected { base, span, scopes: 0, vars: Vec::new() };
    variables(dwarf, unit, node, 0, &mut c)?;
    let vars = c.vars;
    let parts = if vars.is_empty() { Vec::new() } else { ranges.iter().map(|&(low, high)| Function { low, high, vars: vars.clone() }).collect() };
    out.push((entry_pc, returns, parts));
    Ok(())
}

/// An entry's type, or its abstract origin's or its specification's (an out-of-line copy of
/// an inline function, a C++ member's definition).
fn type_of(unit: &Unit<'_>, entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'_>>) -> Result<Option<UnitOffset>, gimli::Error> {
    if let Some(t) = entry_type(entry)? {
        return Ok(Some(t));
    }
    if let Some(o) = origin(unit, entry)? {
        return type_of(unit, &o);
    }
    match entry.attr_value(gimli::DW_AT_specification)? {
        Some(AttributeValue::UnitRef(s)) => entry_type(&unit.entry(s)?),
        _ => Ok(None),
    }
}

/// A function's variables as they are collected: its frame base and code span (what a single
/// location holds over), the scopes numbered so far, and the variables.
struct Collected {
    base: Option<DwarfBase>,
    span: (u64, u64),
    scopes: u32,
    vars: Vec<Variable>,
}

/// The integer variables under `node`, of scope `scope` (each inlined function's instance
/// numbered anew).
fn variables(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    node: gimli::EntriesTreeNode<'_, '_, '_, Slice<'_>>,
    scope: u32,
    c: &mut Collected,
) -> Result<(), gimli::Error> {
    let mut children = node.children();
    while let Some(child) = children.next()? {
        let entry = child.entry();
        match entry.tag() {
            gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter => {
                if let Some(v) = variable(dwarf, unit, entry, c.base, c.span, scope)? {
                    c.vars.push(v);
                }
            }
            gimli::DW_TAG_lexical_block => variables(dwarf, unit, child, scope, c)?,
            gimli::DW_TAG_inlined_subroutine => {
                c.scopes += 1;
                let s = c.scopes;
                variables(dwarf, unit, child, s, c)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// An integer variable with a place somewhere (its single location holds over the function).
fn variable(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    unit: &Unit<'_>,
    entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'_>>,
    base: Option<DwarfBase>,
    span: (u64, u64),
    scope: u32,
) -> Result<Option<Variable>, gimli::Error> {
    let Some(ty) = type_of(unit, entry)? else { return Ok(None) };
    let Some(ty) = scalar(unit, ty, 0)?.filter(|s| !s.pointer) else { return Ok(None) };
    let Some(location) = entry.attr_value(gimli::DW_AT_location)? else { return Ok(None) };
    let mut places = Vec::new();
    if let AttributeValue::Exprloc(expr) = location {
        places.extend(place(expr, unit.encoding(), base).map(|p| (span.0, span.1, p)));
    } else if let Some(list) = dwarf.attr_locations_offset(unit, location)? {
        let mut entries = dwarf.locations(unit, list)?;
        while let Some(e) = entries.next()? {
            places.extend(place(e.data, unit.encoding(), base).map(|p| (e.range.begin, e.range.end, p)));
        }
    }
    if places.is_empty() {
        return Ok(None);
    }
    let name = name_of(dwarf, unit, entry)?.unwrap_or_else(|| "?".to_string());
    Ok(Some(Variable { name, scope, ty, places }))
}

/// DWARF's register numbers (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15) as iced's.
const FROM_DWARF: [u8; 16] = [0, 2, 1, 3, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15];

/// The place an expression names, if it is one operation naming a register or a slot (not a
/// value computed, a piece, an entry value).
fn place(expr: gimli::Expression<Slice<'_>>, encoding: gimli::Encoding, base: Option<DwarfBase>) -> Option<Place> {
    let mut ops = expr.operations(encoding);
    let place = match ops.next().ok()?? {
        Operation::Register { register } => Place::Reg(*FROM_DWARF.get(register.0 as usize)?),
        Operation::FrameOffset { offset } => match base? {
            DwarfBase::Cfa => Place::Slot(Base::Cfa, offset),
            DwarfBase::Rbp(k) => Place::Slot(Base::Rbp, k + offset),
        },
        Operation::RegisterOffset { register, offset, base_type } if base_type.0 == 0 => match register.0 {
            6 => Place::Slot(Base::Rbp, offset),
            7 => Place::Slot(Base::Rsp, offset),
            _ => return None,
        },
        _ => return None,
    };
    matches!(ops.next(), Ok(None)).then_some(place)
}

/// A type, if it is an integer (1, 2, 4 or 8 bytes) or a pointer, through typedefs and
/// qualifiers.
fn scalar(unit: &Unit<'_>, ty: UnitOffset, depth: u32) -> Result<Option<Scalar>, gimli::Error> {
    if depth > 16 {
        return Ok(None);
    }
    let entry = unit.entry(ty)?;
    let size = entry.attr_value(gimli::DW_AT_byte_size)?.and_then(|v| v.udata_value()).filter(|s| matches!(s, 1 | 2 | 4 | 8)).map(|s| s as u8);
    let under = |me: &gimli::DebuggingInformationEntry<'_, '_, Slice<'_>>| -> Result<Option<Scalar>, gimli::Error> {
        match entry_type(me)? {
            Some(t) => scalar(unit, t, depth + 1),
            None => Ok(None),
        }
    };
    Ok(match entry.tag() {
        gimli::DW_TAG_typedef | gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type | gimli::DW_TAG_restrict_type | gimli::DW_TAG_atomic_type => {
            under(&entry)?
        }
        gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type => Some(Scalar { size: 8, signed: false, pointer: true }),
        gimli::DW_TAG_base_type => {
            let signed = match entry.attr_value(gimli::DW_AT_encoding)? {
                Some(AttributeValue::Encoding(e)) if e == gimli::DW_ATE_signed || e == gimli::DW_ATE_signed_char => Some(true),
                Some(AttributeValue::Encoding(e))
                    if [gimli::DW_ATE_unsigned, gimli::DW_ATE_unsigned_char, gimli::DW_ATE_boolean, gimli::DW_ATE_UTF].contains(&e) =>
                {
                    Some(false)
                }
                _ => None,
            };
            size.zip(signed).map(|(size, signed)| Scalar { size, signed, pointer: false })
        }
        // (An enumeration is signed unless its underlying type says otherwise.)
        gimli::DW_TAG_enumeration_type => under(&entry)?.or(size.map(|size| Scalar { size, signed: true, pointer: false })),
        _ => None,
    })
}
