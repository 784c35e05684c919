//! The LRU of pool entries and the shrinker that writes the coldest back to the device
//! (zswap's `list_lru` and `shrink_memcg_cb`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use parking_lot::Mutex;

use crate::store::Entry;

/// Entries in the pool, coldest first: keyed by a sequence number given at insertion, so that
/// an entry is removed by its number without a search. Each entry records its number
/// (`Entry::lru`, 0 when out of the list), changed only under this lock.
#[derive(Default)]
pub(crate) struct Lru {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    list: BTreeMap<u64, Arc<Entry>>,
    next: u64,
}

impl Inner {
    fn push(&mut self, e: Arc<Entry>) {
        self.next += 1;
        e.lru.store(self.next, Relaxed);
        self.list.insert(self.next, e);
    }
}

impl Lru {
    /// Puts `e` at the hot end.
    pub(crate) fn push(&self, e: &Arc<Entry>) {
        self.inner.lock().push(Arc::clone(e));
    }

    /// Takes `e` out, if it is in.
    pub(crate) fn remove(&self, e: &Entry) {
        let mut inner = self.inner.lock();
        let seq = e.lru.swap(0, Relaxed);
        if seq != 0 {
            inner.list.remove(&seq);
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

    /// Entries in the list.
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().list.len()
    }
}
