//! A write-protect fault: a clean page's first write (its copy in the tier dropped), or a
//! write racing a page-out.

use std::sync::Arc;

use acomp_zswap::PAGE_SIZE;

use crate::pages::{RegionInner, key};
use crate::shared::{Held, Shared};
use crate::state::{Acquired, CLEAN, RESIDENT, UNTOUCHED};
use crate::stats::add;

impl Shared {
    /// A write to a write-protected page: a clean page's first write (its copy dropped) or
    /// a write racing a page-out.
    pub(super) fn write_protect_fault(&self, region: &Arc<RegionInner>, p: usize, addr: usize) {
        let old = match region.states.acquire(p) {
            Acquired::Held(s) => s,
            Acquired::Busy { .. } => return self.park_deferred(region, p, addr),
        };
        let mut held = Held::new(self, region, p, old);
        match old {
            CLEAN | RESIDENT => {
                if old == CLEAN {
                    // The first write to a clean page: its copy in the tier is stale from now.
                    self.tier.invalidate(key(region.id, p));
                    add(&self.counters.write_protect_faults, 1);
                    if let Some(m) = &region.lru {
                        m.written(p);
                    }
                }
                self.unprotect(&mut held, addr);
            }
            // The program's MADV_FREE: its remove event made the page UNTOUCHED (its copy
            // dropped), but the kernel leaves the page mapped, write-protected if it was
            // clean, until it reclaims it, and a write keeps it. Unprotected, or the write
            // would fault forever.
            UNTOUCHED if region.map.mapped(p * PAGE_SIZE) => self.unprotect(&mut held, addr),
            // Paged out or dropped since the fault was raised: the thread retries.
            _ => {
                held.release(old);
                let _ = self.uffd.wake(addr, PAGE_SIZE);
            }
        }
    }

    /// Makes the held page writable and resident, the unprotect waking the writer (the
    /// counters moved first, as a missing fault's).
    fn unprotect(&self, held: &mut Held<'_>, addr: usize) {
        held.count(RESIDENT);
        let unprotected = self.uffd.write_protect(addr, PAGE_SIZE, false, true);
        held.release(RESIDENT);
        if let Err(e) = unprotected {
            // EAGAIN: a remove event not read yet; the writer faults again, and is served
            // once it is (nothing to say).
            if !held.region.dying() && e.raw_os_error() != Some(libc::EAGAIN) {
                log::warn!("acomp-pager: write-unprotecting {addr:#x} failed: {e}");
            }
            let _ = self.uffd.wake(addr, PAGE_SIZE);
        }
    }
}
