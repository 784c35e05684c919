//! The error of a request, its kind, and the kernel's errno for each kind.

use std::io;

/// Why a request failed. Every variant belongs to one of four kinds, told by
/// [`Error::kind`] (or, as a kernel caller knows them, [`Error::errno`]): `ENOSPC`,
/// `EBADMSG`, `EINVAL`, `ENOMEM`.
///
/// The kind never depends on how the source and destination were cut into fragments.
/// After any error, the workspace that saw it is reset before it serves again.
///
/// Where a source has several faults, the error is the one that no destination and no
/// parameter could change: `EBADMSG` before `EINVAL` (a window over the limit) before
/// `ENOSPC`, and among faults of one kind the first in the order the source is read
/// (the crate docs, "The contract").
///
/// ```
/// use acomp::{Acomp, ErrorKind};
///
/// let tfm = Acomp::new("zstd")?;
/// let mut small = [0u8; 8];
/// let err = tfm.compress_to_buffer(&[1u8; 4096], &mut small).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::NoSpace);
/// assert_eq!(err.to_string(), "destination too small: 8 bytes, 19 needed");
/// # Ok::<(), acomp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `ENOSPC`: the destination is too small; a larger one could succeed.
    ///
    /// `needed` is the exact size of the whole output in bytes: compression finished the
    /// frame (in scratch memory) to learn it, decompression decoded and checked the rest of
    /// the source. zstd and lz4 always give it; only a plug-in algorithm (feature
    /// `unstable-algorithm`) that cannot tell gives `None`. A compression refused by early
    /// rejection is [`Error::Incompressible`], not this.
    #[error("destination too small: {capacity} bytes{}", needed_text(*.needed))]
    NoSpace {
        /// Bytes the output needs, where known.
        needed: Option<u64>,
        /// Bytes the destination holds.
        capacity: usize,
    },
    /// `ENOSPC`: early rejection ([`ZstdParams::early_rejection`](crate::ZstdParams::early_rejection),
    /// off by default) found the source incompressible (a sample of it looks random) and
    /// refused it without compressing, into a destination no larger than the source: store
    /// the data uncompressed, as zswap and zram do with a page that does not compress.
    /// Counted in [`Stats::rejected`](crate::Stats::rejected), not as an error.
    #[error("incompressible source: refused by early rejection into {capacity} bytes")]
    Incompressible {
        /// Bytes the destination holds.
        capacity: usize,
    },
    /// `EBADMSG`: corrupt input; no destination could make it succeed.
    #[error("corrupt input: {detail}")]
    Corrupt {
        /// What is wrong with the source, in acomp's words (e.g. "block larger than the
        /// frame's block maximum"); where zstd found it, with zstd's own name
        /// (`ZSTD_getErrorName`) in parentheses, e.g. "the content does not match the
        /// frame's checksum (zstd: Restored data doesn't match checksum)".
        detail: &'static str,
    },
    /// `EBADMSG`: the source ends inside a frame (a truncated frame, or bytes after the last
    /// frame that begin a frame header and end before it does).
    #[error("corrupt input: the source ends inside a frame")]
    Truncated,
    /// `EBADMSG`: after the last frame, `bytes` bytes of the source that do not start a
    /// frame (no zstd or skippable frame's magic number): zstd's "Unknown frame
    /// descriptor", with the count. Where a source starts with such bytes, no frame at all,
    /// the error is [`Error::Corrupt`].
    #[error("corrupt input: {bytes} bytes after the last frame are not a frame")]
    TrailingBytes {
        /// Bytes from the end of the last frame to the end of the source.
        bytes: u64,
    },
    /// `EINVAL`: a frame asks for a window (the history a decoder must keep) larger than
    /// the transform's limit, e.g. [`ZstdParams::window_log_max`](crate::ZstdParams::window_log_max).
    /// Both sizes in bytes. Only where nothing else in the source is wrong as far as acomp
    /// can tell without decoding that frame: a fault in its header, its block headers, its
    /// length or its declared content size, or anywhere in the frames after it, is
    /// `EBADMSG` instead.
    #[error("frame window of {window} bytes exceeds the limit of {limit} bytes")]
    WindowTooLarge {
        /// The window the frame header asks for.
        window: u64,
        /// The largest window this transform accepts.
        limit: u64,
    },
    /// `EINVAL`: the source to decompress is empty: there is no frame at all.
    #[error("empty source: nothing to decompress")]
    EmptySource,
    /// `EINVAL`: no algorithm of this name (as `crypto_alloc_acomp` fails for an unknown one).
    #[error("unknown algorithm {name:?}")]
    UnknownAlgorithm {
        /// The name asked for.
        name: String,
    },
    /// `EINVAL`: a parameter is out of its range or otherwise unsupported.
    #[error("invalid parameter: {reason}")]
    InvalidParameter {
        /// Which parameter, and why.
        reason: String,
    },
    /// `EINVAL`: a dictionary that zstd refuses ([`Dictionary::from_bytes`](crate::Dictionary::from_bytes))
    /// or cannot train ([`Dictionary::train`](crate::Dictionary::train)).
    #[error("invalid dictionary: {reason}")]
    Dictionary {
        /// What zstd refused, and why.
        reason: String,
    },
    /// `ENOMEM`: a workspace could not be allocated.
    #[error("out of memory for a workspace")]
    NoMemory,
}

fn needed_text(needed: Option<u64>) -> String {
    needed.map_or_else(String::new, |n| format!(", {n} needed"))
}

/// The four kinds of [`Error`], to match on without `libc`; each is one errno of the
/// kernel's `crypto_acomp` API ([`ErrorKind::errno`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `ENOSPC`: the destination is too small; a larger one could succeed.
    NoSpace,
    /// `EBADMSG`: corrupt input; no destination could make it succeed.
    Corrupt,
    /// `EINVAL`: an invalid request or parameter.
    Invalid,
    /// `ENOMEM`: a workspace could not be allocated.
    NoMemory,
}

impl ErrorKind {
    /// The kind's errno, as a positive number (`ENOSPC` 28, `EBADMSG` 74, `EINVAL` 22,
    /// `ENOMEM` 12 on Linux).
    pub fn errno(self) -> i32 {
        match self {
            ErrorKind::NoSpace => libc::ENOSPC,
            ErrorKind::Corrupt => libc::EBADMSG,
            ErrorKind::Invalid => libc::EINVAL,
            ErrorKind::NoMemory => libc::ENOMEM,
        }
    }
}

impl Error {
    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NoSpace { .. } | Error::Incompressible { .. } => ErrorKind::NoSpace,
            Error::Corrupt { .. } | Error::Truncated | Error::TrailingBytes { .. } => {
                ErrorKind::Corrupt
            }
            Error::WindowTooLarge { .. }
            | Error::EmptySource
            | Error::UnknownAlgorithm { .. }
            | Error::InvalidParameter { .. }
            | Error::Dictionary { .. } => ErrorKind::Invalid,
            Error::NoMemory => ErrorKind::NoMemory,
        }
    }

    /// The kernel-style errno of this error, as a positive number: `ENOSPC`, `EBADMSG`,
    /// `EINVAL` or `ENOMEM` ([`ErrorKind::errno`] of [`Error::kind`]).
    pub fn errno(&self) -> i32 {
        self.kind().errno()
    }
}

/// The `io::ErrorKind` is the one std gives the same errno (`ENOSPC`: `StorageFull`,
/// `EBADMSG`: `InvalidData`, `EINVAL`: `InvalidInput`, `ENOMEM`: `OutOfMemory`); the
/// `Error` itself is kept inside (`io::Error::get_ref`, `into_inner`), so `raw_os_error` is
/// `None`: use [`Error::errno`].
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match e.kind() {
            ErrorKind::NoSpace => io::ErrorKind::StorageFull,
            ErrorKind::Corrupt => io::ErrorKind::InvalidData,
            ErrorKind::NoMemory => io::ErrorKind::OutOfMemory,
            ErrorKind::Invalid => io::ErrorKind::InvalidInput,
        };
        io::Error::new(kind, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_lowercase_and_names_the_fault() {
        let e = Error::Corrupt {
            detail: "a block's content is corrupt (zstd: Data corruption detected)",
        };
        assert_eq!(
            e.to_string(),
            "corrupt input: a block's content is corrupt (zstd: Data corruption detected)"
        );
        let e = Error::NoSpace {
            needed: Some(4096),
            capacity: 4095,
        };
        assert_eq!(
            e.to_string(),
            "destination too small: 4095 bytes, 4096 needed"
        );
    }

    #[test]
    fn io_error_kinds() {
        let k = |e: Error| io::Error::from(e).kind();
        assert_eq!(
            k(Error::NoSpace {
                needed: None,
                capacity: 1
            }),
            io::ErrorKind::StorageFull
        );
        assert_eq!(k(Error::Truncated), io::ErrorKind::InvalidData);
        assert_eq!(k(Error::EmptySource), io::ErrorKind::InvalidInput);
        assert_eq!(k(Error::NoMemory), io::ErrorKind::OutOfMemory);
    }
}
