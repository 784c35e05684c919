//! 4 KiB requests: acomp against what a Rust user would pick instead, and against the
//! kernel's pattern before "crypto: zstd - avoid redundant cstream/dstream initialization".
//!
//! Groups `compress` and `decompress`; in each, every variant runs on the same pages (see
//! `acomp_pages::kinds`), ids `<variant>/<page>`, throughput 4096 bytes. The decompress group
//! decompresses, for every variant, the frame `Acomp::compress` wrote of the page (level 3,
//! content size in the header). Every peer runs at level 3.
//!
//! ```text
//! cargo bench --bench acomp_4k                          # criterion, then the tables
//! cargo bench --bench acomp_4k -- --warm-up-time 1 --measurement-time 3
//! ACOMP_INTERLEAVED=1 cargo bench --bench acomp_4k      # variants interleaved, tables
//! ACOMP_CALLGRIND=decompress/acomp-one-shot/text valgrind --tool=callgrind \
//!     --toggle-collect='*callgrind_loop*' target/release/deps/acomp_4k-<hash>
//! ```
//!
//! The lz4 groups (`lz4-compress`, `lz4-decompress`, variants in `lz4/mod.rs`) run the
//! same way: `cargo bench --bench acomp_4k -- lz4`, `ACOMP_CALLGRIND=lz4-decompress/lz4-one-shot/text`.
//!
//! `acomp-dict` is acomp one-shot with a 64 KiB dictionary trained on a live Python
//! process's heap pages; the `heap` page, of the same process but not among the samples, is
//! its case: compare `ACOMP_CALLGRIND=compress/acomp-dict/heap` with
//! `compress/acomp-one-shot/heap` (see `acomp_pages::kinds`).
//!
//! In callgrind mode the bench runs `ACOMP_CALLGRIND_N` (default 10000) requests of one
//! variant inside `callgrind_loop`, after a warm-up outside it: the instructions callgrind
//! collects, divided by N, are the instructions per request.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hint::black_box;
use std::io::{IoSlice, IoSliceMut};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use acomp::Acomp;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use zstd_safe::zstd_sys;
use zstd_safe::{CCtx, CParameter, DCtx};

mod harness;
mod lz4;

use acomp_pages::PAGE_SIZE as PAGE;
use acomp_pages::kinds as pages;
use harness::Variant;

/// The level every variant compresses at: the kernel's `ZSTD_DEF_LEVEL`, acomp's default.
const LEVEL: i32 = 3;

/// The variants, in the order of the tables.
const VARIANTS: [&str; 10] = [
    AcompOneShot::NAME,
    AcompBatch::NAME,
    AcompBuffer::NAME,
    AcompChecksum::NAME,
    AcompDict::NAME,
    AcompTwoFragments::NAME,
    Floor::NAME,
    ZstdBulk::NAME,
    ZstdThreadLocal::NAME,
    OldPattern::NAME,
];

/// acomp, one fragment each side: the one-shot path, on the persistent CCtx/DCtx of the
/// current CPU's workspace (the kernel's `zstd_compress_one` / `zstd_decompress_one`).
struct AcompOneShot(Arc<Acomp>);

impl Variant for AcompOneShot {
    const NAME: &'static str = "acomp-one-shot";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        let src = [IoSlice::new(page)];
        self.0
            .compress(&src, &mut [IoSliceMut::new(dst)])
            .expect("acomp compress")
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        let src = [IoSlice::new(frame)];
        self.0
            .decompress(&src, &mut [IoSliceMut::new(dst)])
            .expect("acomp decompress")
    }
}

/// Requests in one batch of [`AcompBatch`].
const BATCH: usize = 16;

/// acomp's batch calls: [`BATCH`] one-page requests of the same page in one
/// `compress_batch` / `decompress_batch` (one CPU lookup, one lock). One call of this
/// variant is a whole batch: divide its time or instructions by [`BATCH`] for a page.
struct AcompBatch {
    tfm: Arc<Acomp>,
    outs: Vec<Vec<u8>>,
}

impl AcompBatch {
    fn run(&mut self, compress: bool, input: &[u8], cap: usize) -> usize {
        // On the stack, as a caller with a folio's pages would build them: no allocation.
        let src = [IoSlice::new(input)];
        let mut outs = self.outs.iter_mut();
        let mut dsts: [[IoSliceMut<'_>; 1]; BATCH] =
            std::array::from_fn(|_| [IoSliceMut::new(&mut outs.next().unwrap()[..cap])]);
        let mut dsts = dsts.iter_mut();
        let mut reqs: [acomp::Request<'_, '_>; BATCH] =
            std::array::from_fn(|_| acomp::Request::new(&src, dsts.next().unwrap()));
        if compress {
            self.tfm.compress_batch(&mut reqs);
        } else {
            self.tfm.decompress_batch(&mut reqs);
        }
        *reqs[0].outcome().unwrap().as_ref().expect("acomp batch")
    }
}

impl Variant for AcompBatch {
    const NAME: &'static str = "acomp-batch16";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        self.run(true, page, dst.len())
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        self.run(false, frame, dst.len())
    }

    fn output<'a>(&'a self, _: &'a [u8]) -> &'a [u8] {
        &self.outs[0]
    }
}

/// acomp's contiguous calls, `compress_to_buffer` / `decompress_to_buffer`: the one-shot
/// path without building the one-element fragment lists by hand.
struct AcompBuffer(Arc<Acomp>);

impl Variant for AcompBuffer {
    const NAME: &'static str = "acomp-buffer";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        self.0
            .compress_to_buffer(page, dst)
            .expect("acomp compress_to_buffer")
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        self.0
            .decompress_to_buffer(frame, dst)
            .expect("acomp decompress_to_buffer")
    }
}

/// acomp one-shot on a transform whose frames differ from the plain ones. Its decompression
/// is given its own frame of the same page (looked up by the address of the plain frame it
/// is handed: a few instructions).
struct OwnFrames {
    tfm: Acomp,
    plain: Arc<Acomp>,
    frames: Vec<(*const u8, Vec<u8>)>,
}

impl OwnFrames {
    fn new(plain: &Arc<Acomp>, params: acomp::ZstdParams) -> Self {
        OwnFrames {
            tfm: Acomp::with_zstd(params).expect("acomp zstd transform"),
            plain: plain.clone(),
            frames: Vec::new(),
        }
    }

    /// Where this transform's frame of the page that `frame` (a plain one) holds is.
    #[inline(always)]
    fn own(&mut self, frame: &[u8]) -> usize {
        let at = frame.as_ptr();
        match self.frames.iter().position(|(p, _)| *p == at) {
            Some(i) => i,
            None => {
                let mut page = vec![0; PAGE];
                let n = self.plain.decompress_to_buffer(frame, &mut page).unwrap();
                let mut own = vec![0; zstd_safe::compress_bound(PAGE)];
                let m = self.tfm.compress_to_buffer(&page[..n], &mut own).unwrap();
                own.truncate(m);
                self.frames.push((at, own));
                self.frames.len() - 1
            }
        }
    }

    #[inline(always)]
    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        self.tfm
            .compress(&[IoSlice::new(page)], &mut [IoSliceMut::new(dst)])
            .expect("acomp compress")
    }

    #[inline(always)]
    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        let i = self.own(frame);
        let src = [IoSlice::new(&self.frames[i].1)];
        self.tfm
            .decompress(&src, &mut [IoSliceMut::new(dst)])
            .expect("acomp decompress")
    }
}

/// acomp one-shot with zstd's content checksum on (`ZstdParams::checksum(true)`): what
/// catching every corruption costs.
struct AcompChecksum(OwnFrames);

impl AcompChecksum {
    fn new(plain: &Arc<Acomp>) -> Self {
        let params = acomp::ZstdParams::default().level(LEVEL).checksum(true);
        AcompChecksum(OwnFrames::new(plain, params))
    }
}

impl Variant for AcompChecksum {
    const NAME: &'static str = "acomp-xxh64";
    const CHECKSUM: bool = true;

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        self.0.compress(page, dst)
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        self.0.decompress(frame, dst)
    }
}

/// acomp one-shot with a trained dictionary (`ZstdParams::dictionary`): 64 KiB trained on
/// a Python process's heap pages (`pages::HEAP_DICT`), the `heap` page not among them.
struct AcompDict(OwnFrames);

impl AcompDict {
    fn new(plain: &Arc<Acomp>) -> Self {
        let dict = acomp::Dictionary::from_bytes(pages::HEAP_DICT).expect("the heap dictionary");
        let params = acomp::ZstdParams::default().level(LEVEL).dictionary(dict);
        AcompDict(OwnFrames::new(plain, params))
    }
}

impl Variant for AcompDict {
    const NAME: &'static str = "acomp-dict";
    const CHECKSUM: bool = true;

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        self.0.compress(page, dst)
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        self.0.decompress(frame, dst)
    }
}

/// acomp with the source in two fragments, cut in the middle: a zsmalloc object that
/// straddles a page boundary. The stream path: session reset, pledged size, then
/// `ZSTD_compressStream2` / `ZSTD_decompressStream` fragment by fragment.
struct AcompTwoFragments(Arc<Acomp>);

impl Variant for AcompTwoFragments {
    const NAME: &'static str = "acomp-2-frag";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        let (a, b) = page.split_at(page.len() / 2);
        let src = [IoSlice::new(a), IoSlice::new(b)];
        self.0
            .compress(&src, &mut [IoSliceMut::new(dst)])
            .expect("acomp compress")
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        let (a, b) = frame.split_at(frame.len() / 2);
        let src = [IoSlice::new(a), IoSlice::new(b)];
        self.0
            .decompress(&src, &mut [IoSliceMut::new(dst)])
            .expect("acomp decompress")
    }
}

/// The floor: raw zstd-safe `CCtx::compress2` / `DCtx::decompress` on contexts created
/// once and reused, nothing around them. No wrapper can do better.
struct Floor {
    cctx: CCtx<'static>,
    dctx: DCtx<'static>,
}

impl Floor {
    fn new() -> Self {
        Floor {
            cctx: level_cctx(),
            dctx: DCtx::create(),
        }
    }
}

impl Variant for Floor {
    const NAME: &'static str = "floor";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        self.cctx.compress2(dst, page).expect("ZSTD_compress2")
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        self.dctx
            .decompress(dst, frame)
            .expect("ZSTD_decompressDCtx")
    }
}

/// The `zstd` crate's one-call API, `bulk::compress` / `bulk::decompress`: a new context
/// and a new `Vec` per call. What most Rust users write. The `Vec` is kept until the next
/// call (so that the check can read it): it is freed then, as a caller would free it.
struct ZstdBulk {
    last: Vec<u8>,
}

impl Variant for ZstdBulk {
    const NAME: &'static str = "zstd-bulk";

    fn compress(&mut self, page: &[u8], _dst: &mut [u8]) -> usize {
        self.last = zstd::bulk::compress(page, LEVEL).expect("zstd::bulk::compress");
        self.last.len()
    }

    fn decompress(&mut self, frame: &[u8], _dst: &mut [u8]) -> usize {
        self.last = zstd::bulk::decompress(frame, PAGE).expect("zstd::bulk::decompress");
        self.last.len()
    }

    fn output<'a>(&'a self, _dst: &'a [u8]) -> &'a [u8] {
        &self.last
    }
}

thread_local! {
    static COMPRESSOR: RefCell<zstd::bulk::Compressor<'static>> =
        RefCell::new(zstd::bulk::Compressor::new(LEVEL).expect("zstd Compressor"));
    static DECOMPRESSOR: RefCell<zstd::bulk::Decompressor<'static>> =
        RefCell::new(zstd::bulk::Decompressor::new().expect("zstd Decompressor"));
}

/// A thread-local `zstd::bulk::Compressor` / `Decompressor`, reused, writing into the
/// caller's buffer. What careful Rust users write; memory grows with the threads.
struct ZstdThreadLocal;

impl Variant for ZstdThreadLocal {
    const NAME: &'static str = "zstd-tls";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        COMPRESSOR
            .with_borrow_mut(|c| c.compress_to_buffer(page, dst))
            .expect("Compressor::compress_to_buffer")
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        DECOMPRESSOR
            .with_borrow_mut(|d| d.decompress_to_buffer(frame, dst))
            .expect("Decompressor::decompress_to_buffer")
    }
}

/// The kernel's pattern before the patches ("crypto: zstd - avoid redundant cstream/dstream
/// initialization"): every request set the stream up on its per-CPU workspace, whether it
/// streamed or not, then the one-shot call set the context up again over the same
/// workspace. As in `crypto/zstd.c` then, on one static workspace (`wksp`):
/// - compress: `zstd_init_cstream` (`ZSTD_initStaticCStream` + `ZSTD_initCStream_advanced`),
///   then `zstd_compress_one`: `zstd_init_cctx` (`ZSTD_initStaticCCtx`) and
///   `zstd_compress_cctx` (`ZSTD_compress_advanced`);
/// - decompress: `zstd_init_dstream` (`ZSTD_initStaticDStream`), then `zstd_init_dctx`
///   (`ZSTD_initStaticDCtx`) and `zstd_decompress_dctx` (`ZSTD_decompressDCtx`).
///
/// Each static init lays the workspace out anew and runs zstd's CPU detection (`cpuid`,
/// which exits to the hypervisor in a VM); the compression then starts from cold tables.
struct OldPattern {
    params: zstd_sys::ZSTD_parameters,
    cwksp: Vec<u64>,
    dwksp: Vec<u64>,
}

impl OldPattern {
    fn new() -> Self {
        // SAFETY: these only compute sizes and parameters from their arguments.
        let (params, csize, dsize) = unsafe {
            let params = zstd_sys::ZSTD_getParams(LEVEL, 4096, 0);
            (
                params,
                zstd_sys::ZSTD_estimateCStreamSize_usingCParams(params.cParams),
                zstd_sys::ZSTD_estimateDStreamSize(1 << 17),
            )
        };
        // u64 words: zstd wants its static workspaces 8-byte aligned.
        OldPattern {
            params,
            cwksp: vec![0; csize.div_ceil(8)],
            dwksp: vec![0; dsize.div_ceil(8)],
        }
    }
}

impl Variant for OldPattern {
    const NAME: &'static str = "old-pattern";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        let (ws, size) = (self.cwksp.as_mut_ptr().cast(), self.cwksp.len() * 8);
        // SAFETY:
        // - `ws` is 8-byte aligned, `size` bytes long, and used by nothing else meanwhile;
        // - the contexts laid out in it are not used after this call;
        // - `dst` and `page` are valid for their lengths.
        let n = unsafe {
            let cstream = zstd_sys::ZSTD_initStaticCStream(ws, size);
            assert!(!cstream.is_null(), "ZSTD_initStaticCStream");
            let unknown = zstd_sys::ZSTD_CONTENTSIZE_UNKNOWN as u64;
            let r = zstd_sys::ZSTD_initCStream_advanced(
                cstream,
                std::ptr::null(),
                0,
                self.params,
                unknown,
            );
            assert_eq!(zstd_sys::ZSTD_isError(r), 0, "ZSTD_initCStream_advanced");
            let cctx = zstd_sys::ZSTD_initStaticCCtx(ws, size);
            assert!(!cctx.is_null(), "ZSTD_initStaticCCtx");
            zstd_sys::ZSTD_compress_advanced(
                cctx,
                dst.as_mut_ptr().cast(),
                dst.len(),
                page.as_ptr().cast(),
                page.len(),
                std::ptr::null(),
                0,
                self.params,
            )
        };
        // SAFETY: `ZSTD_isError` only compares its argument with a constant.
        assert_eq!(
            unsafe { zstd_sys::ZSTD_isError(n) },
            0,
            "ZSTD_compress_advanced"
        );
        n
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        let (ws, size) = (self.dwksp.as_mut_ptr().cast(), self.dwksp.len() * 8);
        // SAFETY: as in `compress`.
        let n = unsafe {
            let dstream = zstd_sys::ZSTD_initStaticDStream(ws, size);
            assert!(!dstream.is_null(), "ZSTD_initStaticDStream");
            let dctx = zstd_sys::ZSTD_initStaticDCtx(ws, size);
            assert!(!dctx.is_null(), "ZSTD_initStaticDCtx");
            zstd_sys::ZSTD_decompressDCtx(
                dctx,
                dst.as_mut_ptr().cast(),
                dst.len(),
                frame.as_ptr().cast(),
                frame.len(),
            )
        };
        // SAFETY: `ZSTD_isError` only compares its argument with a constant.
        assert_eq!(
            unsafe { zstd_sys::ZSTD_isError(n) },
            0,
            "ZSTD_decompressDCtx"
        );
        n
    }
}

/// A CCtx at [`LEVEL`]; content size and no checksum are zstd's defaults, as acomp's.
fn level_cctx() -> CCtx<'static> {
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(LEVEL))
        .expect("ZSTD_c_compressionLevel");
    cctx
}

/// Something done to each variant in turn, statically dispatched.
trait Visit {
    fn visit<V: Variant>(&mut self, v: &mut V);
}

/// All variants, the two acomp ones on one shared transform (one for zstd, one for lz4).
struct Variants {
    one_shot: AcompOneShot,
    batch: AcompBatch,
    buffer: AcompBuffer,
    checksum: AcompChecksum,
    dict: AcompDict,
    two_frag: AcompTwoFragments,
    floor: Floor,
    bulk: ZstdBulk,
    tls: ZstdThreadLocal,
    old: OldPattern,
    lz4_one_shot: lz4::Lz4OneShot,
    lz4_two_frag: lz4::Lz4TwoFragments,
    lz4_floor: lz4::Lz4Floor,
    liblz4: lz4::LibLz4,
    lz4_flex: lz4::Lz4Flex,
    scan_liblz4: lz4::ScanLibLz4,
}

impl Variants {
    fn new(tfm: &Arc<Acomp>, lz4_tfm: &Arc<Acomp>) -> Self {
        Variants {
            one_shot: AcompOneShot(tfm.clone()),
            batch: AcompBatch {
                tfm: tfm.clone(),
                outs: vec![vec![0; zstd_safe::compress_bound(PAGE)]; BATCH],
            },
            buffer: AcompBuffer(tfm.clone()),
            checksum: AcompChecksum::new(tfm),
            dict: AcompDict::new(tfm),
            two_frag: AcompTwoFragments(tfm.clone()),
            floor: Floor::new(),
            bulk: ZstdBulk { last: Vec::new() },
            tls: ZstdThreadLocal,
            old: OldPattern::new(),
            lz4_one_shot: lz4::Lz4OneShot(lz4_tfm.clone()),
            lz4_two_frag: lz4::Lz4TwoFragments(lz4_tfm.clone()),
            lz4_floor: lz4::Lz4Floor::new(),
            liblz4: lz4::LibLz4,
            lz4_flex: lz4::Lz4Flex::new(),
            scan_liblz4: lz4::ScanLibLz4,
        }
    }

    /// The zstd variants.
    fn each(&mut self, f: &mut impl Visit) {
        f.visit(&mut self.one_shot);
        f.visit(&mut self.batch);
        f.visit(&mut self.buffer);
        f.visit(&mut self.checksum);
        f.visit(&mut self.dict);
        f.visit(&mut self.two_frag);
        f.visit(&mut self.floor);
        f.visit(&mut self.bulk);
        f.visit(&mut self.tls);
        f.visit(&mut self.old);
    }

    /// The lz4 variants.
    fn each_lz4(&mut self, f: &mut impl Visit) {
        f.visit(&mut self.lz4_one_shot);
        f.visit(&mut self.lz4_two_frag);
        f.visit(&mut self.lz4_floor);
        f.visit(&mut self.liblz4);
        f.visit(&mut self.lz4_flex);
        f.visit(&mut self.scan_liblz4);
    }

    /// The variants of `op`'s group.
    fn each_of(&mut self, op: Op, f: &mut impl Visit) {
        if op.is_lz4() {
            self.each_lz4(f);
        } else {
            self.each(f);
        }
    }
}

/// The two operations, the names of the groups.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Compress,
    Decompress,
    Lz4Compress,
    Lz4Decompress,
}

impl Op {
    const ALL: [Op; 2] = [Op::Compress, Op::Decompress];
    const LZ4: [Op; 2] = [Op::Lz4Compress, Op::Lz4Decompress];

    fn name(self) -> &'static str {
        match self {
            Op::Compress => "compress",
            Op::Decompress => "decompress",
            Op::Lz4Compress => "lz4-compress",
            Op::Lz4Decompress => "lz4-decompress",
        }
    }

    fn is_lz4(self) -> bool {
        matches!(self, Op::Lz4Compress | Op::Lz4Decompress)
    }

    /// One request of `v`: the page to compress, or the frame to decompress.
    #[inline(always)]
    fn run<V: Variant>(self, v: &mut V, input: &[u8], dst: &mut [u8]) -> usize {
        match self {
            Op::Compress | Op::Lz4Compress => v.compress(input, dst),
            Op::Decompress | Op::Lz4Decompress => v.decompress(input, dst),
        }
    }
}

/// A destination large enough for any request of `op`.
fn dst_for(op: Op) -> Vec<u8> {
    match op {
        Op::Compress => vec![0; zstd_safe::compress_bound(PAGE)],
        Op::Lz4Compress => vec![0; lz4::DST],
        Op::Decompress | Op::Lz4Decompress => vec![0; PAGE],
    }
}

/// The inputs of each group: per page kind, the page (compress) or acomp's frame of it
/// (decompress).
struct Inputs {
    kinds: Vec<&'static str>,
    pages: Vec<Vec<u8>>,
    frames: Vec<Vec<u8>>,
    /// acomp's lz4 blocks of the pages.
    blocks: Vec<Vec<u8>>,
}

impl Inputs {
    fn new(tfm: &Arc<Acomp>, lz4_tfm: &Arc<Acomp>) -> Self {
        let (kinds, pages): (Vec<_>, Vec<_>) = pages::pages()
            .into_iter()
            .chain([("heap", pages::heap())])
            .unzip();
        let mut acomp = AcompOneShot(tfm.clone());
        let frames = pages
            .iter()
            .map(|page| {
                let mut frame = dst_for(Op::Compress);
                let n = acomp.compress(page, &mut frame);
                frame.truncate(n);
                frame
            })
            .collect();
        let mut acomp = lz4::Lz4OneShot(lz4_tfm.clone());
        let blocks = pages
            .iter()
            .map(|page| {
                let mut block = dst_for(Op::Lz4Compress);
                let n = acomp.compress(page, &mut block);
                block.truncate(n);
                block
            })
            .collect();
        Inputs {
            kinds,
            pages,
            frames,
            blocks,
        }
    }

    fn of(&self, op: Op) -> impl Iterator<Item = (&'static str, &[u8])> {
        let inputs = match op {
            Op::Compress | Op::Lz4Compress => &self.pages,
            Op::Decompress => &self.frames,
            Op::Lz4Decompress => &self.blocks,
        };
        self.kinds
            .iter()
            .copied()
            .zip(inputs.iter().map(Vec::as_slice))
    }
}

/// Checks that every variant decompresses acomp's frame of every page to the page, and
/// that every variant compresses a page to exactly acomp's frame (the same parameters).
struct Check<'i>(&'i Inputs);

impl Visit for Check<'_> {
    fn visit<V: Variant>(&mut self, v: &mut V) {
        let mut reference = Floor::new();
        for ((kind, page), frame) in self.0.of(Op::Compress).zip(&self.0.frames) {
            let mut out = dst_for(Op::Compress);
            let n = v.compress(page, &mut out);
            let written = &v.output(&out)[..n];
            assert!(
                V::CHECKSUM || written == frame,
                "{} wrote another frame of {kind}",
                V::NAME
            );
            if V::CHECKSUM {
                let mut back = dst_for(Op::Decompress);
                assert_eq!(v.decompress(frame, &mut back), PAGE);
                assert!(back == page, "{}'s own frame of {kind}", V::NAME);
                continue;
            }
            let mut back = dst_for(Op::Decompress);
            let n = reference.decompress(written, &mut back);
            assert!(n == PAGE && back == page, "{}'s frame of {kind}", V::NAME);
            let mut back = dst_for(Op::Decompress);
            let n = v.decompress(frame, &mut back);
            assert!(
                n == PAGE && v.output(&back)[..n] == page[..],
                "{} decompressed {kind} wrong",
                V::NAME
            );
        }
    }
}

/// Checks that every lz4 variant decodes acomp's block of every page to the page, and that
/// every block a variant writes decodes to the page: byte for byte acomp's block for those
/// on liblz4 (the same code, acceleration 1), another parse for lz4_flex.
struct Lz4Check<'i>(&'i Inputs);

impl Visit for Lz4Check<'_> {
    fn visit<V: Variant>(&mut self, v: &mut V) {
        for ((kind, page), block) in self.0.of(Op::Lz4Compress).zip(&self.0.blocks) {
            let mut out = dst_for(Op::Lz4Compress);
            let n = v.compress(page, &mut out);
            let written = &v.output(&out)[..n];
            if V::NAME != lz4::Lz4Flex::NAME {
                assert!(
                    written == block,
                    "{} wrote another block of {kind}",
                    V::NAME
                );
            }
            if std::env::var_os("ACOMP_LZ4_SIZES").is_some() {
                eprintln!("lz4 block size: {} {kind} {n}", V::NAME);
            }
            let mut back = vec![0; PAGE];
            let n = acomp::lz4::decompress_block(written, &mut back).unwrap();
            assert!(n == PAGE && back == page, "{}'s block of {kind}", V::NAME);
            let mut back = vec![0; PAGE];
            let n = v.decompress(block, &mut back);
            assert!(
                n == PAGE && back == page,
                "{} decoded {kind} wrong",
                V::NAME
            );
        }
    }
}

/// Registers one criterion benchmark per variant for one page kind.
struct CriterionBench<'g, 'c> {
    group: &'g mut BenchmarkGroup<'c, WallTime>,
    op: Op,
    kind: &'static str,
    input: &'g [u8],
}

impl Visit for CriterionBench<'_, '_> {
    fn visit<V: Variant>(&mut self, v: &mut V) {
        let (op, input) = (self.op, self.input);
        let mut dst = dst_for(op);
        self.group
            .bench_function(BenchmarkId::new(V::NAME, self.kind), |b| {
                b.iter(|| op.run(v, black_box(input), &mut dst))
            });
    }
}

/// Median nanoseconds per request, by (op, variant, page kind).
type Medians = HashMap<(Op, &'static str, &'static str), f64>;

fn criterion_main(variants: &mut Variants, inputs: &Inputs) {
    let started = SystemTime::now();
    let mut c = Criterion::default().configure_from_args();
    for op in Op::ALL.into_iter().chain(Op::LZ4) {
        let mut group = c.benchmark_group(op.name());
        group.throughput(Throughput::Bytes(PAGE as u64));
        // Kind by kind, so that the variants of one row run close together in time.
        for (kind, input) in inputs.of(op) {
            variants.each_of(
                op,
                &mut CriterionBench {
                    group: &mut group,
                    op,
                    kind,
                    input,
                },
            );
        }
        group.finish();
    }
    c.final_summary();
    if std::env::args().any(|a| a == "--bench") {
        let medians = criterion_medians(inputs, started);
        print_tables(&medians, inputs, "criterion medians");
    }
}

/// The medians criterion saved in this run (estimates older than `since` are left out).
fn criterion_medians(inputs: &Inputs, since: SystemTime) -> Medians {
    let mut medians = Medians::new();
    for op in Op::ALL.into_iter().chain(Op::LZ4) {
        let variants: &[&'static str] = if op.is_lz4() {
            &lz4::VARIANTS
        } else {
            &VARIANTS
        };
        for &kind in &inputs.kinds {
            for &variant in variants {
                if let Some(ns) = harness::criterion_median(op.name(), variant, kind, since) {
                    medians.insert((op, variant, kind), ns);
                }
            }
        }
    }
    medians
}

/// Times batches of requests of one variant and adds them to its list of samples.
struct Interleaved<'m> {
    op: Op,
    kind: &'static str,
    input: &'static [u8],
    batch: u32,
    samples: &'m mut HashMap<(Op, &'static str, &'static str), Vec<f64>>,
}

impl Visit for Interleaved<'_> {
    fn visit<V: Variant>(&mut self, v: &mut V) {
        let mut dst = dst_for(self.op);
        let start = Instant::now();
        for _ in 0..self.batch {
            black_box(self.op.run(v, black_box(self.input), &mut dst));
        }
        let ns = start.elapsed().as_nanos() as f64 / f64::from(self.batch);
        self.samples
            .entry((self.op, V::NAME, self.kind))
            .or_default()
            .push(ns);
    }
}

/// Variants interleaved: round after round, each variant times one batch on one page, so
/// that a slow spell of the machine hits every variant alike. Medians of the rounds.
fn interleaved_main(variants: &mut Variants, inputs: &Inputs) {
    let rounds: usize = harness::env_or("ACOMP_ROUNDS", 51);
    let budget = Duration::from_millis(harness::env_or("ACOMP_BATCH_MS", 4));
    let mut samples = HashMap::new();
    for op in Op::ALL.into_iter().chain(Op::LZ4) {
        for (kind, input) in inputs.of(op) {
            let input: &'static [u8] = input.to_vec().leak();
            // Size the batch on the floor, so that one takes about `budget`.
            let mut dst = dst_for(op);
            let start = Instant::now();
            let mut n = 0u32;
            let (mut floor, mut lz4_floor) = (Floor::new(), lz4::Lz4Floor::new());
            while start.elapsed() < budget {
                if op.is_lz4() {
                    black_box(op.run(&mut lz4_floor, input, &mut dst));
                } else {
                    black_box(op.run(&mut floor, input, &mut dst));
                }
                n += 1;
            }
            for _ in 0..rounds {
                variants.each_of(
                    op,
                    &mut Interleaved {
                        op,
                        kind,
                        input,
                        batch: n.max(1),
                        samples: &mut samples,
                    },
                );
            }
        }
    }
    let medians = samples
        .into_iter()
        .map(|(key, mut ns)| {
            ns.sort_by(f64::total_cmp);
            (key, ns[ns.len() / 2])
        })
        .collect();
    let source = format!("interleaved, median of {rounds} rounds");
    print_tables(&medians, inputs, &source);
}

/// Runs `n` requests; callgrind collects inside this function only (`--toggle-collect`).
#[inline(never)]
fn callgrind_loop<V: Variant>(n: u64, op: Op, v: &mut V, input: &[u8], dst: &mut [u8]) {
    for _ in 0..n {
        black_box(op.run(v, black_box(input), dst));
    }
}

/// Runs the one variant `ACOMP_CALLGRIND` names (`<op>/<variant>/<page>`).
struct Callgrind {
    op: Op,
    variant: String,
    input: Vec<u8>,
    n: u64,
    found: bool,
}

impl Visit for Callgrind {
    fn visit<V: Variant>(&mut self, v: &mut V) {
        if V::NAME != self.variant {
            return;
        }
        let mut dst = dst_for(self.op);
        // Warm-up outside the collected function: lazy workspaces, thread-locals, caches.
        for _ in 0..100 {
            black_box(self.op.run(v, &self.input, &mut dst));
        }
        callgrind_loop(self.n, self.op, v, &self.input, &mut dst);
        self.found = true;
    }
}

fn callgrind_main(variants: &mut Variants, inputs: &Inputs, spec: &str) {
    let parts: Vec<&str> = spec.split('/').collect();
    let [op, variant, kind] = parts[..] else {
        panic!("ACOMP_CALLGRIND={spec}: expected <compress|decompress>/<variant>/<page>");
    };
    let op = *Op::ALL
        .iter()
        .chain(&Op::LZ4)
        .find(|o| o.name() == op)
        .unwrap_or_else(|| panic!("no operation {op}"));
    let (_, input) = inputs
        .of(op)
        .find(|(k, _)| *k == kind)
        .unwrap_or_else(|| panic!("no page kind {kind}: {:?}", inputs.kinds));
    let mut run = Callgrind {
        op,
        variant: variant.to_owned(),
        input: input.to_vec(),
        n: harness::env_or("ACOMP_CALLGRIND_N", 10_000),
        found: false,
    };
    variants.each_of(op, &mut run);
    assert!(
        run.found,
        "no variant {variant}: {VARIANTS:?}, {:?}",
        lz4::VARIANTS
    );
    println!("{spec}: {} requests in callgrind_loop", run.n);
}

/// Prints, per group (zstd's, then lz4's), the medians and the ratios of acomp's time to
/// its peers' (below 1: acomp is faster), as markdown tables.
fn print_tables(medians: &Medians, inputs: &Inputs, source: &str) {
    let zstd_pairs = [
        (AcompOneShot::NAME, Floor::NAME),
        (AcompOneShot::NAME, ZstdBulk::NAME),
        (AcompOneShot::NAME, ZstdThreadLocal::NAME),
        (AcompOneShot::NAME, OldPattern::NAME),
        (AcompTwoFragments::NAME, Floor::NAME),
        (AcompTwoFragments::NAME, OldPattern::NAME),
    ];
    let lz4_pairs = [
        (lz4::Lz4OneShot::NAME, lz4::Lz4Floor::NAME),
        (lz4::Lz4OneShot::NAME, lz4::LibLz4::NAME),
        (lz4::Lz4OneShot::NAME, lz4::Lz4Flex::NAME),
        (lz4::Lz4Floor::NAME, lz4::LibLz4::NAME),
        (lz4::Lz4Floor::NAME, lz4::Lz4Flex::NAME),
        (lz4::ScanLibLz4::NAME, lz4::LibLz4::NAME),
        (lz4::Lz4TwoFragments::NAME, lz4::Lz4OneShot::NAME),
    ];
    for op in Op::ALL.into_iter().chain(Op::LZ4) {
        let (variants, pairs): (&[&str], &[(&str, &str)]) = if op.is_lz4() {
            (&lz4::VARIANTS, &lz4_pairs)
        } else {
            (&VARIANTS, &zstd_pairs)
        };
        let get = |variant: &str, kind: &str| {
            medians
                .iter()
                .find(|((o, v, k), _)| *o == op && *v == variant && *k == kind)
                .map(|(_, &ns)| ns)
        };
        if !inputs.kinds.iter().any(|k| get(pairs[0].0, k).is_some()) {
            continue; // a filtered run, e.g. `-- lz4`
        }
        let name = op.name();
        harness::print_medians(
            &format!("{name}: ns per 4 KiB request ({source})"),
            variants,
            &inputs.kinds,
            get,
        );
        harness::print_ratios(
            &format!("{name}: one variant's time / another's (below 1: the first faster)"),
            pairs,
            &inputs.kinds,
            get,
        );
    }
}

fn main() {
    let tfm = Arc::new(Acomp::new("zstd").expect("acomp zstd transform"));
    let lz4_tfm = Arc::new(Acomp::new("lz4").expect("acomp lz4 transform"));
    let inputs = Inputs::new(&tfm, &lz4_tfm);
    let mut variants = Variants::new(&tfm, &lz4_tfm);
    variants.each(&mut Check(&inputs));
    variants.each_lz4(&mut Lz4Check(&inputs));
    if let Ok(spec) = std::env::var("ACOMP_CALLGRIND") {
        callgrind_main(&mut variants, &inputs, &spec);
    } else if std::env::var_os("ACOMP_INTERLEAVED").is_some() {
        interleaved_main(&mut variants, &inputs);
    } else {
        criterion_main(&mut variants, &inputs);
    }
}
