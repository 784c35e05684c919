//! Recompression of idle entries, as zram's (`Documentation/admin-guide/blockdev/zram.rst`:
//! `recomp_algorithm`, `idle`, `recompress type=idle`): pages are stored with the tier's
//! transform (fast: lz4) and those left idle are recompressed with a second one (dense:
//! zstd).
//!
//! - [`Zswap::mark_idle`] marks every entry idle (zram's `echo all > idle`); a load or a
//!   store of the offset clears the mark (a store makes a new entry, not idle).
//! - [`Zswap::recompress_idle`] recompresses idle entries in the caller's thread (zram's
//!   `echo "type=idle" > recompress`), [`Zswap::recompress_every`] in a thread of its own.
//! - An entry's page is decompressed into a private buffer under the entry's lock held for
//!   reading (loads of it go on), recompressed outside any lock, written into a new object,
//!   and swapped in under the entry's lock held for writing only if the entry still holds
//!   the same frame of the first transform and is still idle; else the new object is freed.
//! - As zram's, a frame that is not at least one size class smaller than the one it would
//!   replace is thrown away: the entry stays as it was and is not tried again until its
//!   offset is stored again (a new entry).
//! - Each entry carries the tag of the transform that wrote its frame ([`FrameTag`](crate::slab::FrameTag)): loads,
//!   writeback and compaction go through it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

#[cfg(doc)]
use crate::Builder;
use crate::slab::{EntryRef, Mark};
use crate::stats::inc;
use crate::sys;
use crate::tier::Zswap;
use crate::{PAGE_SIZE, Page};

mod page;
mod unit;

/// How often the thread of [`Zswap::recompress_every`] looks at the pool's size, with
/// [`Builder::recompress_pressure_percent`].
pub const PRESSURE_POLL: Duration = Duration::from_millis(100);

impl Zswap {
    /// Marks every entry idle (zram's `echo all > /sys/block/zramX/idle`). A load or store
    /// of an offset clears its mark; [`Zswap::recompress_idle`] takes the entries still
    /// marked.
    pub fn mark_idle(&self) {
        for shard in self.index.shards() {
            for (offset, slot) in shard.lock().iter() {
                // Under the shard's lock: the slot is the offset's entry.
                self.entries.at(slot, offset).marks.set(Mark::Idle);
            }
        }
    }

    /// Whether the pool has passed [`Builder::recompress_pressure_percent`] of its budget.
    fn under_pressure(&self) -> bool {
        self.pressure_pages
            .is_some_and(|p| self.pool.stats().pages >= p)
    }

    /// Whether `offset`'s entry is marked idle now.
    pub fn is_idle(&self, offset: u64) -> bool {
        self.lookup(offset).is_some_and(|e| e.marks.get(Mark::Idle))
    }

    /// Recompresses up to `max_pages` idle entries with the [`Builder::recompress`]
    /// transform, in the caller's thread (zram's `echo "type=idle" > recompress`); returns
    /// how many were recompressed. Only compressed frames of the tier's own transform in the
    /// pool are tried (not same-filled pages, pages kept as they are, pages on the device, or
    /// frames recompressed already), each at most once per store.
    ///
    /// A new frame replaces the old only where its size class is smaller (zram's rule);
    /// else the entry stays as it was ([`crate::Stats::recompress_skipped_pages`]). Loads of
    /// the entry go on while it is decompressed and recompressed: the entry's lock is held
    /// for writing only to swap the objects, and then only if the entry still holds the
    /// frame that was recompressed and is still idle. A new object that the pool's budget
    /// has no room for leaves the entry as it was, to be tried again.
    ///
    /// A pass that recompressed anything ends with [`Zswap::compact`], so that the pool's
    /// memory ([`crate::Stats::pool_total_size`]) falls by what the smaller objects save,
    /// and returns once the backing pages it freed are given back to the kernel (by the
    /// arena's thread, [`Builder::arena_thread`], which it waits for), as zram's
    /// `recompress` has freed its pages when the write returns.
    ///
    /// Without a recompression transform, returns 0.
    pub fn recompress_idle(&self, max_pages: usize) -> usize {
        self.recompress_pass(max_pages, || false)
    }

    /// [`recompress_idle`](Zswap::recompress_idle)'s pass, which also ends before the next
    /// entry once `stop()` says so (the thread of [`recompress_every`](Zswap::recompress_every)
    /// asks whether it was told to stop).
    fn recompress_pass(&self, max_pages: usize, stop: impl Fn() -> bool) -> usize {
        let Some(recomp) = &self.recomp else {
            return 0;
        };
        if self.unit_pages > 1 {
            let done = self.recompress_units(recomp, max_pages, &stop);
            if done > 0 {
                self.end_pass();
            }
            return done;
        }
        let mut src: Box<Page> = Box::new([0; PAGE_SIZE]);
        let mut dst: Box<Page> = Box::new([0; PAGE_SIZE]);
        let mut done = 0;
        let mut tried = 0;
        'shards: for shard in self.index.shards() {
            if tried >= max_pages {
                break;
            }
            // The shard's lock only while the candidates are picked.
            let picked: Vec<EntryRef<'_>> = shard
                .lock()
                .iter()
                .map(|(offset, slot)| self.entries.at(slot, offset))
                .filter(|e| {
                    // Clean copies are the first to be dropped: not worth the CPU.
                    e.marks.get(Mark::Idle)
                        && !e.marks.get(Mark::Tried)
                        && !e.marks.get(Mark::Clean)
                })
                .take(max_pages - tried)
                .collect();
            for entry in picked {
                let offset = entry.offset;
                if stop() {
                    break 'shards;
                }
                tried += 1;
                let start = sys::thread_cpu_ns();
                done += self.recompress_entry(recomp, offset, &entry, &mut src, &mut dst);
                self.counters
                    .recompress_cpu_ns
                    .fetch_add(sys::thread_cpu_ns().saturating_sub(start), Relaxed);
            }
        }
        if done > 0 {
            self.end_pass();
        }
        done
    }

    /// The end of a pass that recompressed anything. The old objects were freed here and
    /// there: their backing pages come free only once their zspages are empty, so compact
    /// (zram's users write `compact` after `recompress`; here it is part of the pass). Then
    /// wait for the arena's thread to give the freed pages back: the pass pays for its
    /// `MADV_DONTNEED`s, as zram's `recompress` has freed its zsmalloc pages when the write
    /// returns, rather than leave them running beside the loads that follow it (their TLB
    /// shootdowns made the hot loads after a pass up to half as fast: BENCHMARKS.md, issue
    /// 51).
    fn end_pass(&self) {
        self.compact();
        self.pool.settle();
    }

    /// Recompression by itself: a thread that, every `interval`, recompresses the entries
    /// idle since its last pass ([`Zswap::recompress_idle`]) and marks every entry idle
    /// again ([`Zswap::mark_idle`]), so that a page left alone for one to two intervals is
    /// recompressed. With [`Builder::recompress_pressure_percent`], it also looks at the
    /// pool every [`PRESSURE_POLL`] (or `interval`, if shorter), and where the pool has
    /// passed that share of its budget, recompresses the entries idle since the last mark
    /// right away, once until the next mark
    /// ([`Stats::recompress_pressure_passes`](crate::Stats::recompress_pressure_passes)).
    /// The thread holds the tier only while it works; it stops when the returned
    /// [`Recompressing`] is dropped (within the entry it is recompressing, or the unit, and
    /// the compaction that ends its pass) or the last `Arc` of the tier goes.
    ///
    /// # Errors
    ///
    /// The error of [`std::thread::Builder::spawn`].
    pub fn recompress_every(
        self: &Arc<Self>,
        interval: Duration,
    ) -> std::io::Result<Recompressing> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let tier: Weak<Zswap> = Arc::downgrade(self);
        let flag = Arc::clone(&stop);
        let poll = self.pressure_pages.map(|_| interval.min(PRESSURE_POLL));
        let thread = std::thread::Builder::new()
            .name("zswap-recompress".into())
            .spawn(move || {
                let (lock, cv) = &*flag;
                let mut next = Instant::now() + interval;
                // A pass for pressure since the last mark: at most one per interval.
                let mut pressed = false;
                loop {
                    {
                        let mut stopped = lock.lock();
                        let left = next.saturating_duration_since(Instant::now());
                        if !*stopped {
                            cv.wait_for(&mut stopped, poll.map_or(left, |p| p.min(left)));
                        }
                        if *stopped {
                            return;
                        }
                    }
                    let Some(z) = tier.upgrade() else { return };
                    if Instant::now() < next {
                        if !pressed && z.under_pressure() {
                            pressed = true;
                            inc(&z.counters.recompress_pressure_passes);
                            z.recompress_pass(usize::MAX, || *lock.lock());
                        }
                        continue;
                    }
                    z.recompress_pass(usize::MAX, || *lock.lock());
                    if *lock.lock() {
                        return;
                    }
                    z.mark_idle();
                    (next, pressed) = (Instant::now() + interval, false);
                }
            })?;
        Ok(Recompressing {
            stop,
            thread: Some(thread),
        })
    }
}

/// The thread of [`Zswap::recompress_every`]; dropping it stops the thread and waits for it:
/// a pass under way ends after the entry (or the unit) it is recompressing (and compacts
/// what it recompressed), not after every idle entry.
#[derive(Debug)]
pub struct Recompressing {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Recompressing {
    /// Tells the thread to stop, without waiting for it: a pass under way ends after the
    /// entry (or the unit) it is recompressing (and compacts what it recompressed), and no pass starts
    /// after. Dropping the handle stops the thread too, and waits for it.
    pub fn stop(&self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
    }
}

impl Drop for Recompressing {
    fn drop(&mut self) {
        self.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
