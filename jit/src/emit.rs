//! A small x86-64 byte emitter for the fixed instruction forms the translator adds around
//! guest code: context spills through `gs`, exit stubs, the inline indirect-branch lookup.
//!
//! Every form is flag-free (mov, lea, movzx, jrcxz, jmp) so instrumentation never has to
//! save the guest's flags. Guest instructions themselves are copied or re-encoded by iced-x86
//! (`translate.rs`); this module only knows these forms, and `tests` decodes each one with
//! iced-x86 to pin its encoding.

/// A forward or backward jump target inside one block's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label(usize);

pub struct Asm {
    pub buf: Vec<u8>,
    /// Host address the first byte will live at.
    pub base: u64,
    labels: Vec<Option<usize>>,
    /// (offset of a rel32 or rel8 field, label, width)
    fixups: Vec<(usize, Label, u8)>,
}

/// `rorx rcx, rdx, 16; lea rcx, [rcx+rdx]; movzx ecx, cx`: the inline lookup table's hash
/// (see `Asm::ibl_hash_rdx_to_ecx`), also emitted into tool code by `Inline::exit_to`.
pub const IBL_HASH_RDX_TO_ECX: [u8; 13] = [0xc4, 0xe3, 0xfb, 0xf0, 0xca, 0x10, 0x48, 0x8d, 0x0c, 0x11, 0x0f, 0xb7, 0xc9];

impl Asm {
    pub fn new(base: u64) -> Asm {
        Asm { buf: Vec::with_capacity(1024), base, labels: Vec::new(), fixups: Vec::new() }
    }

    pub fn pos(&self) -> usize {
        self.buf.len()
    }
    pub fn here(&self) -> u64 {
        self.base + self.buf.len() as u64
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn new_label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }
    pub fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.buf.len());
    }

    /// Resolves label fixups; panics on an unbound label or an out-of-range rel8 (both are
    /// translator bugs, not guest behaviour).
    pub fn finish(&mut self) {
        for &(at, l, width) in &self.fixups {
            let target = self.labels[l.0].expect("unbound label") as i64;
            let next = at as i64 + width as i64;
            let rel = target - next;
            if width == 1 {
                let r = i8::try_from(rel).expect("rel8 out of range");
                self.buf[at] = r as u8;
            } else {
                self.buf[at..at + 4].copy_from_slice(&(rel as i32).to_le_bytes());
            }
        }
        self.fixups.clear();
    }

    /// Pads with nops so that after `prefix_len` more bytes the position is 4-aligned: rel32
    /// fields that are patched later must be naturally aligned so a patch is atomic.
    pub fn align_rel32(&mut self, prefix_len: usize) {
        while !(self.here() as usize + prefix_len).is_multiple_of(4) {
            self.buf.push(0x90);
        }
    }

    fn gs_modrm_abs(&mut self, reg: u8, disp: u32) {
        // mod=00 rm=100 + SIB base=101 index=100: absolute [disp32] (not RIP-relative).
        self.buf.push(((reg & 7) << 3) | 0b100);
        self.buf.push(0x25);
        self.u32(disp);
    }

    /// `mov qword gs:[disp], r64`
    pub fn store_gs(&mut self, disp: usize, r: u8) {
        self.bytes(&[0x65, 0x48 | ((r >> 3) << 2), 0x89]);
        self.gs_modrm_abs(r, disp as u32);
    }
    /// `mov r64, qword gs:[disp]`
    pub fn load_gs(&mut self, r: u8, disp: usize) {
        self.bytes(&[0x65, 0x48 | ((r >> 3) << 2), 0x8b]);
        self.gs_modrm_abs(r, disp as u32);
    }
    /// `mov dword gs:[disp], imm32`
    pub fn store_gs_imm32(&mut self, disp: usize, imm: u32) {
        self.bytes(&[0x65, 0xc7]);
        self.gs_modrm_abs(0, disp as u32);
        self.u32(imm);
    }
    /// `jmp qword gs:[disp]`
    pub fn jmp_gs(&mut self, disp: usize) {
        self.bytes(&[0x65, 0xff]);
        self.gs_modrm_abs(4, disp as u32);
    }

    /// `jmp rel32` to a label.
    pub fn jmp_label(&mut self, l: Label) {
        self.buf.push(0xe9);
        self.fixups.push((self.buf.len(), l, 4));
        self.u32(0);
    }
    /// `jcc rel32` (cc = low nibble of the 0x7x short opcode) to a label.
    pub fn jcc_label(&mut self, cc: u8, l: Label) {
        self.bytes(&[0x0f, 0x80 | cc]);
        self.fixups.push((self.buf.len(), l, 4));
        self.u32(0);
    }
    /// Points the rel32 field at `pos` (already emitted) at a label.
    pub fn fixup_rel32(&mut self, pos: usize, l: Label) {
        self.fixups.push((pos, l, 4));
    }
    /// `jrcxz rel8` to a label.
    pub fn jrcxz_label(&mut self, l: Label) {
        self.buf.push(0xe3);
        self.fixups.push((self.buf.len(), l, 1));
        self.buf.push(0);
    }
    /// A rel8 field (after an opcode the caller emitted) pointing at a label.
    pub fn rel8_label(&mut self, l: Label) {
        self.fixups.push((self.buf.len(), l, 1));
        self.buf.push(0);
    }
    /// Offset of a bound label.
    pub fn label_pos(&self, l: Label) -> usize {
        self.labels[l.0].expect("unbound label")
    }
    /// `jmp rel32` to an absolute host address; returns the offset of the rel32 field.
    pub fn jmp_abs(&mut self, target: u64) -> usize {
        self.buf.push(0xe9);
        let at = self.buf.len();
        let rel = target.wrapping_sub(self.here() + 4) as i64;
        self.u32(rel as i32 as u32);
        at
    }

    /// `mov r64, imm64`
    pub fn mov_imm64(&mut self, r: u8, imm: u64) {
        self.bytes(&[0x48 | (r >> 3), 0xb8 | (r & 7)]);
        self.buf.extend_from_slice(&imm.to_le_bytes());
    }
    /// `mov dst64, src64`
    pub fn mov_rr(&mut self, dst: u8, src: u8) {
        self.bytes(&[0x48 | ((src >> 3) << 2) | (dst >> 3), 0x89, 0xc0 | ((src & 7) << 3) | (dst & 7)]);
    }
    /// `mov r64, [r64]` (the base must not be rsp, rbp, r12 or r13: no SIB/disp forms here)
    pub fn load_ind(&mut self, dst: u8, base: u8) {
        debug_assert!(!matches!(base & 7, 4 | 5));
        self.bytes(&[0x48 | ((dst >> 3) << 2) | (base >> 3), 0x8b, ((dst & 7) << 3) | (base & 7)]);
    }
    /// `pop r64`
    pub fn pop(&mut self, r: u8) {
        if r >= 8 {
            self.buf.push(0x41);
        }
        self.buf.push(0x58 | (r & 7));
    }
    /// `lea rsp, [rsp + disp]`
    pub fn lea_rsp(&mut self, disp: i32) {
        if let Ok(d) = i8::try_from(disp) {
            self.bytes(&[0x48, 0x8d, 0x64, 0x24, d as u8]);
        } else {
            self.bytes(&[0x48, 0x8d, 0xa4, 0x24]);
            self.u32(disp as u32);
        }
    }
    /// `ecx = ((rdx ror 16) + rdx) & 0xffff`: the inline lookup table's hash of the target in
    /// rdx (`ThreadContext::ibl_slot`), flag-free (BMI2 `rorx`, `lea`, `movzx`). Mixing bits
    /// 16-31 into the index matters: hot targets in a large library often share their low 16.
    pub fn ibl_hash_rdx_to_ecx(&mut self) {
        self.bytes(&IBL_HASH_RDX_TO_ECX);
    }
    /// `mov rcx, gs:[disp + rcx*8]`
    pub fn load_gs_rcx_index(&mut self, disp: usize) {
        self.bytes(&[0x65, 0x48, 0x8b, 0x0c, 0xcd]);
        self.u32(disp as u32);
    }
    /// `jmp qword gs:[disp + rcx*8]`
    pub fn jmp_gs_rcx_index(&mut self, disp: usize) {
        self.bytes(&[0x65, 0xff, 0x24, 0xcd]);
        self.u32(disp as u32);
    }
    /// `push qword [rip + rel32]` reading an 8-byte literal at a label (see `literal`).
    pub fn push_rip_label(&mut self, l: Label) {
        self.bytes(&[0xff, 0x35]);
        self.fixups.push((self.buf.len(), l, 4));
        self.u32(0);
    }
    /// Binds `l` to an 8-byte literal emitted here.
    pub fn literal(&mut self, l: Label, v: u64) {
        self.bind(l);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// `sub qword gs:[disp], 1` (writes the status flags)
    pub fn sub_gs_1(&mut self, disp: usize) {
        self.bytes(&[0x65, 0x48, 0x83]);
        self.gs_modrm_abs(5, disp as u32);
        self.buf.push(1);
    }
    /// `lea rcx, [rcx - 1]`
    pub fn lea_rcx_minus_1(&mut self) {
        self.bytes(&[0x48, 0x8d, 0x49, 0xff]);
    }
    /// `lea rcx, [rcx + rdx]`
    pub fn lea_rcx_rcx_rdx(&mut self) {
        self.bytes(&[0x48, 0x8d, 0x0c, 0x11]);
    }
    /// `lahf; seto al; mov gs:[disp], ax`: the six status flags into a context slot
    /// (clobbers ax).
    pub fn save_flags_ax(&mut self, disp: usize) {
        self.bytes(&[0x9f, 0x0f, 0x90, 0xc0, 0x66, 0x65, 0x89]);
        self.gs_modrm_abs(0, disp as u32);
    }
    /// `mov ax, gs:[disp]; add al, 0x7f; sahf`: the inverse of `save_flags_ax` (OF comes
    /// back from the overflow of `1 + 0x7f`).
    pub fn restore_flags_ax(&mut self, disp: usize) {
        self.bytes(&[0x66, 0x65, 0x8b]);
        self.gs_modrm_abs(0, disp as u32);
        self.bytes(&[0x04, 0x7f, 0x9e]);
    }
    pub fn ud2(&mut self) {
        self.bytes(&[0x0f, 0x0b]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::{Decoder, DecoderOptions, Formatter, NasmFormatter};

    fn dis(a: &Asm) -> Vec<String> {
        let mut d = Decoder::with_ip(64, &a.buf, a.base, DecoderOptions::NONE);
        let mut f = NasmFormatter::new();
        let mut out = Vec::new();
        for i in &mut d {
            assert!(!i.is_invalid(), "invalid encoding in {:02x?}", a.buf);
            let mut s = String::new();
            f.format(&i, &mut s);
            out.push(s);
        }
        out
    }

    #[test]
    fn gs_forms() {
        let mut a = Asm::new(0x1000);
        a.store_gs(0x10, 0);
        a.store_gs(0x18, 13);
        a.load_gs(9, 0x80);
        a.store_gs_imm32(0xd0, 0xdead);
        a.jmp_gs(0xb8);
        a.load_gs_rcx_index(0x1000);
        a.jmp_gs_rcx_index(0x2000);
        assert_eq!(
            dis(&a),
            [
                "mov [gs:10h],rax",
                "mov [gs:18h],r13",
                "mov r9,[gs:80h]",
                "mov dword [gs:0D0h],0DEADh",
                "jmp qword [gs:0B8h]",
                "mov rcx,[gs:rcx*8+1000h]",
                "jmp qword [gs:rcx*8+2000h]",
            ]
        );
    }

    #[test]
    fn plain_forms() {
        let mut a = Asm::new(0x1000);
        a.mov_imm64(10, 0x1122334455667788);
        a.mov_rr(2, 12);
        a.mov_rr(2, 1);
        a.load_ind(2, 2);
        a.pop(2);
        a.pop(9);
        a.lea_rsp(-8);
        a.lea_rsp(0x200);
        a.ibl_hash_rdx_to_ecx();
        a.lea_rcx_rcx_rdx();
        a.lea_rcx_minus_1();
        a.sub_gs_1(0x100);
        a.save_flags_ax(0x40);
        a.restore_flags_ax(0x40);
        assert_eq!(
            dis(&a),
            [
                "mov r10,1122334455667788h",
                "mov rdx,r12",
                "mov rdx,rcx",
                "mov rdx,[rdx]",
                "pop rdx",
                "pop r9",
                "lea rsp,[rsp-8]",
                "lea rsp,[rsp+200h]",
                "rorx rcx,rdx,10h",
                "lea rcx,[rcx+rdx]",
                "movzx ecx,cx",
                "lea rcx,[rcx+rdx]",
                "lea rcx,[rcx-1]",
                "sub qword [gs:100h],1",
                "lahf",
                "seto al",
                "mov [gs:40h],ax",
                "mov ax,[gs:40h]",
                "add al,7Fh",
                "sahf",
            ]
        );
    }

    #[test]
    fn labels_resolve() {
        let mut a = Asm::new(0x2000);
        let l = a.new_label();
        a.jrcxz_label(l);
        a.jcc_label(0x4, l);
        a.jmp_label(l);
        a.bind(l);
        a.ud2();
        a.finish();
        assert_eq!(dis(&a), ["jrcxz 000000000000200Dh", "je near 000000000000200Dh", "jmp 000000000000200Dh", "ud2"]);
    }

    #[test]
    fn literal_push() {
        let mut a = Asm::new(0x3000);
        let lit = a.new_label();
        a.push_rip_label(lit);
        a.ud2();
        a.literal(lit, 0x1122334455667788);
        a.finish();
        let code = Asm { buf: a.buf[..8].to_vec(), base: 0x3000, labels: vec![], fixups: vec![] };
        assert_eq!(dis(&code), ["push qword [rel 3008h]", "ud2"]);
        assert_eq!(a.buf[8..], 0x1122334455667788u64.to_le_bytes());
    }
}
