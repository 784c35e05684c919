//! Every `unsafe` call of the crate: the CPU number, the CPU count, the libzstd calls that
//! zstd-safe does not wrap, liblz4's compression, a gather copy into a stack buffer left
//! unzeroed, and the one lifetime a workspace's
//! context needs to reference the dictionaries it is given ([`WithDicts`], generic: which
//! dictionaries is the algorithm's business). Each returns plain values; their meaning is
//! read elsewhere. Nothing here imports from the algorithms: the layers point down.

use std::sync::Arc;

use zstd_safe::{CCtx, DCtx, zstd_sys};

mod lz4;
pub(crate) mod lz4_copy;
pub(crate) use lz4::lz4_decode_fast;

/// The CPU the calling thread runs on (`sched_getcpu(3)`), or `None` where the kernel
/// cannot tell.
#[cfg(target_os = "linux")]
#[inline]
pub(crate) fn sched_getcpu() -> Option<usize> {
    // SAFETY:
    // - `sched_getcpu` takes no arguments and touches no caller memory;
    // - it returns -1 with errno set on failure, which maps to `None` below.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// The number of configured CPUs (`sysconf(_SC_NPROCESSORS_CONF)`), or `None` on failure.
#[cfg(unix)]
pub(crate) fn configured_cpus() -> Option<usize> {
    // SAFETY:
    // - `sysconf` reads a system value and touches no caller memory;
    // - it returns -1 on failure, which maps to `None` below.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// `ZSTD_getFrameHeader` on `src`: its return value (0, a byte count the header needs, or
/// an error code) and the header it filled (all zero where it filled nothing).
pub(crate) fn get_frame_header(src: &[u8]) -> (usize, zstd_sys::ZSTD_FrameHeader) {
    let mut h = std::mem::MaybeUninit::<zstd_sys::ZSTD_FrameHeader>::zeroed();
    // SAFETY:
    // - `h` is a valid, writable `ZSTD_FrameHeader` (all-zero is a valid value of it);
    // - `src` is valid for reads of `src.len()` bytes, and zstd reads no further;
    // - zstd keeps no pointer to either after it returns.
    let ret =
        unsafe { zstd_sys::ZSTD_getFrameHeader(h.as_mut_ptr(), src.as_ptr().cast(), src.len()) };
    // SAFETY: the header started zeroed, a valid value, and zstd only writes valid values.
    (ret, unsafe { h.assume_init() })
}

/// The window log zstd's parameter table gives `level` for a source of unknown size
/// (`ZSTD_getCParams`): the largest window that level's frames ask for.
pub(crate) fn level_window_log(level: i32) -> u32 {
    // SAFETY: `ZSTD_getCParams` computes a value from its arguments and keeps nothing.
    unsafe { zstd_sys::ZSTD_getCParams(level, 0, 0).windowLog }
}

/// Whether a libzstd return value is an error code (`ZSTD_isError`).
pub(crate) fn is_error(code: usize) -> bool {
    // SAFETY: `ZSTD_isError` only compares its argument with a constant.
    unsafe { zstd_sys::ZSTD_isError(code) != 0 }
}

mod lz4_extern;
use lz4_extern::{LZ4_compress_fast_extState, LZ4_sizeofState};

/// Bytes of liblz4's compression state (`LZ4_sizeofState`, `sizeof(LZ4_stream_t)`: 16 KiB).
pub(crate) fn lz4_state_bytes() -> usize {
    // SAFETY: `LZ4_sizeofState` returns a constant and touches no memory.
    let n = unsafe { LZ4_sizeofState() };
    usize::try_from(n).expect("LZ4_sizeofState is positive")
}

/// The most bytes a block of `len` source bytes takes (`LZ4_compressBound`), or `None` over
/// `LZ4_MAX_INPUT_SIZE`.
pub(crate) fn lz4_compress_bound(len: usize) -> Option<usize> {
    let len = libc::c_int::try_from(len).ok()?;
    // SAFETY: `LZ4_compressBound` computes a value from its argument and touches no memory.
    let n = unsafe { lz4_sys::LZ4_compressBound(len) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// `LZ4_compress_fast_extState`: compresses `src` into a raw block in `dst` with `state` as
/// the hash table, which it resets first (so the block depends on nothing before).
/// Returns the block's size, or 0 where it does not fit `dst`.
///
/// # Panics
///
/// If `state` is smaller than [`lz4_state_bytes`] or a size does not fit a C `int` (the
/// caller keeps sources within `LZ4_MAX_INPUT_SIZE`).
pub(crate) fn lz4_compress(
    state: &mut [u64],
    src: &[u8],
    dst: &mut [u8],
    acceleration: i32,
) -> usize {
    assert!(
        std::mem::size_of_val(state) >= lz4_state_bytes(),
        "LZ4 state too small"
    );
    let src_size = libc::c_int::try_from(src.len()).expect("source within LZ4_MAX_INPUT_SIZE");
    let dst_capacity = libc::c_int::try_from(dst.len()).unwrap_or(libc::c_int::MAX);
    // SAFETY:
    // - `state` is valid for writes of `LZ4_sizeofState()` bytes (asserted above) and 8-byte
    //   aligned (`u64`), as `LZ4_stream_t` needs; liblz4 initialises it before use;
    // - `src` is valid for reads of `src_size` bytes, and liblz4 reads no further;
    // - `dst` is valid for writes of `dst_capacity` bytes (at most `dst.len()`), and liblz4
    //   writes no further (it returns 0 rather than overflow);
    // - liblz4 keeps no pointer to any of them after it returns.
    let n = unsafe {
        LZ4_compress_fast_extState(
            state.as_mut_ptr().cast(),
            src.as_ptr().cast(),
            dst.as_mut_ptr().cast(),
            src_size,
            dst_capacity,
            acceleration,
        )
    };
    usize::try_from(n).unwrap_or(0)
}

/// Gives `f` the source fragments `parts` as one slice, copied into a buffer of `N` bytes on
/// the stack that is not zeroed first (zeroing 4 KiB would cost as much as copying it), or
/// gives `None`, having called nothing, where they hold more than `N` bytes in all.
#[inline(always)]
pub(crate) fn with_gathered<const N: usize, R>(
    parts: &[std::io::IoSlice<'_>],
    f: impl FnOnce(&[u8]) -> R,
) -> Option<R> {
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); N];
    let mut n = 0;
    for part in parts {
        let to = buf.get_mut(n..n + part.len())?;
        debug_assert_eq!(to.len(), part.len());
        // SAFETY:
        // - `part` is valid for reads of `part.len()` bytes;
        // - `to` is valid for writes of `part.len()` bytes (sliced from `buf` with bounds
        //   checked), and a stack buffer cannot overlap a borrowed fragment.
        unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), to.as_mut_ptr().cast(), part.len()) };
        n += part.len();
    }
    debug_assert!(n <= N);
    // SAFETY: the first `n` bytes (`n <= N`) of `buf` were written above, one fragment after another;
    // the slice borrows `buf`, which outlives the call of `f`.
    let linear = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n) };
    Some(f(linear))
}

/// A zstd context (`CCtx<'static>` or `DCtx<'static>`) together with the digested
/// dictionaries it may reference, which it keeps alive: the context is declared first, so
/// it is dropped (`ZSTD_freeCCtx` / `ZSTD_freeDCtx`) before the dictionaries can be.
///
/// zstd's contexts only point to a referenced `ZSTD_CDict` / `ZSTD_DDict`
/// (`ZSTD_CCtx_refCDict`, `ZSTD_DCtx_refDDict`), and zstd-safe ties that to a lifetime: a
/// `CCtx<'a>` references a `&'a CDict`. A workspace's context is `'static`, the dictionaries
/// live in an `Arc` this type holds; [`WithDicts::with`] lends both for one shorter
/// lifetime `'x` at a time, so that the context can reference the dictionaries safely, and
/// nothing that lives less than this value can be put into it.
pub(crate) struct WithDicts<C, D> {
    ctx: C,
    dicts: Option<Arc<D>>,
}

impl<C, D> WithDicts<C, D> {
    pub(crate) fn new(ctx: C, dicts: Option<Arc<D>>) -> Self {
        WithDicts { ctx, dicts }
    }

    /// The context itself, to read (its size).
    pub(crate) fn ctx(&self) -> &C {
        &self.ctx
    }
}

impl<D> WithDicts<CCtx<'static>, D> {
    /// Runs `f` on the CCtx and the dictionaries, both borrowed for the same `'x`.
    #[inline(always)]
    pub(crate) fn with<R>(
        &mut self,
        f: impl for<'x> FnOnce(&'x mut CCtx<'x>, Option<&'x D>) -> R,
    ) -> R {
        let ctx = std::ptr::from_mut(&mut self.ctx).cast::<CCtx<'_>>();
        // SAFETY:
        // - only the lifetime changes: `CCtx<'static>` and `CCtx<'x>` are one type to the
        //   compiler's layout, and the pointer comes from a live `&mut`, borrowed for `'x`;
        // - `f` holds for every `'x`, so whatever it leaves in the context (a referenced
        //   CDict) outlives any `'x`: either `'static`, or borrowed from `self.dicts`, which
        //   `self` keeps alive for as long as the context (declared after it, dropped after
        //   it, never replaced);
        // - `'static` is never handed out: after `f` the context is only reachable through
        //   `self` again.
        f(unsafe { &mut *ctx }, self.dicts.as_deref())
    }
}

impl<D> WithDicts<DCtx<'static>, D> {
    /// Runs `f` on the DCtx and the dictionaries, both borrowed for the same `'x`.
    #[inline(always)]
    pub(crate) fn with<R>(
        &mut self,
        f: impl for<'x> FnOnce(&'x mut DCtx<'x>, Option<&'x D>) -> R,
    ) -> R {
        let ctx = std::ptr::from_mut(&mut self.ctx).cast::<DCtx<'_>>();
        // SAFETY: as in `WithDicts<CCtx, D>::with`: the same lifetime-only cast, and a
        // referenced DDict can only come from `self.dicts`, which outlives the context.
        f(unsafe { &mut *ctx }, self.dicts.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use std::io::IoSlice;

    use super::with_gathered;

    /// The parts in order, empty ones too; one byte over the buffer is `None` without a call.
    #[test]
    fn gathers_in_order_up_to_its_size() {
        let (a, b, c) = ([1u8, 2, 3], [0u8; 0], [5u8, 6]);
        let parts = [IoSlice::new(&a), IoSlice::new(&b), IoSlice::new(&c)];
        let gathered = with_gathered::<5, _>(&parts, <[u8]>::to_vec);
        assert_eq!(gathered, Some(vec![1, 2, 3, 5, 6]));
        assert_eq!(
            with_gathered::<4, _>(&parts, |_| unreachable!()),
            None::<()>
        );
        assert_eq!(with_gathered::<0, _>(&[], <[u8]>::len), Some(0));
    }
}
