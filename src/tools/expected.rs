//! A program's standard output compared, write by write, with the output it should give
//! (the switch search's oracle, the suppression tool's `--failure=output:FILE`).

use crate::kernel::guest_mem;

/// The first byte of a write that differs from the expected output.
pub struct Mismatch {
    /// Its offset in the whole output.
    pub offset: usize,
    /// Its index in the write's buffer.
    pub index: usize,
    pub byte: u8,
}

pub struct ExpectedOutput {
    expected: Vec<u8>,
    /// Bytes of output written so far.
    pos: usize,
}

impl ExpectedOutput {
    /// `pos`: output already written (by a forked child's parent before the fork).
    pub fn new(expected: Vec<u8>, pos: usize) -> ExpectedOutput {
        ExpectedOutput { expected, pos }
    }

    /// Before syscall `nr` with `args`: for a `write` to standard output, compares its bytes
    /// with what comes next in the expected output; the first that differs.
    pub fn check(&mut self, nr: u64, args: &[u64; 6]) -> Option<Mismatch> {
        if nr as i64 != libc::SYS_write || args[0] != 1 || args[2] == 0 {
            return None;
        }
        let got = guest_mem::read_vec(args[1], args[2].min(1 << 24) as usize)?;
        let start = self.pos;
        self.pos += got.len();
        let index = got.iter().enumerate().position(|(i, b)| self.expected.get(start + i) != Some(b))?;
        Some(Mismatch { offset: start + index, index, byte: got[index] })
    }

    /// Before syscall `nr` with `args`, when it is not made (a suppressed write): its bytes
    /// count as written, unchecked, so later writes are compared where they belong.
    pub fn skip(&mut self, nr: u64, args: &[u64; 6]) {
        if nr as i64 == libc::SYS_write && args[0] == 1 {
            self.pos += args[2].min(1 << 24) as usize;
        }
    }

    /// Bytes written so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes expected in all.
    pub fn expected_len(&self) -> usize {
        self.expected.len()
    }

    /// The output so far is shorter than the expected (at the end of the run: a failure).
    pub fn short(&self) -> bool {
        self.pos < self.expected.len()
    }
}
