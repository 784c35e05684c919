//! The block decoder's and scan's own cases: format faults, literals-only blocks, long
//! and overlapping matches, nothing past the output.

use super::*;

fn both(src: &[u8], cap: usize) -> (Result<usize, Stop>, Result<u64, &'static str>) {
    let mut dst = vec![0u8; cap];
    (decode(src, &mut dst), measure(src))
}

#[test]
fn literals_only_blocks() {
    assert_eq!(both(&[0x00], 0), (Ok(0), Ok(0)));
    assert_eq!(both(&[0x10, b'a'], 1), (Ok(1), Ok(1)));
    assert_eq!(both(&[0x10, b'a'], 0), (Err(Stop::Full), Ok(1)));
}

#[test]
fn overlapping_matches_repeat_their_pattern() {
    // "abc", then a 17-byte match at offset 3, then 5 literals.
    let src = [
        0x3D, b'a', b'b', b'c', 3, 0, 0x50, b'v', b'w', b'x', b'y', b'z',
    ];
    let mut dst = [0u8; 25];
    assert_eq!(decode(&src, &mut dst), Ok(25));
    let mut want = b"abc".repeat(7)[..20].to_vec();
    want.extend_from_slice(b"vwxyz");
    assert_eq!(&dst[..], &want[..]);
    assert_eq!(measure(&src), Ok(25));
}

#[test]
fn format_faults() {
    let lit5 = [0x50, 1, 2, 3, 4, 5];
    let mut b = vec![0x54, 1, 2, 3, 4, 5, 0, 0];
    assert_eq!(measure(&b), Err(OFFSET_ZERO));
    b[6] = 6;
    assert_eq!(measure(&b), Err(OFFSET_BEFORE_START));
    b[6] = 1;
    assert_eq!(measure(&b), Err(ENDS_WITH_MATCH));
    b.extend_from_slice(&lit5);
    // 5 literals, an 8-byte match at 5, 5 literals: 18 bytes.
    assert_eq!(measure(&b), Ok(18));
    assert_eq!(measure(&b[..7]), Err(TRUNCATED_OFFSET));
    assert_eq!(measure(&[0xF0]), Err(TRUNCATED_LENGTH));
    assert_eq!(measure(&[0x30, 1]), Err(LITERALS_PAST_END));
    let mut short = b[..8].to_vec();
    short.extend_from_slice(&[0x40, 1, 2, 3, 4]);
    assert_eq!(measure(&short), Err(LAST_LITERALS_SHORT));
    // A 4-byte match at 1, then 5 literals: it starts 9 bytes before the end.
    assert_eq!(
        measure(&[0x10, 7, 1, 0, 0x50, 1, 2, 3, 4, 5]),
        Err(LAST_MATCH_LATE)
    );
}

/// A valid block of random sequences (literal runs and matches of every length class,
/// half the offsets short, the last match as late as the rules allow), and its output.
fn random_block(seed: u64) -> (Vec<u8>, Vec<u8>) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let pick = |next: &mut dyn FnMut(usize) -> usize| match next(4) {
        0 => next(4),
        1 => next(19),
        2 => next(40),
        _ => next(600),
    };
    let (mut seqs, mut len) = (Vec::new(), 0);
    let mut last_ml = MF_LIMIT;
    for _ in 0..next(30) {
        let lit = pick(&mut next).max(usize::from(len == 0));
        let ml = MIN_MATCH + pick(&mut next);
        let lits: Vec<u8> = (0..lit).map(|_| next(256) as u8).collect();
        len += lit;
        // Half of the offsets short (1 to 24: patterns and the fast loop's chunk
        // copies), the rest anywhere back.
        let span = if next(2) == 0 { 24 } else { 65535 };
        let offset = 1 + next(len.min(span));
        len += ml;
        seqs.push((lits, offset, ml));
        last_ml = ml;
    }
    let lit = (LAST_LITERALS + pick(&mut next)).max(MF_LIMIT.saturating_sub(last_ml));
    let last: Vec<u8> = (0..lit).map(|_| b"xyz"[next(3)]).collect();
    let seqs: Vec<(&[u8], usize, usize)> = seqs.iter().map(|(l, o, m)| (&l[..], *o, *m)).collect();
    block_of(&seqs, &last)
}

/// A block of `seqs` (literals, offset, match length), then the literals `last`, and
/// its output.
fn block_of(seqs: &[(&[u8], usize, usize)], last: &[u8]) -> (Vec<u8>, Vec<u8>) {
    fn length(block: &mut Vec<u8>, n: usize) {
        if n >= RUN_MASK {
            let mut rest = n - RUN_MASK;
            while rest >= 255 {
                block.push(255);
                rest -= 255;
            }
            block.push(rest as u8);
        }
    }
    let (mut block, mut out) = (Vec::new(), Vec::new());
    for &(lit, offset, ml) in seqs {
        block.push(((lit.len().min(15) << 4) | (ml - MIN_MATCH).min(15)) as u8);
        length(&mut block, lit.len());
        block.extend_from_slice(lit);
        out.extend_from_slice(lit);
        block.extend_from_slice(&(offset as u16).to_le_bytes());
        length(&mut block, ml - MIN_MATCH);
        for _ in 0..ml {
            out.push(out[out.len() - offset]);
        }
    }
    block.push((last.len().min(15) << 4) as u8);
    length(&mut block, last.len());
    block.extend_from_slice(last);
    out.extend_from_slice(last);
    (block, out)
}

/// Long matches at short offsets, ending as close to the block's end as the rules
/// allow: where the fast loop must hand over to the general step so that its chunked
/// copies stay within the output (a match of over 4,000 bytes has 17 or more length
/// bytes, so the fast loop can take it with 5 literals left after it).
#[test]
fn long_matches_near_the_end() {
    let bytes: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ 0x5A).collect();
    for lit in [0, 1, 7, 14, 15, 40] {
        for offset in [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 30] {
            for ml in [19, 20, 33, 270, 300, 1000, 3000, 4113, 5000, 8001] {
                for last in 5..=13 {
                    let head = &bytes[..offset.max(1)];
                    let lits = &bytes[3..3 + lit];
                    let (block, want) =
                        block_of(&[(head, 1, 4), (lits, offset, ml)], &bytes[40..40 + last]);
                    let n = want.len();
                    for extra in [0, 1, 7, 8, 15, 16, 31, 32, 48, 64] {
                        let mut dst = vec![0xA5u8; n + extra];
                        let case =
                            format!("lit {lit} offset {offset} ml {ml} last {last} room {extra}");
                        assert_eq!(decode(&block, &mut dst), Ok(n), "{case}");
                        assert!(dst[..n] == want[..], "{case}");
                        assert!(dst[n..].iter().all(|&b| b == 0xA5), "{case}");
                    }
                }
            }
        }
    }
}

#[test]
fn nothing_past_the_output_at_any_room() {
    for seed in 0..6000 {
        let (block, want) = random_block(seed);
        let n = want.len();
        assert_eq!(measure(&block), Ok(n as u64), "seed {seed}");
        for extra in [
            0, 1, 2, 3, 5, 8, 12, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65, 100,
        ] {
            let mut dst = vec![0xA5u8; n + extra];
            assert_eq!(decode(&block, &mut dst), Ok(n), "seed {seed}, room {extra}");
            assert!(dst[..n] == want[..], "seed {seed}, room {extra}");
            assert!(
                dst[n..].iter().all(|&b| b == 0xA5),
                "seed {seed}, room {extra}"
            );
        }
        if n > 0 {
            assert_eq!(decode(&block, &mut vec![0; n - 1]), Err(Stop::Full));
        }
    }
}
