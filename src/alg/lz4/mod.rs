//! lz4: the second algorithm, the raw LZ4 block format as the kernel's `crypto/lz4.c`
//! writes it and zram and zswap store it (no frame header, no checksum).
//!
//! One concept per file: [`Lz4Params`] (`params.rs`), the block format and acomp's own
//! decoder (`block.rs`), compression with the reference library (`compress.rs`),
//! decompression (`decompress.rs`). This file holds the [`Algorithm`] impl and the
//! workspace.
//!
//! # Paths
//!
//! - **One-shot**, one fragment each side: the block is compressed by liblz4 straight from
//!   the source into the destination, and decoded straight from the source into the
//!   destination. The decoder keeps no state, so that decompression takes no workspace
//!   ([`Algorithm::decompress_stateless`]): no CPU lookup, no lock.
//! - **Linearised**, every other request: the block format has no streaming decoder (a
//!   match may reach 64 KiB back into the output), so a source in several fragments is
//!   copied into one buffer of the workspace, and output for a destination in several
//!   fragments is made in another and copied out, as the kernel's scomp layer does with its
//!   per-CPU scratch buffers. Reported as [`RequestPath::Linearised`]. A source of at most
//!   `LZ4_compressBound(4096)` bytes with a destination of one fragment is linearised on
//!   the stack instead and takes no workspace ([`Algorithm::decompress_stateless_walk`]):
//!   no CPU lookup, no lock, for a page's block that straddles two pages of a pool.
//!
//! # The largest request
//!
//! [`Lz4Params::request_max`], 64 MiB by default (the kernel's scomp layer stops at
//! `SCOMP_SCRATCH_SIZE`, 128 KiB): a source to compress, or a block's decompressed content,
//! of at most that many bytes, and a source to decompress of at most `LZ4_compressBound` of
//! it. A larger request is `EINVAL` on every path and cut (the kernel's scomp refuses a
//! source over its scratch size with `EINVAL` too), so the outcome never depends on the
//! cut. The workspace buffers grow on the first linearised request that needs them, to
//! that request's size at most, and stay.
//!
//! # The contract, for blocks
//!
//! acomp decodes blocks itself (`block.rs`), checking every rule of the format while it
//! decodes: `EBADMSG` for a malformed block at every destination size (offset 0, an offset
//! before the start of the output, a length or literals past the end of the block, a block
//! that ends inside a sequence or with a match, and the end-of-block rules: the last 5
//! bytes literals, the last match at least 12 bytes before the end), where the reference
//! decoder takes some of them depending on the destination's size (the table in
//! [`crate::lz4`]). A last token's match nibble is not read, at any destination size. `ENOSPC` only where the block is
//! valid, with the exact size needed: a destination that fills up sends the decoder to a
//! scan of the rest of the block (`block::measure`), which writes nothing. The format has
//! no checksum: a change inside literals, or to an offset or a length that keeps the block
//! well-formed, decodes to other bytes, "successfully".

pub(crate) mod block;
mod compress;
pub(crate) mod copy;
mod decompress;
pub(crate) mod fast;
pub(crate) mod params;

use self::params::Lz4Params;

/// Why decoding a block stopped short of its end (`block.rs`); the helpers below it
/// (`copy.rs`, `fast.rs`) know no error type, as lz4_flex keeps its errors in
/// `block/mod.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The block breaks the format here: no destination could take it.
    Corrupt(&'static str),
    /// The next literals or match do not fit the destination; the rest of the block is not
    /// checked yet ([`block::measure`] does).
    Full,
}
use super::{Algorithm, Fragments, grow_buffer};
use crate::RequestPath;
use crate::{Error, Walk, sys};

/// The lz4 algorithm with fixed parameters.
#[derive(Debug, Clone)]
pub struct Lz4 {
    params: Lz4Params,
    /// `LZ4_compressBound(request_max)`: the largest source to decompress.
    source_max: usize,
}

impl Lz4 {
    /// lz4 with these parameters.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] where a parameter is out of range.
    pub fn new(params: Lz4Params) -> Result<Self, Error> {
        params.validate()?;
        let source_max =
            sys::lz4_compress_bound(params.request_max).ok_or_else(|| Error::InvalidParameter {
                reason: format!("lz4 request_max {} too large", params.request_max),
            })?;
        Ok(Lz4 { params, source_max })
    }

    /// The parameters.
    #[cfg_attr(not(feature = "unstable-algorithm"), allow(dead_code))] // for algorithm writers
    pub fn params(&self) -> &Lz4Params {
        &self.params
    }

    /// The largest block compressing `slen` bytes can give, in bytes (`LZ4_compressBound`):
    /// a destination this large never fails with `ENOSPC`. `usize::MAX` for a source over
    /// the request limit, which no destination takes (`EINVAL`).
    pub fn compress_bound(&self, slen: usize) -> usize {
        if slen > self.params.request_max {
            return usize::MAX;
        }
        sys::lz4_compress_bound(slen).unwrap_or(usize::MAX)
    }
}

/// An lz4 workspace: liblz4's compression state (16 KiB, on first compression) and the two
/// buffers of the linearised path (on first need, up to the request limit).
pub struct Lz4Workspace {
    state: Vec<u64>,
    /// A source in several fragments, linearised.
    src: Vec<u8>,
    /// Output for a destination in several fragments, before it is copied out.
    dst: Vec<u8>,
}

impl std::fmt::Debug for Lz4Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lz4Workspace")
            .field("state", &!self.state.is_empty())
            .field("src", &self.src.len())
            .field("dst", &self.dst.len())
            .finish()
    }
}

/// Compile-time proof that the lz4 types can be shared across threads.
fn _assert_send_sync() {
    fn assert<T: Send + Sync>() {}
    assert::<Lz4>();
    assert::<Lz4Params>();
    assert::<Lz4Workspace>();
}

/// The first `len` bytes of `buf`, grown (zero-filled) to that size where shorter.
/// The whole source of `walk` as one slice: its one fragment where it is in one, else a
/// copy of it in `buf` (grown to fit), as the kernel's scomp layer linearises a scatterlist.
fn linear_src<'s>(walk: &Walk<'s, '_>, buf: &'s mut Vec<u8>) -> Result<&'s [u8], Error> {
    let slen = walk.slen();
    if walk.next_src().len() == slen {
        return Ok(walk.next_src());
    }
    let copy = grow_buffer(buf, slen)?;
    walk.peek_src(copy);
    Ok(copy)
}

impl Algorithm for Lz4 {
    type Workspace = Lz4Workspace;

    const STATELESS_ONE_SHOT: bool = true;

    fn name(&self) -> &'static str {
        "lz4"
    }

    fn compress_bound(&self, slen: usize) -> usize {
        Lz4::compress_bound(self, slen)
    }

    fn new_workspace(&self) -> Result<Lz4Workspace, Error> {
        Ok(Lz4Workspace {
            state: Vec::new(),
            src: Vec::new(),
            dst: Vec::new(),
        })
    }

    fn compress(
        &self,
        ws: &mut Lz4Workspace,
        req: Fragments<'_, '_, '_>,
    ) -> Result<(usize, RequestPath), Error> {
        match req {
            Fragments::One { src, dst } => {
                Ok((self.compress_one(ws, src, dst)?, RequestPath::OneShot))
            }
            req => req.walk(|walk| {
                self.compress_walk(ws, walk)?;
                Ok(RequestPath::Linearised)
            }),
        }
    }

    fn decompress(
        &self,
        ws: &mut Lz4Workspace,
        req: Fragments<'_, '_, '_>,
    ) -> Result<(usize, RequestPath), Error> {
        match req {
            Fragments::One { src, dst } => Ok((self.decode_into(src, dst)?, RequestPath::OneShot)),
            req => req.walk(|walk| {
                self.decompress_linear(ws, walk)?;
                Ok(RequestPath::Linearised)
            }),
        }
    }

    /// acomp's block decoder keeps no state: the one-shot path needs no workspace.
    #[inline(always)]
    fn decompress_stateless(&self, src: &[u8], dst: &mut [u8]) -> Option<Result<usize, Error>> {
        Some(self.decode_one_shot(src, dst))
    }

    const STATELESS_WALK: bool = true;

    /// A small source (a page's block) in several fragments is linearised on the stack
    /// where the destination is one fragment: no workspace.
    #[inline(always)]
    fn decompress_stateless_walk(&self, walk: &mut Walk<'_, '_>) -> Option<Result<usize, Error>> {
        self.decompress_small(walk)
    }

    fn reset(&self, _ws: &mut Lz4Workspace) {
        // Nothing carries over: liblz4 resets its state on every block, and the buffers are
        // written before they are read.
    }

    fn workspace_bytes(&self, ws: &Lz4Workspace) -> usize {
        std::mem::size_of_val(ws.state.as_slice()) + ws.src.capacity() + ws.dst.capacity()
    }
}
