//! Checked copies between rtgrind and guest memory. Guest pointers handed to emulated
//! syscalls or used for signal frames may be bad; a bad one must become EFAULT or a guest
//! SIGSEGV, never a fault inside rtgrind. `process_vm_readv`/`writev` on our own pid do the
//! copy in the kernel and report bad addresses as errors.

fn iov(p: u64, len: usize) -> libc::iovec {
    libc::iovec { iov_base: p as *mut libc::c_void, iov_len: len }
}

/// Copies `buf.len()` bytes from guest address `addr`; false if any byte is unreadable.
pub fn read(addr: u64, buf: &mut [u8]) -> bool {
    if buf.is_empty() {
        return true;
    }
    let local = iov(buf.as_mut_ptr() as u64, buf.len());
    let remote = iov(addr, buf.len());
    // SAFETY: `local` describes our own writable buffer; the kernel validates `remote`.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    n == buf.len() as isize
}

/// Copies as many of `buf.len()` bytes from `addr` as are readable (readability goes by page:
/// all of them, those up to the end of the first page, or none); how many.
pub fn read_some(addr: u64, buf: &mut [u8]) -> usize {
    if read(addr, buf) {
        return buf.len();
    }
    let to_page_end = (0x1000 - (addr & 0xfff)) as usize;
    if to_page_end < buf.len() && read(addr, &mut buf[..to_page_end]) {
        to_page_end
    } else {
        0
    }
}

/// The `len` bytes at `addr`, if all are readable.
pub fn read_vec(addr: u64, len: usize) -> Option<Vec<u8>> {
    let mut v = vec![0u8; len];
    read(addr, &mut v).then_some(v)
}

/// Copies `data` to guest address `addr`; false if any byte is not writable.
pub fn write(addr: u64, data: &[u8]) -> bool {
    if data.is_empty() {
        return true;
    }
    let local = iov(data.as_ptr() as u64, data.len());
    let remote = iov(addr, data.len());
    // SAFETY: `local` describes our own readable buffer; the kernel validates `remote`.
    let n = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
    n == data.len() as isize
}

pub fn read_u64(addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    read(addr, &mut b).then(|| u64::from_le_bytes(b))
}

pub fn write_u64(addr: u64, v: u64) -> bool {
    write(addr, &v.to_le_bytes())
}

/// Reads a NUL-terminated string (at most `max` bytes).
pub fn read_cstr(addr: u64, max: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 256];
    let mut a = addr;
    while out.len() < max {
        // Read up to the end of the page so a string ending before an unmapped page works.
        let room = (4096 - (a % 4096)) as usize;
        let n = room.min(chunk.len());
        if !read(a, &mut chunk[..n]) {
            return None;
        }
        if let Some(z) = chunk[..n].iter().position(|&c| c == 0) {
            out.extend_from_slice(&chunk[..z]);
            return Some(out);
        }
        out.extend_from_slice(&chunk[..n]);
        a += n as u64;
    }
    None
}

/// Reads a NULL-terminated array of string pointers (argv, envp).
pub fn read_str_array(addr: u64) -> Option<Vec<Vec<u8>>> {
    let mut v = Vec::new();
    if addr == 0 {
        return Some(v);
    }
    for i in 0..100_000u64 {
        let p = read_u64(addr + i * 8)?;
        if p == 0 {
            return Some(v);
        }
        v.push(read_cstr(p, 1 << 20)?);
    }
    None
}
