//! A compression service in the style of the Linux kernel's `crypto_acomp` API, with zstd
//! as its first algorithm.
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
//! | `struct acomp_walk` | [`Walk`] |
//! | `struct crypto_acomp_streams` | per-CPU workspace slots, filled on first use |
//! | `zstd_compress_one` / `zstd_decompress_one` | the one-shot path ([`Path::OneShot`]) |
//! | `zstd_init_cstream` / `zstd_init_dstream`, deferred | the stream path ([`Path::Stream`]) |
//! | btrfs `zstd_decompress_bio`, straight into the bio's pages | [`Acomp::decompress_range`] into [`Segment`]s |
//!
//! # The contract
//!
//! - Fragmentation never changes the outcome: the same source bytes and destination
//!   capacity give the same output bytes or the same error kind, however either side is cut.
//! - Errors come in four kinds ([`Error::errno`]): `ENOSPC` (a larger destination could
//!   succeed), `EBADMSG` (corrupt input: no destination could), `EINVAL` (invalid request
//!   or parameters, an empty source to decompress, a frame window over the limit),
//!   `ENOMEM`. Never success with partial or wrong output.
//! - A source may hold several frames and skippable frames; the output is the frames'
//!   content in order. A destination exactly as large as the output succeeds.
//! - Decompression writes nothing past its output: after `Ok(n)`, the destination bytes past
//!   `n` are as the caller left them.
//! - After any error, the workspace that saw it is reset before it serves again.
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
#![deny(missing_docs, missing_debug_implementations)]
// The compiler fences `unsafe`: only `sys` may hold it, every block with its SAFETY list.
#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod acomp;
pub mod alg;
mod cpu;
mod error;
mod segment;
mod streams;
#[allow(unsafe_code)]
mod sys;
mod walk;

pub use crate::acomp::{Acomp, Stats};
pub use crate::alg::lz4::Lz4Params;
pub use crate::alg::zstd::ZstdParams;
pub use crate::alg::{Algorithm, Path};
pub use crate::error::Error;
pub use crate::segment::Segment;
pub use crate::walk::Walk;

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
}
