//! The tier's calls into the C library, each behind a safe function: the home of the
//! crate's `unsafe` code (the crate denies it elsewhere, but for `pool/access.rs` and
//! `pool/arena.rs`, which call `sys/chunk.rs`'s `unsafe` functions). `sys/chunk.rs`: the
//! pool's chunks of backing pages (mapping, release, and an object's bytes, which its
//! handle's borrows keep apart from writes).

#![allow(unsafe_code)]

mod chunk;

pub(crate) use chunk::Chunk;
pub use chunk::{CHUNK_PAGES, CHUNK_SIZE};

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

use crate::{PAGE_SIZE, Page};

/// `pwritev` of `pages` at byte `pos` of `file`, in one call: the bytes written (short
/// writes included), or the error (`Interrupted` too: the caller finishes the rest).
pub(crate) fn pwritev_pages(file: &File, pages: &[&Page], pos: u64) -> io::Result<usize> {
    let iov: Vec<libc::iovec> = pages
        .iter()
        .map(|p| libc::iovec {
            iov_base: p.as_ptr() as *mut libc::c_void,
            iov_len: PAGE_SIZE,
        })
        .collect();
    // SAFETY:
    // - the iovecs point at live pages of PAGE_SIZE bytes, borrowed for the whole call;
    // - pwritev only reads them;
    // - the count is clamped to what a c_int holds, never more than `iov.len()`.
    let n = unsafe {
        libc::pwritev(
            file.as_raw_fd(),
            iov.as_ptr(),
            iov.len().min(libc::c_int::MAX as usize) as libc::c_int,
            pos as libc::off_t,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Punches a hole of `len` bytes at `pos` in `file`, keeping its size
/// (`FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`).
pub(crate) fn punch_hole(file: &File, pos: u64, len: u64) -> io::Result<()> {
    // SAFETY: fallocate takes an open descriptor (borrowed from `file` for the call) and
    // plain integers; it touches no memory of ours.
    let r = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            pos as libc::off_t,
            len as libc::off_t,
        )
    };
    if r != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The calling thread's CPU time, in nanoseconds (0 where the clock fails).
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into; the clock id is a constant.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The machine's physical memory in bytes, if `sysconf` knows it.
pub(crate) fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    // SAFETY: as above.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (pages > 0 && size > 0).then(|| (pages as u64).saturating_mul(size as u64))
}
