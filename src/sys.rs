//! Every `unsafe` call of the crate: the CPU number, the CPU count, and the two libzstd
//! calls that zstd-safe does not wrap.

use zstd_safe::zstd_sys;

/// The CPU the calling thread runs on (`sched_getcpu(3)`), or 0 where the kernel cannot
/// tell. The answer may be stale as soon as it is returned: callers use it as a hint only.
#[inline]
pub(crate) fn current_cpu() -> usize {
    // SAFETY:
    // - `sched_getcpu` takes no arguments and touches no caller memory;
    // - it returns -1 with errno set on failure, which is handled below.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).unwrap_or(0)
}

/// The number of configured CPUs (`sysconf(_SC_NPROCESSORS_CONF)`), at least 1.
pub(crate) fn configured_cpus() -> usize {
    // SAFETY:
    // - `sysconf` reads a system value and touches no caller memory;
    // - it returns -1 on failure, which is handled below.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// What `ZSTD_getFrameHeader` read at the start of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameHeader {
    /// A zstd frame. `window` is the window size in bytes (for a single-segment frame,
    /// its content size, as zstd's streaming decoder reckons it); `content_size` is the
    /// size the header declares, if it does.
    Frame {
        header_size: usize,
        window: u64,
        content_size: Option<u64>,
    },
    /// A skippable frame (RFC 8878 §3.1.2); its header is 8 bytes.
    Skippable,
    /// The bytes end before the header does; the header needs at least this many.
    Incomplete(usize),
    /// Not a valid header: the zstd error code.
    Invalid(usize),
}

/// Reads the frame header at the start of `src` with libzstd's own parser, so that the
/// window acomp checks is the one zstd's streaming decoder would check.
pub(crate) fn frame_header(src: &[u8]) -> FrameHeader {
    let mut h = std::mem::MaybeUninit::<zstd_sys::ZSTD_FrameHeader>::zeroed();
    // SAFETY:
    // - `h` is a valid, writable `ZSTD_FrameHeader` (all-zero is a valid value of it);
    // - `src` is valid for reads of `src.len()` bytes, and zstd reads no further;
    // - zstd keeps no pointer to either after it returns.
    let ret =
        unsafe { zstd_sys::ZSTD_getFrameHeader(h.as_mut_ptr(), src.as_ptr().cast(), src.len()) };
    if is_error(ret) {
        return FrameHeader::Invalid(ret);
    }
    if ret > 0 {
        return FrameHeader::Incomplete(ret);
    }
    // SAFETY: the call returned 0, so zstd filled the header (and it started zeroed).
    let h = unsafe { h.assume_init() };
    if h.frameType == zstd_sys::ZSTD_FrameType_e::ZSTD_skippableFrame {
        return FrameHeader::Skippable;
    }
    FrameHeader::Frame {
        header_size: h.headerSize as usize,
        window: h.windowSize,
        content_size: (h.frameContentSize != zstd_sys::ZSTD_CONTENTSIZE_UNKNOWN as u64)
            .then_some(h.frameContentSize),
    }
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
