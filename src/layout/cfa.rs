//! Where the stack pointer is in a function without a frame pointer: the distance from rsp up
//! to the canonical frame address (CFA, the caller's rsp before its call) at each pc, as the
//! file's `.eh_frame` tells an unwinder. A local that DWARF places at CFA-48 is at `rsp+16`
//! where that distance is 64, whatever pushes and calls moved rsp in between.

use gimli::{BaseAddresses, CfaRule, CieOrFde, EhFrame, EndianSlice, FrameDescriptionEntry, RegisterRule, RunTimeEndian, UnwindContext, UnwindSection};
use goblin::elf::Elf;

type Slice<'a> = EndianSlice<'a, RunTimeEndian>;

/// The call frame information of one file.
pub struct Cfi<'a> {
    eh_frame: EhFrame<Slice<'a>>,
    bases: BaseAddresses,
    /// Every function's description, by start.
    fdes: Vec<FrameDescriptionEntry<Slice<'a>>>,
}

/// A function's frame as the unwinder sees it (file addresses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackFrame {
    /// (start, end, CFA - rsp) for each pc range.
    pub rsp: Vec<(u64, u64, i64)>,
    /// The lowest CFA offset of anything the function saves there: the return address (-8)
    /// or a callee-saved register it pushes.
    pub saved: i64,
}

impl StackFrame {
    /// CFA - rsp before the instruction at `pc`.
    pub fn offset_at(&self, pc: u64) -> Option<i64> {
        let i = self.rsp.partition_point(|r| r.0 <= pc);
        self.rsp.get(i.checked_sub(1)?).filter(|r| pc < r.1).map(|r| r.2)
    }
}

impl<'a> Cfi<'a> {
    /// The `.eh_frame` of `elf` (its bytes: `file`); empty when it has none.
    pub fn of(elf: &Elf, file: &'a [u8]) -> Cfi<'a> {
        let section = |name: &str| elf.section_headers.iter().find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(name));
        let data = section(".eh_frame").and_then(|s| file.get(s.sh_offset as usize..(s.sh_offset + s.sh_size) as usize)).unwrap_or(&[]);
        let eh_frame = EhFrame::new(data, RunTimeEndian::Little);
        let mut bases = BaseAddresses::default();
        for (name, set) in [
            (".eh_frame", BaseAddresses::set_eh_frame as fn(BaseAddresses, u64) -> BaseAddresses),
            (".text", BaseAddresses::set_text),
            (".got", BaseAddresses::set_got),
        ] {
            if let Some(s) = section(name) {
                bases = set(bases, s.sh_addr);
            }
        }
        let mut fdes = Vec::new();
        let mut entries = eh_frame.entries(&bases);
        while let Ok(Some(entry)) = entries.next() {
            if let CieOrFde::Fde(partial) = entry {
                if let Ok(fde) = partial.parse(EhFrame::cie_from_offset) {
                    fdes.push(fde);
                }
            }
        }
        fdes.sort_by_key(|f| f.initial_address());
        Cfi { eh_frame, bases, fdes }
    }

    /// The frame of the function at `[low, high)`; an error saying why it has none that rsp
    /// locates (no description, or a CFA computed from another register somewhere: a frame
    /// pointer, a realigned stack).
    pub fn stack_frame(&self, low: u64, high: u64) -> Result<StackFrame, String> {
        let i = self.fdes.partition_point(|f| f.initial_address() <= low);
        let fde = i.checked_sub(1).map(|i| &self.fdes[i]).filter(|f| high <= f.end_address()).ok_or("no call frame information")?;
        let mut ctx = Box::new(UnwindContext::new());
        let mut rows = fde.rows(&self.eh_frame, &self.bases, &mut ctx).map_err(|e| format!("its call frame information does not read: {e}"))?;
        let (mut rsp, mut saved) = (Vec::new(), -8);
        while let Some(row) = rows.next_row().map_err(|e| format!("its call frame information does not read: {e}"))? {
            match row.cfa() {
                CfaRule::RegisterAndOffset { register, offset } if *register == gimli::X86_64::RSP => {
                    rsp.push((row.start_address(), row.end_address(), *offset));
                }
                _ => return Err(format!("its frame is not found from rsp at {:#x}", row.start_address())),
            }
            for (_, rule) in row.registers() {
                if let RegisterRule::Offset(o) = rule {
                    saved = saved.min(*o);
                }
            }
        }
        Ok(StackFrame { rsp, saved })
    }
}
