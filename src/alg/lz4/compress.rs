//! lz4 compression with the reference library (`LZ4_compress_fast_extState`, the kernel's
//! `LZ4_compress_fast` on its own workspace): straight from and into single fragments, else
//! through buffers of the workspace. The block is the same on every cut.

use super::decompress::scatter;
use super::{Lz4, Lz4Workspace, linear_src};
use crate::alg::grow_buffer;
use crate::{Error, Walk, sys};

impl Lz4 {
    /// Compresses the walk's source into its destination; whether it was one fragment each
    /// side.
    pub(super) fn compress_walk(
        &self,
        ws: &mut Lz4Workspace,
        walk: &mut Walk<'_, '_>,
    ) -> Result<bool, Error> {
        let slen = walk.slen();
        if slen > self.params.request_max {
            return Err(Error::InvalidParameter {
                reason: format!(
                    "lz4 source of {slen} bytes over the request limit of {} bytes",
                    self.params.request_max
                ),
            });
        }
        let state = lz4_state(&mut ws.state)?;
        if let Some((src, dst)) = walk.one_shot() {
            let n = compress_block(state, src, dst, self.params.acceleration)?;
            walk.done_src(slen);
            walk.done_dst(n);
            return Ok(true);
        }
        let src = linear_src(walk, &mut ws.src)?;
        let dlen = walk.dlen();
        let dst = walk.next_dst();
        let n = if dst.len() == dlen {
            let n = compress_block(state, src, dst, self.params.acceleration)?;
            walk.done_dst(n);
            n
        } else {
            // Room for any block, so that the bytes never depend on the destination.
            let bound = sys::lz4_compress_bound(slen).ok_or(Error::NoMemory)?;
            let out = grow_buffer(&mut ws.dst, bound)?;
            let n = compress_block(state, src, out, self.params.acceleration)?;
            if n > dlen {
                return Err(Error::NoSpace {
                    needed: None,
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
        Ok(false)
    }
}

/// One block into `dst`: liblz4 returns 0 where the block does not fit (it writes the same
/// bytes whatever room it has, or none).
fn compress_block(
    state: &mut [u64],
    src: &[u8],
    dst: &mut [u8],
    acceleration: i32,
) -> Result<usize, Error> {
    match sys::lz4_compress(state, src, dst, acceleration) {
        0 => Err(Error::NoSpace {
            needed: None,
            capacity: dst.len(),
        }),
        n => Ok(n),
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
