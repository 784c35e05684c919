//! A compression service in the style of the Linux kernel's `crypto_acomp` API: zstd and
//! lz4 over scatter-gather requests, with per-CPU workspaces.
//!
//! Allocate an [`Acomp`] by algorithm name once, then send it requests from any thread:
//! compress or decompress from a source scatter-gather list (`&[IoSlice]`) into a
//! destination one (`&mut [IoSliceMut]`). Behind the transform sit per-CPU workspaces.
//!
//! | kernel | acomp |
//! | --- | --- |
//! | `crypto_alloc_acomp("zstd", 0, 0)` | [`Acomp::new("zstd")`](Acomp::new), [`Acomp::with_zstd`] |
//! | `crypto_alloc_acomp("lz4", 0, 0)`, raw LZ4 blocks (zram, zswap) | [`Acomp::new("lz4")`](Acomp::new), [`Acomp::with_lz4`] |
//! | `crypto_acomp_compress(req)`, `dlen` = bytes produced | [`Acomp::compress`] `-> Result<usize, Error>` |
//! | `struct acomp_walk` | `alg::Walk`, for algorithm writers (feature `unstable-algorithm`, below) |
//! | `struct crypto_acomp_streams` | the workspace pool: per-CPU workspace slots, filled on first use |
//! | `zstd_compress_one` / `zstd_decompress_one` | the one-shot path ([`RequestPath::OneShot`]) |
//! | `zstd_init_cstream` / `zstd_init_dstream`, deferred | the stream path ([`RequestPath::Stream`]) |
//! | btrfs `zstd_decompress_bio`, into the bio's pages at an offset | [`Acomp::decompress_range`] into [`Segment`]s |
//! | zstd's seekable format (`contrib/seekable_format`), pyzstd's `SeekableZstdFile` | [`Acomp::compress_seekable_to_vec`], [`Acomp::compress_seekable`]; range reads decode only the frames they touch; a table parsed once for many reads: [`SeekTable`] (`ZSTD_seekable`), [`Acomp::decompress_seekable`], [`Acomp::verify_seek_table`] |
//! | `LZ4_decompress_safe` on one buffer, no transform | [`lz4::decompress_block`], [`lz4::block_content_size`] |
//!
//! # The contract
//!
//! - Fragmentation never changes the outcome: the same source bytes and destination
//!   capacity give the same output bytes or the same error kind, however either side is cut.
//! - Errors come in four kinds ([`Error::kind`], [`Error::errno`]): `ENOSPC` (a larger
//!   destination could succeed; `needed` says how large; a compression refused by early
//!   rejection, off by default, is `Error::Incompressible`), `EBADMSG` (corrupt input: no
//!   destination could), `EINVAL` (invalid request or parameters, an empty source to
//!   decompress, a frame window over the limit), `ENOMEM`. Never success with partial
//!   output: on `Ok(n)` all of every frame was decoded and checked as far as the format
//!   allows (below).
//! - **What corruption is caught.** Every frame that breaks zstd's format is `EBADMSG`:
//!   bad or truncated headers and blocks, a block over the block maximum, content that
//!   disagrees with the declared content size, bytes after the last frame
//!   ([`Error::TrailingBytes`]), a missing dictionary. A change *inside* a block's content that keeps the format valid is caught
//!   only by a checksum: **with the default parameters (no checksum) such a frame can
//!   decode as `Ok` with other bytes** (in a raw block always; in a compressed block
//!   whenever zstd's entropy decoders do not trip on it), of the declared length where the
//!   header declares the content size (the default), of any length where it does not
//!   ([`ZstdParams::content_size`]`(false)`). With
//!   [`ZstdParams::checksum`]`(true)` every frame ends with XXH64 of its content (the low
//!   32 bits), and any such change is `EBADMSG` but for one in 2^32 (a range read too:
//!   with the checksum on, it decodes each frame it touches to its end, and in a seekable
//!   source confirms every seek table entry it depends on, so that it never returns a
//!   frame's bytes at the wrong place, whoever wrote the file). A range read without the
//!   checksum sees nothing past the point where it stops ([`Acomp::decompress_range`]
//!   lists what it cannot see). The checksum costs
//!   about 4,100 instructions per 4 KiB page each way (XXH64 runs at about one
//!   instruction a byte) and 4 bytes per frame; it is off by default, as in the kernel's
//!   zstd, zram and zswap, whose pages never leave memory. Turn it on where frames cross
//!   a disk, a network or anything else that may change them.
//! - **Several faults: the one no destination and no parameter could change wins.**
//!   `EBADMSG` before `EINVAL` before `ENOSPC`; among faults of one kind, the first in the
//!   order acomp reads the source (frame header, then each block header and block, then
//!   the checksum, then the next frame). So `ENOSPC` comes only for a source that is
//!   otherwise valid, and `WindowTooLarge` only for one whose structure is sound: a frame
//!   whose window is over the limit is not decoded (that is what the limit is for), but its
//!   header, block headers, length and declared content size are checked, and the frames
//!   after it decoded, before `EINVAL`. A fault inside such a frame that only decoding
//!   shows (a corrupt entropy stream, a checksum) stays unseen until the limit admits it.
//!   The same on every path and cut; a range read weighs its first frame only (of a
//!   seekable source, its seek table and the frames it touches), and
//!   [`Acomp::content_size`] reads the header only (never `EINVAL` for the window).
//! - A source may hold several frames and skippable frames; the output is the frames'
//!   content in order. A destination exactly as large as the output succeeds.
//! - Decompression writes nothing past its output: after `Ok(n)`, the destination bytes past
//!   `n` are as the caller left them.
//! - After any error, the workspace that saw it is reset before it serves again.
//!
//! Sizes: byte counts of buffers in memory are `usize` (source and destination lengths,
//! results, `capacity`); positions and sizes in a frame's content, which may exceed what
//! memory holds, are `u64` ([`Segment`] offsets, a declared content size, `needed`).
//!
//! ```
//! use std::io::{IoSlice, IoSliceMut};
//!
//! let tfm = acomp::Acomp::new("zstd")?;
//! let page = b"hello, hello, hello, page".repeat(100);
//! let mut frame = vec![0u8; 4096];
//! let n = tfm.compress(&[IoSlice::new(&page)], &mut [IoSliceMut::new(&mut frame)])?;
//! let mut back = vec![0u8; page.len()];
//! let m = tfm.decompress(&[IoSlice::new(&frame[..n])], &mut [IoSliceMut::new(&mut back)])?;
//! assert_eq!(&back[..m], &page[..]);
//! # Ok::<(), acomp::Error>(())
//! ```
//!
//! # A page cache
//!
//! What a swap or cache layer does with each 4 KiB page, as the kernel's zswap does it:
//! same-filled pages are kept as their value (no compression at all); a page is compressed
//! into a one-page destination, and one that does not fit (`ENOSPC`: it does not compress)
//! is kept as it is; a load decompresses into exactly one page.
//! [`Acomp::compress_bound`] gives the destination that never fails, where a frame is
//! wanted whatever it costs.
//!
//! ```
//! use acomp::{Acomp, Error, ErrorKind, ZstdParams};
//!
//! const PAGE: usize = 4096;
//!
//! enum Stored {
//!     Same(u64),
//!     Raw(Box<[u8]>),
//!     Frame(Box<[u8]>),
//! }
//!
//! fn store(tfm: &Acomp, page: &[u8]) -> Result<Stored, Error> {
//!     let first = u64::from_ne_bytes(page[..8].try_into().unwrap());
//!     if page.chunks_exact(8).all(|w| w == &page[..8]) {
//!         return Ok(Stored::Same(first));
//!     }
//!     let mut frame = [0u8; PAGE];
//!     match tfm.compress_to_buffer(page, &mut frame) {
//!         Ok(n) => Ok(Stored::Frame(frame[..n].into())),
//!         Err(e) if e.kind() == ErrorKind::NoSpace => Ok(Stored::Raw(page.into())),
//!         Err(e) => Err(e),
//!     }
//! }
//!
//! fn load(tfm: &Acomp, stored: &Stored, page: &mut [u8]) -> Result<(), Error> {
//!     match stored {
//!         Stored::Same(word) => page
//!             .chunks_exact_mut(8)
//!             .for_each(|w| w.copy_from_slice(&word.to_ne_bytes())),
//!         Stored::Raw(raw) => page.copy_from_slice(raw),
//!         Stored::Frame(frame) => {
//!             tfm.decompress_to_buffer(frame, page)?;
//!         }
//!     }
//!     Ok(())
//! }
//!
//! // Checksums on: a frame that changed in memory loads as an error, or, where the change
//! // is to a header bit the decoder does not use, as the page itself; as another page only
//! // for one change in 2^32 (the checksum is 32 bits).
//! let tfm = Acomp::with_zstd(ZstdParams::default().checksum(true))?;
//! let text = b"a page of text, ".repeat(PAGE / 16);
//! let pages = [vec![0u8; PAGE], text, (0..PAGE).map(|i| (i * 7919 % 251) as u8).collect()];
//! for page in &pages {
//!     let stored = store(&tfm, page)?;
//!     let mut back = vec![0u8; PAGE];
//!     load(&tfm, &stored, &mut back)?;
//!     assert_eq!(&back, page);
//! }
//! # Ok::<(), acomp::Error>(())
//! ```
//!
//! libzstd's and liblz4's C code (and acomp's own lz4 decoder) is compiled at the
//! optimisation level of the profile that builds it: a debug build of a crate that depends on acomp runs them unoptimised, several
//! times slower. Put this in the dependent crate's `Cargo.toml` (the test profile inherits it):
//!
//! ```toml
//! [profile.dev.package.zstd-sys]
//! opt-level = 3
//!
//! [profile.dev.package.lz4-sys]   # where you use "lz4"
//! opt-level = 3
//!
//! [profile.dev.package.acomp]     # where you use "lz4": its decoder is Rust
//! opt-level = 3
//! ```
//!
//! # Stability
//!
//! The stable API, under semver from 0.1.0: [`Acomp`] (the constructors [`new`](Acomp::new),
//! [`with_zstd`](Acomp::with_zstd), [`with_lz4`](Acomp::with_lz4) and every request call),
//! [`ZstdParams`], [`Lz4Params`], [`Dictionary`], [`Request`], [`Segment`], [`Stats`],
//! [`RequestPath`], [`Error`], [`ErrorKind`], and the modules [`lz4`] (the block functions
//! [`decompress_block`](lz4::decompress_block) and
//! [`block_content_size`](lz4::block_content_size), the limits of `Lz4Params`) and
//! [`zstd`] (the level and window ranges and defaults). Match errors by variant or kind:
//! the wording of their messages may improve in any release.
//!
//! The extension point is not part of it: the module `acomp::alg` (the `Algorithm` trait
//! with its performance hooks such as `STATELESS_ONE_SHOT`, the fragment cursor `Walk`,
//! the algorithm types `Zstd` and `Lz4` and their workspaces) and
//! `Acomp::with_algorithm` exist only with the cargo feature `unstable-algorithm`, and
//! any release may change them. They serve an algorithm of one's own behind the same
//! contract, workspaces and counters (a hardware accelerator, as the kernel's acomp serves
//! one); pin an exact version (`acomp = "=0.1.0"`) where you use them.
#![deny(missing_docs, missing_debug_implementations)]
// The compiler fences `unsafe`: only `sys` may hold it, every block with its SAFETY list.
#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod acomp;
// The extension point, outside semver: public only with the feature (see its docs).
#[cfg(feature = "unstable-algorithm")]
pub mod alg;
#[cfg(not(feature = "unstable-algorithm"))]
mod alg;
mod buffers;
mod cpu;
mod error;
pub mod lz4;
mod pool;
mod probe;
mod request;
mod request_path;
mod route;
mod seekable;
mod segment;
mod stats;
#[allow(unsafe_code)]
mod sys;
mod transform;
mod walk;
pub mod zstd;

pub use crate::acomp::{Acomp, Codec};
pub use crate::alg::lz4::params::Lz4Params;
pub use crate::alg::zstd::dictionary::Dictionary;
pub use crate::alg::zstd::params::ZstdParams;
pub use crate::alg::zstd::seekable::kept::SeekTable;
pub use crate::error::{Error, ErrorKind};
// A caller learns the path of a request from `Request::path`.
pub use crate::request::Request;
pub use crate::request_path::RequestPath;
pub use crate::segment::Segment;
pub use crate::stats::Stats;
pub(crate) use crate::walk::Walk;

/// Without the `unstable-algorithm` feature, the extension point cannot be named:
///
/// ```compile_fail
/// fn f(_: &acomp::alg::Walk<'_, '_>) {}
/// ```
///
/// ```compile_fail
/// let _ = acomp::Acomp::with_algorithm::<acomp::alg::zstd::Zstd>;
/// ```
#[cfg(all(doctest, not(feature = "unstable-algorithm")))]
struct ExtensionPointIsGated;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// Compile-time proof that the public types can be shared across threads.
fn _assert_send_sync() {
    fn assert<T: Send + Sync>() {}
    assert::<Acomp>();
    assert::<Error>();
    assert::<Stats>();
    assert::<ZstdParams>();
    assert::<Dictionary>();
    assert::<SeekTable>();
}
