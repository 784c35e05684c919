//! A frame decoded whole into a kept table's cache (`cache.rs`): by zstd's one-shot
//! decoder where that gives exactly what the stream path (`read.rs`) would, straight into
//! the cache, without the stream's window buffer and its copy; else by the stream path.

use std::io::IoSlice;

use xxhash_rust::xxh64::xxh64;

use super::read::{Decoder, ignore_checksum};
use super::{Frame, sub_fragments};
use crate::alg::zstd::dictionary::select;
use crate::alg::zstd::frame::{FrameHeader, block_max};
use crate::{Error, Segment};

impl Decoder<'_, '_, '_> {
    /// Decodes `frame` whole into `buf` (its entry's content size) and holds it to its
    /// entry, as [`Decoder::frame`] does: by zstd's one-shot decoder where that gives what
    /// the stream path would ([`Decoder::one_shot`]), else by the stream path, which also
    /// decides every error. Returns the content offset the output reached.
    pub(super) fn whole_into(
        &mut self,
        src: &[IoSlice<'_>],
        frame: &Frame,
        buf: &mut [u8],
        check_sum: bool,
        stop_early: bool,
    ) -> Result<u64, Error> {
        if self.one_shot(src, frame, buf, check_sum, stop_early) {
            return Ok(frame.content);
        }
        let mut probe = [0u8; 1];
        let mut all = [
            Segment::new(0, buf),
            Segment::new(frame.content, &mut probe),
        ];
        self.frame(
            src,
            frame,
            &mut all,
            frame.content,
            true,
            check_sum,
            stop_early,
        )
    }

    /// zstd's one-shot decoder on `frame`, into `buf` (its entry's content size), where
    /// it gives what the stream path would: one frame of exactly the entry's bytes in one
    /// fragment, its window within the limit, its content within one block maximum (the
    /// one-shot decoder does not check blocks against it) and exactly the entry's size,
    /// its checksums (with `check_sum`) matching. `false` on anything else, the stream
    /// path to decide (the same frame, the same errors). With `stop_early` (a read that
    /// needs less than the frame), a frame that declares its size has its own checksum
    /// not computed, as the stream path would not reach it.
    fn one_shot(
        &mut self,
        src: &[IoSlice<'_>],
        frame: &Frame,
        buf: &mut [u8],
        check_sum: bool,
        stop_early: bool,
    ) -> bool {
        let mut parts = Vec::new();
        sub_fragments(src, frame.start, frame.size, &mut parts);
        let [one] = &parts[..] else {
            return false;
        };
        let bytes: &[u8] = one;
        let FrameHeader::Frame {
            window,
            dict_id,
            checksum: own,
            ..
        } = FrameHeader::read(bytes)
        else {
            return false;
        };
        if window > self.zstd.params.window_limit()
            || frame.content > block_max(window)
            || zstd_safe::find_frame_compressed_size(bytes) != Ok(frame.size)
        {
            return false;
        }
        if let Some(dicts) = self.dicts {
            if select(self.dctx, dicts, dict_id).is_err() {
                return false;
            }
        }
        let skip_checksum = stop_early && own && frame.declared;
        if skip_checksum && ignore_checksum(self.dctx, true).is_err() {
            return false;
        }
        let decoded = self.dctx.decompress(&mut *buf, bytes) == Ok(buf.len());
        if skip_checksum && ignore_checksum(self.dctx, false).is_err() {
            return false;
        }
        if !decoded {
            return false;
        }
        match (check_sum, frame.checksum) {
            (true, Some(listed)) => {
                let sum = if own {
                    u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().expect("4 bytes"))
                } else {
                    xxh64(buf, 0) as u32
                };
                sum == listed
            }
            _ => true,
        }
    }
}
