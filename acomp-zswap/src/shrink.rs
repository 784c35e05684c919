//! The shrinker, in one place as zswap.c keeps `shrink_worker` beside
//! `zswap_writeback_entry`: admission at the budget ([`Zswap::alloc`]), the hysteresis of
//! `accept_threshold_percent`, the drop of clean copies that comes before anything else,
//! and writeback of the coldest pool entries to the device, in batches.

use std::io;
use std::sync::atomic::Ordering::Relaxed;

use crate::device::checksum;
use crate::outcome::{StoreError, WritebackError};
use crate::pool::{AllocError, Handle};
use crate::slab::EntryRef;
use crate::slab::{Mark, State};
use crate::stats::inc;
use crate::tier::Zswap;
use crate::{PAGE_SIZE, Page};

mod compact;

/// Pages the shrinker writes back in one batch ([`crate::SwapDevice::write_pages`]).
pub const WRITEBACK_BATCH: usize = 32;

/// How long a store at the budget with a device waits, at most, for entries it cannot
/// write back yet (busy with loads, or objects of other stores on their way into the LRU)
/// before it is refused: 100 ms.
pub const BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

impl Zswap {
    /// An object of `len` bytes within the budget: at the budget, clean copies are dropped
    /// and then the coldest entries go to the device until the pool is at the accept
    /// threshold; without a device, or while the pool has not fallen below the threshold
    /// since it was full, the store is refused unless dropping clean copies (and compaction)
    /// gets the pool there.
    pub(crate) fn alloc(&self, offset: u64, len: usize) -> Result<Handle, StoreError> {
        if self.full.load(Relaxed) && self.device.is_none() && !self.reclaim_without_device() {
            return Err(StoreError::PoolFull);
        }
        match self.pool.alloc(len, offset) {
            Ok(h) => Ok(h),
            Err(AllocError::LimitHit) => self.alloc_at_budget(offset, len),
            Err(AllocError::BadSize(n)) => unreachable!("objects are 1..=PAGE_SIZE bytes, not {n}"),
        }
    }

    /// [`Zswap::alloc`] where the pool is at its budget: the shrinker, out of the store's
    /// way (the store path's instructions do not depend on it).
    #[cold]
    #[inline(never)]
    fn alloc_at_budget(&self, offset: u64, len: usize) -> Result<Handle, StoreError> {
        inc(&self.counters.pool_limit_hit);
        self.full.store(true, Relaxed);
        if self.device.is_none() {
            if self.reclaim_without_device() {
                if let Ok(h) = self.pool.alloc(len, offset) {
                    return Ok(h);
                }
            }
            return Err(StoreError::PoolFull);
        }
        let _one = self.shrinking.lock();
        // Clean copies first: their owners hold the pages.
        self.drop_clean();
        let (mut compacted, mut busy, mut yields) = (false, None, 0u32);
        loop {
            // Another shrinker may have made room meanwhile.
            if self.pool.stats().pages <= self.accept_pages {
                if let Ok(h) = self.pool.alloc(len, offset) {
                    return Ok(h);
                }
            }
            match self.write_batch(WRITEBACK_BATCH) {
                Ok(0) => {
                    if let Ok(h) = self.pool.alloc(len, offset) {
                        return Ok(h);
                    }
                    // Copies made clean since the drop above (loads racing this store).
                    if self.drop_clean() > 0 {
                        continue;
                    }
                    // Zspages other stores are setting up (their pages counted, maybe no
                    // object yet, the arena perhaps adding a chunk): they end soon, and
                    // their objects join the LRU or their pages are counted again.
                    if self.pool.zspages_in_flight() > 0 {
                        std::thread::yield_now();
                        continue;
                    }
                    // Entries left, all busy (loads), or objects of stores still on their
                    // way into the LRU: they will be free soon. Up to BUSY_WAIT, yielding
                    // first, then a millisecond at a time: a thread of a busy machine may
                    // take longer to be scheduled than a thousand yields.
                    let since = *busy.get_or_insert_with(std::time::Instant::now);
                    if self.pool.stats().objects > 0 && since.elapsed() < BUSY_WAIT {
                        yields += 1;
                        if yields < 1024 {
                            std::thread::yield_now();
                        } else {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                        continue;
                    }
                    // Nothing left to write back: what compaction frees is the last room.
                    if compacted {
                        return Err(StoreError::PoolFull);
                    }
                    self.compact();
                    compacted = true;
                }
                Ok(_) => {
                    // Objects freed here and there free no backing page until their zspage
                    // is empty: compaction turns them into pages, so that the shrinker writes
                    // back about what the threshold asks, not most of the pool.
                    if self.pool.stats().pages > self.accept_pages {
                        self.compact();
                    }
                }
                Err(e) => {
                    // The batch stays in the pool; the page may still fit.
                    return self
                        .pool
                        .alloc(len, offset)
                        .map_err(|_| StoreError::Writeback(e));
                }
            }
        }
    }

    /// Without a device, at the budget: drops clean copies, then says whether the pool is at
    /// the accept threshold ([`Zswap::at_threshold`], which compacts where that can get it
    /// there).
    fn reclaim_without_device(&self) -> bool {
        {
            let _one = self.shrinking.lock();
            self.drop_clean();
        }
        self.at_threshold()
    }

    /// Drops clean copies ([`Zswap::load_clean`]), oldest first, until the pool is at the
    /// accept threshold or none is left; compacts where the objects left would fit under
    /// the threshold, so that dropping stops once compaction can do the rest. The caller
    /// holds `shrinking`. Returns how many it dropped.
    fn drop_clean(&self) -> usize {
        let (mut dropped, mut compacted) = (0, 0);
        loop {
            let s = self.pool.stats();
            if s.pages <= self.accept_pages {
                break;
            }
            if dropped > compacted && s.used_bytes <= self.accept_pages * PAGE_SIZE {
                self.compact();
                compacted = dropped;
                continue;
            }
            // One at a time: a clean copy's drop costs no I/O, and each may be the last
            // one needed.
            let Some(victim) = self.entries.isolate_clean(1, |h| self.pool.owner(h)).pop() else {
                break;
            };
            if self.drop_clean_one(&victim) {
                dropped += 1;
            }
        }
        dropped
    }

    /// Drops one clean copy taken out of the clean list, under its lock, if it is still
    /// one and still its offset's entry; an entry whose mark was cleared meanwhile goes
    /// back to the LRU. Returns whether it dropped it.
    fn drop_clean_one(&self, entry: &EntryRef<'_>) -> bool {
        #[cfg(feature = "test-hooks")]
        crate::hooks::run_before_dropping_clean(entry.offset);
        let state = entry.write();
        if matches!(*state, State::Dead) {
            return false;
        }
        if !entry.marks.get(Mark::Clean) {
            self.entries.push(entry);
            return false;
        }
        #[cfg(feature = "test-hooks")]
        crate::hooks::run_while_dropping_clean(entry.offset);
        self.end(entry, state);
        inc(&self.counters.clean_dropped);
        true
    }

    /// Whether the pool is at or below the accept threshold, which ends the refusals of a
    /// pool that hit its budget (zswap's hysteresis). Without a device, compaction is the
    /// only way back there (the kernel's zsmalloc compacts by itself, from its shrinker): it
    /// runs first where the room left inside zspages could cover the excess and objects were
    /// freed since it last ran for this, so that refused stores do not compact over and over
    /// for nothing.
    fn at_threshold(&self) -> bool {
        let s = self.pool.stats();
        if self.device.is_none() && s.pages > self.accept_pages {
            let excess = (s.pages - self.accept_pages) * PAGE_SIZE;
            let room = s.total_size().saturating_sub(s.used_bytes);
            if room >= excess && s.used_bytes < self.compacted_at.load(Relaxed) {
                if let Some(_one) = self.shrinking.try_lock() {
                    self.compact();
                    self.compacted_at
                        .store(self.pool.stats().used_bytes, Relaxed);
                }
            }
        }
        if self.pool.stats().pages <= self.accept_pages {
            self.full.store(false, Relaxed);
            self.compacted_at.store(usize::MAX, Relaxed);
            true
        } else {
            false
        }
    }

    /// The shrinker on demand: writes back up to `max_pages` of the coldest pool entries to
    /// the device, in batches, and frees their objects. Clean copies
    /// ([`Zswap::load_clean`]) are never written back. Returns how many were written back:
    /// fewer when the pool runs out of entries.
    ///
    /// # Errors
    ///
    /// [`WritebackError::NoDevice`] without a device; [`WritebackError::Io`], the device's
    /// error and the pages written back before it, where a batch fails (its pages stay in
    /// the pool; batches written before stay written).
    pub fn writeback(&self, max_pages: usize) -> Result<usize, WritebackError> {
        if self.device.is_none() {
            return Err(WritebackError::NoDevice);
        }
        let _one = self.shrinking.lock();
        let mut written = 0;
        while written < max_pages {
            let n = self
                .write_batch((max_pages - written).min(WRITEBACK_BATCH))
                .map_err(|error| WritebackError::Io { error, written })?;
            if n == 0 {
                break;
            }
            written += n;
        }
        Ok(written)
    }

    /// Writes back one batch of up to `n` of the coldest entries; returns how many, 0 only
    /// where the LRU is empty or every entry in it is busy several times over.
    fn write_batch(&self, n: usize) -> io::Result<usize> {
        for _ in 0..4 {
            match self.try_write_batch(n)? {
                (0, 0) => return Ok(0),
                (0, _) => continue,
                (written, _) => return Ok(written),
            }
        }
        Ok(0)
    }

    /// One try at a batch: (written, isolated).
    fn try_write_batch(&self, n: usize) -> io::Result<(usize, usize)> {
        let c = &self.counters;
        let dev = self.device.as_ref().expect("callers check for a device");
        let victims = self.entries.isolate(n, |h| self.pool.owner(h));
        if victims.is_empty() {
            return Ok((0, 0));
        }
        // Entries busy with a load (hot) or a store go back for another round.
        let mut locked = Vec::with_capacity(victims.len());
        let mut pages: Vec<Box<Page>> = Vec::with_capacity(victims.len());
        for v in &victims {
            #[cfg(feature = "test-hooks")]
            crate::hooks::run_before_writing_back(v.offset);
            let Some(state) = v.try_write() else {
                self.entries.push(v);
                continue;
            };
            if v.marks.get(Mark::Clean) {
                // A clean copy is dropped at the budget, never written back.
                self.entries.push(v);
                continue;
            }
            if !matches!(*state, State::Pool { .. } | State::Folio { .. }) {
                continue;
            }
            let mut page = Box::new([0u8; PAGE_SIZE]);
            if self.read(&state, &mut page).is_err() {
                // A frame the pool cannot give back is left where it is (and counted).
                continue;
            }
            let key = self.next_key.fetch_add(1, Relaxed);
            locked.push((v, state, key, checksum(key, &page)));
            pages.push(page);
        }
        if locked.is_empty() {
            return Ok((0, victims.len()));
        }
        let batch: Vec<(u64, &Page)> = locked
            .iter()
            .zip(&pages)
            .map(|((_, _, key, _), page)| (*key, &**page))
            .collect();
        if let Err(e) = dev.write_pages(&batch) {
            c.device_write_fail.fetch_add(locked.len() as u64, Relaxed);
            for (v, _state, key, _) in &locked {
                let _ = dev.discard(*key);
                self.entries.push(v);
            }
            return Err(e);
        }
        let written = locked.len();
        for (_, mut state, key, sum) in locked {
            // Checked above, under the same lock: a pool state. A folio's frame is freed
            // once its last page leaves it.
            let old = std::mem::replace(&mut *state, State::Device { key, checksum: sum });
            self.leave_pool(old);
            inc(&c.device_pages);
            inc(&c.written_back_pages);
        }
        Ok((written, victims.len()))
    }
}
