//! Arrays of atomics in a mapping of their own, zero until written: a region's per-page
//! state costs memory only where pages were touched (the kernel maps its zero page under
//! every untouched page of the array, and a read of it allocates nothing).

use std::io;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64};

/// An atomic integer whose all-zero bytes are its value 0.
///
/// # Safety
///
/// Implementors have the size and alignment of their integer, and every bit pattern of
/// zeros is a valid value (the std atomics: "the same in-memory representation as" the
/// integer).
pub unsafe trait ZeroIsValid: Sized {}
// SAFETY: `AtomicU8`, `AtomicU32` and `AtomicU64` have the in-memory representation of
// `u8`, `u32` and `u64` (std's documentation), for which zeros are 0.
unsafe impl ZeroIsValid for AtomicU8 {}
// SAFETY: as above.
unsafe impl ZeroIsValid for AtomicU32 {}
// SAFETY: as above.
unsafe impl ZeroIsValid for AtomicU64 {}

/// `len` atomics of type `T`, all 0, in an anonymous private mapping (`MAP_NORESERVE`):
/// made in O(1), resident only where written.
pub struct Zeroed<T: ZeroIsValid> {
    addr: usize,
    len: usize,
    bytes: usize,
    _t: PhantomData<T>,
}

// SAFETY: the mapping is owned by the value alone, and `T` (an atomic) is `Sync`: shared
// access from any thread goes through `&[T]`.
unsafe impl<T: ZeroIsValid + Sync> Send for Zeroed<T> {}
// SAFETY: as above.
unsafe impl<T: ZeroIsValid + Sync> Sync for Zeroed<T> {}

impl<T: ZeroIsValid> Zeroed<T> {
    /// `len` zeros (`len` may be 0).
    ///
    /// # Errors
    ///
    /// `mmap`'s (`ENOMEM`: the address space or the map count).
    pub fn new(len: usize) -> io::Result<Zeroed<T>> {
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?
            .max(1);
        // SAFETY: a new anonymous mapping at an address the kernel chooses; it overlaps
        // nothing of this process's. Anonymous memory is zero-filled and page-aligned,
        // which aligns any `T`.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Zeroed {
            addr: addr as usize,
            len,
            bytes,
            _t: PhantomData,
        })
    }
}

impl<T: ZeroIsValid> Deref for Zeroed<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY:
        // - `addr` is a live mapping of at least `len * size_of::<T>()` bytes, page-aligned
        //   (so aligned for `T`), owned by `self` and unmapped only by its drop;
        // - every byte is zero or was written through a `T` (`ZeroIsValid`), so each
        //   element is a valid `T`;
        // - `T` is an atomic: shared references allow the writes made through them.
        unsafe { std::slice::from_raw_parts(self.addr as *const T, self.len) }
    }
}

impl<T: ZeroIsValid> std::fmt::Debug for Zeroed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Zeroed({} x {} bytes)", self.len, size_of::<T>())
    }
}

impl<T: ZeroIsValid> Drop for Zeroed<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `new` and is unmapped once, here; no reference
        // from `deref` outlives `self`.
        unsafe { libc::munmap(self.addr as *mut _, self.bytes) };
    }
}
