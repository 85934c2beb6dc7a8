//! A hasher for maps keyed by addresses (a race's granules, a heap's blocks): a multiplicative
//! hash is enough for them, and far cheaper than SipHash, which dominated where it was used.

#[derive(Default, Clone, Copy)]
pub struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
}

/// Maps and sets keyed by addresses use this.
pub type Fast = std::hash::BuildHasherDefault<AddressHasher>;
