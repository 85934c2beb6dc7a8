//! The C library's memory and string functions the program calls, checked at the call (the
//! library's own accesses are trusted, never checked): what each reads and writes, from its
//! arguments and, for strings, from the guest memory they point to, as TSan's interceptors
//! compute it. A string function reads up to and including the byte where it stops (the NUL,
//! the first difference, the character found), never beyond.

use crate::kernel::guest_mem;
use std::collections::HashSet;
// (Atomics only for a slot written through a shared reference: one guest thread at a time runs
// the call-outs, so `Relaxed` loads and stores are plain moves.)
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Guest pages known readable, so that a string can be read in place (a sort's millions of
/// `strcoll` calls, each read through `process_vm_readv`, spent most of their time in the
/// kernel). Each page is checked once through the kernel (`Checking`, in a full call-out: it
/// may allocate and make a system call); a light call-out uses only the pages known
/// (`Known`). The whole set is forgotten when the guest maps, unmaps or protects anything
/// (`forget`).
pub struct Readable {
    pages: HashSet<u64, super::hb::Fast>,
    /// The last page found in `pages` at each of `RECENT` slots (by its page number's low
    /// bits; `NONE`: empty), looked at first: a call's two strings are on two of a few pages
    /// (sort's lines), and a slot is one load where the set is a hash and a probe. Only
    /// pages of the set are there (both are emptied together).
    recent: [AtomicU64; RECENT],
}

const RECENT: usize = 64;
const NONE: u64 = u64::MAX;

impl Default for Readable {
    fn default() -> Readable {
        Readable { pages: HashSet::default(), recent: [const { AtomicU64::new(NONE) }; RECENT] }
    }
}

impl Readable {
    /// The guest changed its mappings: no page is known readable any more.
    pub fn forget(&mut self) {
        self.pages.clear();
        for slot in &self.recent {
            slot.store(NONE, Relaxed);
        }
    }

    /// Whether `page` is known readable (and, if it is, in its slot from now on).
    fn known(&self, page: u64) -> bool {
        let slot = &self.recent[(page >> 12) as usize % RECENT];
        if slot.load(Relaxed) == page {
            return true;
        }
        let known = self.pages.contains(&page);
        if known {
            slot.store(page, Relaxed);
        }
        known
    }
}

/// A page not known readable yet, in a light call-out: the full one must compute the ranges.
#[derive(Debug)]
pub struct Unknown;

/// Whether a guest page is readable, as a call-out may find out.
pub trait Pages {
    fn readable(&mut self, page: u64) -> Result<bool, Unknown>;
}

/// The pages known readable, and no others (a light call-out: no system call, no allocation).
pub struct Known<'a>(pub &'a Readable);

impl Pages for Known<'_> {
    fn readable(&mut self, page: u64) -> Result<bool, Unknown> {
        if self.0.known(page) {
            Ok(true)
        } else {
            Err(Unknown)
        }
    }
}

/// Pages checked through the kernel when not known yet (a full call-out).
pub struct Checking<'a>(pub &'a mut Readable);

impl Pages for Checking<'_> {
    fn readable(&mut self, page: u64) -> Result<bool, Unknown> {
        if self.0.known(page) {
            return Ok(true);
        }
        let ok = guest_mem::read(page, &mut [0u8; 1]);
        if ok {
            if self.0.pages.len() > 1 << 20 {
                self.0.forget();
            }
            self.0.pages.insert(page);
        }
        Ok(ok)
    }
}

/// `len` bytes at `addr`, in place (none if some page is unreadable).
fn bytes(mem: &mut impl Pages, addr: u64, len: u64) -> Result<Option<&'static [u8]>, Unknown> {
    let Some(end) = addr.checked_add(len) else { return Ok(None) };
    let mut page = addr & !4095;
    while page < end {
        if !mem.readable(page)? {
            return Ok(None);
        }
        page += 4096;
    }
    // SAFETY: every page of the range is mapped readable (checked, and the guest has not
    // changed its mappings since: `Readable::forget`); one guest thread runs at a time, and
    // the slice is used before the guest runs again.
    Ok(Some(unsafe { std::slice::from_raw_parts(addr as *const u8, len as usize) }))
}

/// The length of the string at `addr` with its NUL (at most `STRING_LIMIT`; none if it runs
/// into an unreadable page first).
fn string(mem: &mut impl Pages, addr: u64) -> Result<Option<u64>, Unknown> {
    let mut a = addr;
    while a - addr < STRING_LIMIT {
        let Some(b) = bytes(mem, a, 4096 - (a & 4095))? else { return Ok(None) };
        if let Some(z) = b.iter().position(|&c| c == 0) {
            return Ok(Some(a - addr + z as u64 + 1));
        }
        a += b.len() as u64;
    }
    Ok(None)
}

/// Where the strings at `x` and `y` first differ (`caseless`: but for ASCII case) or end,
/// counted from 1 (at most `bound`).
fn compared(mem: &mut impl Pages, x: u64, y: u64, bound: u64, caseless: bool) -> Result<Option<u64>, Unknown> {
    let differ = |p: u8, q: u8| if caseless { !p.eq_ignore_ascii_case(&q) } else { p != q };
    let mut i = 0;
    while i < bound.min(STRING_LIMIT) {
        let room = |a: u64| 4096 - (a & 4095);
        let n = room(x + i).min(room(y + i));
        let (Some(a), Some(b)) = (bytes(mem, x + i, n)?, bytes(mem, y + i, n)?) else { return Ok(None) };
        if let Some(k) = a.iter().zip(b).position(|(p, q)| differ(*p, *q) || *p == 0) {
            return Ok(Some((i + k as u64 + 1).min(bound)));
        }
        i += n;
    }
    Ok(Some(bound))
}

/// How a function's ranges follow from its arguments (rdi, rsi, rdx).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Writes `rdx` bytes at rdi, reads them at rsi (memcpy).
    Copy,
    /// Writes `rdx` bytes at rdi (memset).
    Fill,
    /// Reads up to `rdx` bytes at rdi and rsi, to the first difference (memcmp).
    Compare,
    /// Reads at rdi up to the byte rsi or `rdx` bytes (memchr).
    Find,
    /// Reads the string at rdi (strlen, strdup).
    Length,
    /// Reads the strings at rdi and rsi to the first difference (strcmp; ignoring ASCII case:
    /// strcasecmp), at most `rdx` bytes of each when bounded (strncmp).
    StrCompare { bounded: bool, caseless: bool },
    /// Reads both strings whole (strcoll: a locale's collation weighs every character, beyond
    /// the first difference).
    Collate,
    /// Reads the string at rsi and writes it at rdi (strcpy).
    StrCopy,
    /// Reads the strings at rdi and rsi, writes the second after the first (strcat).
    StrCat,
    /// Reads the string at rdi up to the character rsi (strchr), or all of it (strrchr).
    StrFind { last: bool },
}

/// The functions, by the name the program's GOT slot has.
pub const CALLS: [(&str, Kind); 27] = [
    ("memcpy", Kind::Copy),
    ("memmove", Kind::Copy),
    ("mempcpy", Kind::Copy),
    ("__memcpy_chk", Kind::Copy),
    ("__memmove_chk", Kind::Copy),
    ("__mempcpy_chk", Kind::Copy),
    ("memset", Kind::Fill),
    ("__memset_chk", Kind::Fill),
    ("memcmp", Kind::Compare),
    ("bcmp", Kind::Compare),
    ("memchr", Kind::Find),
    ("strlen", Kind::Length),
    ("strdup", Kind::Length),
    ("__strdup", Kind::Length),
    ("strcmp", Kind::StrCompare { bounded: false, caseless: false }),
    ("strcoll", Kind::Collate),
    ("strcasecmp", Kind::StrCompare { bounded: false, caseless: true }),
    ("strncmp", Kind::StrCompare { bounded: true, caseless: false }),
    ("strncasecmp", Kind::StrCompare { bounded: true, caseless: true }),
    ("strcpy", Kind::StrCopy),
    ("stpcpy", Kind::StrCopy),
    ("__strcpy_chk", Kind::StrCopy),
    ("__stpcpy_chk", Kind::StrCopy),
    ("strcat", Kind::StrCat),
    ("__strcat_chk", Kind::StrCat),
    ("strchr", Kind::StrFind { last: false }),
    ("strrchr", Kind::StrFind { last: true }),
];

/// The kind of the function named `name`, if it is one of `CALLS`.
pub fn kind(name: &str) -> Option<(&'static str, Kind)> {
    CALLS.iter().find(|c| c.0 == name).copied()
}

/// One range a call reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub addr: u64,
    pub len: u64,
    pub write: bool,
}

/// Ranges longer than this are not checked (a wild length, or a string with no end in sight).
const LIMIT: u64 = 1 << 30;
const STRING_LIMIT: u64 = 1 << 20;

/// A call's ranges: up to three.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ranges {
    items: [Option<Range>; 3],
}

impl Ranges {
    fn of(items: &[Range]) -> Ranges {
        let mut r = Ranges::default();
        for (slot, x) in r.items.iter_mut().zip(items.iter().filter(|x| x.len > 0 && x.len <= LIMIT)) {
            *slot = Some(*x);
        }
        r
    }

    pub fn iter(&self) -> impl Iterator<Item = Range> + '_ {
        self.items.iter().flatten().copied()
    }
}

/// What a call of a `kind` function with arguments rdi, rsi, rdx (`args`) reads and writes,
/// as the memory is when it is called (nothing where an argument is unreadable or too long).
/// With `Known` pages it allocates nothing and makes no system call (a light call-out's).
pub fn ranges(kind: Kind, [rdi, rsi, rdx]: [u64; 3], mem: &mut impl Pages) -> Result<Ranges, Unknown> {
    let read = |addr: u64, len: u64| Range { addr, len, write: false };
    let write = |addr: u64, len: u64| Range { addr, len, write: true };
    let n = rdx.min(LIMIT);
    Ok(match kind {
        Kind::Copy => Ranges::of(&[write(rdi, rdx), read(rsi, rdx)]),
        Kind::Fill => Ranges::of(&[write(rdi, rdx)]),
        Kind::Compare => {
            let stop = match (bytes(mem, rdi, n)?, bytes(mem, rsi, n)?) {
                (Some(a), Some(b)) => a.iter().zip(b).position(|(x, y)| x != y).map_or(rdx, |i| i as u64 + 1),
                _ => rdx,
            };
            Ranges::of(&[read(rdi, stop), read(rsi, stop)])
        }
        Kind::Find => {
            let stop = bytes(mem, rdi, n)?.and_then(|a| a.iter().position(|&c| c == rsi as u8)).map_or(rdx, |i| i as u64 + 1);
            Ranges::of(&[read(rdi, stop)])
        }
        Kind::Length => string(mem, rdi)?.map_or_else(Ranges::default, |n| Ranges::of(&[read(rdi, n)])),
        // To the first difference or the NUL (they differ at the shorter one's NUL).
        Kind::StrCompare { bounded, caseless } => {
            let stop = compared(mem, rdi, rsi, if bounded { rdx } else { u64::MAX }, caseless)?;
            stop.map_or_else(Ranges::default, |n| Ranges::of(&[read(rdi, n), read(rsi, n)]))
        }
        Kind::Collate => match (string(mem, rdi)?, string(mem, rsi)?) {
            (Some(a), Some(b)) => Ranges::of(&[read(rdi, a), read(rsi, b)]),
            _ => Ranges::default(),
        },
        Kind::StrCopy => string(mem, rsi)?.map_or_else(Ranges::default, |n| Ranges::of(&[write(rdi, n), read(rsi, n)])),
        Kind::StrCat => match (string(mem, rdi)?, string(mem, rsi)?) {
            (Some(d), Some(n)) => Ranges::of(&[read(rdi, d), write(rdi + d - 1, n), read(rsi, n)]),
            _ => Ranges::default(),
        },
        Kind::StrFind { last } => match string(mem, rdi)? {
            Some(n) => {
                let found = if last { None } else { bytes(mem, rdi, n)?.and_then(|s| s.iter().position(|&c| c == rsi as u8)) };
                Ranges::of(&[read(rdi, found.map_or(n, |i| i as u64 + 1))])
            }
            None => Ranges::default(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind's ranges, on strings and bytes in this process's memory (the guest's is the
    /// process's own).
    #[test]
    fn string_functions_read_up_to_where_they_stop() {
        let (a, b) = (c"abcdef".as_ptr() as u64, c"abcxyz".as_ptr() as u64);
        let mut mem = Readable::default();
        let mut ranges_ = |k: Kind, args: [u64; 3]| ranges(k, args, &mut Checking(&mut mem)).unwrap();
        let n = |v: Ranges| v.iter().map(|r| (r.addr, r.len, r.write)).collect::<Vec<_>>();
        assert_eq!(n(ranges_(Kind::Length, [a, 0, 0])), vec![(a, 7, false)]);
        // strcmp stops at the first difference (index 3), strncmp also at its bound.
        let (exact, caseless) = (Kind::StrCompare { bounded: false, caseless: false }, Kind::StrCompare { bounded: false, caseless: true });
        assert_eq!(n(ranges_(exact, [a, b, 0])), vec![(a, 4, false), (b, 4, false)]);
        assert_eq!(n(ranges_(Kind::StrCompare { bounded: true, caseless: false }, [a, b, 2])), vec![(a, 2, false), (b, 2, false)]);
        // Case aside, "abcdef" and "ABCxyz" differ at index 3 too; exactly, at 0.
        let upper = c"ABCxyz".as_ptr() as u64;
        assert_eq!(n(ranges_(caseless, [a, upper, 0])), vec![(a, 4, false), (upper, 4, false)]);
        assert_eq!(n(ranges_(exact, [a, upper, 0])), vec![(a, 1, false), (upper, 1, false)]);
        // strcoll reads both strings whole.
        assert_eq!(n(ranges_(Kind::Collate, [a, upper, 0])), vec![(a, 7, false), (upper, 7, false)]);
        // Equal strings: to the NUL.
        assert_eq!(n(ranges_(exact, [a, a, 0])), vec![(a, 7, false), (a, 7, false)]);
        assert_eq!(n(ranges_(Kind::Compare, [a, b, 6])), vec![(a, 4, false), (b, 4, false)]);
        assert_eq!(n(ranges_(Kind::Find, [a, u64::from(b'c'), 6])), vec![(a, 3, false)]);
        assert_eq!(n(ranges_(Kind::StrFind { last: false }, [a, u64::from(b'd'), 0])), vec![(a, 4, false)]);
        assert_eq!(n(ranges_(Kind::StrFind { last: true }, [a, u64::from(b'd'), 0])), vec![(a, 7, false)]);
        let d = [b'x', b'y', 0, 0, 0, 0, 0, 0, 0, 0].as_ptr() as u64;
        assert_eq!(n(ranges_(Kind::StrCopy, [d, a, 0])), vec![(d, 7, true), (a, 7, false)]);
        assert_eq!(n(ranges_(Kind::StrCat, [d, a, 0])), vec![(d, 3, false), (d + 2, 7, true), (a, 7, false)]);
        assert_eq!(n(ranges_(Kind::Copy, [d, a, 5])), vec![(d, 5, true), (a, 5, false)]);
        // Unreadable strings give nothing to check.
        assert_eq!(ranges_(Kind::Length, [8, 0, 0]).iter().count(), 0);
        // A page not known yet, where pages may not be checked (a light call-out): unknown.
        assert!(ranges(Kind::Length, [a, 0, 0], &mut Known(&Readable::default())).is_err());
    }
}
