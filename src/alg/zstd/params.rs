//! [`ZstdParams`]: the parameters of a zstd transform.

use zstd_safe::zstd_sys::{
    ZSTD_BLOCKSIZE_MAX, ZSTD_BLOCKSIZE_MAX_MIN, ZSTD_WINDOWLOG_MAX_64, ZSTD_WINDOWLOG_MIN,
};

use super::Dictionary;
use crate::Error;

/// The default level ([`ZstdParams::level`]): 3, the kernel's `ZSTD_DEF_LEVEL` and
/// zstd's own default.
pub const DEFAULT_LEVEL: i32 = 3;

/// The fastest level ([`ZstdParams::level`]): -131072, libzstd's `ZSTD_minCLevel()`
/// (`-ZSTD_TARGETLENGTH_MAX`). Negative levels trade ratio for speed.
pub const MIN_LEVEL: i32 = -(1 << 17);

/// The strongest level ([`ZstdParams::level`]): 22, libzstd's `ZSTD_maxCLevel()`.
pub const MAX_LEVEL: i32 = 22;

/// The default largest window a frame may ask for ([`ZstdParams::window_log_max`]), as a
/// log: 2^23 = 8 MiB, enough for every frame the reference CLI writes without `--ultra` or
/// `--long`.
pub const DEFAULT_WINDOW_LOG_MAX: u32 = 23;

/// The smallest [`ZstdParams::window_log_max`]: 10 (1 KiB, `ZSTD_WINDOWLOG_ABSOLUTEMIN`).
pub const WINDOW_LOG_MAX_MIN: u32 = ZSTD_WINDOWLOG_MIN;

/// The largest [`ZstdParams::window_log_max`]: 31 (2 GiB, `ZSTD_WINDOWLOG_MAX_64`), the
/// largest window zstd's format allows on 64-bit targets.
pub const WINDOW_LOG_MAX_MAX: u32 = ZSTD_WINDOWLOG_MAX_64;

/// Smallest and largest window logs zstd's format allows.
pub(super) const WINDOW_LOG_RANGE: std::ops::RangeInclusive<u32> =
    WINDOW_LOG_MAX_MIN..=WINDOW_LOG_MAX_MAX;

/// Smallest and largest block limits `ZSTD_c_maxBlockSize` takes, in bytes
/// (`ZSTD_BLOCKSIZE_MAX_MIN`, 1 KiB; `ZSTD_BLOCKSIZE_MAX`, 128 KiB).
pub(super) const BLOCK_SIZE_MAX_RANGE: std::ops::RangeInclusive<u32> =
    ZSTD_BLOCKSIZE_MAX_MIN..=ZSTD_BLOCKSIZE_MAX;

/// zstd parameters of a transform (the kernel's `zstd_parameters`, plus the window limit of
/// `ZSTD_d_windowLogMax`). Build with [`Default`] and the setters.
///
/// ```
/// let params = acomp::ZstdParams::default().level(-5).checksum(true).window_log_max(27);
/// let tfm = acomp::Acomp::with_zstd(params).unwrap();
/// # let _ = tfm;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZstdParams {
    pub(super) level: i32,
    pub(super) checksum: bool,
    pub(super) content_size: bool,
    pub(super) window_log_max: u32,
    pub(super) early_rejection: bool,
    pub(super) block_size_max: Option<u32>,
    /// See `dictionary.rs`.
    pub(super) dictionary: Option<Dictionary>,
    pub(super) older: Vec<Dictionary>,
}

impl Default for ZstdParams {
    /// Level 3, no checksum, content size in the header, window log limit 23, no early
    /// rejection, zstd's own block limit (128 KiB), no dictionary.
    fn default() -> Self {
        ZstdParams {
            level: DEFAULT_LEVEL,
            checksum: false,
            content_size: true,
            window_log_max: DEFAULT_WINDOW_LOG_MAX,
            early_rejection: false,
            block_size_max: None,
            dictionary: None,
            older: Vec::new(),
        }
    }
}

impl ZstdParams {
    /// Compression level (`ZSTD_c_compressionLevel`): from [`zstd::MIN_LEVEL`] (-131072;
    /// negative: faster) to [`zstd::MAX_LEVEL`] (22); 0 means zstd's default, 3
    /// ([`zstd::DEFAULT_LEVEL`], the default here too). A level outside the range makes
    /// [`Acomp::with_zstd`](crate::Acomp::with_zstd) fail with [`Error::InvalidParameter`].
    ///
    /// [`zstd::MIN_LEVEL`]: crate::zstd::MIN_LEVEL
    /// [`zstd::MAX_LEVEL`]: crate::zstd::MAX_LEVEL
    /// [`zstd::DEFAULT_LEVEL`]: crate::zstd::DEFAULT_LEVEL
    #[must_use]
    pub fn level(mut self, level: i32) -> Self {
        self.level = level;
        self
    }

    /// Whether frames end with an XXH64 checksum of their content (`ZSTD_c_checksumFlag`;
    /// default off, as in the kernel). Without it, a change inside a block's content that
    /// keeps the frame valid can decode as `Ok` with other bytes; with it, such a change is
    /// `EBADMSG` but for one in 2^32. It costs about 4,100 instructions per 4 KiB page each
    /// way and 4 bytes per frame (see the crate docs, "The contract"). With it, a range read
    /// ([`Acomp::decompress_range`](crate::Acomp::decompress_range)) decodes each frame it
    /// touches to its end, to check it: a read costs its whole frame.
    #[must_use]
    pub fn checksum(mut self, on: bool) -> Self {
        self.checksum = on;
        self
    }

    /// Whether frame headers carry the content size (`ZSTD_c_contentSizeFlag`).
    #[must_use]
    pub fn content_size(mut self, on: bool) -> Self {
        self.content_size = on;
        self
    }

    /// The largest window a frame may ask for when decompressing, as a log of bytes
    /// (`ZSTD_d_windowLogMax`): 10 to 31 ([`zstd::WINDOW_LOG_MAX_MIN`],
    /// [`zstd::WINDOW_LOG_MAX_MAX`]; default [`zstd::DEFAULT_WINDOW_LOG_MAX`], 23). A frame asking for more fails with
    /// [`Error::WindowTooLarge`] on every path. The limit bounds the memory a frame can make
    /// a workspace take on the stream path (about the window plus two blocks: a limit of 31
    /// lets a frame of a few bytes make it reserve 2 GiB). Compression keeps to it too
    /// (`ZSTD_c_windowLog`, where the level would use a larger window), so a transform
    /// reads back every frame it writes.
    ///
    /// [`zstd::WINDOW_LOG_MAX_MIN`]: crate::zstd::WINDOW_LOG_MAX_MIN
    /// [`zstd::WINDOW_LOG_MAX_MAX`]: crate::zstd::WINDOW_LOG_MAX_MAX
    /// [`zstd::DEFAULT_WINDOW_LOG_MAX`]: crate::zstd::DEFAULT_WINDOW_LOG_MAX
    #[must_use]
    pub fn window_log_max(mut self, log: u32) -> Self {
        self.window_log_max = log;
        self
    }

    /// Early rejection (default off): where the destination is no larger than the source,
    /// compression first looks at a 256-byte sample of it, and refuses data that shows as
    /// many distinct byte values as random data and no repeated word at once, without
    /// compressing ([`Error::Incompressible`], `ENOSPC`) (btrfs's compression heuristic does the like;
    /// zswap and zram learn the same by compressing the whole page). The answer depends on
    /// the source bytes only, never on the cut; a destination of
    /// [`compress_bound`](crate::Acomp::compress_bound) bytes is never refused. It costs
    /// about 1,000 instructions on data that compresses, and can refuse a page that would
    /// have fit: counted in [`Stats::rejected`](crate::Stats::rejected). BENCHMARKS.md's
    /// "Early rejection" gives both, measured.
    #[must_use]
    pub fn early_rejection(mut self, on: bool) -> Self {
        self.early_rejection = on;
        self
    }

    /// The largest block compression may write, in bytes of content (`ZSTD_c_maxBlockSize`,
    /// libzstd's experimental API): 1024 (`ZSTD_BLOCKSIZE_MAX_MIN`) to 131072
    /// (`ZSTD_BLOCKSIZE_MAX`); unset, the default, zstd's 128 KiB. With 4096, a
    /// 64 KiB unit of pages becomes a frame of page-sized blocks, and
    /// [`Acomp::decompress_range`](crate::Acomp::decompress_range) of its page `k` decodes
    /// blocks `0..=k` and stops, instead of one 64 KiB block. The frames are standard: any
    /// zstd decoder reads them. Smaller blocks cost some ratio (each block has its own
    /// entropy tables) and decode slower: on 128 KiB extents of system libraries and data,
    /// 4096 cost 1.6% of the ratio, made a read of the first page 24x cheaper, of the last
    /// 2.5x dearer, and random 4 KiB reads 0.78x; the seekable format
    /// ([`Acomp::compress_seekable_to_vec`](crate::Acomp::compress_seekable_to_vec)) reads
    /// any page for the cost of its frame (BENCHMARKS.md, "Seekable extents"). A source of more than one such block is compressed on the stream
    /// path, even from one fragment: `ZSTD_compress2` would write other bytes than
    /// streaming does, and the frame must not depend on the cut.
    #[must_use]
    pub fn block_size_max(mut self, bytes: u32) -> Self {
        self.block_size_max = Some(bytes);
        self
    }

    /// The largest window a frame may ask for, in bytes (saturating at `u64::MAX` for a
    /// log that [`Acomp::with_zstd`](crate::Acomp::with_zstd) would refuse anyway).
    pub fn window_limit(&self) -> u64 {
        1u64.checked_shl(self.window_log_max).unwrap_or(u64::MAX)
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        let levels = MIN_LEVEL..=MAX_LEVEL;
        if !levels.contains(&self.level) {
            return Err(Error::InvalidParameter {
                reason: format!("zstd level {} outside {levels:?}", self.level),
            });
        }
        if !WINDOW_LOG_RANGE.contains(&self.window_log_max) {
            return Err(Error::InvalidParameter {
                reason: format!(
                    "zstd window log {} outside {WINDOW_LOG_RANGE:?}",
                    self.window_log_max
                ),
            });
        }
        if let Some(bytes) = self.block_size_max {
            if !BLOCK_SIZE_MAX_RANGE.contains(&bytes) {
                return Err(Error::InvalidParameter {
                    reason: format!(
                        "zstd block size limit {bytes} outside {BLOCK_SIZE_MAX_RANGE:?}"
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_range_is_libzstds() {
        assert_eq!(MIN_LEVEL, zstd_safe::min_c_level());
        assert_eq!(MAX_LEVEL, zstd_safe::max_c_level());
    }
}
