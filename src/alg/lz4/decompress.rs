//! lz4 decompression: the one-shot path straight into the destination, and the linearised
//! path for requests of several fragments, through buffers of the workspace.

use super::{Lz4, Lz4Workspace, linear_src};
use super::{Stop, block};
use crate::alg::grow_buffer;
use crate::{Error, Walk, sys};

/// The largest source the linearised path copies onto the stack rather than into a
/// workspace: `LZ4_compressBound(4096)`, any block of a 4 KiB page.
pub(super) const STACK_SOURCE: usize = 4096 + 4096 / 255 + 16;

impl Lz4 {
    /// Decompresses the block `src` straight into `dst`: the linearised path's where the
    /// destination is one fragment, and the walk's one-shot path.
    pub(super) fn decode_into(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
        self.decode_with(block::decode, src, dst)
    }

    /// [`decode_into`](Lz4::decode_into) with the decoder inlined: the stateless one-shot
    /// path, whose caller then keeps one frame.
    #[inline(always)]
    pub(super) fn decode_one_shot(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
        self.decode_with(block::decode_inline, src, dst)
    }

    /// Decodes `src` into `dst` with `decode` (the decoder out of line or inlined), capped
    /// at the largest request, and gives the outcome as an [`Error`].
    #[inline(always)]
    fn decode_with(
        &self,
        decode: impl FnOnce(&[u8], &mut [u8]) -> Result<usize, Stop>,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, Error> {
        self.check_source(src.len())?;
        let cap = dst.len().min(self.params.request_max);
        match decode(src, &mut dst[..cap]) {
            Ok(n) => Ok(n),
            Err(Stop::Corrupt(detail)) => Err(block::corrupt(src, detail)),
            Err(Stop::Full) => Err(self.no_room(src, dst.len())),
        }
    }

    /// Decompresses a request of several fragments without a workspace where the source is
    /// at most [`STACK_SOURCE`] bytes and the destination one fragment: the source copied
    /// into a buffer on the stack, decoded straight into the destination. `None`, having
    /// touched nothing, otherwise. The outcome is [`decompress_linear`](Lz4::decompress_linear)'s.
    #[inline(always)]
    pub(super) fn decompress_small(&self, walk: &mut Walk<'_, '_>) -> Option<Result<usize, Error>> {
        let dlen = walk.dlen();
        if walk.slen() > STACK_SOURCE || walk.next_dst().len() != dlen {
            return None;
        }
        sys::with_gathered::<STACK_SOURCE, _>(walk.src_fragments(), |src| {
            self.decode_into(src, walk.next_dst())
        })
    }

    /// Decompresses a request of several fragments: the source copied into one buffer of
    /// the workspace where it is in pieces; the output written straight into a destination
    /// of one fragment, else sized first ([`block::measure`]), decoded into a buffer of the
    /// workspace and copied out, as the kernel's scomp layer does with its scratch buffers.
    pub(super) fn decompress_linear(
        &self,
        ws: &mut Lz4Workspace,
        walk: &mut Walk<'_, '_>,
    ) -> Result<(), Error> {
        let slen = walk.slen();
        self.check_source(slen)?;
        let src = linear_src(walk, &mut ws.src)?;
        let dlen = walk.dlen();
        let dst = walk.next_dst();
        if dst.len() == dlen {
            let n = self.decode_into(src, dst)?;
            walk.done_src(walk.next_src().len());
            walk.done_dst(n);
            return Ok(());
        }
        let n = block::measure(src).map_err(|detail| block::corrupt(src, detail))?;
        let n = self.check_output(n, dlen)?;
        let out = grow_buffer(&mut ws.dst, n)?;
        let written = block::decode(src, out).map_err(|_| MEASURE_DISAGREES)?;
        if written != n {
            return Err(MEASURE_DISAGREES);
        }
        scatter(&out[..n], walk);
        while walk.src_remaining() > 0 {
            let len = walk.next_src().len();
            walk.done_src(len);
        }
        Ok(())
    }

    /// A source over `LZ4_compressBound(request_max)` is `EINVAL`: no block of a request
    /// the transform serves is that large.
    fn check_source(&self, slen: usize) -> Result<(), Error> {
        if slen > self.source_max {
            return Err(Error::InvalidParameter {
                reason: format!(
                    "lz4 source of {slen} bytes over the largest block of a request ({} bytes)",
                    self.source_max
                ),
            });
        }
        Ok(())
    }

    /// An output of `n` bytes, valid: over the request limit `EINVAL`, else over the
    /// destination `ENOSPC` (with the size needed), else `n`.
    fn check_output(&self, n: u64, capacity: usize) -> Result<usize, Error> {
        if n > self.params.request_max as u64 {
            return Err(Error::InvalidParameter {
                reason: format!(
                    "lz4 block of {n} bytes over the request limit of {} bytes",
                    self.params.request_max
                ),
            });
        }
        if n > capacity as u64 {
            return Err(Error::NoSpace {
                needed: Some(n),
                capacity,
            });
        }
        Ok(n as usize)
    }

    /// The destination filled up: the rest of the block is checked to tell a full
    /// destination (`ENOSPC`, with the exact size needed) from a corrupt block (`EBADMSG`).
    #[cold]
    fn no_room(&self, src: &[u8], capacity: usize) -> Error {
        match block::measure(src) {
            Ok(n) => self
                .check_output(n, capacity)
                .err()
                .unwrap_or(MEASURE_DISAGREES),
            Err(detail) => block::corrupt(src, detail),
        }
    }
}

/// The decoder and the scan disagree about a block (never seen: a guard, not a path).
const MEASURE_DISAGREES: Error = Error::Corrupt {
    detail: "lz4 block: decoder and scan disagree",
};

/// Copies `out` into the walk's destination fragments, in order.
pub(super) fn scatter(mut out: &[u8], walk: &mut Walk<'_, '_>) {
    while !out.is_empty() {
        let d = walk.next_dst();
        let n = d.len().min(out.len());
        d[..n].copy_from_slice(&out[..n]);
        walk.done_dst(n);
        out = &out[n..];
    }
}

#[cfg(test)]
mod tests {
    use super::STACK_SOURCE;

    #[test]
    fn stack_source_is_the_bound_of_a_page() {
        assert_eq!(Some(STACK_SOURCE), crate::sys::lz4_compress_bound(4096));
    }
}
