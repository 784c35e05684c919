//! Fault-around (a run of swap-ins in order brings the pages out after it in with it) and
//! what it shares with a fault's mapping: whether a page read back may keep its clean copy,
//! and a copy kept when its page was not mapped after all.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use acomp_zswap::{PAGE_SIZE, Page};

use crate::pages::{RegionInner, key};
use crate::shared::Shared;
use crate::state::{Acquired, CLEAN, OUT, RESIDENT};
use crate::stats::add;

impl Shared {
    /// Fault-around for a run of swap-ins in order, as the kernel's swap readahead for a
    /// device without `SWP_SYNCHRONOUS_IO`: where page `p`, just swapped in, is the page
    /// after the last run brought in, the window doubles (1, 2, 4 up to
    /// [`Builder::fault_around`](crate::Builder::fault_around) pages)
    /// and the pages after `p` that are out come in with it, until one is not; anything
    /// else closes the window. A sweep takes one fault for each window; random accesses
    /// take none more. Counted in `swap_ins` and [`Stats::swap_readahead`](crate::Stats::swap_readahead).
    pub(crate) fn fault_around(&self, region: &Arc<RegionInner>, p: usize, buf: &mut Page) {
        let window = if region.around.next.load(Ordering::Relaxed) == p {
            (region.around.window.load(Ordering::Relaxed) * 2).clamp(1, self.fault_around)
        } else {
            0
        };
        let window = window.min(region.states.len() - p - 1);
        // Counted in `swap_readahead` by `map_window`, before the pages are mapped. Where
        // another fault has the window's buffer, a page at a time through this one's.
        let n = match self.around_pages.try_lock() {
            Some(mut pages) => self.map_window(region, p + 1, &mut pages[..window]),
            None => {
                let mut n = 0;
                while n < window
                    && self.map_window(region, p + 1 + n, std::slice::from_mut(buf)) == 1
                {
                    n += 1;
                }
                n
            }
        };
        region.around.window.store(window, Ordering::Relaxed);
        region.around.next.store(p + 1 + n, Ordering::Relaxed);
    }

    /// Fault-around's window in one `UFFDIO_COPY`: pages `first..` that are out, held and
    /// loaded into `pages` side by side until one is not (not out, held by another thread,
    /// dropped by the program, its load failed), then mapped together, each released as
    /// [`Shared::missing_fault`] releases a read's page. How many were mapped.
    fn map_window(&self, region: &Arc<RegionInner>, first: usize, pages: &mut [Page]) -> usize {
        // No more than the limit has room for: fault-around never takes the regions past it.
        let room = self.reclaim.as_ref().map_or(pages.len(), |r| r.room(self));
        let len = room.min(pages.len());
        let pages = &mut pages[..len];
        let clean = self.keep_clean && self.room_for_clean();
        let mut held = 0;
        while held < pages.len() {
            let q = first + held;
            if region.states.peek(q) != OUT {
                break;
            }
            match region.states.acquire(q) {
                Acquired::Held(OUT) => {}
                Acquired::Held(s) => {
                    self.finish(region, q, s, s);
                    break;
                }
                Acquired::Busy { .. } => break,
            }
            let key = key(region.id, q);
            let loaded = if clean {
                self.tier.load_clean(key, &mut pages[held])
            } else {
                self.tier.load(key, &mut pages[held])
            };
            if loaded.is_err() || region.states.zapped(q) {
                // Left for its own fault: as it was (a zapped page's release drops it).
                if loaded.is_ok() && clean {
                    self.keep_copy(key, &pages[held]);
                }
                self.finish(region, q, OUT, OUT);
                break;
            }
            held += 1;
        }
        if held == 0 {
            return 0;
        }
        let new = if clean { CLEAN } else { RESIDENT };
        // Counted before the mapping, as a fault's page is (the program may read the pages
        // as soon as they are mapped), and taken back for those not mapped.
        let count = |pages: usize, from: u8, to: u8, sign: bool| {
            let n = pages as u64;
            for c in [&self.counters.swap_ins, &self.counters.swap_readahead] {
                if sign {
                    add(c, n);
                } else {
                    c.fetch_sub(n, Ordering::Relaxed);
                }
            }
            for _ in 0..pages {
                self.counters.moved(from, to);
            }
        };
        let mapped = {
            let _r = self.map_lock.read_recursive();
            // Under the lock that orders mappings against remove events: a page the program
            // dropped since it was loaded ends the run (see `Shared::map_lock`).
            let upto = (0..held)
                .find(|&i| region.states.zapped(first + i))
                .unwrap_or(held);
            count(upto, OUT, new, true);
            let (mapped, _) =
                self.uffd
                    .copy_run(region.addr() + first * PAGE_SIZE, &pages[..upto], clean);
            count(upto - mapped, new, OUT, false);
            mapped
        };
        for (i, page) in pages[..held].iter().enumerate() {
            let q = first + i;
            let key = key(region.id, q);
            if i < mapped {
                if !clean {
                    self.tier.invalidate(key);
                }
                if let Some(r) = &self.reclaim {
                    r.note_resident(self, region, q, true);
                }
                self.finish_counted(region, q, new);
            } else {
                if clean {
                    self.keep_copy(key, page);
                }
                self.finish(region, q, OUT, OUT);
            }
        }
        mapped
    }

    /// Whether a page faulted in for reading may keep its copy in the tier: always, but
    /// under a memory limit without room for both (the regions within an eighth of the
    /// resident pages the limit leaves: under pressure, the reclaimer keeps them there, and
    /// a copy kept would take a resident page's room).
    pub(crate) fn room_for_clean(&self) -> bool {
        match &self.reclaim {
            Some(r) if r.caps_memory() => {
                let limit = r.limit();
                self.counters.resident_pages() < limit - limit / 8
            }
            _ => true,
        }
    }

    /// A page loaded with `load_clean` that was not mapped after all: its clean mark undone,
    /// so that the tier cannot drop the only copy (or stored again, where it did meanwhile).
    pub(crate) fn keep_copy(&self, key: u64, page: &Page) {
        if !self.tier.clear_clean(key) {
            let _ = self.tier.store(key, page);
        }
    }
}
