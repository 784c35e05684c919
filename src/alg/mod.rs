//! The algorithms behind a transform, for those who write one: the [`Algorithm`] trait,
//! the shape of a request it is given ([`Fragments`]: one fragment each side, or a [`Walk`]
//! over any other cut), and the [`RequestPath`] it reports; zstd
//! ([`zstd::Zstd`]) and lz4 ([`lz4::Lz4`]) as `Acomp::with_algorithm` takes them. One folder per algorithm.
//!
//! **Outside semver.** This module exists only with the cargo feature
//! `unstable-algorithm`: it is the extension point for an algorithm of one's own (a
//! hardware accelerator behind the same contract, as the kernel's acomp serves), and its
//! items, including the performance hooks such as
//! [`Algorithm::STATELESS_ONE_SHOT`], may change in any release, minor or patch. Pin an
//! exact version (`acomp = "=0.1.0"`) when you use it. Everything a user of the two
//! algorithms needs is at the crate root and in [`crate::lz4`] and [`crate::zstd`], stable,
//! without the feature.

pub mod lz4;
mod repeat;
pub mod zstd;

pub use crate::route::Fragments;
pub use crate::walk::Walk;
use crate::{Error, RequestPath, Segment};

/// A compression algorithm behind an [`Acomp`](crate::Acomp).
///
/// An algorithm is shared by all threads; its per-CPU state lives in workspaces, which the
/// transform creates (outside any lock), locks around each call, and resets with
/// [`reset`](Algorithm::reset) after any error.
///
/// Contract for `compress` and `decompress`: on `Ok(n, _)`, the output is the first `n`
/// bytes of the destination; the outcome (bytes and error kind) must not depend on how
/// source and destination are cut into fragments.
pub trait Algorithm: Send + Sync + 'static {
    /// Per-CPU state: contexts, buffers.
    type Workspace: Send;

    /// The name [`Acomp::new`](crate::Acomp::new) knows the algorithm by (as
    /// `crypto_alloc_acomp` does), e.g. `"zstd"`.
    fn name(&self) -> &'static str;

    /// Creates an empty workspace. Heavy state should be created on first use.
    ///
    /// # Errors
    ///
    /// [`Error::NoMemory`] where memory cannot be had.
    fn new_workspace(&self) -> Result<Self::Workspace, Error>;

    /// Compresses the request's source into its destination: one fragment each side
    /// ([`Fragments::One`], the one-shot case, decided once by the transform), or a walk
    /// over any other cut. Returns the bytes written (the output is that many bytes at the
    /// front of the destination) and the path taken.
    ///
    /// # Errors
    ///
    /// [`Error::NoSpace`] where the destination is too small; [`Error::NoMemory`].
    fn compress(
        &self,
        ws: &mut Self::Workspace,
        req: Fragments<'_, '_, '_>,
    ) -> Result<(usize, RequestPath), Error>;

    /// Decompresses the request's source (one or more frames) into its destination, in
    /// the shapes [`compress`](Algorithm::compress) is given them.
    ///
    /// # Errors
    ///
    /// Any kind of [`Error`]; see [`Error::errno`].
    fn decompress(
        &self,
        ws: &mut Self::Workspace,
        req: Fragments<'_, '_, '_>,
    ) -> Result<(usize, RequestPath), Error>;

    /// Whether [`decompress_stateless`](Algorithm::decompress_stateless) may serve
    /// requests: the transform tries it only then, so that an algorithm without it pays
    /// nothing. The default is `false`.
    const STATELESS_ONE_SHOT: bool = false;

    /// Decompresses a one-shot request (the source and the destination each one fragment,
    /// the source not empty) without a workspace, where the algorithm needs none: `Some`
    /// with the bytes written to the front of `dst`, or `None`, having touched nothing, to
    /// have the request served by [`decompress`](Algorithm::decompress) on a locked
    /// workspace. A request served here skips the walk, the CPU lookup and the workspace
    /// lock, and is counted as a one-shot request like any other. The outcome must be the
    /// one `decompress` gives. Called only where [`STATELESS_ONE_SHOT`](Algorithm::STATELESS_ONE_SHOT)
    /// is set. The default is `None`: every request takes a workspace.
    ///
    /// # Errors
    ///
    /// As [`decompress`](Algorithm::decompress).
    fn decompress_stateless(&self, src: &[u8], dst: &mut [u8]) -> Option<Result<usize, Error>> {
        let _ = (src, dst);
        None
    }

    /// Whether [`decompress_stateless_walk`](Algorithm::decompress_stateless_walk) may
    /// serve requests, as [`STATELESS_ONE_SHOT`](Algorithm::STATELESS_ONE_SHOT) for one-shot
    /// ones. The default is `false`.
    const STATELESS_WALK: bool = false;

    /// Decompresses a request of any other cut (the walk at its start, the source not
    /// empty) without a workspace, where the algorithm can: `Some` with the bytes written,
    /// or `None`, having touched nothing, to have the request served by
    /// [`decompress`](Algorithm::decompress) on a locked workspace. A request served here
    /// skips the CPU lookup and the workspace lock and is counted as
    /// [`RequestPath::Linearised`]. The outcome must be the one `decompress` gives. Called only
    /// where [`STATELESS_WALK`](Algorithm::STATELESS_WALK) is set. The default is `None`.
    ///
    /// # Errors
    ///
    /// As [`decompress`](Algorithm::decompress).
    fn decompress_stateless_walk(&self, walk: &mut Walk<'_, '_>) -> Option<Result<usize, Error>> {
        let _ = walk;
        None
    }

    /// Decompresses the first frame of the walk's source into `segments` (sorted, not
    /// overlapping, already checked), sending output that falls before or between segments
    /// to scratch memory of the workspace, and stopping as soon as the last segment is full.
    /// Returns the extent offset where decoding stopped: the frame's end, or the end of the
    /// last segment. The caller zero-fills what lies past it.
    ///
    /// # Errors
    ///
    /// Any kind of [`Error`]. The default refuses with [`Error::InvalidParameter`]: range
    /// reads are optional for an algorithm.
    fn decompress_range(
        &self,
        ws: &mut Self::Workspace,
        walk: &mut Walk<'_, '_>,
        segments: &mut [Segment<'_>],
    ) -> Result<u64, Error> {
        let _ = (ws, walk, segments);
        Err(Error::InvalidParameter {
            reason: format!("{} has no range reads", self.name()),
        })
    }

    /// A range read of a seekable source through a seek table the caller keeps
    /// ([`SeekTable`](crate::SeekTable)), the source already matched to the table and the
    /// segments checked; with `verify`, no read but the verification pass (every frame
    /// decoded whole and held to its entry; the segments are empty). Returns the extent
    /// offset where decoding stopped, as [`decompress_range`](Algorithm::decompress_range).
    ///
    /// # Errors
    ///
    /// Any kind of [`Error`]. The default refuses with [`Error::InvalidParameter`]: the
    /// seekable format is zstd's.
    fn decompress_seekable(
        &self,
        ws: &mut Self::Workspace,
        walk: &mut Walk<'_, '_>,
        table: &crate::SeekTable,
        segments: &mut [Segment<'_>],
        verify: bool,
    ) -> Result<u64, Error> {
        let _ = (ws, walk, table, segments, verify);
        Err(Error::InvalidParameter {
            reason: format!(
                "the seekable format is zstd's; this transform is {}",
                self.name()
            ),
        })
    }

    /// The largest output compressing `slen` bytes can give, in bytes: a destination this
    /// large never fails with `ENOSPC` (for zstd, `ZSTD_compressBound`).
    fn compress_bound(&self, slen: usize) -> usize;

    /// The content size the first frame of the walk's source declares in its header, read
    /// across fragments without decoding; `Ok(None)` where the format or the header does not
    /// say. The default says `None`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] or [`Error::Truncated`] (`EBADMSG`) for a header that is not
    /// valid or is cut short.
    fn content_size(&self, walk: &mut Walk<'_, '_>) -> Result<Option<u64>, Error> {
        let _ = walk;
        Ok(None)
    }

    /// Returns a workspace that saw an error to a clean state for the next request.
    fn reset(&self, ws: &mut Self::Workspace);

    /// Bytes of memory the workspace holds, as the codec counts them (zstd's `sizeof`).
    fn workspace_bytes(&self, ws: &Self::Workspace) -> usize;

    /// Bytes of memory the algorithm holds once for all its workspaces (digested
    /// dictionaries), as the codec counts them. The default is 0.
    fn dictionary_bytes(&self) -> usize {
        0
    }
}

/// Grows a workspace buffer to at least `len` bytes (zero-filled where new) and returns its
/// first `len`: the one way workspaces get their buffers, allocating only where they grow.
///
/// # Errors
///
/// [`Error::NoMemory`] where the memory cannot be had; the buffer is then as it was.
#[inline]
pub(crate) fn grow_buffer(buf: &mut Vec<u8>, len: usize) -> Result<&mut [u8], Error> {
    if buf.len() < len {
        buf.try_reserve_exact(len - buf.len())
            .map_err(|_| Error::NoMemory)?;
        buf.resize(len, 0);
    }
    Ok(&mut buf[..len])
}
