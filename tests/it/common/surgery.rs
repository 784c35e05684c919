//! Frame surgery for the tests: read a zstd frame's header and block headers (RFC 8878
//! §3.1.1) with the tests' own parser, and rewrite them: a block's size, the content-size
//! field. Independent of the crate's parser on purpose.

/// Where a frame's header fields are.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    /// Bytes of the header (magic included).
    pub size: usize,
    pub single_segment: bool,
    pub checksum: bool,
    /// Offset and width of the content-size field (width 0: none).
    pub fcs_at: usize,
    pub fcs_width: usize,
    /// The window in bytes (for a single-segment frame, its content size).
    pub window: u64,
}

/// A block header and where it stands.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    /// Offset of its 3-byte header in the frame.
    pub at: usize,
    /// 0 raw, 1 RLE, 2 compressed.
    pub kind: u8,
    pub size: usize,
    pub last: bool,
}

impl Block {
    /// Bytes of content after the header.
    pub fn content_len(&self) -> usize {
        if self.kind == 1 { 1 } else { self.size }
    }
}

/// The block maximum of a window: `min(window, 128 KiB)`.
pub fn block_max(window: u64) -> u64 {
    window.min(128 * 1024)
}

pub fn header(frame: &[u8]) -> Header {
    assert_eq!(frame[..4], 0xFD2F_B528u32.to_le_bytes(), "a zstd frame");
    let fhd = frame[4];
    let single_segment = fhd & 0x20 != 0;
    let mut at = 5;
    let mut window = 0;
    if !single_segment {
        let wd = frame[5];
        let base = 1u64 << (10 + (wd >> 3));
        window = base + (base >> 3) * u64::from(wd & 7);
        at += 1;
    }
    at += [0, 1, 2, 4][usize::from(fhd & 3)];
    let fcs_width = [usize::from(single_segment), 2, 4, 8][usize::from(fhd >> 6)];
    let h = Header {
        size: at + fcs_width,
        single_segment,
        checksum: fhd & 4 != 0,
        fcs_at: at,
        fcs_width,
        window,
    };
    if single_segment {
        Header {
            window: content_size(frame, &h).unwrap(),
            ..h
        }
    } else {
        h
    }
}

pub fn content_size(frame: &[u8], h: &Header) -> Option<u64> {
    let f = &frame[h.fcs_at..h.fcs_at + h.fcs_width];
    let mut le = [0u8; 8];
    le[..f.len()].copy_from_slice(f);
    let v = u64::from_le_bytes(le);
    match h.fcs_width {
        0 => None,
        2 => Some(v + 256),
        _ => Some(v),
    }
}

/// The blocks of the frame at the start of `frame`.
pub fn blocks(frame: &[u8]) -> Vec<Block> {
    let mut at = header(frame).size;
    let mut out = Vec::new();
    loop {
        let h = u32::from_le_bytes([frame[at], frame[at + 1], frame[at + 2], 0]);
        let b = Block {
            at,
            kind: ((h >> 1) & 3) as u8,
            size: (h >> 3) as usize,
            last: h & 1 != 0,
        };
        out.push(b);
        at += 3 + b.content_len();
        if b.last {
            return out;
        }
    }
}

/// The frame with `block`'s size field set to `size`; a raw or compressed block gets
/// `filler` bytes inserted (or its content cut) so that the frame's structure still holds.
pub fn with_block_size(frame: &[u8], block: &Block, size: usize, filler: &[u8]) -> Vec<u8> {
    let h = (u32::from(block.last)) | (u32::from(block.kind) << 1) | ((size as u32) << 3);
    let mut f = frame[..block.at].to_vec();
    f.extend_from_slice(&h.to_le_bytes()[..3]);
    let content = &frame[block.at + 3..block.at + 3 + block.content_len()];
    if block.kind == 1 {
        f.extend_from_slice(content);
    } else {
        let mut c = content.to_vec();
        c.resize(size, 0);
        if size > content.len() {
            let extra = size - content.len();
            c[content.len()..].copy_from_slice(&filler.repeat(extra / filler.len() + 1)[..extra]);
        }
        f.extend_from_slice(&c);
    }
    f.extend_from_slice(&frame[block.at + 3 + block.content_len()..]);
    f
}

/// The frame with its content-size field rewritten to `width` bytes (0, 1, 2, 4 or 8)
/// holding `size`; `None` where that width cannot hold it, or the frame's kind cannot have
/// that width (1 byte only in a single-segment frame, 0 only outside one).
pub fn with_content_size(frame: &[u8], width: usize, size: Option<u64>) -> Option<Vec<u8>> {
    let h = header(frame);
    let flag: u8 = match (width, h.single_segment) {
        (0, false) => 0,
        (1, true) => 0,
        (2, _) => 1,
        (4, _) => 2,
        (8, _) => 3,
        _ => return None,
    };
    let bytes = match (width, size) {
        (0, None) => vec![],
        (1, Some(s)) if s < 256 => vec![s as u8],
        (2, Some(s)) if (256..=65_791).contains(&s) => ((s - 256) as u16).to_le_bytes().to_vec(),
        (4, Some(s)) if s <= u64::from(u32::MAX) => (s as u32).to_le_bytes().to_vec(),
        (8, Some(s)) => s.to_le_bytes().to_vec(),
        _ => return None,
    };
    let mut f = frame[..h.fcs_at].to_vec();
    f[4] = (f[4] & 0x3F) | (flag << 6);
    f.extend_from_slice(&bytes);
    f.extend_from_slice(&frame[h.size..]);
    Some(f)
}

/// A frame written by hand: a window descriptor of `window_log` (no content size) and the
/// given blocks, `(kind, content)` with kind 0 raw or 1 RLE (content: the byte, `size`
/// times), the last one marked last; no checksum.
pub fn hand_frame(window_log: u8, blocks: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut f = 0xFD2F_B528u32.to_le_bytes().to_vec();
    f.push(0); // no content size, not single segment, no checksum, no dictionary
    f.push((window_log - 10) << 3);
    for (i, (kind, content)) in blocks.iter().enumerate() {
        let last = u32::from(i + 1 == blocks.len());
        let h = last | (u32::from(*kind) << 1) | ((content.len() as u32) << 3);
        f.extend_from_slice(&h.to_le_bytes()[..3]);
        if *kind == 1 {
            f.push(content[0]);
        } else {
            f.extend_from_slice(content);
        }
    }
    f
}

/// The frame with an empty raw block appended as its last block (the one before it no
/// longer last): the same content, a layout zstd's decoders accept.
pub fn with_empty_last_block(frame: &[u8]) -> Vec<u8> {
    let last = *blocks(frame).last().unwrap();
    let end = last.at + 3 + last.content_len();
    let mut f = frame[..end].to_vec();
    f[last.at] &= !1;
    f.extend_from_slice(&[1, 0, 0]);
    f.extend_from_slice(&frame[end..]);
    f
}
