//! `--dict --alg lz4`: whether a dictionary pays for lz4, measured with liblz4 itself on the
//! held-out pages. acomp serves no lz4 dictionary (BENCHMARKS.md, "lz4 with a dictionary"), so
//! both sides here call the reference library directly: `LZ4_compress_fast_extState`
//! against a stream with the dictionary attached (`LZ4_attach_dictionary`, the fast way:
//! the dictionary is hashed once, not per page), and `LZ4_decompress_safe` against
//! `LZ4_decompress_safe_usingDict`.

use std::time::{Duration, Instant};

use libc::{c_char, c_int, c_void};

use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;

/// The most of a dictionary an lz4 block can reach: offsets are 16 bits.
const LZ4_DICT_MAX: usize = 64 << 10;

/// Passes over the pages, each way: the report takes the median.
const PASSES: usize = 3;

// liblz4's functions this file calls that lz4-sys does not declare (`lz4.h`: the extState
// function stable since 1.7, the streaming API since 1.10.0 for `LZ4_attach_dictionary`).
unsafe extern "C" {
    fn LZ4_compress_fast_extState(
        state: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
    fn LZ4_loadDict(stream: *mut c_void, dict: *const c_char, dict_size: c_int) -> c_int;
    fn LZ4_resetStream_fast(stream: *mut c_void);
    fn LZ4_attach_dictionary(working: *mut c_void, dictionary: *const c_void);
    fn LZ4_compress_fast_continue(
        stream: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
    fn LZ4_decompress_safe_usingDict(
        src: *const c_char,
        dst: *mut c_char,
        compressed_size: c_int,
        dst_capacity: c_int,
        dict: *const c_char,
        dict_size: c_int,
    ) -> c_int;
}

/// An `LZ4_stream_t` that liblz4 allocated and initialised (`LZ4_createStream`): a stream
/// for the streaming API, and `sizeof(LZ4_stream_t)` bytes of state for the extState call.
struct Stream(*mut lz4_sys::LZ4StreamEncode);

impl Stream {
    fn new() -> Stream {
        // SAFETY: `LZ4_createStream` allocates and initialises a stream, or returns null.
        let stream = unsafe { lz4_sys::LZ4_createStream() };
        assert!(!stream.is_null(), "LZ4_createStream: out of memory");
        Stream(stream)
    }

    fn ptr(&mut self) -> *mut c_void {
        self.0.cast()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream came from `LZ4_createStream` and is freed once, here.
        unsafe { lz4_sys::LZ4_freeStream(self.0) };
    }
}

/// What the trial found: each side's compressed bytes and median time per page.
#[derive(Debug)]
pub struct Trial {
    pub pages: usize,
    pub dict_bytes: usize,
    pub bytes: [usize; 2],
    pub compress: [Duration; 2],
    pub decompress: [Duration; 2],
}

/// Compresses every page of `held` that is not same-filled (zswap keeps those as their
/// value) without and with the last 64 KiB of `dict`, decompresses and checks every block,
/// `PASSES` times each way. An incompressible page counts as a page, as zswap keeps it.
pub fn trial(held: &Input, dict: &[u8]) -> Trial {
    let dict = &dict[dict.len().saturating_sub(LZ4_DICT_MAX)..];
    let dict_len = c_int::try_from(dict.len()).expect("at most 64 KiB");
    let pages: Vec<&[u8]> = (0..held.len())
        .map(|i| held.page(i))
        .filter(|p| acomp_zswap::same_filled(p).is_none())
        .map(|p| &p[..])
        .collect();
    let mut dict_stream = Stream::new();
    // SAFETY: `dict_stream` is an initialised stream; `dict` is valid for reads of
    // `dict_len` bytes and outlives every use of the stream below (liblz4 keeps a pointer
    // to it for the matches it finds there).
    unsafe { LZ4_loadDict(dict_stream.ptr(), dict.as_ptr().cast(), dict_len) };
    let mut work = Stream::new();
    // Every page's block in a page-sized place of one buffer, allocated before the timing.
    let mut blocks = vec![0u8; pages.len() * PAGE_SIZE];
    let mut sizes = vec![0usize; pages.len()];
    let mut back = vec![0u8; pages.len() * PAGE_SIZE];
    let mut times: [Vec<Duration>; 4] = Default::default();
    let mut bytes = [0; 2];
    for _ in 0..PASSES {
        for (side, with_dict) in [false, true].into_iter().enumerate() {
            let start = Instant::now();
            for ((page, block), size) in pages
                .iter()
                .zip(blocks.chunks_exact_mut(PAGE_SIZE))
                .zip(&mut sizes)
            {
                let n = if with_dict {
                    // SAFETY: both streams are initialised and distinct; the dictionary
                    // stream's `dict` is alive; `page` is valid for reads and `block` for
                    // writes of the sizes given, and liblz4 returns 0 rather than overflow.
                    unsafe {
                        LZ4_resetStream_fast(work.ptr());
                        LZ4_attach_dictionary(work.ptr(), dict_stream.ptr());
                        LZ4_compress_fast_continue(
                            work.ptr(),
                            page.as_ptr().cast(),
                            block.as_mut_ptr().cast(),
                            PAGE_SIZE as c_int,
                            PAGE_SIZE as c_int,
                            1,
                        )
                    }
                } else {
                    // SAFETY: `work` is an `LZ4_stream_t`, `LZ4_sizeofState` bytes, which
                    // liblz4 resets first; the buffers as above.
                    unsafe {
                        LZ4_compress_fast_extState(
                            work.ptr(),
                            page.as_ptr().cast(),
                            block.as_mut_ptr().cast(),
                            PAGE_SIZE as c_int,
                            PAGE_SIZE as c_int,
                            1,
                        )
                    }
                };
                // 0: the block would not fit a page; zswap keeps the page as it is.
                *size = usize::try_from(n).unwrap_or(0);
            }
            times[side].push(start.elapsed());
            bytes[side] = sizes
                .iter()
                .map(|&n| if n == 0 { PAGE_SIZE } else { n })
                .sum();
            let start = Instant::now();
            for ((block, &len), out) in blocks
                .chunks_exact(PAGE_SIZE)
                .zip(&sizes)
                .zip(back.chunks_exact_mut(PAGE_SIZE))
            {
                if len == 0 {
                    continue;
                }
                let (src, len) = (block.as_ptr().cast(), len as c_int);
                let dst = out.as_mut_ptr().cast();
                // SAFETY: `block` is valid for reads of `len` bytes (at most a page), `out`
                // for writes of a page, `dict` for reads of `dict_len`; liblz4 writes within
                // `out`.
                let n = unsafe {
                    if with_dict {
                        LZ4_decompress_safe_usingDict(
                            src,
                            dst,
                            len,
                            PAGE_SIZE as c_int,
                            dict.as_ptr().cast(),
                            dict_len,
                        )
                    } else {
                        lz4_sys::LZ4_decompress_safe(src, dst, len, PAGE_SIZE as c_int)
                    }
                };
                assert_eq!(n, PAGE_SIZE as c_int, "lz4 round trip");
            }
            times[2 + side].push(start.elapsed());
            // Checked after the timing: every page that got a block came back as it was.
            for ((page, &len), out) in pages.iter().zip(&sizes).zip(back.chunks_exact(PAGE_SIZE)) {
                assert!(len == 0 || out == *page, "lz4 round trip");
            }
        }
    }
    let per_page = |t: &mut Vec<Duration>| {
        t.sort();
        t[PASSES / 2] / u32::try_from(pages.len().max(1)).unwrap_or(u32::MAX)
    };
    let [c0, c1, d0, d1] = &mut times;
    Trial {
        pages: pages.len(),
        dict_bytes: dict.len(),
        bytes,
        compress: [per_page(c0), per_page(c1)],
        decompress: [per_page(d0), per_page(d1)],
    }
}

/// The trial's lines.
pub fn print(t: &Trial) {
    let ns = |d: Duration| d.as_nanos();
    let x = |a: Duration, b: Duration| b.as_secs_f64() / a.as_secs_f64().max(f64::MIN_POSITIVE);
    println!(
        "  lz4 with the dictionary's last {} bytes (liblz4 called directly; acomp serves no lz4 \
         dictionary), {} held-out pages, median of {PASSES} passes:",
        t.dict_bytes, t.pages
    );
    println!(
        "    compressed {:+.1}% ({} -> {} bytes), compression {:.2}x the time per page ({} -> {} \
         ns), decompression {:.2}x ({} -> {} ns)",
        100.0 * (t.bytes[1] as f64 / t.bytes[0].max(1) as f64 - 1.0),
        t.bytes[0],
        t.bytes[1],
        x(t.compress[0], t.compress[1]),
        ns(t.compress[0]),
        ns(t.compress[1]),
        x(t.decompress[0], t.decompress[1]),
        ns(t.decompress[0]),
        ns(t.decompress[1]),
    );
}
