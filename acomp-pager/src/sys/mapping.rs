//! A region's mapping: `mmap`, `madvise`, what its page table holds (`/proc/self/pagemap`,
//! `mincore`), and a page read out of it.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;

use parking_lot::Mutex;

use acomp_zswap::{PAGE_SIZE, Page};

/// An anonymous private mapping of `len` bytes (a multiple of the page size): not inherited
/// by `fork` (`MADV_DONTFORK`) and never backed by transparent huge pages
/// (`MADV_NOHUGEPAGE`).
#[derive(Debug)]
pub struct Mapping {
    addr: usize,
    len: usize,
    /// The process that mapped it: a forked child, where the range is not mapped
    /// (`MADV_DONTFORK`), never unmaps it (its addresses may hold the child's own mappings).
    pid: u32,
}

/// What a page's table entry holds, for a page-out deciding whether a page in memory as far
/// as the pager knows still holds data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pte {
    /// Mapped.
    Present,
    /// Not mapped, but the kernel's own swap (or a migration) holds the page: reading it
    /// brings it back (`do_swap_page`), with no userfaultfd fault.
    Swapped,
    /// Nothing: the page was dropped (it reads as zeros, through a missing fault).
    None,
    /// Not mapped, and whether the kernel's swap holds it is unknown (no
    /// `/proc/self/pagemap`): the caller leaves the page as it is.
    Unknown,
}

/// `/proc/self/pagemap`'s bits (`Documentation/admin-guide/mm/pagemap.rst`).
const PM_PRESENT: u64 = 1 << 63;
const PM_SWAP: u64 = 1 << 62;

/// Reads this process's page table entries at byte `at` of its `/proc/self/pagemap`. The
/// file is opened once per process: an open file stays bound to the process that opened
/// it, so a forked child (which may build a pager of its own) opens its own.
fn read_pagemap(raw: &mut [u8], at: u64) -> bool {
    #[cfg(feature = "test-hooks")]
    if crate::hooks::pagemap_unreadable() {
        return false;
    }
    static PAGEMAP: Mutex<Option<(u32, File)>> = Mutex::new(None);
    let pid = super::pid();
    let mut cached = PAGEMAP.lock();
    if cached.as_ref().is_none_or(|(owner, _)| *owner != pid) {
        *cached = File::open("/proc/self/pagemap").ok().map(|f| (pid, f));
    }
    cached
        .as_ref()
        .is_some_and(|(_, file)| file.read_exact_at(raw, at).is_ok())
}

impl Mapping {
    /// Maps `len` bytes (`len > 0`, a multiple of [`PAGE_SIZE`]).
    pub fn new(len: usize) -> io::Result<Mapping> {
        // SAFETY: a new anonymous mapping at an address the kernel chooses; it overlaps
        // nothing of this process's.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = Mapping {
            addr: addr as usize,
            len,
            pid: super::pid(),
        };
        map.advise(0, len, libc::MADV_DONTFORK)?;
        map.advise(0, len, libc::MADV_NOHUGEPAGE)?;
        Ok(map)
    }

    /// The first byte's address.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// `madvise(2)` over `[addr + offset, addr + offset + len)`, inside the mapping.
    pub fn advise(&self, offset: usize, len: usize, advice: libc::c_int) -> io::Result<()> {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len));
        // SAFETY: the range lies inside this mapping, which lives as long as `self`; the
        // advice values used (DONTNEED, DONTFORK, NOHUGEPAGE) change no memory that Rust
        // code holds a reference into: region pages are reached through raw pointers only.
        let rc = unsafe { libc::madvise((self.addr + offset) as *mut _, len, advice) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Makes the whole mapping inaccessible (`mprotect(PROT_NONE)`): from the call on, any
    /// access to it, by any thread, is SIGSEGV (the kernel's own accesses, `EFAULT`), and a
    /// thread woken from a fault in it retries into SIGSEGV. A page mapped into it later
    /// (`UFFDIO_COPY` takes the mapping's protection) is inaccessible too. For a region's
    /// drop, which first waits for every pager thread that could read its pages
    /// ([`Mapping::read_page`]).
    pub fn make_inaccessible(&self) -> io::Result<()> {
        // SAFETY: the range is this whole mapping, alive as long as `self`; changing its
        // protection changes no memory. Region memory is only ever reached through raw
        // pointers, never a Rust reference, so no reference is left pointing at memory it
        // cannot read; a raw access after this faults (SIGSEGV), which `read_page`'s callers
        // rule out (see its SAFETY comment).
        let rc = unsafe { libc::mprotect(self.addr as *mut _, self.len, libc::PROT_NONE) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Which of the pages of `[offset, offset + pages * PAGE_SIZE)` are mapped (`mincore`).
    pub fn resident(&self, offset: usize, pages: usize, out: &mut [u8]) -> io::Result<()> {
        assert!(out.len() >= pages && offset + pages * PAGE_SIZE <= self.len);
        // SAFETY: the range lies inside this mapping; `out` holds one byte per page.
        let rc = unsafe {
            libc::mincore(
                (self.addr + offset) as *mut _,
                pages * PAGE_SIZE,
                out.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// What the table entries of the pages of `[offset, offset + pages * PAGE_SIZE)` hold:
    /// one read of `/proc/self/pagemap` (8 bytes a page), or `mincore` where it cannot be
    /// read (a page not mapped is then [`Pte::Unknown`]).
    ///
    /// # Errors
    ///
    /// `mincore`'s, where the pagemap is not there either.
    pub fn page_table(&self, offset: usize, pages: usize, out: &mut [Pte]) -> io::Result<()> {
        assert!(out.len() >= pages && pages <= 64 && offset + pages * PAGE_SIZE <= self.len);
        let mut raw = [0u8; 64 * 8];
        let raw = &mut raw[..pages * 8];
        let at = ((self.addr + offset) / PAGE_SIZE * 8) as u64;
        {
            if read_pagemap(raw, at) {
                for (o, e) in out.iter_mut().zip(raw.chunks_exact(8)) {
                    let e = u64::from_ne_bytes(e.try_into().expect("8 bytes"));
                    *o = if e & PM_PRESENT != 0 {
                        Pte::Present
                    } else if e & PM_SWAP != 0 {
                        Pte::Swapped
                    } else {
                        Pte::None
                    };
                }
                return Ok(());
            }
        }
        let mut mapped = [0u8; 64];
        self.resident(offset, pages, &mut mapped)?;
        for (o, m) in out.iter_mut().zip(mapped) {
            *o = if m & 1 != 0 {
                Pte::Present
            } else {
                Pte::Unknown
            };
        }
        Ok(())
    }

    /// Whether the page at `offset` is mapped (`mincore`; false if it fails).
    pub fn mapped(&self, offset: usize) -> bool {
        let mut m = [0u8; 1];
        self.resident(offset, 1, &mut m).is_ok() && m[0] & 1 != 0
    }

    /// How many of the pages at `offsets` (page-aligned, inside the mapping), from the
    /// first, the kernel can read: where fewer than `offsets.len()`, the next one is not
    /// readable (the program made it `PROT_NONE`). One byte of each page goes through a
    /// pipe of the thread's (`writev`, then a `read` to drain it): the kernel checks each
    /// as it copies, and an unreadable one fails the write with `EFAULT` rather than
    /// faulting this thread. Two calls a batch and no page pinned, where reading the pages
    /// through the kernel (`process_vm_readv`) would pin and copy each one. A page the
    /// program makes unreadable after the check faults the reading thread, as it would
    /// any reader.
    pub fn readable_pages(&self, offsets: &[usize]) -> usize {
        let n = offsets.len().min(libc::UIO_MAXIOV as usize);
        if n == 0 {
            return 0;
        }
        let iov: Vec<libc::iovec> = offsets[..n]
            .iter()
            .map(|&offset| {
                assert!(offset % PAGE_SIZE == 0 && offset + PAGE_SIZE <= self.len);
                libc::iovec {
                    iov_base: (self.addr + offset) as *mut libc::c_void,
                    iov_len: 1,
                }
            })
            .collect();
        // A pipe takes a write whole or not at all (`pipe_write` drops a part copied before
        // a fault): the batch at once, and page by page only where it failed.
        if probe(&iov) {
            return n;
        }
        (0..n).find(|&i| !probe(&iov[i..=i])).unwrap_or(n)
    }

    /// Copies the page at `offset` into `out`. The caller has write-protected the page (or
    /// otherwise holds it still): a concurrent write would make the copy a mix. It checked
    /// that the page is readable ([`Mapping::readable_pages`]).
    pub fn read_page(&self, offset: usize, out: &mut Page) {
        assert!(offset % PAGE_SIZE == 0 && offset + PAGE_SIZE <= self.len);
        // SAFETY:
        // - the source lies inside this live mapping, readable (checked by the caller with
        //   `readable_pages`; a program making it unreadable meanwhile faults this thread,
        //   as the crate docs say); a region's drop makes it PROT_NONE
        //   (`make_inaccessible`) only after it has held and released every page once, its
        //   `dying` flag set first: a page-out reads a page only while it holds it and after
        //   seeing that flag clear, so every read has ended before the drop holds its page,
        //   and none begins after;
        // - `out` is a distinct, exclusive page buffer;
        // - region memory is only ever reached through raw pointers in this crate, so no
        //   Rust reference aliases it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (self.addr + offset) as *const u8,
                out.as_mut_ptr(),
                PAGE_SIZE,
            )
        };
    }

    /// Copies `data` into the mapping at byte `offset`, for a caller's write through the
    /// region ([`crate::Region::write_at`]): an access of the program's, paged-out pages
    /// faulting back in through the handler threads. The caller checked the bounds.
    pub fn copy_in(&self, offset: usize, data: &[u8]) {
        assert!(offset <= self.len && data.len() <= self.len - offset);
        // SAFETY: the destination lies inside this live mapping (the region that owns it is
        // borrowed by the caller); `data` is a distinct slice; region memory is only ever
        // reached through raw pointers, so no Rust reference aliases it. An access the
        // program made impossible (`mprotect`) faults as its own access would.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                (self.addr + offset) as *mut u8,
                data.len(),
            )
        };
    }

    /// Copies the mapping's bytes at `offset` into `out`, as [`Mapping::copy_in`] the other way.
    pub fn copy_out(&self, offset: usize, out: &mut [u8]) {
        assert!(offset <= self.len && out.len() <= self.len - offset);
        // SAFETY: as `copy_in`, the source inside the live mapping and `out` exclusive.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (self.addr + offset) as *const u8,
                out.as_mut_ptr(),
                out.len(),
            )
        };
    }
}

/// Whether the kernel could read every one-byte range of `iov` (this process's memory),
/// copying them through the thread's pipe.
fn probe(iov: &[libc::iovec]) -> bool {
    PROBE.with(|pipe| {
        let Some((r, w)) = pipe else {
            // No pipe (descriptors exhausted): trust the mapping's own protection.
            return true;
        };
        // SAFETY: `iov` holds one-byte ranges of this process's own memory, which the
        // kernel only reads, checking each (an unreadable one fails the write with
        // EFAULT); `w` is this thread's pipe, open for writing, with room for them.
        let wrote = unsafe { libc::writev(w.as_raw_fd(), iov.as_ptr(), iov.len() as libc::c_int) };
        let Ok(wrote) = usize::try_from(wrote) else {
            return false;
        };
        let mut sink = [0u8; libc::UIO_MAXIOV as usize];
        // SAFETY: `sink` is a live buffer of at least `wrote` bytes (at most UIO_MAXIOV
        // ranges of one byte); `r` is the pipe's read end, holding exactly what was
        // written.
        unsafe { libc::read(r.as_raw_fd(), sink.as_mut_ptr().cast(), wrote) };
        wrote == iov.len()
    })
}

thread_local! {
    /// The thread's pipe for [`Mapping::readable_pages`] (read end, write end), non-blocking,
    /// or `None` where it could not be made.
    static PROBE: Option<(OwnedFd, OwnedFd)> = {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into `fds` or fails with -1.
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
        // SAFETY: on success both descriptors are new and owned by nothing else.
        (rc == 0).then(|| unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    };
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if super::pid() != self.pid {
            // A forked child: the range was never its own (`MADV_DONTFORK`).
            return;
        }
        // SAFETY: the mapping was made by `new` and is unmapped once, here.
        unsafe { libc::munmap(self.addr as *mut _, self.len) };
    }
}
