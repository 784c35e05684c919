//! Every `unsafe` call of the crate: the CPU number, the CPU count, and the libzstd calls
//! that zstd-safe does not wrap. Each returns plain values; their meaning is read elsewhere.

use zstd_safe::zstd_sys;

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
