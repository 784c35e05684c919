//! lz4 compression with the reference library (`LZ4_compress_fast_extState`, the kernel's
//! `LZ4_compress_fast` on its own workspace): straight from and into single fragments, else
//! through buffers of the workspace. The block is the same on every cut.

use super::decompress::scatter;
use super::{Lz4, Lz4Workspace, linear_src};
use crate::alg::grow_buffer;
use crate::{Error, Walk, sys};

impl Lz4 {
    /// Compresses one source slice into one destination slice (the one-shot path);
    /// returns the block's size.
    pub(super) fn compress_one(
        &self,
        ws: &mut Lz4Workspace,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, Error> {
        self.check_request(src.len())?;
        let acceleration = self.params.acceleration;
        let state = lz4_state(&mut ws.state)?;
        compress_block(state, src, dst, acceleration)
            .map_err(|_| no_space(state, &mut ws.dst, src, dst.len(), acceleration))
    }

    /// A source over the request limit is `EINVAL`, on every cut.
    fn check_request(&self, slen: usize) -> Result<(), Error> {
        if slen > self.params.request_max {
            return Err(Error::InvalidParameter {
                reason: format!(
                    "lz4 source of {slen} bytes over the request limit of {} bytes",
                    self.params.request_max
                ),
            });
        }
        Ok(())
    }

    /// Compresses the walk's source (any cut) into its destination: the linearised path,
    /// through the workspace's buffers where a side is in several fragments.
    pub(super) fn compress_walk(
        &self,
        ws: &mut Lz4Workspace,
        walk: &mut Walk<'_, '_>,
    ) -> Result<(), Error> {
        let slen = walk.slen();
        self.check_request(slen)?;
        let acceleration = self.params.acceleration;
        let state = lz4_state(&mut ws.state)?;
        let src = linear_src(walk, &mut ws.src)?;
        let dlen = walk.dlen();
        let dst = walk.next_dst();
        let n = if dst.len() == dlen {
            let n = compress_block(state, src, dst, acceleration)
                .map_err(|_| no_space(state, &mut ws.dst, src, dlen, acceleration))?;
            walk.done_dst(n);
            n
        } else {
            // Room for any block, so that the bytes never depend on the destination.
            let out = bound_buffer(&mut ws.dst, slen)?;
            let n = compress_block(state, src, out, acceleration).map_err(|()| too_large(slen))?;
            if n > dlen {
                return Err(Error::NoSpace {
                    needed: Some(n as u64),
                    capacity: dlen,
                });
            }
            scatter(&out[..n], walk);
            n
        };
        debug_assert_eq!(walk.produced(), n);
        while walk.src_remaining() > 0 {
            let len = walk.next_src().len();
            walk.done_src(len);
        }
        Ok(())
    }
}

/// One block into `dst`: liblz4 returns 0 where the block does not fit (it writes the same
/// bytes whatever room it has, or none); `Err(())` then.
#[inline]
fn compress_block(
    state: &mut [u64],
    src: &[u8],
    dst: &mut [u8],
    acceleration: i32,
) -> Result<usize, ()> {
    match sys::lz4_compress(state, src, dst, acceleration) {
        0 => Err(()),
        n => Ok(n),
    }
}

/// The first `LZ4_compressBound(slen)` bytes of the workspace buffer `buf`, grown to them:
/// room for any block of `slen` bytes.
fn bound_buffer(buf: &mut Vec<u8>, slen: usize) -> Result<&mut [u8], Error> {
    let bound = sys::lz4_compress_bound(slen).ok_or(Error::NoMemory)?;
    grow_buffer(buf, bound)
}

/// The error of a block that did not fit a destination of `capacity` bytes: `ENOSPC` with
/// the block's exact size, learnt by compressing `src` again into the workspace buffer
/// `buf`, with room for any block (the same bytes: liblz4 writes the same block whatever
/// room it has). Only on this error path, as zstd finishes its frame in scratch memory.
#[cold]
#[inline(never)]
fn no_space(
    state: &mut [u64],
    buf: &mut Vec<u8>,
    src: &[u8],
    capacity: usize,
    acceleration: i32,
) -> Error {
    let needed = match bound_buffer(buf, src.len()) {
        Ok(out) => compress_block(state, src, out, acceleration).ok(),
        Err(e) => return e,
    };
    match needed {
        Some(n) => Error::NoSpace {
            needed: Some(n as u64),
            capacity,
        },
        None => too_large(src.len()),
    }
}

/// liblz4 fails into the bound's room only for a source over `LZ4_MAX_INPUT_SIZE`, which
/// the request limit keeps out (never seen: a guard).
#[cold]
fn too_large(slen: usize) -> Error {
    Error::InvalidParameter {
        reason: format!("lz4 source of {slen} bytes over LZ4_MAX_INPUT_SIZE"),
    }
}

/// The workspace's liblz4 state, allocated on first use (16 KiB).
fn lz4_state(state: &mut Vec<u64>) -> Result<&mut [u64], Error> {
    if state.is_empty() {
        let words = sys::lz4_state_bytes().div_ceil(8);
        state
            .try_reserve_exact(words)
            .map_err(|_| Error::NoMemory)?;
        state.resize(words, 0);
    }
    Ok(state)
}
