//! A page-out's batch: the pages of [`Region::page_out`](crate::Region::page_out) and of the
//! reclaimer go to the tier [`BATCH`] at a time.

use std::io;

use acomp_zswap::{PAGE_SIZE, Page};

use crate::pages::{BATCH, RegionInner, key};
use crate::shared::Shared;
use crate::state::{CLEAN, OUT, RESIDENT, UNTOUCHED};
use crate::stats::add;

thread_local! {
    /// A page-out's pages read out for the tier: a batch's worth, per thread.
    static STORE_BUF: std::cell::RefCell<Vec<Page>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What a page-out does with one page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Action {
    /// Stays as it was.
    Keep,
    /// Stored in the tier (or its clean copy kept): leaves memory, now `OUT`.
    Out,
    /// Zeros (or dropped by the program): leaves memory, now `UNTOUCHED`.
    Zero,
    /// A clean page whose copy the tier dropped and whose store was refused: stays, writable.
    Unprotect,
}

/// Pages out pages `[start, stop)` of `region` (at most [`BATCH`]): how many left memory,
/// and the tier's reason if it refused one.
pub(crate) fn page_out_batch(
    shared: &Shared,
    region: &RegionInner,
    start: usize,
    stop: usize,
    reclaim: bool,
) -> (usize, Option<String>) {
    let count = stop - start;
    debug_assert!(count <= BATCH);
    let mut old = [UNTOUCHED; BATCH];
    for (i, o) in old[..count].iter_mut().enumerate() {
        *o = region.states.acquire_wait(start + i);
    }
    if region.dying() {
        // Being dropped (unregistered, or about to be): nothing to page out.
        for (i, &o) in old[..count].iter().enumerate() {
            shared.finish(region, start + i, o, o);
        }
        return (0, None);
    }
    let mut action = [Action::Keep; BATCH];
    let mut refused = None;
    let mut mapped = [0u8; BATCH];
    let wp = region
        .map
        .resident(start * PAGE_SIZE, count, &mut mapped)
        // Write-protect before reading: a write from here on faults and waits for its page.
        .and_then(|()| write_protect(shared, region.addr() + start * PAGE_SIZE, count));
    if let Err(e) = wp {
        for (i, &o) in old[..count].iter().enumerate() {
            shared.finish(region, start + i, o, o);
        }
        return (0, Some(format!("write-protect failed: {e}")));
    }
    // The pages to compress, read out and stored in one batch of the tier's.
    let mut to_store = [0usize; BATCH];
    let mut n_store = 0;
    STORE_BUF.with_borrow_mut(|bufs| {
        if bufs.is_empty() {
            bufs.resize(BATCH, [0; PAGE_SIZE]);
        }
        // First what needs no read; the pages to read are gathered for one copy.
        let mut to_read = [0usize; BATCH];
        let mut n_read = 0;
        for i in 0..count {
            let p = start + i;
            action[i] = match old[i] {
                CLEAN if shared.tier.clear_clean(key(region.id, p)) => {
                    add(&shared.counters.clean_swap_outs, 1);
                    Action::Out
                }
                // A page the program dropped since it was mapped.
                RESIDENT if mapped[i] & 1 == 0 => Action::Zero,
                RESIDENT | CLEAN if !region.dying() => {
                    to_read[n_read] = i;
                    n_read += 1;
                    Action::Keep
                }
                RESIDENT | CLEAN => Action::Unprotect,
                _ => Action::Keep,
            };
        }
        // The pages the kernel cannot read (the program's `PROT_NONE`) stay in memory;
        // the rest are copied out.
        let offsets: Vec<usize> = to_read[..n_read]
            .iter()
            .map(|&i| (start + i) * PAGE_SIZE)
            .collect();
        let mut done = 0;
        while done < n_read {
            done += region.map.readable_pages(&offsets[done..]);
            if done < n_read {
                action[to_read[done]] = Action::Unprotect;
                done += 1;
            }
        }
        for (k, &i) in to_read[..n_read].iter().enumerate() {
            if action[i] != Action::Unprotect {
                region.map.read_page(offsets[k], &mut bufs[k]);
            }
        }
        for (k, &i) in to_read[..n_read].iter().enumerate() {
            if action[i] == Action::Unprotect {
                continue;
            }
            if acomp_zswap::same_filled(&bufs[k]) == Some(0) {
                add(&shared.counters.zero_swap_outs, 1);
                action[i] = Action::Zero;
            } else {
                // Compacted to the front: `bufs[n_store]` is this page's from here on.
                if n_store != k {
                    bufs.swap(n_store, k);
                }
                to_store[n_store] = i;
                n_store += 1;
            }
        }
        if n_store == 0 {
            return;
        }
        let pages: Vec<(u64, &Page)> = to_store[..n_store]
            .iter()
            .zip(bufs.iter())
            .map(|(&i, b)| (key(region.id, start + i), b))
            .collect();
        for (&i, r) in to_store[..n_store]
            .iter()
            .zip(shared.tier.store_batch(&pages))
        {
            action[i] = match r {
                Ok(_) => {
                    add(&shared.counters.swap_outs, 1);
                    Action::Out
                }
                Err(e) => {
                    refused.get_or_insert_with(|| e.to_string());
                    Action::Unprotect
                }
            };
        }
    });
    // Drop the pages that left, a run at a time.
    let mut i = 0;
    while i < count {
        if matches!(action[i], Action::Out | Action::Zero) {
            let j = (i..count)
                .find(|&j| !matches!(action[j], Action::Out | Action::Zero))
                .unwrap_or(count);
            if shared
                .drop_pages(region, (start + i) * PAGE_SIZE, (j - i) * PAGE_SIZE)
                .is_err()
            {
                // Refused for part of the run (locked pages, `mlock`; the kernel stops at
                // the first locked mapping): the pages still mapped are dropped one by one,
                // and those refused stay in memory as they were, their tier copies dropped;
                // `MADV_PAGEOUT` skips locked pages the same way.
                let mut still = [0u8; BATCH];
                let checked =
                    region
                        .map
                        .resident((start + i) * PAGE_SIZE, j - i, &mut still[..j - i]);
                for k in i..j {
                    let mapped = checked.is_err() || still[k - i] & 1 != 0;
                    if mapped
                        && shared
                            .drop_pages(region, (start + k) * PAGE_SIZE, PAGE_SIZE)
                            .is_err()
                    {
                        if action[k] == Action::Out {
                            shared.tier.invalidate(key(region.id, start + k));
                        }
                        action[k] = Action::Unprotect;
                    }
                }
            }
            i = j;
        } else {
            i += 1;
        }
    }
    let mut moved = 0;
    for i in 0..count {
        let p = start + i;
        let new = match action[i] {
            Action::Keep => old[i],
            Action::Out => OUT,
            Action::Zero => UNTOUCHED,
            Action::Unprotect => {
                let _ = shared.uffd.write_protect(
                    region.addr() + p * PAGE_SIZE,
                    PAGE_SIZE,
                    false,
                    false,
                );
                RESIDENT
            }
        };
        if new != old[i] && matches!(new, OUT | UNTOUCHED) {
            moved += 1;
            if let (Some(r), Some(marks)) = (&shared.reclaim, &region.lru) {
                marks.evicted(p, if reclaim { r.evict_stamp() } else { 0 });
            }
        }
        shared.finish(region, p, old[i], new);
    }
    if reclaim {
        add(&shared.counters.reclaimed, moved as u64);
    }
    (moved, refused)
}

/// Write-protects `pages` pages from `at`, retrying while the kernel refuses with `EAGAIN`:
/// a remove event not read yet (the program's madvise, or another page-out's
/// `MADV_DONTNEED`, on any region of the pager), which a handler thread reads soon.
fn write_protect(shared: &Shared, at: usize, pages: usize) -> io::Result<()> {
    loop {
        match shared
            .uffd
            .write_protect(at, pages * PAGE_SIZE, true, false)
        {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => std::thread::yield_now(),
            r => return r,
        }
    }
}
