//! Faults served on the faulting thread ([`Builder::signal_faults`](crate::Builder::signal_faults)):
//! the SIGBUS handler's work, `sys/signal.rs` the handler itself.

use std::sync::Arc;

use acomp_zswap::{PAGE_SIZE, Page};

use crate::pages::RegionInner;
use crate::shared::{SIGNAL_PAGERS, Shared, recently_dropped};
use crate::state::{CLEAN, RESIDENT, UNTOUCHED};
use crate::sys::{UFFD_PAGEFAULT_FLAG_WP, UFFD_PAGEFAULT_FLAG_WRITE};

/// The SIGBUS handler's work ([`Builder::signal_faults`](crate::Builder::signal_faults)): the
/// fault at `addr`, raised by a region of a signal-mode pager, served on the faulting
/// thread. True if it was one (the access is retried), false to pass the signal on.
///
/// What it may do, in a signal handler: no allocation to serve the fault (the page is
/// decoded into a buffer on this stack; the reclaimer's lists have room reserved ahead),
/// only to page out a batch first where the fault would pass the limit
/// ([`Builder::direct_reclaim`](crate::Builder::direct_reclaim): the tier's store may
/// allocate, safe unless the program's allocator keeps its heap in a region); the locks it takes (the
/// pagers' and regions' lists, the tier's entry and index locks, the reclaimer's list) are
/// held only inside the pager's and the tier's own code, which never touches a region's
/// pages while it holds one, so the interrupted thread holds none of them; it waits only
/// for other threads (a page another thread holds, the reclaimer making room).
pub(crate) fn serve_signal(addr: usize, write: bool) -> bool {
    let found = SIGNAL_PAGERS
        .read()
        .iter()
        .find_map(|s| Some((s.clone(), s.region_of(addr)?)));
    let Some((shared, region)) = found else {
        // A region dropped while this access faulted: retried, it is SIGSEGV.
        return recently_dropped(addr);
    };
    if shared.forked() {
        // A forked child (regions are not inherited): whatever is mapped at these
        // addresses now is the child's own, and the userfaultfd is the parent's.
        return false;
    }
    // False where the page could not be served and is poisoned already: the retried access
    // to it (`Shared::fail`), which the program's action gets.
    shared.signal_fault(&region, addr & !(PAGE_SIZE - 1), write)
}

impl Shared {
    /// A fault raised as SIGBUS, served on the faulting thread: what kind it is, from the
    /// page's state (a mapped page faults on a write to a write-protected page), then as a
    /// handler thread serves its message. False if the fault failed on a page poisoned
    /// already (the access is to get SIGBUS), else true (the access is retried).
    fn signal_fault(&self, region: &Arc<RegionInner>, addr: usize, write: bool) -> bool {
        let p = (addr - region.addr()) / PAGE_SIZE;
        let flags = match region.states.peek(p) {
            // A read of a page mapped since it faulted (another thread's fault on it): the
            // access is retried.
            RESIDENT | CLEAN if !write && crate::sys::WRITE_KNOWN => return true,
            RESIDENT | CLEAN => UFFD_PAGEFAULT_FLAG_WP | UFFD_PAGEFAULT_FLAG_WRITE,
            // The program's MADV_FREE leaves a clean page mapped and write-protected.
            UNTOUCHED if write && region.map.mapped(p * PAGE_SIZE) => {
                UFFD_PAGEFAULT_FLAG_WP | UFFD_PAGEFAULT_FLAG_WRITE
            }
            _ if write => UFFD_PAGEFAULT_FLAG_WRITE,
            _ => 0,
        };
        let mut buf: Page = [0; PAGE_SIZE];
        self.serve_on(region, addr, flags, &mut buf);
        // Poisoned already: unless another thread has mapped the page since (its load
        // succeeded), the access gets SIGBUS.
        !take_unservable() || region.map.mapped(p * PAGE_SIZE)
    }
}

thread_local! {
    /// Set by `Shared::fail` on the faulting thread when the page it could not serve was
    /// poisoned already (see there). A `const` cell without a destructor: its access is a
    /// load from the thread's own block, safe in a signal handler.
    static UNSERVABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The fault this thread is serving failed on a page poisoned already: its access is to
/// get SIGBUS from the program's action ([`Shared::signal_fault`] reads it).
pub(crate) fn mark_unservable() {
    UNSERVABLE.with(|u| u.set(true));
}

/// Whether [`mark_unservable`] marked the fault this thread just served; clears the mark.
fn take_unservable() -> bool {
    UNSERVABLE.with(|u| u.replace(false))
}
