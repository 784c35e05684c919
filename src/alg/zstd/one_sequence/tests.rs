//! acomp's one-sequence decoder against libzstd: every block it accepts decodes to exactly
//! libzstd's output, and it accepts what zstd writes for zero and same-filled pages.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use zstd_safe::{CCtx, CParameter, DCtx};

use super::super::frame::{BlockType, block_max};
use super::*;

/// A single-segment frame of `block` (a compressed block's content), declaring `content`
/// bytes (RFC 8878 §3.1.1): 8-byte content size field, so any size fits.
fn frame_of(block: &[u8], content: usize) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0b1110_0000];
    f.extend_from_slice(&(content as u64).to_le_bytes());
    let header = 1 | (2 << 1) | ((block.len() as u32) << 3);
    f.extend_from_slice(&header.to_le_bytes()[..3]);
    f.extend_from_slice(block);
    f
}

/// libzstd's output for `frame` in a destination of exactly `content` bytes.
fn libzstd(dctx: &mut DCtx<'_>, frame: &[u8], content: usize) -> Option<Vec<u8>> {
    let mut out = vec![0u8; content];
    let n = dctx.decompress(&mut out[..], frame).ok()?;
    (n == content).then_some(out)
}

/// acomp's output for the block of `frame_of(block, content)`, where the one-shot path
/// would try it (the block and the content within the frame's block maximum, which
/// `frame::single_frame` and `decompress_one_shot` check first); checks that a refusal leaves
/// the destination as it was.
fn acomp(block: &[u8], content: usize) -> Option<Vec<u8>> {
    let max = block_max(content as u64);
    if block.len() as u64 > max || content as u64 > max {
        return None;
    }
    let mut out = vec![0xa5u8; content];
    match decode(block, &mut out) {
        Some(n) => {
            assert_eq!(n, content);
            Some(out)
        }
        None => {
            assert!(out.iter().all(|&b| b == 0xa5), "a refused block wrote");
            None
        }
    }
}

/// A backward bitstream of `fields` (value, bits), the first read first (§4.1).
fn bitstream(fields: &[(u32, u32)]) -> Vec<u8> {
    let (mut acc, mut total) = (0u128, 0u32);
    for &(v, n) in fields {
        acc = (acc << n) | u128::from(v);
        total += n;
    }
    acc |= 1 << total;
    acc.to_le_bytes()[..(total as usize + 8) / 8].to_vec()
}

fn raw_literals(lits: &[u8]) -> Vec<u8> {
    let n = lits.len() as u32;
    let mut b = match n {
        0..32 => vec![(n << 3) as u8],
        32..4096 => ((n << 4) | 0b0100).to_le_bytes()[..2].to_vec(),
        _ => ((n << 4) | 0b1100).to_le_bytes()[..3].to_vec(),
    };
    b.extend_from_slice(lits);
    b
}

#[test]
fn predefined_tables_hold_each_symbol_as_often_as_its_distribution() {
    fn check(table: &[u8], dist: &[i8]) {
        for (s, &d) in dist.iter().enumerate() {
            let n = table.iter().filter(|&&t| usize::from(t) == s).count();
            assert_eq!(n, usize::from(d.unsigned_abs()), "symbol {s}");
        }
    }
    check(&LL_SYMBOL, &LL_DIST);
    check(&OF_SYMBOL, &OF_DIST);
    check(&ML_SYMBOL, &ML_DIST);
    // RFC 8878 Appendix A, first states and the "less than 1" symbols at the end.
    assert_eq!(LL_SYMBOL[..4], [0, 0, 1, 3]);
    assert_eq!(LL_SYMBOL[60..], [35, 34, 33, 32]);
    assert_eq!(OF_SYMBOL[..4], [0, 6, 9, 15]);
    assert_eq!(ML_SYMBOL[..4], [0, 1, 2, 3]);
}

/// Every state of all three predefined tables, with random extra bits and literals:
/// wherever acomp decodes the block, libzstd gives the same bytes, and where libzstd
/// decodes it, so does acomp (its refusals are only its stricter rules, none of which such
/// a block breaks, except content over 128 KiB, which the one-shot path streams).
#[test]
fn same_as_libzstd_on_every_predefined_state() {
    let mut dctx = DCtx::create();
    let mut rng = StdRng::seed_from_u64(13);
    let (mut accepted, mut refused_by_both) = (0, 0);
    for ll_state in 0..64u32 {
        for of_state in 0..32u32 {
            for ml_state in 0..64u32 {
                let of_code = u32::from(OF_SYMBOL[of_state as usize]);
                let ll_code = LL_SYMBOL[ll_state as usize];
                let ml_code = ML_SYMBOL[ml_state as usize];
                // Keep most outputs small: the longest codes' extra bits are drawn low.
                let extra = |rng: &mut StdRng, n: u32| rng.random_range(0..1u32 << n.min(6));
                let of_bits = extra(&mut rng, of_code);
                let (ml_base, ml_n) = ML_LONG
                    .get(usize::from(ml_code).wrapping_sub(32))
                    .copied()
                    .unwrap_or((u32::from(ml_code) + 3, 0));
                let (ll_base, ll_n) = LL_LONG
                    .get(usize::from(ll_code).wrapping_sub(16))
                    .copied()
                    .unwrap_or((u32::from(ll_code), 0));
                let (ml_bits, ll_bits) = (extra(&mut rng, ml_n), extra(&mut rng, ll_n));
                let (ll, ml) = ((ll_base + ll_bits) as usize, (ml_base + ml_bits) as usize);
                let trailing = rng.random_range(0..3);
                let period = rng.random_range(1..=ll.clamp(1, 9));
                let lits: Vec<u8> = (0..ll + trailing)
                    .map(|i| ((i % period) as u8).wrapping_mul(37))
                    .collect();
                let fields = [
                    (ll_state, LL_LOG),
                    (of_state, OF_LOG),
                    (ml_state, ML_LOG),
                    (of_bits, of_code),
                    (ml_bits, ml_n),
                    (ll_bits, ll_n),
                ];
                let content = lits.len() + ml;
                // The bitstream as written, then with one bit too many at its end (libzstd
                // wants it read exactly to its end).
                for junk in [None, Some((rng.random_range(0..2), 1))] {
                    let mut block = raw_literals(&lits);
                    block.extend_from_slice(&[1, 0]);
                    block.extend(bitstream(&[&fields[..], junk.as_slice()].concat()));
                    let ours = acomp(&block, content);
                    let theirs = libzstd(&mut dctx, &frame_of(&block, content), content);
                    if let Some(ours) = &ours {
                        assert_eq!(Some(ours), theirs.as_ref(), "{fields:?} {junk:?}");
                        accepted += 1;
                    } else if theirs.is_some() {
                        assert!(
                            content > 128 << 10,
                            "refused what libzstd decodes: {block:02x?}"
                        );
                    } else {
                        refused_by_both += 1;
                    }
                }
            }
        }
    }
    // Most states give a match longer than its literals or an offset past them: corrupt.
    assert!(
        accepted > 2_000 && refused_by_both > 2_000,
        "{accepted} {refused_by_both}"
    );
}

/// What libzstd writes for periodic pages (zero, same-filled words, other short periods),
/// at several levels and sizes: acomp decodes those of one sequence to libzstd's bytes,
/// and zero and same-filled 4 KiB pages are among them at every level tried. Every
/// one-byte change of their blocks is then decoded by acomp only where libzstd gives the
/// same bytes.
#[test]
fn same_as_libzstd_on_periodic_pages_and_every_one_byte_change() {
    let mut dctx = DCtx::create();
    let mut cctx = CCtx::create();
    let mut rng = StdRng::seed_from_u64(14);
    let mut mutations_accepted = 0;
    for level in [-5, 1, 3, 9, 19] {
        cctx.set_parameter(CParameter::CompressionLevel(level))
            .unwrap();
        for (period, size) in [
            (1, 4096),
            (8, 4096),
            (1, 100),
            (3, 4096),
            (16, 12_345),
            (64, 65_536),
        ] {
            let unit: Vec<u8> = (0..period).map(|_| rng.random()).collect();
            let page: Vec<u8> = unit.iter().copied().cycle().take(size).collect();
            let mut frame = vec![0u8; zstd_safe::compress_bound(size)];
            let n = cctx.compress2(&mut frame[..], &page).unwrap();
            frame.truncate(n);
            let f = super::super::frame::single_frame(&frame).unwrap();
            let (header, start) = f.only_block.unwrap();
            if header.kind != BlockType::Compressed {
                assert!(
                    period > 8 || size != 4096,
                    "level {level}: a raw or RLE page"
                );
                continue;
            }
            let block = &frame[start..start + header.content_len()];
            let ours = acomp(block, size);
            if period <= 8 && size == 4096 {
                assert_eq!(
                    ours.as_deref(),
                    Some(&page[..]),
                    "level {level} period {period}"
                );
            } else if let Some(ours) = &ours {
                assert_eq!(ours, &page, "level {level} period {period} size {size}");
            }
            for at in 0..block.len() {
                for byte in 0..=255u8 {
                    let mut changed = block.to_vec();
                    changed[at] = byte;
                    if let Some(ours) = acomp(&changed, size) {
                        let theirs = libzstd(&mut dctx, &frame_of(&changed, size), size);
                        assert_eq!(Some(&ours), theirs.as_ref(), "{changed:02x?}");
                        mutations_accepted += usize::from(ours != page);
                    }
                }
            }
        }
    }
    assert!(mutations_accepted > 100, "{mutations_accepted}");
}
