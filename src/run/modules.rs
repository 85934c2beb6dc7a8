//! Guest modules for the translation cache (`rtgrind_jit::persist`): the mapped file a pc
//! lies in, where it starts and a hash of its GNU build ID.

use crate::kernel::memory::GuestMemory;
use rtgrind_jit::persist::Module;
use std::hash::Hasher;

thread_local! {
    /// Build IDs by (base, device, inode): a module's translations ask for it at each block.
    static IDS: std::cell::RefCell<std::collections::HashMap<(u64, u64, u64), Option<u64>>> = Default::default();
}

/// The module of read-only file-mapped code at `pc`: the start of the file's contiguous
/// mappings there, which must be an ELF header with a build ID.
pub fn module_of(mem: &GuestMemory, pc: u64) -> Option<Module> {
    let (mut base, r) = mem.region_at(pc)?;
    let file = r.file?;
    if r.prot & libc::PROT_WRITE != 0 {
        return None;
    }
    while let Some((s, before)) = base.checked_sub(1).and_then(|a| mem.region_at(a)) {
        if before.file != Some(file) {
            break;
        }
        base = s;
    }
    let id = IDS.with(|ids| *ids.borrow_mut().entry((base, file.0, file.1)).or_insert_with(|| build_id_hash(base)))?;
    Some(Module { base, id })
}

/// A hash of the build ID of the ELF image mapped at `base` (read through the fault handler:
/// the guest may have unmapped or protected any of it).
fn build_id_hash(base: u64) -> Option<u64> {
    let mut head = [0u8; 64];
    if crate::kernel::raw::copy_guarded(base, &mut head) != 64 || head[..4] != *b"\x7fELF" {
        return None;
    }
    let phoff = u64::from_le_bytes(head[0x20..0x28].try_into().ok()?);
    let phnum = u16::from_le_bytes(head[0x38..0x3a].try_into().ok()?) as usize;
    // A non-PIE executable's addresses are absolute; the others' are from its base.
    let bias = if u16::from_le_bytes([head[16], head[17]]) == 2 { 0 } else { base };
    let id = rtgrind_jit::persist::build_id(&mut |at, buf| crate::kernel::raw::copy_guarded(at, buf), base + phoff, phnum, Some(bias))?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(&id);
    Some(h.finish())
}
