//! Pages the tests make, and an in-memory device that fails on demand.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use acomp_zswap::{PAGE_SIZE, Page, SwapDevice, Zswap};
use parking_lot::Mutex;

/// splitmix64: a fast, good enough stream for page bodies.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

const WORDS: [&[u8]; 8] = [
    b"swap ",
    b"page ",
    b"zsmalloc ",
    b"offset ",
    b"entry ",
    b"writeback ",
    b"lru ",
    b"pool ",
];

/// The page of store `id` at `offset`: its first 16 bytes name both, then `noise` random
/// bytes, then words (compressible), all from the pair. Any two (offset, id) give other
/// pages; a mix of two, a torn page or another offset's page fails [`check`].
pub fn page_with(offset: u64, id: u64, noise: usize) -> Page {
    let mut p = [0u8; PAGE_SIZE];
    p[..8].copy_from_slice(&offset.to_le_bytes());
    p[8..16].copy_from_slice(&id.to_le_bytes());
    let mut s = mix(offset ^ id.rotate_left(29));
    let noise = noise.min(PAGE_SIZE - 16);
    for b in &mut p[16..16 + noise] {
        s = mix(s);
        *b = s as u8;
    }
    let mut at = 16 + noise;
    while at < PAGE_SIZE {
        s = mix(s);
        let w = WORDS[(s % 8) as usize];
        let n = w.len().min(PAGE_SIZE - at);
        p[at..at + n].copy_from_slice(&w[..n]);
        at += n;
    }
    p
}

/// A page of store `id` at `offset` with 200..1200 random bytes.
pub fn page(offset: u64, id: u64) -> Page {
    page_with(offset, id, 200 + (mix(id ^ offset) % 1000) as usize)
}

/// The noise length [`page`] used.
pub fn noise_of(offset: u64, id: u64) -> usize {
    200 + (mix(id ^ offset) % 1000) as usize
}

/// The store id a loaded page names, after checking that it is whole and `offset`'s.
pub fn check(offset: u64, p: &Page) -> u64 {
    let at = u64::from_le_bytes(p[..8].try_into().unwrap());
    let id = u64::from_le_bytes(p[8..16].try_into().unwrap());
    assert_eq!(
        at, offset,
        "a page of offset {at} loaded at offset {offset}"
    );
    assert!(
        *p == page(offset, id),
        "the page of store {id} at {offset} is not whole: torn or mixed"
    );
    id
}

/// Asserts the budget.
pub fn within_budget(z: &Zswap) {
    let s = z.stats();
    assert!(
        s.pool_total_size <= s.max_pool_size,
        "pool {} over the budget {}",
        s.pool_total_size,
        s.max_pool_size
    );
}

/// A device in memory that fails every `k`-th write batch or read, flips a bit on read or
/// tears writes, on demand.
#[derive(Default)]
pub struct MemDevice {
    pub pages: Mutex<HashMap<u64, Box<Page>>>,
    pub fail_write_every: AtomicU64,
    pub fail_read_every: AtomicU64,
    pub writes: AtomicU64,
    pub reads: AtomicU64,
    pub batches: AtomicU64,
    pub single_writes: AtomicU64,
    pub discards: AtomicU64,
    /// Flip bit 3 of byte 100 of every page read.
    pub flip: AtomicBool,
    /// Keep only the first half of every page written.
    pub tear: AtomicBool,
    /// Refuse every write.
    pub refuse: AtomicBool,
}

impl MemDevice {
    fn write_one(&self, key: u64, page: &Page) {
        let mut p = Box::new(*page);
        if self.tear.load(Relaxed) {
            p[PAGE_SIZE / 2..].fill(0);
        }
        self.pages.lock().insert(key, p);
    }
}

fn fault(what: &str) -> io::Error {
    io::Error::other(format!("planted {what} fault"))
}

impl SwapDevice for MemDevice {
    fn write_page(&self, key: u64, page: &Page) -> io::Result<()> {
        self.single_writes.fetch_add(1, Relaxed);
        self.write_pages(&[(key, page)])
    }

    fn write_pages(&self, batch: &[(u64, &Page)]) -> io::Result<()> {
        let n = self.batches.fetch_add(1, Relaxed) + 1;
        let k = self.fail_write_every.load(Relaxed);
        if self.refuse.load(Relaxed) || (k != 0 && n % k == 0) {
            // A failed batch may have written part of itself, as a real device may.
            if let Some(&(key, page)) = batch.first() {
                self.write_one(key, page);
            }
            return Err(fault("write"));
        }
        for &(key, page) in batch {
            self.writes.fetch_add(1, Relaxed);
            self.write_one(key, page);
        }
        Ok(())
    }

    fn read_page(&self, key: u64, page: &mut Page) -> io::Result<()> {
        let n = self.reads.fetch_add(1, Relaxed) + 1;
        let k = self.fail_read_every.load(Relaxed);
        if k != 0 && n % k == 0 {
            return Err(fault("read"));
        }
        let pages = self.pages.lock();
        let p = pages
            .get(&key)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such key"))?;
        page.copy_from_slice(&p[..]);
        if self.flip.load(Relaxed) {
            page[100] ^= 1 << 3;
        }
        Ok(())
    }

    fn discard(&self, key: u64) -> io::Result<()> {
        self.discards.fetch_add(1, Relaxed);
        self.pages.lock().remove(&key);
        Ok(())
    }
}

/// A fresh path in the temporary directory.
pub fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("acomp-zswap-{name}-{}", std::process::id()))
}
