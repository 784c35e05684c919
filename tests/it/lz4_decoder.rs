//! The lz4 decoder's fast loop at its edges: blocks built sequence by sequence so that the
//! sequence under test is the last one the fast loop may take (its match offset followed by
//! just as much input as the loop asks for, or one byte less), decoded at every destination
//! size into a canary-filled destination: the exact output and nothing past it, `ENOSPC`
//! with the exact size below it, and the end-of-block rules and bad offsets `EBADMSG` at
//! every size.

use crate::common::random_bytes;
use acomp::Error;
use acomp::lz4::decompress_block;

const CANARY: u8 = 0xA5;

/// Destination sizes from a block's output size `n` on, enough for the fast loop's room
/// test to pass and fail at every sequence near the end; under Miri (which checks every
/// access of the loop's unchecked copies, slowly) a sample of them.
fn caps_from(n: usize) -> Vec<usize> {
    if cfg!(miri) {
        [0, 1, 7, 8, 15, 16, 23, 24, 31, 32, 39, 40, 48, 79]
            .map(|k| n + k)
            .to_vec()
    } else {
        (n..n + 80).collect()
    }
}

/// Destination sizes under `n`: the 40 below it and 0 (under Miri, `n - 1` and 0).
fn caps_under(n: usize) -> Vec<usize> {
    let near = if cfg!(miri) { 1 } else { 40 };
    (n.saturating_sub(near)..n).rev().chain([0]).collect()
}

/// One sequence: its literals, then a match of `ml` bytes (4 or more) `offset` bytes back.
struct Seq {
    lits: Vec<u8>,
    offset: usize,
    ml: usize,
}

/// The length bytes of `n` past a nibble of 15.
fn push_length(block: &mut Vec<u8>, n: usize) {
    if n >= 15 {
        let mut rest = n - 15;
        while rest >= 255 {
            block.push(255);
            rest -= 255;
        }
        block.push(rest as u8);
    }
}

/// The block of `seqs` then the literals `last`, and its output (each match expanded byte by
/// byte, as the format defines it). Offsets are not checked: a test may ask for a bad one.
fn build(seqs: &[Seq], last: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (mut block, mut out) = (Vec::new(), Vec::new());
    for s in seqs {
        let m = s.ml - 4;
        block.push(((s.lits.len().min(15) as u8) << 4) | m.min(15) as u8);
        push_length(&mut block, s.lits.len());
        block.extend_from_slice(&s.lits);
        block.extend_from_slice(&(s.offset as u16).to_le_bytes());
        push_length(&mut block, m);
        out.extend_from_slice(&s.lits);
        for _ in 0..s.ml {
            let from = out.len().checked_sub(s.offset).filter(|_| s.offset > 0);
            let b = from.map_or(0, |i| out[i]);
            out.push(b);
        }
    }
    block.push((last.len().min(15) as u8) << 4);
    push_length(&mut block, last.len());
    block.extend_from_slice(last);
    out.extend_from_slice(last);
    (block, out)
}

/// A prefix of sequences of every kind the fast loop takes (short literals and matches at
/// offsets 8 and more and under 8, runs with length bytes, long matches), `seed`'s bytes.
fn prefix(seed: u64) -> Vec<Seq> {
    // 64 literals first, so that every offset below reaches into the output.
    let mut seqs = vec![Seq {
        lits: random_bytes(64, seed),
        offset: 64,
        ml: 4,
    }];
    for i in 0..24 {
        let lits = random_bytes([3, 14, 0, 30, 7, 60][i % 6], seed + i as u64);
        let (offset, ml) = [(8, 18), (3, 9), (20, 40), (1, 300), (16, 4), (7, 17)][i % 6];
        seqs.push(Seq { lits, offset, ml });
    }
    seqs
}

/// Decodes `block` into a destination of `cap` bytes filled with the canary; checks that
/// nothing past the output changed.
fn decode(block: &[u8], cap: usize) -> Result<Vec<u8>, Error> {
    let mut dst = vec![CANARY; cap];
    let n = decompress_block(block, &mut dst)?;
    assert!(
        dst[n..].iter().all(|&b| b == CANARY),
        "a byte past the output changed (output {n} bytes, destination {cap})"
    );
    Ok(dst[..n].to_vec())
}

/// `block` decodes to `want` into any destination of at least its size, and is `ENOSPC`
/// with the exact size below it.
fn assert_valid(block: &[u8], want: &[u8], what: &str) {
    let n = want.len();
    for cap in caps_under(n) {
        assert_eq!(
            decode(block, cap),
            Err(Error::NoSpace {
                needed: Some(n as u64),
                capacity: cap
            }),
            "{what}: destination of {cap} bytes"
        );
    }
    for cap in caps_from(n) {
        assert!(
            decode(block, cap).unwrap() == want,
            "{what}: destination of {cap} bytes"
        );
    }
}

/// `block` is corrupt with `detail` at every destination size.
fn assert_corrupt(block: &[u8], n: usize, detail: &str, what: &str) {
    let every = if cfg!(miri) {
        caps_under(n)
    } else {
        (0..n).collect()
    };
    for cap in caps_from(n).into_iter().chain(every) {
        match decode(block, cap) {
            Err(Error::Corrupt { detail: d }) => assert_eq!(d, detail, "{what}: {cap} bytes"),
            other => panic!("{what}: destination of {cap} bytes: {other:?}"),
        }
    }
}

#[test]
fn the_last_match_the_fast_loop_may_take_writes_nothing_past_the_output() {
    // The last match followed by its offset, then the last sequence: a token, a length byte
    // where needed and `last` literals, `last + 1` or `last + 2` bytes of input: around the
    // 23 bytes the fast loop asks for after a short match's offset, where the output that
    // follows is the least the input pays for.
    let step = if cfg!(miri) { 4 } else { 1 };
    for last in (5..=40).step_by(step) {
        for (offset, ml) in [
            (8, 4),
            (9, 4),
            (16, 9),
            (24, 18),
            (1, 4),
            (3, 7),
            (7, 18),
            (20, 19),
            (40, 300),
        ] {
            if ml + last < 12 {
                continue;
            }
            let mut seqs = prefix(last as u64);
            seqs.push(Seq {
                lits: random_bytes(2, 99),
                offset,
                ml,
            });
            let (block, want) = build(&seqs, &random_bytes(last, 7));
            assert_valid(
                &block,
                &want,
                &format!("last {last}, offset {offset}, match {ml}"),
            );
        }
    }
}

#[test]
fn end_of_block_rules_hold_for_a_match_near_the_end() {
    // Fewer than 5 literals after the last match, or the last match starting less than 12
    // bytes before the end: corrupt at every size, however long the block before it.
    for last in 1..=4 {
        for ml in [4, 8, 18, 19, 40] {
            let mut seqs = prefix(ml as u64);
            seqs.push(Seq {
                lits: random_bytes(3, 5),
                offset: 8,
                ml,
            });
            let (block, want) = build(&seqs, &random_bytes(last, 8));
            let what = format!("last {last}, match {ml}");
            assert_corrupt(
                &block,
                want.len(),
                "lz4 block: fewer than 5 literals after the last match",
                &what,
            );
        }
    }
    for last in 5..=7 {
        let mut seqs = prefix(3);
        seqs.push(Seq {
            lits: random_bytes(3, 5),
            offset: 8,
            ml: 4,
        });
        let (block, want) = build(&seqs, &random_bytes(last, 8));
        assert_corrupt(
            &block,
            want.len(),
            "lz4 block: the last match starts less than 12 bytes before the end",
            &format!("last {last}"),
        );
    }
}

#[test]
fn bad_offsets_in_the_fast_loop_are_corrupt_at_every_size() {
    // Offset 0 and an offset one byte before the start of the output, for a short match
    // (under 8 and 8 or more apart) and a long one, deep inside the fast loop's reach.
    let seqs = prefix(11);
    let start: usize = seqs.iter().map(|s| s.lits.len() + s.ml).sum::<usize>() + 5;
    for ml in [4, 18, 19, 300] {
        for (offset, detail) in [
            (0, "lz4 match offset 0"),
            (start + 1, "lz4 match offset before the start of the output"),
        ] {
            let mut bad = prefix(11);
            bad.push(Seq {
                lits: random_bytes(5, 3),
                offset,
                ml,
            });
            bad.extend(prefix(12));
            let (block, want) = build(&bad, &random_bytes(30, 4));
            assert_corrupt(
                &block,
                want.len(),
                detail,
                &format!("offset {offset}, match {ml}"),
            );
        }
    }
}

#[test]
fn long_runs_and_matches_decode_at_every_size() {
    // Runs and matches with one and several length bytes, at offsets 1 to 64, then as
    // little input after them as the rules allow.
    for (i, (lit, ml, offset)) in [
        (15, 19, 16),
        (16, 20, 17),
        (47, 35, 64),
        (269, 274, 1),
        (270, 300, 2),
        (600, 19, 9),
        (33, 530, 15),
    ]
    .into_iter()
    .enumerate()
    {
        for last in [5, 12, 20, 30, 45] {
            let mut seqs = prefix(i as u64);
            seqs.push(Seq {
                lits: random_bytes(lit, i as u64),
                offset,
                ml,
            });
            let (block, want) = build(&seqs, &random_bytes(last, 1));
            assert_valid(
                &block,
                &want,
                &format!("run {lit}, match {ml} at {offset}, last {last}"),
            );
        }
    }
}
