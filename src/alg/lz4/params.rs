//! [`Lz4Params`]: the parameters of an lz4 transform.

use crate::Error;

/// The kernel's `LZ4_compress_default`: acceleration 1.
pub const DEFAULT_ACCELERATION: i32 = 1;

/// liblz4's largest useful acceleration (`LZ4_ACCELERATION_MAX`); larger values act as it.
pub const ACCELERATION_MAX: i32 = 65_537;

/// The largest `request_max` a transform takes: 64 MiB.
pub const REQUEST_MAX_LIMIT: usize = 64 * 1024 * 1024;

/// The default largest request, in bytes: [`REQUEST_MAX_LIMIT`], 64 MiB, so that user-space
/// buffers fit (the kernel's scomp layer stops at 128 KiB, its `SCOMP_SCRATCH_SIZE`: set
/// [`request_max`](Lz4Params::request_max)`(128 * 1024)` for its behaviour). The limit
/// costs no memory by itself: the workspace buffers grow only for requests of several
/// fragments, to the size of the request (see `request_max`).
pub const DEFAULT_REQUEST_MAX: usize = REQUEST_MAX_LIMIT;

/// lz4 parameters of a transform. Build with [`Default`] and the setters.
///
/// ```
/// let params = acomp::Lz4Params::default().acceleration(4);
/// let tfm = acomp::Acomp::with_lz4(params).unwrap();
/// # let _ = tfm;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lz4Params {
    pub(super) acceleration: i32,
    pub(super) request_max: usize,
}

impl Default for Lz4Params {
    /// Acceleration 1 (`LZ4_compress_default`), requests of up to 64 MiB
    /// ([`DEFAULT_REQUEST_MAX`]).
    fn default() -> Self {
        Lz4Params {
            acceleration: DEFAULT_ACCELERATION,
            request_max: DEFAULT_REQUEST_MAX,
        }
    }
}

impl Lz4Params {
    /// The acceleration factor of `LZ4_compress_fast`: 1 (the default, the kernel's
    /// `LZ4_compress_default`) to 65537; larger is faster and compresses less. It changes
    /// only what compression writes: every block decodes the same way.
    #[must_use]
    pub fn acceleration(mut self, acceleration: i32) -> Self {
        self.acceleration = acceleration;
        self
    }

    /// The largest request the transform serves, in bytes (4096 to 64 MiB, `REQUEST_MAX_LIMIT`;
    /// default 64 MiB, `DEFAULT_REQUEST_MAX`; the kernel's scomp layer stops at 128 KiB, its
    /// `SCOMP_SCRATCH_SIZE`): a source to compress, or a block's decompressed content. A
    /// source to decompress may be up to `LZ4_compressBound` of it. A larger request fails
    /// with [`Error::InvalidParameter`] (`EINVAL`) on every path and cut, one fragment
    /// included, so that the outcome never depends on the cut, as the kernel's scomp layer
    /// refuses one over its scratch buffers.
    ///
    /// What it bounds is memory: a request of more than one fragment is linearised
    /// through two workspace buffers, which grow on the first request that needs them to
    /// that request's size (the source; `LZ4_compressBound` of it, or the decompressed
    /// content, at most the destination's size) and are kept for the next, one pair per
    /// CPU. After a 1 MiB compression and decompression in fragments, a workspace holds
    /// 2.0 MiB besides liblz4's 16 KiB state; at this limit, up to 128 MiB. One-fragment
    /// requests use neither buffer. Lower it where a workspace should keep less.
    #[must_use]
    pub fn request_max(mut self, bytes: usize) -> Self {
        self.request_max = bytes;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        if !(1..=ACCELERATION_MAX).contains(&self.acceleration) {
            return Err(Error::InvalidParameter {
                reason: format!(
                    "lz4 acceleration {} outside 1..={ACCELERATION_MAX}",
                    self.acceleration
                ),
            });
        }
        if !(4096..=REQUEST_MAX_LIMIT).contains(&self.request_max) {
            return Err(Error::InvalidParameter {
                reason: format!(
                    "lz4 request_max {} outside 4096..={REQUEST_MAX_LIMIT}",
                    self.request_max
                ),
            });
        }
        Ok(())
    }
}
