//! The lz4 variants of `acomp_4k`: acomp's lz4 transform against the libraries it could be
//! built on, on the same pages. Groups `lz4-compress` and `lz4-decompress`; the decompress
//! group decodes, for every variant, the block acomp's lz4 transform wrote of the page.
//!
//! - **lz4-one-shot**: acomp, one fragment each side (`Acomp::new("lz4")`).
//! - **lz4-2-frag**: acomp, the source in two fragments: the linearised path.
//! - **lz4-floor**: what acomp's one-shot path calls, called directly: liblz4's
//!   `LZ4_compress_fast_extState` on a reused state (acceleration 1), and acomp's own block
//!   decoder (`acomp::lz4::decompress_block`).
//! - **liblz4**: the reference C library's one-call API (lz4-sys, liblz4 1.10.0):
//!   `LZ4_compress_default` (state on the stack, as the kernel's `LZ4_compress_default` on
//!   its workspace) and `LZ4_decompress_safe`.
//! - **lz4-flex**: lz4_flex 0.14, pure Rust, its faster `unsafe` paths (no `safe-encode`,
//!   `safe-decode` features): `compress_into_with_table` on a reused table and
//!   `decompress_into`.

use std::io::{IoSlice, IoSliceMut};
use std::sync::Arc;

use acomp::Acomp;

use super::harness::Variant;

/// Room for any variant's block of a page: lz4_flex wants `get_maximum_output_size`, more
/// than `LZ4_compressBound`.
pub const DST: usize = lz4_flex::block::get_maximum_output_size(4096);

/// The variants, in the order of the tables.
pub const VARIANTS: [&str; 6] = [
    Lz4OneShot::NAME,
    Lz4TwoFragments::NAME,
    Lz4Floor::NAME,
    LibLz4::NAME,
    Lz4Flex::NAME,
    ScanLibLz4::NAME,
];

// liblz4's extState functions (`lz4.h`, stable since 1.7), which lz4-sys does not declare:
// the two that acomp's `src/sys.rs` calls, declared again here since a bench is a crate of its
// own and acomp's `sys` is private.
unsafe extern "C" {
    fn LZ4_sizeofState() -> libc::c_int;
    fn LZ4_compress_fast_extState(
        state: *mut libc::c_void,
        src: *const libc::c_char,
        dst: *mut libc::c_char,
        src_size: libc::c_int,
        dst_capacity: libc::c_int,
        acceleration: libc::c_int,
    ) -> libc::c_int;
}

pub struct Lz4OneShot(pub Arc<Acomp>);

impl Variant for Lz4OneShot {
    const NAME: &'static str = "lz4-one-shot";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        self.0
            .compress(&[IoSlice::new(page)], &mut [IoSliceMut::new(dst)])
            .expect("acomp lz4 compress")
    }

    fn decompress(&mut self, block: &[u8], dst: &mut [u8]) -> usize {
        self.0
            .decompress(&[IoSlice::new(block)], &mut [IoSliceMut::new(dst)])
            .expect("acomp lz4 decompress")
    }
}

pub struct Lz4TwoFragments(pub Arc<Acomp>);

impl Variant for Lz4TwoFragments {
    const NAME: &'static str = "lz4-2-frag";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        let (a, b) = page.split_at(page.len() / 2);
        self.0
            .compress(
                &[IoSlice::new(a), IoSlice::new(b)],
                &mut [IoSliceMut::new(dst)],
            )
            .expect("acomp lz4 compress")
    }

    fn decompress(&mut self, block: &[u8], dst: &mut [u8]) -> usize {
        let (a, b) = block.split_at(block.len() / 2);
        self.0
            .decompress(
                &[IoSlice::new(a), IoSlice::new(b)],
                &mut [IoSliceMut::new(dst)],
            )
            .expect("acomp lz4 decompress")
    }
}

/// liblz4's extState compression and acomp's block decoder, called directly.
pub struct Lz4Floor {
    state: Vec<u64>,
}

impl Lz4Floor {
    pub fn new() -> Self {
        // SAFETY: `LZ4_sizeofState` returns a constant.
        let bytes = unsafe { LZ4_sizeofState() } as usize;
        Lz4Floor {
            state: vec![0; bytes.div_ceil(8)],
        }
    }
}

impl Variant for Lz4Floor {
    const NAME: &'static str = "lz4-floor";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        // SAFETY: the state is `LZ4_sizeofState()` bytes, 8-byte aligned; `page` and `dst`
        // are valid for their lengths; liblz4 keeps no pointer.
        let n = unsafe {
            LZ4_compress_fast_extState(
                self.state.as_mut_ptr().cast(),
                page.as_ptr().cast(),
                dst.as_mut_ptr().cast(),
                page.len() as libc::c_int,
                dst.len() as libc::c_int,
                1,
            )
        };
        assert!(n > 0, "LZ4_compress_fast_extState");
        n as usize
    }

    fn decompress(&mut self, block: &[u8], dst: &mut [u8]) -> usize {
        acomp::lz4::decompress_block(block, dst).expect("acomp's block decoder")
    }
}

/// The reference C library's one-call functions.
pub struct LibLz4;

impl Variant for LibLz4 {
    const NAME: &'static str = "liblz4";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        // SAFETY: `page` and `dst` are valid for their lengths; liblz4 keeps no pointer.
        let n = unsafe {
            lz4_sys::LZ4_compress_default(
                page.as_ptr().cast(),
                dst.as_mut_ptr().cast(),
                page.len() as libc::c_int,
                dst.len() as libc::c_int,
            )
        };
        assert!(n > 0, "LZ4_compress_default");
        n as usize
    }

    fn decompress(&mut self, block: &[u8], dst: &mut [u8]) -> usize {
        // SAFETY: `block` and `dst` are valid for their lengths; liblz4 keeps no pointer.
        let n = unsafe {
            lz4_sys::LZ4_decompress_safe(
                block.as_ptr().cast(),
                dst.as_mut_ptr().cast(),
                block.len() as libc::c_int,
                dst.len() as libc::c_int,
            )
        };
        assert!(n >= 0, "LZ4_decompress_safe");
        n as usize
    }
}

/// The other way to hold the contract on liblz4: acomp's scan of the block's sequence
/// headers first (`block_content_size`: every rule checked, the exact size), then
/// `LZ4_decompress_safe` into a destination cut to exactly that size (so that its own
/// end-of-block checks are exact and nothing past the output is written). Compression as
/// `liblz4`.
pub struct ScanLibLz4;

impl Variant for ScanLibLz4 {
    const NAME: &'static str = "scan+liblz4";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        LibLz4.compress(page, dst)
    }

    fn decompress(&mut self, block: &[u8], dst: &mut [u8]) -> usize {
        let n = acomp::lz4::block_content_size(block).expect("a valid block") as usize;
        LibLz4.decompress(block, &mut dst[..n])
    }
}

/// lz4_flex with a reused hash table.
pub struct Lz4Flex(lz4_flex::block::CompressTable);

impl Lz4Flex {
    pub fn new() -> Self {
        Lz4Flex(lz4_flex::block::CompressTable::small())
    }
}

impl Variant for Lz4Flex {
    const NAME: &'static str = "lz4-flex";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        lz4_flex::block::compress_into_with_table(page, dst, &mut self.0)
            .expect("lz4_flex compress")
    }

    fn decompress(&mut self, block: &[u8], dst: &mut [u8]) -> usize {
        lz4_flex::block::decompress_into(block, dst).expect("lz4_flex decompress")
    }
}
