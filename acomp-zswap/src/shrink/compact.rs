//! Compaction, in one place (`zs_compact` driven by the tier): the pool offers the zspages
//! to empty and moves one object at a time; the tier finds each object's entry and moves
//! it under the entry's lock (a folio's frame under the folio's own lock too).

use std::sync::atomic::Ordering::Relaxed;

use crate::slab::State;
use crate::tier::Zswap;

impl Zswap {
    /// Compaction (`zs_compact`): moves the objects of the pool's emptiest zspages into
    /// fuller ones of their class, so that the emptied zspages' backing pages are freed.
    /// Returns how many objects moved. Loads of the objects moved wait for their move; others
    /// do not.
    pub fn compact(&self) -> usize {
        let mut moved = 0;
        for (offset, place) in self.pool.compaction_candidates() {
            let Some(entry) = self.lookup(offset) else {
                continue;
            };
            let mut state = entry.write();
            let done = match &mut *state {
                State::Pool { handle, length, .. } => {
                    handle.place() == place && self.pool.migrate(handle, *length as usize)
                }
                State::Folio { folio, .. } => {
                    self.pool
                        .migrate_frame(&mut folio.chunks.write(), folio.length, place)
                }
                _ => false,
            };
            moved += usize::from(done);
        }
        self.counters
            .compacted_objects
            .fetch_add(moved as u64, Relaxed);
        moved
    }
}
