//! Trained dictionaries: round trips on every cut, frames of an older dictionary read by a
//! transform that knows both, a frame naming an unknown dictionary (`EBADMSG` on every cut
//! and both paths), dictionaries from garbage bytes, and training that cannot succeed.

use std::io::IoSlice;

use crate::common::*;
use acomp::{Acomp, Dictionary, Error, ErrorKind, Segment, ZstdParams};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PAGE: usize = 4096;

/// A page shaped like a process heap's: objects of a few layouts, each with an allocator
/// header, pointers into one range and short strings from one vocabulary; `seed` picks the
/// objects and `flavour` the vocabulary and layouts (two flavours train two dictionaries).
fn heap_page(seed: u64, flavour: u8) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "__init__", "self", "return", "import", "lambda", "value", "kwargs", "append", "module",
        "object", "string", "buffer",
    ];
    let mut rng = StdRng::seed_from_u64(seed ^ (u64::from(flavour) << 40));
    let mut page = Vec::with_capacity(PAGE + 64);
    while page.len() < PAGE {
        let layout = rng.random_range(0..3u8) + 3 * flavour;
        page.extend_from_slice(&[0x31 + layout, 0, 0, 0, 0x51, 0, 0, 0]);
        let ptr =
            0x7f3a_5c00_0000u64 + u64::from(flavour) * 0x10_0000 + rng.random_range(0..4096) * 16;
        page.extend_from_slice(&ptr.to_le_bytes());
        page.extend_from_slice(&u64::from(rng.random_range(0..200u8)).to_le_bytes());
        let w = WORDS[(rng.random_range(0..6) + 6 * usize::from(flavour)) % WORDS.len()];
        page.extend_from_slice(w.as_bytes());
        page.resize(page.len().next_multiple_of(8), 0);
    }
    page.truncate(PAGE);
    page
}

fn pages(range: std::ops::Range<u64>, flavour: u8) -> Vec<Vec<u8>> {
    range.map(|i| heap_page(i, flavour)).collect()
}

fn train(flavour: u8) -> Dictionary {
    let samples = pages(0..200, flavour);
    let refs: Vec<&[u8]> = samples.iter().map(|p| &p[..]).collect();
    Dictionary::train(&refs, 16 << 10).expect("training on 200 pages")
}

fn with_dict(dict: &Dictionary) -> Acomp {
    Acomp::with_zstd(ZstdParams::default().dictionary(dict.clone())).unwrap()
}

/// Asserts `frame` decompresses to `want` on every cut, also into a larger destination.
fn expect_ok(tfm: &Acomp, frame: &[u8], want: &[u8]) {
    for cap in [want.len(), want.len() + 100] {
        for (s, d) in all_cut_pairs() {
            let out = decompress(tfm, frame, s, cap, d)
                .unwrap_or_else(|e| panic!("{s:?}/{d:?} into {cap}: {e}"));
            assert!(out == want, "{s:?}/{d:?} into {cap}: wrong output");
        }
    }
}

/// Asserts `frame` fails with exactly `want` on every cut, on the one-shot path's cut
/// (both sides whole) and all the others, and in a range read.
fn expect_err(tfm: &Acomp, frame: &[u8], want: &Error) {
    for cap in [PAGE, PAGE + 100] {
        for (s, d) in all_cut_pairs() {
            let err = decompress(tfm, frame, s, cap, d).unwrap_err();
            assert_eq!(&err, want, "{s:?}/{d:?} into {cap}");
        }
    }
    let mut page = vec![0u8; PAGE];
    let err = tfm
        .decompress_range(&[IoSlice::new(frame)], &mut [Segment::new(0, &mut page)])
        .unwrap_err();
    assert_eq!(&err, want, "range read");
}

#[test]
fn round_trips_on_every_cut_give_one_frame_that_names_the_dictionary() {
    let dict = train(0);
    assert_ne!(dict.id(), 0, "a trained dictionary has an ID");
    let tfm = with_dict(&dict);
    let plain = Acomp::new("zstd").unwrap();
    let (mut with, mut without) = (0, 0);
    // Pages that were not in the training sample.
    for page in pages(1000..1008, 0) {
        let frame = compress(&tfm, &page, Cut::One, PAGE, Cut::One).unwrap();
        for (s, d) in all_cut_pairs() {
            let f = compress(&tfm, &page, s, PAGE, d).unwrap();
            assert!(f == frame, "{s:?}/{d:?}: another frame");
        }
        assert_eq!(
            zstd_safe::get_dict_id_from_frame(&frame).map(|id| id.get()),
            Some(dict.id())
        );
        expect_ok(&tfm, &frame, &page);
        with += frame.len();
        without += compress(&plain, &page, Cut::One, PAGE, Cut::One)
            .unwrap()
            .len();
    }
    assert!(
        with < without,
        "{with} bytes with the dictionary, {without} without"
    );
}

#[test]
fn frames_are_standard_zstd_frames_with_a_dictionary() {
    let dict = train(0);
    let tfm = with_dict(&dict);
    let page = heap_page(2000, 0);
    // acomp's frame, read by the reference decoder given the same dictionary.
    let frame = compress(&tfm, &page, Cut::One, PAGE, Cut::One).unwrap();
    let mut dctx = zstd_safe::DCtx::create();
    dctx.load_dictionary(dict.as_bytes()).unwrap();
    let mut out = vec![0u8; PAGE];
    assert_eq!(dctx.decompress(&mut out, &frame).unwrap(), PAGE);
    assert_eq!(out, page);
    // The reference encoder's frame, read by acomp.
    let mut cctx = zstd_safe::CCtx::create();
    cctx.load_dictionary(dict.as_bytes()).unwrap();
    let mut reference = vec![0u8; PAGE + 100];
    let n = cctx.compress2(&mut reference, &page).unwrap();
    expect_ok(&tfm, &reference[..n], &page);
}

#[test]
fn a_frame_of_dictionary_a_is_read_by_a_transform_that_knows_a_and_b() {
    let (a, b) = (train(0), train(1));
    assert_ne!(a.id(), b.id());
    let tfm_a = with_dict(&a);
    let tfm_b = Acomp::with_zstd(
        ZstdParams::default()
            .dictionary(b.clone())
            .decompression_dictionary(a.clone()),
    )
    .unwrap();
    let (page_a, page_b) = (heap_page(3000, 0), heap_page(3001, 1));
    let frame_a = compress(&tfm_a, &page_a, Cut::One, PAGE, Cut::One).unwrap();
    let frame_b = compress(&tfm_b, &page_b, Cut::One, PAGE, Cut::One).unwrap();
    assert_eq!(
        zstd_safe::get_dict_id_from_frame(&frame_b).map(|id| id.get()),
        Some(b.id())
    );
    expect_ok(&tfm_b, &frame_a, &page_a);
    expect_ok(&tfm_b, &frame_b, &page_b);
    // Alternating frames, each read with its own dictionary, also within one source.
    let both = [&frame_a[..], &frame_b[..], &frame_a[..]].concat();
    let want = [&page_a[..], &page_b[..], &page_a[..]].concat();
    expect_ok(&tfm_b, &both, &want);
    // A range read of the older frame.
    let mut seg = vec![0u8; 100];
    let n = tfm_b
        .decompress_range(
            &[IoSlice::new(&frame_a)],
            &mut [Segment::new(1000, &mut seg)],
        )
        .unwrap();
    assert_eq!(n, 100);
    assert_eq!(seg, page_a[1000..1100]);
}

#[test]
fn a_frame_naming_an_unknown_dictionary_is_ebadmsg_on_every_cut_and_path() {
    let (a, b) = (train(0), train(1));
    let frame_a = compress(
        &with_dict(&a),
        &heap_page(4000, 0),
        Cut::One,
        PAGE,
        Cut::One,
    )
    .unwrap();
    // A transform with dictionaries, none of them A: acomp's own finding.
    let tfm_b = with_dict(&b);
    let lacks = Error::Corrupt {
        detail: "frame names a dictionary this transform lacks",
    };
    expect_err(&tfm_b, &frame_a, &lacks);
    let stats = tfm_b.stats();
    assert_eq!(stats.corrupt, stats.decompress);
    assert_eq!(stats.one_shot + stats.stream, 0);
    // A transform without dictionaries: the same finding (libzstd's "Dictionary
    // mismatch"), in acomp's words.
    let plain = Acomp::new("zstd").unwrap();
    expect_err(&plain, &frame_a, &lacks);
    assert_eq!(lacks.kind(), ErrorKind::Corrupt);
    // After the errors, both still serve their own frames on the one-shot path.
    let page = heap_page(4001, 1);
    let frame_b = compress(&tfm_b, &page, Cut::One, PAGE, Cut::One).unwrap();
    assert_eq!(
        decompress(&tfm_b, &frame_b, Cut::One, PAGE, Cut::One).unwrap(),
        page
    );
    // An unknown dictionary behind a good frame: the whole source is refused.
    let src = [&frame_b[..], &frame_a[..]].concat();
    for (s, d) in all_cut_pairs() {
        assert_eq!(decompress(&tfm_b, &src, s, 2 * PAGE, d).unwrap_err(), lacks);
    }
}

#[test]
fn frames_without_a_dictionary_still_read_with_one() {
    let page = heap_page(5000, 0);
    let frame = compress(
        &Acomp::new("zstd").unwrap(),
        &page,
        Cut::One,
        PAGE,
        Cut::One,
    )
    .unwrap();
    expect_ok(&with_dict(&train(0)), &frame, &page);
}

#[test]
fn garbage_bytes_are_a_raw_content_dictionary_unless_they_claim_to_be_structured() {
    // Any bytes without the magic number: a raw-content dictionary, ID 0.
    let garbage = random_bytes(8192, 7);
    let raw = Dictionary::from_bytes(&garbage).unwrap();
    assert_eq!(raw.id(), 0);
    assert_eq!(raw.as_bytes(), &garbage[..]);
    let tfm = with_dict(&raw);
    // A page that repeats part of the dictionary compresses to a few bytes.
    let page = garbage[1000..1000 + PAGE].to_vec();
    let frame = compress(&tfm, &page, Cut::One, PAGE, Cut::One).unwrap();
    assert!(frame.len() < 40, "{} bytes", frame.len());
    assert_eq!(zstd_safe::get_dict_id_from_frame(&frame), None);
    expect_ok(&tfm, &frame, &page);
    for (s, d) in all_cut_pairs() {
        assert!(compress(&tfm, &page, s, PAGE, d).unwrap() == frame);
    }
    // The magic number followed by garbage: zstd refuses it.
    let mut fake = 0xEC30_A437u32.to_le_bytes().to_vec();
    fake.extend_from_slice(&garbage[..1000]);
    let err = Dictionary::from_bytes(&fake).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert_eq!(
        err.to_string(),
        "invalid dictionary: zstd refuses these 1004 bytes: they start with the dictionary \
         magic number but the entropy tables after it are corrupt or cut short"
    );
    // A trained dictionary cut short: refused too.
    let trained = train(0);
    assert!(matches!(
        Dictionary::from_bytes(&trained.as_bytes()[..100]),
        Err(Error::Dictionary { .. })
    ));
    // Its whole bytes give it back, ID and all.
    let again = Dictionary::from_bytes(trained.as_bytes()).unwrap();
    assert_eq!(again.id(), trained.id());
    assert_eq!(again, trained);
}

#[test]
fn training_from_too_few_samples_is_a_clear_error() {
    let few = pages(0..3, 0);
    let refs: Vec<&[u8]> = few.iter().map(|p| &p[..]).collect();
    let err = Dictionary::train(&refs, 64 << 10).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert_eq!(
        err.to_string(),
        "invalid dictionary: zstd could not train a dictionary of at most 65536 bytes from 3 \
         samples (12288 bytes): Src size is incorrect"
    );
    assert!(matches!(
        Dictionary::train(&[], 64 << 10),
        Err(Error::Dictionary { .. })
    ));
    let many = pages(0..100, 0);
    let refs: Vec<&[u8]> = many.iter().map(|p| &p[..]).collect();
    assert!(matches!(
        Dictionary::train(&refs, 100),
        Err(Error::Dictionary { .. })
    ));
}

#[test]
fn two_different_dictionaries_with_one_id_are_refused() {
    let a = train(0);
    let raw1 = Dictionary::from_bytes(&random_bytes(1000, 1)).unwrap();
    let raw2 = Dictionary::from_bytes(&random_bytes(1000, 2)).unwrap();
    let err = Acomp::with_zstd(
        ZstdParams::default()
            .dictionary(raw1.clone())
            .decompression_dictionary(raw2),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    // The same dictionary twice is fine.
    Acomp::with_zstd(
        ZstdParams::default()
            .dictionary(a.clone())
            .decompression_dictionary(a)
            .decompression_dictionary(raw1),
    )
    .unwrap();
}

#[test]
fn the_digested_dictionary_is_counted_once_whatever_the_workspaces() {
    let dict = train(0);
    let tfm = with_dict(&dict);
    let before = tfm.stats().dictionary_bytes;
    assert!(before > dict.as_bytes().len(), "{before} bytes");
    let page = heap_page(6000, 0);
    std::thread::scope(|s| {
        for cpu in allowed_cpus() {
            let (tfm, page) = (&tfm, &page);
            s.spawn(move || {
                pin_to(&[cpu]);
                let frame = compress(tfm, page, Cut::One, PAGE, Cut::One).unwrap();
                assert_eq!(
                    decompress(tfm, &frame, Cut::One, PAGE, Cut::One).unwrap(),
                    page
                );
            });
        }
    });
    let stats = tfm.stats();
    assert_eq!(stats.dictionary_bytes, before);
    assert!(stats.to_string().ends_with(&format!(
        "; dictionaries {} KiB, shared",
        before.div_ceil(1024)
    )));
    // A workspace holds no copy of the digested dictionary: its CCtx sizes its own tables
    // for the dictionary plus the page (about 95 KB more at level 3), far from a copy.
    let plain = Acomp::new("zstd").unwrap();
    for t in [&tfm, &plain] {
        let frame = compress(t, &page, Cut::One, PAGE, Cut::One).unwrap();
        decompress(t, &frame, Cut::One, PAGE, Cut::One).unwrap();
    }
    let (w, p) = (tfm.stats(), plain.stats());
    let per_ws = |s: &acomp::Stats| s.workspace_bytes / s.workspaces.max(1);
    assert!(
        per_ws(&w) < per_ws(&p) + before / 2,
        "{} vs {} bytes a workspace, {before} bytes of dictionary",
        per_ws(&w),
        per_ws(&p)
    );
    assert_eq!(plain.stats().dictionary_bytes, 0);
}

/// A dictionary and page-sized blocks together (`block_size_max`, issue 15): a unit of 16
/// pages is one frame of page-sized blocks that names the dictionary, the same on every
/// cut, and a range read of one page out of it holds.
#[test]
fn a_dictionary_with_page_sized_blocks() {
    let dict = train(0);
    let params = ZstdParams::default()
        .dictionary(dict.clone())
        .block_size_max(4096);
    let tfm = Acomp::with_zstd(params).unwrap();
    let unit: Vec<u8> = pages(300..316, 0).concat();
    let frame = compress(&tfm, &unit, Cut::One, unit.len() + 1024, Cut::One).unwrap();
    for (s, d) in [
        (Cut::Every(4096), Cut::One),
        (Cut::Random(3), Cut::Random(4)),
    ] {
        assert!(compress(&tfm, &unit, s, unit.len() + 1024, d).unwrap() == frame);
    }
    assert_eq!(
        zstd_safe::get_dict_id_from_frame(&frame).map(|id| id.get()),
        Some(dict.id())
    );
    expect_ok(&tfm, &frame, &unit);
    let mut page = vec![0u8; 4096];
    let n = tfm
        .decompress_range(
            &split(&frame, Cut::Every(100)),
            &mut [Segment::new(5 * 4096, &mut page)],
        )
        .unwrap();
    assert_eq!((n, &page[..]), (4096, &unit[5 * 4096..6 * 4096]));
}
