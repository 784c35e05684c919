//! A region's mapping: `mmap`, `madvise`, `mincore`, and a page read out of it.

use std::io;

use acomp_zswap::{PAGE_SIZE, Page};

/// An anonymous private mapping of `len` bytes (a multiple of the page size): not inherited
/// by `fork` (`MADV_DONTFORK`) and never backed by transparent huge pages
/// (`MADV_NOHUGEPAGE`).
#[derive(Debug)]
pub struct Mapping {
    addr: usize,
    len: usize,
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

    /// Whether the page at `offset` is mapped (`mincore`; false if it fails).
    pub fn mapped(&self, offset: usize) -> bool {
        let mut m = [0u8; 1];
        self.resident(offset, 1, &mut m).is_ok() && m[0] & 1 != 0
    }

    /// Copies the page at `offset` into `out`. The caller has write-protected the page (or
    /// otherwise holds it still): a concurrent write would make the copy a mix.
    pub fn read_page(&self, offset: usize, out: &mut Page) {
        assert!(offset % PAGE_SIZE == 0 && offset + PAGE_SIZE <= self.len);
        // SAFETY:
        // - the source lies inside this live mapping, readable (PROT_READ|PROT_WRITE as
        //   mapped; a program that changed it with mprotect is documented to get EFAULT from
        //   page_out only where the page is not readable, which faults before this); a
        //   region's drop makes it PROT_NONE (`make_inaccessible`) only after it has held
        //   and released every page once, its `dying` flag set first: a page-out reads a
        //   page only while it holds it and after seeing that flag clear, so every read
        //   has ended before the drop holds its page, and none begins after;
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
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `new` and is unmapped once, here.
        unsafe { libc::munmap(self.addr as *mut _, self.len) };
    }
}
