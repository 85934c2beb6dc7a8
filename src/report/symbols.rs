//! Guest addresses to function names, from the ELF symbol tables of the mapped files.

use crate::kernel::memory::GuestMemory;
use std::collections::HashMap;

#[derive(Default)]
pub struct SymbolCache {
    files: HashMap<String, Option<FileSyms>>,
}

struct FileSyms {
    /// (vaddr, size, name), sorted by vaddr.
    syms: Vec<(u64, u64, String)>,
    /// Data objects with a size: (vaddr, size, name).
    objects: Vec<(u64, u64, String)>,
    /// Lowest PT_LOAD vaddr (page-aligned): the file's address where its first mapping starts.
    first_vaddr: u64,
    is_dyn: bool,
    /// The ELF entry point (vaddr).
    entry: u64,
    /// The functions the dynamic relocations bind, by the address of the slot they fill (a
    /// GOT slot the PLT jumps through): (vaddr, name).
    slots: Vec<(u64, String)>,
}

fn parse(path: &str) -> Option<FileSyms> {
    let bytes = crate::loader::file::map(path).ok()?;
    let elf = goblin::elf::Elf::parse(&bytes).ok()?;
    let mut syms = Vec::new();
    let mut objects: Vec<(u64, u64, String)> = elf
        .syms
        .iter()
        .filter(|s| s.st_type() == goblin::elf::sym::STT_OBJECT && s.st_value != 0 && s.st_size > 0)
        .map(|s| (s.st_value, s.st_size, elf.strtab.get_at(s.st_name).unwrap_or_default().to_string()))
        .collect();
    objects.sort();
    objects.dedup_by_key(|o| (o.0, o.1));
    for (tab, strtab) in [(&elf.syms, &elf.strtab), (&elf.dynsyms, &elf.dynstrtab)] {
        for s in tab.iter() {
            if s.is_function() && s.st_value != 0 {
                if let Some(n) = strtab.get_at(s.st_name) {
                    syms.push((s.st_value, s.st_size, n.to_string()));
                }
            }
        }
    }
    syms.sort();
    syms.dedup_by_key(|s| s.0);
    let first_vaddr = elf.program_headers.iter().filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD).map(|p| p.p_vaddr & !0xfff).min()?;
    let slots = elf
        .pltrelocs
        .iter()
        .chain(elf.dynrelas.iter())
        .filter(|r| r.r_sym != 0)
        .filter_map(|r| Some((r.r_offset, elf.dynstrtab.get_at(elf.dynsyms.get(r.r_sym)?.st_name)?.to_string())))
        .collect();
    Some(FileSyms { syms, objects, first_vaddr, is_dyn: elf.header.e_type == goblin::elf::header::ET_DYN, entry: elf.header.e_entry, slots })
}

/// Where an instruction `offset` bytes from the start of a module's loaded image (the file at
/// `path`) is in the file: its file address, and the function holding it with how far into it
/// (what stays the same when other functions change).
pub fn in_file(path: &str, offset: u64) -> Option<(u64, Option<(String, u64)>)> {
    let f = parse(path)?;
    let at = offset + f.first_vaddr;
    let function = function_holding(&f.syms, at).map(|name| (name.to_string(), at - f.syms[f.syms.partition_point(|s| s.0 <= at) - 1].0));
    Some((at, function))
}

/// The functions of the file at `path` by their file addresses: (address, size, name), sorted.
pub fn file_functions(path: &str) -> Vec<(u64, u64, String)> {
    parse(path).map(|f| f.syms).unwrap_or_default()
}

/// The function of `functions` (`file_functions`) holding file address `at`.
pub fn function_holding(functions: &[(u64, u64, String)], at: u64) -> Option<&str> {
    let i = functions.partition_point(|s| s.0 <= at);
    i.checked_sub(1).map(|i| &functions[i]).filter(|s| at < s.0 + s.1.max(1)).map(|s| s.2.as_str())
}

/// Where modules are mapped: the guest's memory in a run, or a run's saved `ModuleMap`.
pub trait Modules {
    /// The file mapped at `pc` and its load address (the start of the lowest region mapped
    /// from it).
    fn module_at(&self, pc: u64) -> Option<(String, u64)>;
}

impl Modules for GuestMemory {
    fn module_at(&self, pc: u64) -> Option<(String, u64)> {
        let path = self.region_at(pc)?.1.name.clone().filter(|p| !p.starts_with('['))?;
        let base = self.lowest_start_named(&path)?;
        Some((path, base))
    }
}

/// The mappings of the modules some addresses are in, as a run saw them: what lets its search,
/// in another process, symbolize those addresses (and load each module's DWARF once for all its
/// runs, not once in each).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModuleMap(pub Vec<Mapped>);

#[derive(Clone, Debug, PartialEq)]
pub struct Mapped {
    pub start: u64,
    pub end: u64,
    /// The module's load address.
    pub base: u64,
    pub path: String,
}

impl ModuleMap {
    /// The regions of `mem` that `pcs` are in.
    pub fn of(pcs: impl IntoIterator<Item = u64>, mem: &GuestMemory) -> ModuleMap {
        let mut map = ModuleMap::default();
        for pc in pcs {
            if map.0.iter().any(|m| (m.start..m.end).contains(&pc)) {
                continue;
            }
            let (Some((start, region)), Some((path, base))) = (mem.region_at(pc), mem.module_at(pc)) else { continue };
            map.0.push(Mapped { start, end: region.end, base, path });
        }
        map
    }
}

impl Modules for ModuleMap {
    fn module_at(&self, pc: u64) -> Option<(String, u64)> {
        self.0.iter().find(|m| (m.start..m.end).contains(&pc)).map(|m| (m.path.clone(), m.base))
    }
}

impl SymbolCache {
    /// The module mapped at `pc` and `pc`'s address in that file (what debug info uses).
    pub fn file_address<M: Modules + ?Sized>(&mut self, pc: u64, mem: &M) -> Option<(String, u64)> {
        let (path, base) = mem.module_at(pc)?;
        let fs = self.files.entry(path.clone()).or_insert_with(|| parse(&path)).as_ref()?;
        let bias = if fs.is_dyn { base - fs.first_vaddr } else { 0 };
        Some((path, pc - bias))
    }

    /// (function name, offset from it or from the module start, module path).
    pub fn lookup<M: Modules + ?Sized>(&mut self, pc: u64, mem: &M) -> Option<(Option<String>, u64, String)> {
        let (path, va) = self.file_address(pc, mem)?;
        let fs = self.files.get(&path)?.as_ref()?;
        let i = fs.syms.partition_point(|s| s.0 <= va);
        if i > 0 {
            let (start, size, name) = &fs.syms[i - 1];
            if va < start + size.max(&1) || *size == 0 {
                return Some((Some(name.clone()), va - start, path));
            }
        }
        Some((None, va, path))
    }
}

/// Module `path` as it is mapped in `mem`: its symbols and the bias of its addresses.
fn mapped(path: &str, mem: &GuestMemory) -> Option<(FileSyms, u64)> {
    let (fs, base) = (parse(path)?, mem.lowest_start_named(path)?);
    let bias = if fs.is_dyn { base - fs.first_vaddr } else { 0 };
    Some((fs, bias))
}

/// The functions (guest range and name) of the module `path` mapped in `mem`, from its symbols.
pub fn functions(path: &str, mem: &GuestMemory) -> Vec<(u64, u64, String)> {
    entry_and_functions(path, mem).1
}

/// The guest address of the entry point of module `path` mapped in `mem` (where the program's
/// own code starts, after the dynamic loader's), and its `functions`, from one read of its
/// file (a large program's symbol table took about 1% of a short suppression run, read twice).
pub fn entry_and_functions(path: &str, mem: &GuestMemory) -> (Option<u64>, Vec<(u64, u64, String)>) {
    let Some((fs, bias)) = mapped(path, mem) else { return (None, Vec::new()) };
    (Some(fs.entry + bias), function_ranges(&fs, bias))
}

fn function_ranges(fs: &FileSyms, bias: u64) -> Vec<(u64, u64, String)> {
    // A symbol without a size (the C runtime's, hand-written assembly) runs to the next one.
    fs.syms
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let end = if s.1 > 0 { s.0 + s.1 } else { fs.syms.get(i + 1).map_or(s.0 + 1, |n| n.0) };
            (s.0 + bias, end + bias, s.2.clone())
        })
        .collect()
}

/// The data objects (guest range) of the module `path` mapped in `mem`, from its symbols.
pub fn objects(path: &str, mem: &GuestMemory) -> Vec<(u64, u64)> {
    named_objects(path, mem).into_iter().map(|(s, e, _)| (s, e)).collect()
}

/// The same with their names.
pub fn named_objects(path: &str, mem: &GuestMemory) -> Vec<(u64, u64, String)> {
    let Some((fs, bias)) = mapped(path, mem) else { return Vec::new() };
    fs.objects.iter().map(|(a, n, name)| (a + bias, a + n + bias, name.clone())).collect()
}

/// The guest address of function `name` in module `path` mapped in `mem`.
pub fn function_address(path: &str, mem: &GuestMemory, name: &str) -> Option<u64> {
    let (fs, bias) = mapped(path, mem)?;
    fs.syms.iter().find(|s| s.2 == name).map(|s| s.0 + bias)
}

/// The file address of symbol `name` (a function or an object) in the ELF file at `path`.
pub fn file_symbol(path: &str, name: &str) -> Option<u64> {
    let fs = parse(path)?;
    fs.syms.iter().find(|s| s.2 == name).map(|s| s.0).or_else(|| fs.objects.iter().find(|o| o.2 == name).map(|o| o.0))
}

/// The functions a module's calls reach through the PLT or a GOT slot, read from its file once
/// (a crash analysis asks about many calls).
pub struct Callees {
    slots: Vec<(u64, String)>,
    bias: u64,
}

impl Callees {
    /// Those of the module `path` mapped in `mem`.
    pub fn of(path: &str, mem: &GuestMemory) -> Option<Callees> {
        let (fs, bias) = mapped(path, mem)?;
        Some(Callees { slots: fs.slots, bias })
    }

    /// The name of the function the program's call returning to `ret` called through the PLT
    /// or a GOT slot (`call f@plt`, `call [rip+f@GOTPCREL]`): the dynamic relocation of the GOT
    /// slot the call (or its PLT stub) jumps through.
    pub fn name(&self, ret: u64) -> Option<String> {
        use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, Mnemonic, OpKind};
        let decode_at = |at: u64| -> Option<rtgrind_jit::iced_x86::Instruction> {
            let bytes = crate::kernel::guest_mem::read_vec(at, 16)?;
            Some(Decoder::with_ip(64, &bytes, at, DecoderOptions::NONE).decode())
        };
        let rip_slot =
            |i: &rtgrind_jit::iced_x86::Instruction| (i.op0_kind() == OpKind::Memory && i.is_ip_rel_memory_operand()).then(|| i.ip_rel_memory_address());
        // The call: `call rel32` (5 bytes) to a PLT stub, or `call [rip+disp]` (6) through the GOT.
        let call = [5, 6].into_iter().filter_map(|n| decode_at(ret - n)).find(|i| i.mnemonic() == Mnemonic::Call && i.next_ip() == ret)?;
        let slot = match rip_slot(&call) {
            Some(slot) => slot,
            None => {
                // The stub: a `jmp [rip+disp]` among its first instructions (after `endbr64`).
                let mut at = call.near_branch_target();
                let mut found = None;
                for _ in 0..3 {
                    let i = decode_at(at)?;
                    if i.mnemonic() == Mnemonic::Jmp {
                        found = rip_slot(&i);
                        break;
                    }
                    at = i.next_ip();
                }
                found?
            }
        };
        let va = slot.checked_sub(self.bias)?;
        self.slots.iter().find(|s| s.0 == va).map(|s| s.1.clone())
    }
}
