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

    /// Copies the pages at `offsets` (page-aligned, inside the mapping) into the first
    /// pages of `out`, through the kernel (`process_vm_readv` on this process), so that a
    /// page the program made unreadable (`mprotect(PROT_NONE)`) fails the copy rather than
    /// the thread: how many of the pages, from the first, were copied; where fewer than
    /// `offsets.len()`, the next one could not be read. The caller holds the pages still
    /// (write-protected): a concurrent write would make a copy a mix.
    pub fn read_pages(&self, offsets: &[usize], out: &mut [Page]) -> usize {
        let n = offsets.len().min(out.len());
        if n == 0 {
            return 0;
        }
        let mut local = Vec::with_capacity(n);
        let mut remote = Vec::with_capacity(n);
        for (&offset, page) in offsets.iter().zip(out.iter_mut()).take(n) {
            assert!(offset % PAGE_SIZE == 0 && offset + PAGE_SIZE <= self.len);
            local.push(libc::iovec {
                iov_base: page.as_mut_ptr().cast(),
                iov_len: PAGE_SIZE,
            });
            remote.push(libc::iovec {
                iov_base: (self.addr + offset) as *mut libc::c_void,
                iov_len: PAGE_SIZE,
            });
        }
        // SAFETY:
        // - `local` describes `n` distinct, exclusive page buffers of `out`, live for the
        //   call; the kernel writes at most `iov_len` bytes to each;
        // - `remote` describes pages of this process's own address space, which the kernel
        //   only reads, checking each as it goes (an unreadable one ends the copy with a
        //   partial count, never a fault in this thread);
        // - both arrays hold `n` elements, under IOV_MAX (a page-out batch is 32).
        let got = unsafe {
            libc::process_vm_readv(
                libc::getpid(),
                local.as_ptr(),
                n as libc::c_ulong,
                remote.as_ptr(),
                n as libc::c_ulong,
                0,
            )
        };
        // Partial copies stop at an element's boundary: whole pages.
        if got < 0 { 0 } else { got as usize / PAGE_SIZE }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `new` and is unmapped once, here.
        unsafe { libc::munmap(self.addr as *mut _, self.len) };
    }
}
