//! [`Acomp`]: the transform, by name or with typed parameters, and its calls.

use std::fmt;
use std::io::{IoSlice, IoSliceMut};

use crate::alg::Algorithm;
use crate::alg::lz4::Lz4;
use crate::alg::zstd::Zstd;
use crate::pool::{RequestKind, WorkspacePool};
use crate::request::Request;
use crate::route::route;
use crate::segment;
use crate::transform::Transform;
use crate::{Error, Lz4Params, Segment, Stats, Walk, ZstdParams};

/// A compression transform: the counterpart of the kernel's `struct crypto_acomp`.
///
/// Allocate it once by algorithm name, then send it requests from any number of threads:
/// it is `Send + Sync`, and behind it sit per-CPU workspaces, so that memory grows with the
/// number of CPUs, not of threads. A request whose source and destination are each one
/// fragment takes the one-shot path; any other takes the stream path, set up only then.
///
/// ```
/// use std::io::{IoSlice, IoSliceMut};
///
/// let tfm = acomp::Acomp::new("zstd")?;
/// let page = [7u8; 4096];
/// let mut frame = [0u8; 4096];
/// let n = tfm.compress(&[IoSlice::new(&page)], &mut [IoSliceMut::new(&mut frame)])?;
///
/// // Decompress into two fragments: the stream path.
/// let (mut a, mut b) = ([0u8; 1000], [0u8; 3096]);
/// let mut dst = [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)];
/// assert_eq!(tfm.decompress(&[IoSlice::new(&frame[..n])], &mut dst)?, 4096);
/// assert!(a.iter().chain(&b).all(|&x| x == 7));
/// # Ok::<(), acomp::Error>(())
/// ```
pub struct Acomp {
    pub(crate) inner: Box<dyn Transform>,
}

/// Which algorithm a transform runs ([`Acomp::codec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// zstd ([`Acomp::with_zstd`], `"zstd"`).
    Zstd,
    /// lz4 raw blocks ([`Acomp::with_lz4`], `"lz4"`).
    Lz4,
    /// An algorithm of one's own (feature `unstable-algorithm`, `Acomp::with_algorithm`).
    Custom,
}

impl fmt::Debug for Acomp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acomp")
            .field("alg", &self.inner.name())
            .finish_non_exhaustive()
    }
}

impl Acomp {
    /// Allocates a transform by algorithm name, as `crypto_alloc_acomp(name, 0, 0)` does:
    /// `"zstd"` is zstd with [`ZstdParams::default`] (level 3, the kernel's
    /// `ZSTD_DEF_LEVEL`).
    /// `"lz4"` is lz4 with [`Lz4Params::default`] (raw blocks, acceleration 1).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownAlgorithm`] (`EINVAL`) for any other name; [`Error::NoMemory`] where
    /// the first workspace cannot be allocated.
    pub fn new(name: &str) -> Result<Acomp, Error> {
        match name {
            "zstd" => Acomp::with_zstd(ZstdParams::default()),
            "lz4" => Acomp::with_lz4(Lz4Params::default()),
            _ => Err(Error::UnknownAlgorithm {
                name: name.to_owned(),
            }),
        }
    }

    /// A zstd transform with these parameters.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] (`EINVAL`) for a level or window limit out of range;
    /// [`Error::NoMemory`].
    pub fn with_zstd(params: ZstdParams) -> Result<Acomp, Error> {
        Acomp::from_algorithm(Zstd::new(params)?)
    }

    /// An lz4 transform with these parameters: raw LZ4 blocks, as the kernel's
    /// `crypto/lz4.c` writes them (`"lz4"` is [`Lz4Params::default`]: acceleration 1, the
    /// kernel's `LZ4_compress_default`; requests of up to 64 MiB,
    /// [`Lz4Params::request_max`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] (`EINVAL`) for an acceleration or request limit out of
    /// range; [`Error::NoMemory`].
    pub fn with_lz4(params: Lz4Params) -> Result<Acomp, Error> {
        Acomp::from_algorithm(Lz4::new(params)?)
    }

    /// A transform over any [`Algorithm`]: an algorithm of one's own
    /// behind the same calls, workspaces and counters.
    ///
    /// Only with the cargo feature `unstable-algorithm`, outside semver: see
    /// [`alg`](crate::alg).
    ///
    /// # Errors
    ///
    /// [`Error::NoMemory`] where the first workspace cannot be allocated.
    #[cfg(feature = "unstable-algorithm")]
    pub fn with_algorithm<A: Algorithm>(alg: A) -> Result<Acomp, Error> {
        Acomp::from_algorithm(alg)
    }

    fn from_algorithm<A: Algorithm>(alg: A) -> Result<Acomp, Error> {
        Ok(Acomp {
            inner: Box::new(WorkspacePool::new(alg)?),
        })
    }

    /// The algorithm's name, e.g. `"zstd"`, as [`Acomp::new`] knows it.
    pub fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// Which algorithm the transform runs: to branch on it without comparing names.
    ///
    /// ```
    /// use acomp::{Acomp, Codec};
    ///
    /// assert_eq!(Acomp::new("zstd")?.codec(), Codec::Zstd);
    /// assert_eq!(Acomp::new("lz4")?.codec(), Codec::Lz4);
    /// # Ok::<(), acomp::Error>(())
    /// ```
    pub fn codec(&self) -> Codec {
        self.inner.codec()
    }

    /// Compresses the source fragments (`slen` bytes in all) into the destination fragments
    /// (`dlen` bytes), as `crypto_acomp_compress` does. Returns the bytes written: the
    /// output is that many bytes at the front of the destination fragments, in order. An
    /// empty source gives a valid frame of empty content. The frame is the same however
    /// either side is cut. Like zstd, compression may leave a few bytes past the frame in a
    /// destination with room to spare.
    ///
    /// # Errors
    ///
    /// - [`Error::NoSpace`] (`ENOSPC`) where the frame (or lz4 block) does not fit `dlen`
    ///   bytes, with `needed` its exact size (finished in scratch memory to learn it; on
    ///   every cut the same). `needed` is `None` only where zstd's early rejection refused
    ///   the source without compressing ([`ZstdParams::early_rejection`], off by default).
    /// - [`Error::InvalidParameter`] (`EINVAL`), lz4 only: a source over the request limit,
    ///   [`Lz4Params::request_max`] (64 MiB by default), on every cut.
    /// - [`Error::NoMemory`] (`ENOMEM`).
    pub fn compress(
        &self,
        src: &[IoSlice<'_>],
        dst: &mut [IoSliceMut<'_>],
    ) -> Result<usize, Error> {
        route(src, dst, |req| {
            self.inner.request(RequestKind::Compress, req)
        })
    }

    /// Decompresses the source fragments (one or more concatenated frames; skippable frames
    /// are skipped) into the destination fragments, as `crypto_acomp_decompress` does.
    /// Returns the bytes written: the output is that many bytes at the front of the
    /// destination fragments, in order. A destination exactly as large as the output
    /// suffices. The outcome never depends on how either side is cut into fragments.
    ///
    /// # Errors
    ///
    /// - [`Error::NoSpace`] (`ENOSPC`): the output does not fit; the rest of the source was
    ///   still decoded (into scratch memory) to check it, and `needed` says how large a
    ///   destination would succeed. That costs as much as decompressing the whole source.
    /// - [`Error::Corrupt`], [`Error::Truncated`] (`EBADMSG`): corrupt input: a bad or
    ///   truncated frame, a block over the block maximum, content that disagrees with the
    ///   declared content size, a checksum mismatch, bytes after the last frame, a frame
    ///   that needs a dictionary. A change inside a block's content is caught only where
    ///   the frame carries a checksum: without one it may decode as `Ok` with other bytes
    ///   (the crate docs, "The contract").
    ///   [`Error::TrailingBytes`] for bytes after the last frame that are no frame. lz4: a
    ///   block that breaks the format, at every destination size.
    /// - [`Error::EmptySource`], [`Error::WindowTooLarge`] (`EINVAL`); lz4:
    ///   [`Error::InvalidParameter`] for a source over `LZ4_compressBound` of the request
    ///   limit, or a block whose content is over it ([`Lz4Params::request_max`], 64 MiB by
    ///   default), on every cut.
    /// - [`Error::NoMemory`] (`ENOMEM`).
    ///
    /// Where the source has several faults, `EBADMSG` wins over `EINVAL`, which wins over
    /// `ENOSPC` (the crate docs, "The contract").
    #[inline]
    pub fn decompress(
        &self,
        src: &[IoSlice<'_>],
        dst: &mut [IoSliceMut<'_>],
    ) -> Result<usize, Error> {
        route(src, dst, |req| {
            self.inner.request(RequestKind::Decompress, req)
        })
    }

    /// Reads a byte range of a compressed extent: decompresses the first frame of the source
    /// into `segments`, each at its byte offset of the frame's content, as btrfs's
    /// `zstd_decompress_bio` fills a bio's pages. Returns how many decompressed bytes landed
    /// in the segments. A source in zstd's seekable format (one that ends with a seek table,
    /// as [`compress_seekable_to_vec`](Acomp::compress_seekable_to_vec) and pyzstd's
    /// `SeekableZstdFile` write it) is read as one extent of all its frames' content:
    /// only the frames the segments touch are decoded (below).
    ///
    /// - Segments are sorted by offset and do not overlap; gaps between them, and before the
    ///   first, are allowed. Output that falls there goes to a small scratch buffer of the
    ///   workspace. zstd's streaming decoder decodes each block into its own window buffer
    ///   and copies the output out of it, into the segments or the scratch buffer (as btrfs
    ///   copies out of its workspace into the bio's pages).
    /// - **What a read costs.** zstd decodes a frame from its start and a block at a time:
    ///   a read decodes every byte of its frame before its last segment's end, and the rest
    ///   of the block that holds it. With the default 128 KiB blocks a 4 KiB read of a
    ///   128 KiB extent decodes the whole extent, whatever its offset. Two ways out:
    ///   [`ZstdParams::block_size_max`] (page-sized blocks: a read of page `k` decodes
    ///   pages `0..=k`, and small blocks decode slower) and the seekable format (a read
    ///   decodes only the frames it touches). Measured on 128 KiB extents of system
    ///   libraries and data (BENCHMARKS.md, "Seekable extents"), random 4 KiB reads against
    ///   one frame per extent: 4 KiB blocks 0.78x the time at a compression ratio 1.6%
    ///   lower; seekable frames of 16 KiB 0.20x at 7.9% lower, 24 KiB 0.24x at 6.9% lower,
    ///   32 KiB 0.30x at 5.2% lower.
    /// - Once the last segment is full, decoding stops early where the frame's content goes
    ///   on past it (known from the declared content size or, without one, from one more
    ///   byte of output): the rest of the extent is then not decoded (nor checked). Where
    ///   the segments reach the content's end, the frame is decoded to its end and checked
    ///   (last block, checksum, content size) as [`decompress`](Acomp::decompress) does.
    /// - **Checked reads.** With [`ZstdParams::checksum`]`(true)` a read never stops early:
    ///   each frame it touches is decoded to its end and checked as `decompress` checks it
    ///   (its checksum, content size, and a seek table's checksum where the table has
    ///   them), so that a change inside the frame is `EBADMSG` but for one in 2^32, as the
    ///   crate docs' contract says. That costs the rest of the frame: with the seekable
    ///   format, the rest of the frames it touches only.
    /// - If the content ends before the segments do, the rest of them is zero-filled (as
    ///   btrfs does), and the zero fill is not counted in the result.
    /// - Bytes after the first frame (an extent padded to its sector size) are ignored;
    ///   skippable frames before it are skipped (a source of skippable frames only delivers
    ///   nothing, and the segments are zero-filled). A seekable source must end with its
    ///   table: padded, it reads as its first frame.
    /// - A seekable source's table is checked whole on every read: its frame (magic, size,
    ///   descriptor), its entries' compressed sizes against the source, each frame's header
    ///   against its entry's content size where the header declares one (acomp's frames
    ///   do). A frame that declares none (zstd's C writer and pyzstd write them so) is held
    ///   to its entry only where a read decodes it to its end; its entry also places every
    ///   frame after it. Unchecked, the reads decode nothing of the frames they do not
    ///   touch. For many reads of one source, parse the table once
    ///   ([`SeekTable`](crate::SeekTable), [`decompress_seekable`](Acomp::decompress_seekable)).
    /// - **What an unchecked read cannot see** (the default parameters): anything past the
    ///   point where it stops (the rest of the frame: a fault there, a frame longer than its
    ///   header or entry says), a change inside the content that keeps the format valid
    ///   (there is no checksum to check), and, in a seekable source, an entry before the
    ///   read that lies about the size of a frame that declares none: the read returns the
    ///   right frame's bytes at the wrong place (a read that reaches that frame's end sees
    ///   it, as does a checked read). What it always sees: every fault of the frame header,
    ///   of the blocks it decodes, and of the seek table's structure and declared sizes.
    /// - **What a checked read adds** on a seekable source: before the frames it touches, it
    ///   decodes every earlier frame whose header declares no content size, to confirm its
    ///   entry (a read at the end of a C- or pyzstd-written file decodes the whole file; a
    ///   verified [`SeekTable`](crate::SeekTable) pays this once). A lie is `EBADMSG`, even
    ///   where two entries' lies cancel out.
    /// - The first frame's header is always checked, even with no segments to fill.
    /// - After any error the segments are zero-filled: no partial output is left in them.
    /// - Zero-length segments count for the order too: one inside another segment is
    ///   `EINVAL`.
    ///
    /// ```
    /// use std::io::{IoSlice, IoSliceMut};
    /// use acomp::{Acomp, Segment};
    ///
    /// let tfm = Acomp::new("zstd")?;
    /// let extent: Vec<u8> = (0..65536u32).map(|i| (i / 256) as u8).collect();
    /// let mut frame = vec![0u8; 65536];
    /// let n = tfm.compress(&[IoSlice::new(&extent)], &mut [IoSliceMut::new(&mut frame)])?;
    ///
    /// // Two pages, with a cached page between them.
    /// let (mut a, mut b) = ([0u8; 4096], [0u8; 4096]);
    /// let mut segs = [Segment::new(8192, &mut a), Segment::new(16384, &mut b)];
    /// assert_eq!(tfm.decompress_range(&[IoSlice::new(&frame[..n])], &mut segs)?, 8192);
    /// assert_eq!(&a[..], &extent[8192..12288]);
    /// assert_eq!(&b[..], &extent[16384..20480]);
    /// # Ok::<(), acomp::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidParameter`] (`EINVAL`): segments out of order or overlapping.
    /// - [`Error::EmptySource`], [`Error::WindowTooLarge`] (`EINVAL`); lz4, which has no
    ///   range reads: [`Error::InvalidParameter`].
    /// - [`Error::Corrupt`], [`Error::Truncated`], [`Error::TrailingBytes`] (`EBADMSG`):
    ///   corrupt or truncated input met before the read stops (above). A first frame whose
    ///   window is over the limit is not decoded: its structure is read to its end, and a
    ///   fault there is `EBADMSG` rather than `WindowTooLarge`. A seek table that breaks the
    ///   format (reserved descriptor bits, more than 2^27 frames, a frame over 1 GiB of
    ///   content, no skippable frame of its size around it) or contradicts its frames.
    /// - [`Error::NoMemory`] (`ENOMEM`).
    pub fn decompress_range(
        &self,
        src: &[IoSlice<'_>],
        segments: &mut [Segment<'_>],
    ) -> Result<usize, Error> {
        let kind = RequestKind::Range;
        let mut walk = Walk::new(src, &mut []);
        let refusal = segment::validate(segments)
            .err()
            .or_else(|| kind.refusal(walk.slen()));
        let res = match refusal {
            None => self.inner.range(&mut walk, segments),
            Some(e) => Err(self.inner.refuse(kind, e)),
        };
        // Outside the workspace lock: the zero fill past the content's end; after an
        // error, of all the segments (no partial output is left in them).
        let end = res.as_ref().map_or(0, |&end| end);
        let delivered = segment::finish(segments, end);
        res.map(|_| delivered)
    }

    /// Compresses a batch of requests, each as [`compress`](Acomp::compress) would alone
    /// (its [`Request::outcome`] and [`Request::path`] say how it went), on one workspace
    /// with one CPU lookup and one lock for up to 16 requests or 64 KiB of source at a time:
    /// the kernel's batching of a large folio's pages (zswap's `zswap_compress` over a
    /// folio). No thread is started: to spread a folio over CPUs, send several batches from
    /// several threads. The counters count each request once, after the batch. Each
    /// request's errors are [`compress`](Acomp::compress)'s, lz4's request limit included.
    pub fn compress_batch(&self, reqs: &mut [Request<'_, '_>]) {
        self.inner.batch(RequestKind::Compress, reqs);
    }

    /// Decompresses a batch of requests, each as [`decompress`](Acomp::decompress) would
    /// alone (the same errors), in the same way as [`compress_batch`](Acomp::compress_batch).
    pub fn decompress_batch(&self, reqs: &mut [Request<'_, '_>]) {
        self.inner.batch(RequestKind::Decompress, reqs);
    }

    /// The largest frame compressing `slen` bytes can give, in bytes (for zstd,
    /// `ZSTD_compressBound`; for lz4, `LZ4_compressBound`): a destination this large never
    /// fails with `ENOSPC`, however it is cut. For lz4, `usize::MAX` where `slen` is over
    /// the request limit ([`Lz4Params::request_max`]): no destination takes it (`EINVAL`).
    ///
    /// ```
    /// let tfm = acomp::Acomp::new("zstd")?;
    /// assert_eq!(tfm.compress_bound(4096), 4174);
    /// # Ok::<(), acomp::Error>(())
    /// ```
    pub fn compress_bound(&self, slen: usize) -> usize {
        self.inner.compress_bound(slen)
    }

    /// The content size (bytes) the source's first frame declares in its header, read
    /// across fragments without decoding anything; skippable frames before it are skipped.
    /// For a source in zstd's seekable format, the sum of its seek table's content sizes,
    /// after the checks a range read makes of the table (in
    /// [`decompress_range`](Acomp::decompress_range)).
    /// `Ok(None)` where the header does not declare it (zstd's `ZSTD_c_contentSizeFlag` off,
    /// as in frames the kernel writes), or no frame follows the skippable ones. Nothing is
    /// checked past the header, nor counted in [`stats`](Acomp::stats).
    ///
    /// # Errors
    ///
    /// [`Error::EmptySource`] (`EINVAL`); [`Error::Corrupt`], [`Error::Truncated`],
    /// [`Error::TrailingBytes`] (`EBADMSG`) for a header that is not valid or is cut short,
    /// or a seek table that breaks the format or contradicts its frames.
    /// The window is not checked: a header over the window limit gives its content size.
    pub fn content_size(&self, src: &[IoSlice<'_>]) -> Result<Option<u64>, Error> {
        let mut walk = Walk::new(src, &mut []);
        if walk.slen() == 0 {
            return Err(Error::EmptySource);
        }
        self.inner.content_size(&mut walk)
    }

    /// A snapshot of the transform's counters (each read on its own, without stopping
    /// requests). Reading the workspaces' sizes briefly locks each filled workspace.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }
}
