//! The resources tool code shares with the engine and with other tools, handed out by claim
//! (as DynamoRIO's drreg and drmgr hand out registers and TLS slots): bytes of the per-thread
//! tool area (`ThreadContext::tool_area`), and the AVX-512 registers guests never see (CPUID
//! hides AVX-512), vector registers xmm16-31 and mask registers k1-k7. A claim names its
//! owner; one that overlaps another owner's is refused, so two tools, or a tool and a search's
//! fork mode, can never use the same word or register by accident. The layout is the
//! process's: every thread's area has the same.

use crate::context::TOOL_AREA_WORDS;
use std::sync::Mutex;

/// Bytes of the tool area.
pub const AREA_BYTES: usize = TOOL_AREA_WORDS * 8;

/// A claimed resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// Tool-area bytes `[start, start + len)`.
    Area { start: usize, len: usize },
    /// zmm/ymm/xmm register `n` (16-31).
    Vector(u8),
    /// Mask register k`n` (1-7).
    Mask(u8),
}

impl Resource {
    fn overlaps(&self, other: &Resource) -> bool {
        match (*self, *other) {
            (Resource::Area { start: a, len: n }, Resource::Area { start: b, len: m }) => a < b + m && b < a + n,
            (x, y) => x == y,
        }
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Resource::Area { start, len } => write!(f, "tool-area bytes {start}..{}", start + len),
            Resource::Vector(n) => write!(f, "zmm{n}"),
            Resource::Mask(n) => write!(f, "k{n}"),
        }
    }
}

/// A claim refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClaimError {
    #[error("{owner} cannot have {wanted}: {holder} has {held}")]
    Taken { owner: &'static str, wanted: Resource, holder: &'static str, held: Resource },
    #[error("{owner} cannot have {wanted}: no such resource")]
    Invalid { owner: &'static str, wanted: Resource },
    #[error("{owner} cannot have {len} tool-area bytes: too few left")]
    Full { owner: &'static str, len: usize },
}

/// Who has what.
#[derive(Debug, Default)]
pub struct Claims {
    held: Vec<(Resource, &'static str)>,
}

impl Claims {
    /// The engine's own: the thread's quantum and the tools' block counter (xmm16-18, k1).
    pub fn with_engine() -> Claims {
        let mut c = Claims::default();
        for n in 16..=18 {
            c.held.push((Resource::Vector(n), "the engine (quantum and block counter)"));
        }
        c.held.push((Resource::Mask(1), "the engine (quantum test)"));
        c
    }

    /// Claims `r` for `owner`. Claiming again what the same owner holds is no error (a tool
    /// built twice in one process).
    pub fn claim(&mut self, owner: &'static str, r: Resource) -> Result<Resource, ClaimError> {
        let valid = match r {
            Resource::Area { start, len } => len > 0 && start % 8 == 0 && start + len <= AREA_BYTES,
            Resource::Vector(n) => (16..32).contains(&n),
            Resource::Mask(n) => (1..8).contains(&n),
        };
        if !valid {
            return Err(ClaimError::Invalid { owner, wanted: r });
        }
        if self.held.iter().any(|&(h, o)| h == r && o == owner) {
            return Ok(r);
        }
        if let Some(&(held, holder)) = self.held.iter().find(|(h, _)| h.overlaps(&r)) {
            return Err(ClaimError::Taken { owner, wanted: r, holder, held });
        }
        self.held.push((r, owner));
        Ok(r)
    }

    /// `len` tool-area bytes wherever they are free, from the area's end down (fixed layouts
    /// claim from its start): their offset. The same owner gets what it has already.
    pub fn claim_area(&mut self, owner: &'static str, len: usize) -> Result<usize, ClaimError> {
        let len = len.div_ceil(8) * 8;
        if let Some(&(Resource::Area { start, len: l }, _)) =
            self.held.iter().find(|&&(h, o)| o == owner && matches!(h, Resource::Area { len: l, .. } if l == len))
        {
            debug_assert_eq!(l, len);
            return Ok(start);
        }
        let mut start = AREA_BYTES.checked_sub(len).ok_or(ClaimError::Full { owner, len })?;
        loop {
            let want = Resource::Area { start, len };
            match self
                .held
                .iter()
                .filter(|(h, _)| h.overlaps(&want))
                .filter_map(|(h, _)| if let Resource::Area { start: s, .. } = h { Some(*s) } else { None })
                .min()
            {
                None => {
                    self.held.push((want, owner));
                    return Ok(start);
                }
                Some(s) => start = s.checked_sub(len).ok_or(ClaimError::Full { owner, len })? & !7,
            }
        }
    }
}

static CLAIMS: Mutex<Option<Claims>> = Mutex::new(None);

/// Claims `r` for `owner` in the process's table (see [`Claims::claim`]).
pub fn claim(owner: &'static str, r: Resource) -> Result<Resource, ClaimError> {
    let mut c = CLAIMS.lock().unwrap_or_else(|e| e.into_inner());
    c.get_or_insert_with(Claims::with_engine).claim(owner, r)
}

/// Claims `len` free tool-area bytes for `owner` in the process's table (see
/// [`Claims::claim_area`]).
pub fn claim_area(owner: &'static str, len: usize) -> Result<usize, ClaimError> {
    let mut c = CLAIMS.lock().unwrap_or_else(|e| e.into_inner());
    c.get_or_insert_with(Claims::with_engine).claim_area(owner, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_claims_are_refused() {
        let mut c = Claims::with_engine();
        assert!(c.claim("shadow", Resource::Area { start: 0, len: 720 }).is_ok());
        // Another owner, overlapping by one word: refused, naming the holder.
        let e = c.claim("switch fork", Resource::Area { start: 8, len: 24 }).unwrap_err();
        assert!(matches!(e, ClaimError::Taken { holder: "shadow", .. }), "{e}");
        assert!(e.to_string().contains("switch fork cannot have tool-area bytes 8..32: shadow has tool-area bytes 0..720"), "{e}");
        // The same owner again: the same.
        assert!(c.claim("shadow", Resource::Area { start: 0, len: 720 }).is_ok());
        // Adjacent: fine.
        assert!(c.claim("suppress", Resource::Area { start: 720, len: 120 }).is_ok());
        // The engine's registers are taken; the others are free once.
        assert!(matches!(c.claim("a tool", Resource::Vector(18)), Err(ClaimError::Taken { .. })));
        assert!(matches!(c.claim("a tool", Resource::Mask(1)), Err(ClaimError::Taken { .. })));
        assert!(c.claim("propagation", Resource::Vector(20)).is_ok());
        assert!(matches!(c.claim("another tool", Resource::Vector(20)), Err(ClaimError::Taken { .. })));
        assert!(matches!(c.claim("a tool", Resource::Vector(3)), Err(ClaimError::Invalid { .. })));
        assert!(matches!(c.claim("a tool", Resource::Area { start: AREA_BYTES - 8, len: 16 }), Err(ClaimError::Invalid { .. })));
    }

    #[test]
    fn free_bytes_are_found_around_fixed_layouts() {
        let mut c = Claims::with_engine();
        c.claim("shadow", Resource::Area { start: 0, len: 720 }).unwrap();
        c.claim("origin lanes", Resource::Area { start: 1024, len: AREA_BYTES - 1024 - 16 }).unwrap();
        let a = c.claim_area("switch outcome", 8).unwrap();
        assert_eq!(a, AREA_BYTES - 16 + 8);
        let b = c.claim_area("switch fork", 24).unwrap();
        // Below the lanes, above the shadow.
        assert_eq!(b, 1024 - 24);
        assert_eq!(c.claim_area("switch fork", 24).unwrap(), b, "the same owner gets the same bytes");
        assert!(matches!(c.claim_area("huge", AREA_BYTES), Err(ClaimError::Full { .. })));
        let held: Vec<Resource> = c.held.iter().map(|h| h.0).collect();
        for (i, x) in held.iter().enumerate() {
            for y in &held[i + 1..] {
                assert!(!x.overlaps(y), "{x} and {y} overlap");
            }
        }
    }
}
