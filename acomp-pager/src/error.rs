//! The pager's error: what went wrong, the system call's errno and the tier's error kept
//! as its source.

use std::fmt;
use std::io;

use acomp_zswap::StoreError;

/// Why a call of the pager's failed. `Display` says it in a line (lowercase, as std's);
/// [`Error::raw_os_error`] gives the errno where a system call refused, and
/// `std::error::Error::source` the error underneath (the kernel's, the tier's).
/// Converts into an [`io::Error`] of the matching kind that keeps this error inside it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// userfaultfd cannot be had: refused (`EPERM`: `vm.unprivileged_userfaultfd` is 0 and
    /// the process has no `CAP_SYS_PTRACE` nor access to `/dev/userfaultfd`, or a seccomp
    /// profile forbids the syscall), missing (`ENOSYS`), or without a feature the pager
    /// needs (`EINVAL` at `UFFDIO_API`: Linux 6.6 or later). The message says what fixes it.
    Unavailable {
        /// What fixes it, in words.
        why: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
    /// An argument out of range: a length, an offset, a range not page-aligned or not
    /// inside the region. Nothing was done.
    InvalidInput {
        /// What was wrong.
        what: String,
    },
    /// The tier refused a page of a page-out ([`StoreError`]: its budget reached with no
    /// device, or a device error). `paged_out` pages had left memory before; the refused
    /// page and those not taken yet stay in memory as they were.
    TierRefused {
        /// Pages that left memory before the refusal (`Region::page_out`'s count).
        paged_out: usize,
        /// The tier's error.
        source: StoreError,
    },
    /// A call in a forked child on a pager of its parent's: the child has none of the
    /// pager's threads nor the region's memory (`MADV_DONTFORK`), and its userfaultfd
    /// acts on the parent's address space. Nothing was done.
    Forked,
    /// A system call failed.
    Os {
        /// The call (`mmap`, `UFFDIO_REGISTER`, `pthread_create`...).
        call: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
    /// The process has made as many regions as the tier's key space has room for (2^27).
    OutOfRegionIds,
}

impl Error {
    /// The errno of the system call that failed, where one did (`EPERM` for a refused
    /// userfaultfd).
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Unavailable { source, .. } | Error::Os { source, .. } => source.raw_os_error(),
            Error::TierRefused {
                source: StoreError::Writeback(e),
                ..
            } => e.raw_os_error(),
            _ => None,
        }
    }

    /// The [`io::ErrorKind`] this error converts to.
    pub fn io_kind(&self) -> io::ErrorKind {
        match self {
            Error::Unavailable { source, .. } => match source.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => io::ErrorKind::PermissionDenied,
                _ => io::ErrorKind::Unsupported,
            },
            Error::InvalidInput { .. } => io::ErrorKind::InvalidInput,
            Error::TierRefused { .. } => io::ErrorKind::StorageFull,
            Error::Forked => io::ErrorKind::Unsupported,
            Error::Os { source, .. } => source.kind(),
            Error::OutOfRegionIds => io::ErrorKind::OutOfMemory,
        }
    }

    pub(crate) fn os(call: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Os { call, source }
    }

    pub(crate) fn invalid(what: String) -> Error {
        Error::InvalidInput { what }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unavailable { why, source } => write!(f, "{why}: {source}"),
            Error::InvalidInput { what } => f.write_str(what),
            Error::TierRefused { paged_out, source } => write!(
                f,
                "the tier refused a page ({source}); {paged_out} pages were paged out"
            ),
            Error::Forked => f.write_str(
                "a pager cannot be used in a forked child: its threads and regions are the \
                 parent's",
            ),
            Error::Os { call, source } => write!(f, "{call} failed: {source}"),
            Error::OutOfRegionIds => {
                f.write_str("the process has made 2^27 regions, all the tier's key space holds")
            }
        }
    }
}

/// The message includes the error it wraps (the system's, the tier's), so `source` is that
/// error's own source, not the error itself: a chain printed whole says each cause once.
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Unavailable { source, .. } | Error::Os { source, .. } => source.source(),
            Error::TierRefused { source, .. } => source.source(),
            Error::InvalidInput { .. } | Error::Forked | Error::OutOfRegionIds => None,
        }
    }
}

impl From<Error> for io::Error {
    /// An [`io::Error`] of [`Error::io_kind`]'s kind holding the error (`get_ref` and
    /// `downcast` give it back).
    fn from(e: Error) -> io::Error {
        io::Error::new(e.io_kind(), e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// A chain printed whole says each cause once: the message holds the wrapped error's,
    /// and `source` is that error's own source (none for these).
    #[test]
    fn a_chain_says_each_cause_once() {
        let os = Error::Os {
            call: "mmap",
            source: io::Error::from_raw_os_error(libc::ENOMEM),
        };
        let enomem = io::Error::from_raw_os_error(libc::ENOMEM);
        assert_eq!(os.to_string(), format!("mmap failed: {enomem}"));
        assert!(os.source().is_none());
        let refused = Error::TierRefused {
            paged_out: 3,
            source: StoreError::Writeback(io::Error::other("disk on fire")),
        };
        assert_eq!(
            refused.to_string(),
            "the tier refused a page (page refused: the pool is at its budget and writeback \
             failed: disk on fire); 3 pages were paged out"
        );
        assert!(refused.source().is_none());
    }
}
