//! The LRU of pool entries (zswap's `list_lru`, with `shrink_memcg_cb`'s second chance),
//! beside the list of clean copies ([`crate::Zswap::load_clean`]) that the shrinker
//! (`shrink.rs`) drops first.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use parking_lot::Mutex;

use crate::entry::Entry;

/// The bit of an entry's sequence number that says it is in the clean list.
const CLEAN: u64 = 1 << 63;

/// Entries in the pool, coldest first: keyed by a sequence number given at insertion, so that
/// an entry is removed by its number without a search. Each entry records its number
/// (`Entry::lru`, 0 when out of both lists, [`CLEAN`] set when in the clean list), changed
/// only under this lock. An entry marked clean (`Entry::clean`) goes to the clean list,
/// oldest first, which the writeback's [`Lru::isolate`] never sees.
#[derive(Default)]
pub(crate) struct Lru {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    list: BTreeMap<u64, Arc<Entry>>,
    clean: BTreeMap<u64, Arc<Entry>>,
    next: u64,
}

impl Inner {
    /// Puts `e` at the young end of its list: the clean list where it is marked clean.
    fn push(&mut self, e: Arc<Entry>) {
        self.next += 1;
        if e.clean.load(Relaxed) {
            e.lru.store(self.next | CLEAN, Relaxed);
            self.clean.insert(self.next, e);
        } else {
            e.lru.store(self.next, Relaxed);
            self.list.insert(self.next, e);
        }
    }

    /// Takes `e` out of its list, if it is in one; returns it.
    fn remove(&mut self, e: &Entry) -> Option<Arc<Entry>> {
        match e.lru.swap(0, Relaxed) {
            0 => None,
            seq if seq & CLEAN != 0 => self.clean.remove(&(seq & !CLEAN)),
            seq => self.list.remove(&seq),
        }
    }
}

impl Lru {
    /// Puts `e` at the hot end (of the clean list where it is marked clean).
    pub(crate) fn push(&self, e: &Arc<Entry>) {
        self.inner.lock().push(Arc::clone(e));
    }

    /// Puts every entry of `es` at the hot end, in order, under one hold of the lock.
    pub(crate) fn push_all(&self, es: Vec<Arc<Entry>>) {
        if es.is_empty() {
            return;
        }
        let mut inner = self.inner.lock();
        es.into_iter().for_each(|e| inner.push(e));
    }

    /// Takes `e` out, if it is in.
    pub(crate) fn remove(&self, e: &Entry) {
        self.inner.lock().remove(e);
    }

    /// Moves `e` to the list its clean mark (changed by the caller before) names, where it
    /// is in the other one: entries out of both lists (isolated, or not in the pool) stay
    /// out, and whoever isolated them pushes them back by their mark.
    pub(crate) fn follow_mark(&self, e: &Entry) {
        let mut inner = self.inner.lock();
        let seq = e.lru.load(Relaxed);
        if seq != 0 && (seq & CLEAN != 0) != e.clean.load(Relaxed) {
            if let Some(e) = inner.remove(e) {
                inner.push(e);
            }
        }
    }

    /// Up to `n` entries from the cold end, taken out of the list: zswap's second chance,
    /// an entry loaded since it was last passed over has its mark cleared and goes to the hot
    /// end instead (each entry at most once per call, so the call ends).
    pub(crate) fn isolate(&self, n: usize) -> Vec<Arc<Entry>> {
        let mut inner = self.inner.lock();
        let mut rotations = inner.list.len();
        let mut out = Vec::with_capacity(n.min(inner.list.len()));
        while out.len() < n {
            let Some((_, e)) = inner.list.pop_first() else {
                break;
            };
            if rotations > 0 && e.referenced.swap(false, Relaxed) {
                rotations -= 1;
                inner.push(e);
                continue;
            }
            e.lru.store(0, Relaxed);
            out.push(e);
        }
        out
    }

    /// Up to `n` clean copies, oldest first, taken out of the clean list.
    pub(crate) fn isolate_clean(&self, n: usize) -> Vec<Arc<Entry>> {
        let mut inner = self.inner.lock();
        let mut out = Vec::with_capacity(n.min(inner.clean.len()));
        while out.len() < n {
            let Some((_, e)) = inner.clean.pop_first() else {
                break;
            };
            e.lru.store(0, Relaxed);
            out.push(e);
        }
        out
    }

    /// Entries in the list (not counting clean copies).
    #[cfg(feature = "inspect")]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().list.len()
    }
}
