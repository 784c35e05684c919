//! A class's zspages by id (`ClassState`'s `Rows`): each zspage's head and its row of words,
//! in chunks of rows that never move.

use super::{ClassInfo, Zspage};
use crate::pool::arena::BackingPage;

/// Rows in each of the first [`ROW_SHIFT`] chunks of a class's [`Rows`], doubling from 1,
/// then in every chunk after.
const ROW_SHIFT: u32 = 6;
const CHUNK_ROWS: usize = 1 << ROW_SHIFT;

/// Where row `id` is: its chunk, its place there, and the chunk's length in rows. Chunks
/// double from one row to [`CHUNK_ROWS`] / 2, then hold [`CHUNK_ROWS`] each, so that a
/// class of few zspages costs few rows and a class of many has at most one chunk's rows
/// unused (a vector doubling its capacity leaves up to half of it so).
#[inline]
fn row_place(id: u32) -> (usize, usize, usize) {
    let i = id as usize;
    if i < CHUNK_ROWS - 1 {
        let c = (i + 1).ilog2() as usize;
        (c, i + 1 - (1 << c), 1 << c)
    } else {
        let i = i - (CHUNK_ROWS - 1);
        (
            ROW_SHIFT as usize + i / CHUNK_ROWS,
            i % CHUNK_ROWS,
            CHUNK_ROWS,
        )
    }
}

/// One chunk of a class's rows: the heads, and each row's words.
struct RowChunk {
    heads: Box<[Zspage]>,
    words: Box<[u64]>,
}

/// A class's zspages by id: a 16-byte head each ([`Zspage`]) and a row of `u64` words, its
/// backing pages' numbers two a word, then one word per object: the owner's tag of an
/// object in use, the next free object's index (or [`END`](super::END)) for a free one. In chunks that
/// never move (no copy as the class grows, at most one chunk's rows made ahead of use),
/// two allocations a chunk: nothing is allocated per zspage.
pub(super) struct Rows {
    /// Words of pages in a row: `pages_per_zspage` / 2, rounded up.
    pub(super) page_words: usize,
    /// Words in a row: `page_words` and one per object.
    width: usize,
    chunks: Vec<RowChunk>,
    /// Ids made: the next new zspage's.
    pub(super) len: u32,
}

impl Rows {
    pub(super) fn new(info: &ClassInfo) -> Self {
        let page_words = info.pages_per_zspage.div_ceil(2);
        Rows {
            page_words,
            width: page_words + info.objs_per_zspage,
            chunks: Vec::new(),
            len: 0,
        }
    }

    #[inline]
    pub(super) fn head(&self, id: u32) -> &Zspage {
        let (c, at, _) = row_place(id);
        &self.chunks[c].heads[at]
    }

    #[inline]
    pub(super) fn head_mut(&mut self, id: u32) -> &mut Zspage {
        let (c, at, _) = row_place(id);
        &mut self.chunks[c].heads[at]
    }

    /// Zspage `id`'s head and words.
    #[inline]
    pub(super) fn row_mut(&mut self, id: u32) -> (&mut Zspage, &mut [u64]) {
        let (c, at, _) = row_place(id);
        let w = self.width;
        let chunk = &mut self.chunks[c];
        (&mut chunk.heads[at], &mut chunk.words[at * w..(at + 1) * w])
    }

    #[inline]
    pub(super) fn words(&self, id: u32) -> &[u64] {
        let (c, at, _) = row_place(id);
        let w = self.width;
        &self.chunks[c].words[at * w..(at + 1) * w]
    }

    /// Bytes of its heads, words and chunk table (for the `inspect` feature).
    #[cfg(feature = "inspect")]
    pub(super) fn bytes(&self) -> usize {
        let rows: usize = self.chunks.iter().map(|c| c.heads.len()).sum();
        rows * (size_of::<Zspage>() + self.width * size_of::<u64>())
            + self.chunks.capacity() * size_of::<RowChunk>()
    }

    /// A new id's row, its chunk made where it is the chunk's first.
    pub(super) fn push(&mut self) -> u32 {
        let id = self.len;
        let (c, at, len) = row_place(id);
        if at == 0 {
            debug_assert_eq!(c, self.chunks.len());
            self.chunks.push(RowChunk {
                heads: vec![Zspage::default(); len].into_boxed_slice(),
                words: vec![0; len * self.width].into_boxed_slice(),
            });
        }
        self.len = id + 1;
        id
    }
}

/// Page `i`'s number among a row's words.
pub(super) fn page_of(words: &[u64], i: usize) -> BackingPage {
    BackingPage((words[i / 2] >> (32 * (i % 2))) as u32)
}
