//! The one place a request is routed: by its kind ([`RequestKind`]) and by its shape, one
//! fragment each side or any other cut, decided once ([`route`]). The algorithm is given
//! the shape ([`Fragments`]); the transform's workspace pool behind `dyn Transform` serves
//! every kind through one method.

use std::any::TypeId;
use std::io::{IoSlice, IoSliceMut};

use crate::Codec;
use crate::alg::Algorithm;
use crate::alg::lz4::Lz4;
use crate::alg::zstd::Zstd;
use crate::pool::{RequestKind, WorkspacePool};
use crate::request::Request;
use crate::{Error, Path, SeekTable, Segment, Stats, Walk};

/// A request's source and destination as an algorithm is given them: one fragment each
/// side (the one-shot case, with no walk set up), or a walk over any other cut.
#[derive(Debug)]
pub enum Fragments<'r, 'w, 'a> {
    /// One fragment each side (fragments of length 0 left out), as two slices.
    One {
        /// The source.
        src: &'r [u8],
        /// The destination.
        dst: &'r mut [u8],
    },
    /// Any other cut: a walk over the fragments, at its start.
    Many(&'r mut Walk<'w, 'a>),
}

impl Fragments<'_, '_, '_> {
    /// The source's length in bytes (`slen`).
    #[inline(always)]
    pub fn slen(&self) -> usize {
        match self {
            Fragments::One { src, .. } => src.len(),
            Fragments::Many(walk) => walk.slen(),
        }
    }

    /// Runs `op` on a walk over the fragments (for [`One`](Fragments::One), a walk over the
    /// two slices); returns the bytes it produced and its path: for an algorithm's paths
    /// that need a walk whatever the shape.
    ///
    /// # Errors
    ///
    /// `op`'s.
    #[inline]
    pub fn walk(
        self,
        op: impl FnOnce(&mut Walk<'_, '_>) -> Result<Path, Error>,
    ) -> Result<(usize, Path), Error> {
        match self {
            Fragments::One { src, dst } => {
                let src = [IoSlice::new(src)];
                let mut dst = [IoSliceMut::new(dst)];
                let mut walk = Walk::new(&src, &mut dst);
                let path = op(&mut walk)?;
                Ok((walk.produced(), path))
            }
            Fragments::Many(walk) => {
                let path = op(walk)?;
                Ok((walk.produced(), path))
            }
        }
    }
}

/// Gives `serve` the request's shape: [`Fragments::One`] where each side is one fragment
/// (fragments of length 0 aside), else a walk over the fragments.
#[inline(always)]
pub(crate) fn route<R>(
    src: &[IoSlice<'_>],
    dst: &mut [IoSliceMut<'_>],
    serve: impl FnOnce(Fragments<'_, '_, '_>) -> R,
) -> R {
    if let ([s], [d]) = (src, &mut *dst) {
        return serve(Fragments::One { src: s, dst: d });
    }
    let mut walk = Walk::new(src, dst);
    if walk.is_one_shot() {
        let (src, dst) = walk.one_shot().expect("checked above");
        return serve(Fragments::One { src, dst });
    }
    serve(Fragments::Many(&mut walk))
}

/// What `Acomp` needs of its workspace pool (`WorkspacePool<A>`), whatever the algorithm `A`.
pub(crate) trait Transform: Send + Sync {
    fn name(&self) -> &'static str;
    fn codec(&self) -> Codec;
    /// A compression or decompression, counted; refused before any workspace where its
    /// kind says so ([`RequestKind::refusal`]). Returns the bytes produced.
    fn request(&self, kind: RequestKind, req: Fragments<'_, '_, '_>) -> Result<usize, Error>;
    /// A range read (a decompression into segments, already checked); returns the extent
    /// offset where decoding stopped.
    fn range(&self, walk: &mut Walk<'_, '_>, segments: &mut [Segment<'_>]) -> Result<u64, Error>;
    /// A range read through a kept seek table, or (`verify`) its verification pass.
    fn seekable(
        &self,
        walk: &mut Walk<'_, '_>,
        table: &SeekTable,
        segments: &mut [Segment<'_>],
        verify: bool,
    ) -> Result<u64, Error>;
    /// Counts a request refused before it reached a workspace; gives its error back.
    fn refuse(&self, kind: RequestKind, e: Error) -> Error;
    fn stats(&self) -> Stats;
    fn batch(&self, kind: RequestKind, reqs: &mut [Request<'_, '_>]);
    fn compress_bound(&self, slen: usize) -> usize;
    fn content_size(&self, walk: &mut Walk<'_, '_>) -> Result<Option<u64>, Error>;
}

/// Runs a compression or decompression on the algorithm: the one dispatch by kind.
#[inline(always)]
fn run<A: Algorithm>(
    alg: &A,
    ws: &mut A::Workspace,
    kind: RequestKind,
    req: Fragments<'_, '_, '_>,
) -> Result<(usize, Path), Error> {
    match kind {
        RequestKind::Compress => alg.compress(ws, req),
        _ => alg.decompress(ws, req),
    }
}

impl<A: Algorithm> Transform for WorkspacePool<A> {
    fn name(&self) -> &'static str {
        self.alg().name()
    }

    fn codec(&self) -> Codec {
        let id = TypeId::of::<A>();
        if id == TypeId::of::<Zstd>() {
            Codec::Zstd
        } else if id == TypeId::of::<Lz4>() {
            Codec::Lz4
        } else {
            Codec::Custom
        }
    }

    fn request(&self, kind: RequestKind, mut req: Fragments<'_, '_, '_>) -> Result<usize, Error> {
        if let Some(e) = kind.refusal(req.slen()) {
            return Err(self.refuse(kind, e));
        }
        // A one-shot decompression an algorithm serves without a workspace: no CPU lookup,
        // no lock (a constant: nothing is tested for an algorithm without it).
        if (A::STATELESS_ONE_SHOT || A::STATELESS_WALK) && kind == RequestKind::Decompress {
            let res = match &mut req {
                Fragments::One { src, dst } if A::STATELESS_ONE_SHOT => {
                    self.serve_stateless(src, dst)
                }
                Fragments::Many(walk) if A::STATELESS_WALK => self.serve_stateless_walk(walk),
                _ => None,
            };
            if let Some(res) = res {
                return res;
            }
        }
        self.serve(kind, |alg, ws| {
            run(alg, ws, kind, req).map(|(n, path)| (path, n))
        })
    }

    fn range(&self, walk: &mut Walk<'_, '_>, segments: &mut [Segment<'_>]) -> Result<u64, Error> {
        self.serve(RequestKind::Range, |alg, ws| {
            Ok((Path::Stream, alg.decompress_range(ws, walk, segments)?))
        })
    }

    fn seekable(
        &self,
        walk: &mut Walk<'_, '_>,
        table: &SeekTable,
        segments: &mut [Segment<'_>],
        verify: bool,
    ) -> Result<u64, Error> {
        self.serve(RequestKind::Range, |alg, ws| {
            let end = alg.decompress_seekable(ws, walk, table, segments, verify)?;
            Ok((Path::Stream, end))
        })
    }

    fn refuse(&self, kind: RequestKind, e: Error) -> Error {
        WorkspacePool::refuse(self, kind, e)
    }

    fn stats(&self) -> Stats {
        WorkspacePool::stats(self)
    }

    fn batch(&self, kind: RequestKind, reqs: &mut [Request<'_, '_>]) {
        self.serve_batch(kind, reqs, |alg, ws, req| run(alg, ws, kind, req));
    }

    fn compress_bound(&self, slen: usize) -> usize {
        self.alg().compress_bound(slen)
    }

    fn content_size(&self, walk: &mut Walk<'_, '_>) -> Result<Option<u64>, Error> {
        self.alg().content_size(walk)
    }
}
