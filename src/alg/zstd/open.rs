//! The frame-open policy of the stream path: what acomp checks in a frame header before
//! zstd sees any of the frame (the window against the limit, the dictionary it names).

use zstd_safe::zstd_sys::ZSTD_ErrorCode;

use super::dictionary::UNKNOWN_DICTIONARY;
use super::frame::{self, FRAME_HEADER_MAX, FrameCursor, FrameHeader, SKIPPABLE_HEADER};
use super::{Digested, Zstd};
use crate::{Error, Walk};

impl Zstd {
    /// Reads and checks the header of the frame that starts at the walk's position (without
    /// consuming it). The same bytes give the same answer however they are cut.
    ///
    /// The header's own faults (`EBADMSG`: a reserved bit, a dictionary the transform
    /// lacks) come before its window: a window over the limit is not an error here but
    /// `FrameCursor::over_limit`, for the caller to weigh against the rest of the source.
    /// `after_frame` says whether a frame came before, for the error of bytes that are none.
    pub(super) fn open_frame(
        &self,
        walk: &Walk<'_, '_>,
        dicts: Option<&Digested>,
        after_frame: bool,
    ) -> Result<FrameCursor, Error> {
        let mut buf = [0u8; FRAME_HEADER_MAX];
        let n = walk.peek_src(&mut buf);
        let limit = self.params.window_limit();
        let mut header = FrameHeader::read(&buf[..n]);
        let mut window_over_31 = None;
        if let FrameHeader::Invalid(code) = header {
            // zstd refuses a window log over 31 before it reads the rest of the header:
            // over any limit. The rest is read with the window descriptor at log 10.
            if zstd_safe::is_error_kind(
                code,
                ZSTD_ErrorCode::ZSTD_error_frameParameter_windowTooLarge,
            ) && buf[4] & 0x20 == 0
            {
                window_over_31 = Some(frame::descriptor_window(buf[5]));
                let mut rest = buf;
                rest[5] = 0;
                header = FrameHeader::read(&rest[..n]);
            }
        }
        match header {
            FrameHeader::Frame {
                header_size,
                window,
                content_size,
                checksum,
                dict_id,
            } => {
                let known = dicts.map_or(dict_id == 0, |d| d.ddict(dict_id).is_ok());
                if !known {
                    return Err(UNKNOWN_DICTIONARY);
                }
                let window = window_over_31.unwrap_or(window);
                Ok(FrameCursor {
                    skippable: false,
                    dict_id,
                    content_size,
                    block_max: frame::block_max(window),
                    checksum,
                    feed_left: header_size,
                    epilogue: false,
                    pending: false,
                    produced: 0,
                    over_limit: (window > limit).then_some(Error::WindowTooLarge { window, limit }),
                    least: 0,
                    most: 0,
                })
            }
            FrameHeader::Skippable { size } => Ok(FrameCursor {
                skippable: true,
                dict_id: 0,
                content_size: Some(0),
                block_max: 0,
                checksum: false,
                feed_left: SKIPPABLE_HEADER + size as usize,
                epilogue: true,
                pending: false,
                produced: 0,
                over_limit: None,
                least: 0,
                most: 0,
            }),
            FrameHeader::Incomplete => Err(Error::Truncated),
            FrameHeader::Invalid(code) => {
                Err(frame::header_error(code, after_frame, walk.src_remaining()))
            }
        }
    }
}
