//! The swap-ins that a replacement policy takes on the budget rows' stream, simulated: how
//! many of the pager's swap-ins come from what a userfaultfd cannot see (accessed bits).
//!
//! ```text
//! cargo run --release -p zswap-main --example lru_sim [-- RECORDS]
//! ```
//!
//! The stream is the main job's `--under-budget` stream ([`budget::stream`], seed 1, one
//! write in ten by [`budget::writes`]), over `RECORDS` records (65,536 by default, the
//! budget rows' own): the records written in in order, then the warm-up, then the timed
//! stream, whose misses are counted. Each policy holds the budget's percent of the records
//! resident (the budget rows also hold the pool in that budget, so the percents here are
//! an upper bound on their resident pages; every policy gets the same). The policies:
//!
//! - `kernel`: the kernel's two lists for anonymous pages (`mm/vmscan.c`): a page comes in
//!   on the inactive list, or on the active one if its refault distance is within the
//!   resident pages (`mm/workingset.c`); the inactive list's oldest page goes if it was not
//!   accessed since it came onto the list, else it is moved to the active list; the active
//!   list is kept no larger than the inactive one by moving its oldest pages back, their
//!   accessed bits cleared.
//! - `lru`: exact least-recently-used.
//! - `pager`: `acomp-pager`'s reclaimer (`reclaim.rs`), which sees only faults: the same
//!   lists with no accessed bits, a refault within the limit's distance going to the
//!   active list, the active list kept to half the limit.
//! - `pager+written`: the same, with a written bit for a second chance at the inactive
//!   list's end, as `UFFD_FEATURE_WP_ASYNC` and `PAGEMAP_SCAN` could give it (writes only:
//!   one access in ten here), at no cost counted.
//! - `opt`: Belady's MIN (the page used furthest in the future goes), the floor of every
//!   policy.

use std::collections::{BTreeSet, VecDeque};

use zswap_main::budget;

/// The budgets (percent of the records resident) and Zipf exponents of the budget rows.
const BUDGETS: [u64; 3] = [40, 50, 70];
const ZIPFS: [f64; 2] = [0.99, 0.8];

/// Where a page is: paged out, or on one of the two lists.
#[derive(Clone, Copy, PartialEq, Eq)]
enum On {
    Out,
    Inactive,
    Active,
}

/// The two-list policies (`kernel`, `pager`, `pager+written`): lists of `(page, stamp)`,
/// an entry stale once its page's stamp moved on (as the pager's own lists).
struct TwoLists {
    cap: usize,
    /// Accessed bits seen (`kernel`: every access; `pager+written`: writes; `pager`: none).
    sees: Sees,
    on: Vec<On>,
    stamp: Vec<u32>,
    referenced: Vec<bool>,
    shadow: Vec<u64>,
    inactive: VecDeque<(u32, u32)>,
    active: VecDeque<(u32, u32)>,
    counts: [usize; 2],
    clock: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sees {
    Accesses,
    Writes,
    Faults,
}

impl TwoLists {
    fn new(pages: usize, cap: usize, sees: Sees) -> TwoLists {
        TwoLists {
            cap,
            sees,
            on: vec![On::Out; pages],
            stamp: vec![0; pages],
            referenced: vec![false; pages],
            shadow: vec![0; pages],
            inactive: VecDeque::new(),
            active: VecDeque::new(),
            counts: [0; 2],
            clock: 1,
        }
    }

    fn push(&mut self, p: usize, to: On) {
        self.stamp[p] = self.stamp[p].wrapping_add(1);
        self.on[p] = to;
        let e = (p as u32, self.stamp[p]);
        if to == On::Active {
            self.active.push_back(e);
            self.counts[1] += 1;
        } else {
            self.inactive.push_back(e);
            self.counts[0] += 1;
        }
    }

    /// The oldest live entry of a list, taken off it.
    fn pop(&mut self, active: bool) -> Option<usize> {
        loop {
            let (p, s) = if active {
                self.active.pop_front()?
            } else {
                self.inactive.pop_front()?
            };
            let want = if active { On::Active } else { On::Inactive };
            if self.stamp[p as usize] == s && self.on[p as usize] == want {
                self.counts[usize::from(active)] -= 1;
                return Some(p as usize);
            }
        }
    }

    /// An access to page `p`; true for a miss.
    fn access(&mut self, p: usize, write: bool) -> bool {
        if self.on[p] != On::Out {
            if self.sees == Sees::Accesses || (self.sees == Sees::Writes && write) {
                self.referenced[p] = true;
            }
            return false;
        }
        while self.counts[0] + self.counts[1] >= self.cap {
            self.evict();
        }
        let distance = self.clock - self.shadow[p];
        let within = if self.sees == Sees::Accesses {
            self.counts[0] + self.counts[1]
        } else {
            self.cap
        };
        let activate = self.shadow[p] != 0 && distance <= within as u64;
        self.shadow[p] = 0;
        self.referenced[p] = false;
        self.push(p, if activate { On::Active } else { On::Inactive });
        if self.sees != Sees::Accesses {
            while self.counts[1] > self.cap / 2 {
                let q = self.pop(true).expect("counted");
                self.push(q, On::Inactive);
            }
        }
        true
    }

    fn evict(&mut self) {
        loop {
            if self.sees == Sees::Accesses {
                while self.counts[1] > self.counts[0] {
                    let q = self.pop(true).expect("counted");
                    self.referenced[q] = false;
                    self.push(q, On::Inactive);
                }
            }
            let Some(q) = self.pop(false).or_else(|| self.pop(true)) else {
                return;
            };
            if self.referenced[q] {
                self.referenced[q] = false;
                self.push(q, On::Active);
                continue;
            }
            self.on[q] = On::Out;
            self.clock += 1;
            self.shadow[q] = self.clock;
            return;
        }
    }
}

/// Exact LRU's misses over `order` (the first `skip` uncounted).
fn lru(pages: usize, cap: usize, order: &[u32], skip: usize) -> u64 {
    let mut last = vec![u64::MAX; pages];
    let mut by_time = BTreeSet::new();
    let mut misses = 0;
    for (t, &p) in order.iter().enumerate() {
        let p = p as usize;
        if last[p] != u64::MAX {
            by_time.remove(&(last[p], p));
        } else {
            misses += u64::from(t >= skip);
            if by_time.len() >= cap {
                let (_, q) = by_time.pop_first().expect("full");
                last[q] = u64::MAX;
            }
        }
        last[p] = t as u64;
        by_time.insert((t as u64, p));
    }
    misses
}

/// Belady's MIN's misses over `order` (the first `skip` uncounted).
fn opt(pages: usize, cap: usize, order: &[u32], skip: usize) -> u64 {
    let mut next = vec![u64::MAX; order.len()];
    let mut seen = vec![u64::MAX; pages];
    for (t, &p) in order.iter().enumerate().rev() {
        next[t] = seen[p as usize];
        seen[p as usize] = t as u64;
    }
    let mut at = vec![None; pages];
    let mut by_next = BTreeSet::new();
    let mut misses = 0;
    for (t, &p) in order.iter().enumerate() {
        let p = p as usize;
        match at[p] {
            Some(n) => {
                by_next.remove(&(n, p));
            }
            None => {
                misses += u64::from(t >= skip);
                if by_next.len() >= cap {
                    let (_, q) = by_next.pop_last().expect("full");
                    at[q] = None;
                }
            }
        }
        at[p] = Some(next[t]);
        by_next.insert((next[t], p));
    }
    misses
}

fn main() {
    let records: usize = std::env::args().nth(1).map_or(budget::MAX_RECORDS, |s| {
        s.parse().expect("RECORDS: a number")
    });
    println!("{records} records; misses in the timed stream, and against `kernel`'s");
    println!("| budget, Zipf | kernel | lru | pager | pager+written | opt |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for s in ZIPFS {
        let stream = budget::stream(records, s, 1);
        // Written in, in order (uncounted, writes), then the warm-up (uncounted), then the
        // timed stream: the access numbers of `budget::writes` count from the warm-up.
        let order: Vec<u32> = (0..records as u32)
            .chain(stream.warm_up.iter().copied())
            .chain(stream.timed.iter().copied())
            .collect();
        let skip = records + stream.warm_up.len();
        for pct in BUDGETS {
            let cap = records * pct as usize / 100;
            let two = |sees| {
                let mut l = TwoLists::new(records, cap, sees);
                let mut misses = 0;
                for (t, &p) in order.iter().enumerate() {
                    let write = t < records || budget::writes((t - records) as u64);
                    misses += u64::from(l.access(p as usize, write) && t >= skip);
                }
                misses
            };
            let kernel = two(Sees::Accesses);
            let row = [
                lru(records, cap, &order, skip),
                two(Sees::Faults),
                two(Sees::Writes),
                opt(records, cap, &order, skip),
            ];
            let cells: Vec<String> = row
                .iter()
                .map(|&m| format!("{m} ({:.3}x)", m as f64 / kernel as f64))
                .collect();
            println!("| {pct}%, {s} | {kernel} | {} |", cells.join(" | "));
        }
    }
}
