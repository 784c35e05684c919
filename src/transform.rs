//! What `Acomp` holds behind `dyn Transform`: its workspace pool (`WorkspacePool<A>`, in
//! `pool.rs`) for whatever algorithm `A`, serving every kind of request ([`RequestKind`])
//! through one method each; the one dispatch by kind ([`run`]).

use std::any::TypeId;

use crate::Codec;
use crate::alg::Algorithm;
use crate::alg::lz4::Lz4;
use crate::alg::zstd::Zstd;
use crate::pool::{RequestKind, WorkspacePool};
use crate::request::Request;
use crate::route::Fragments;
use crate::{Error, RequestPath, SeekTable, Segment, Stats, Walk};

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
) -> Result<(usize, RequestPath), Error> {
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
            Ok((
                RequestPath::Stream,
                alg.decompress_range(ws, walk, segments)?,
            ))
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
            Ok((RequestPath::Stream, end))
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
