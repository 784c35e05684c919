//! A userfaultfd swap layer on [`acomp_zswap`]: anonymous memory whose pages are paged out
//! into a compressed tier and faulted back in on their next access, as the kernel's swap
//! does with zram or zswap, for one process and without a swap device.
//!
//! ```no_run
//! use std::sync::Arc;
//! use acomp_pager::{Pager, Region};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tier = Arc::new(
//!     acomp_zswap::Zswap::builder(acomp::Acomp::new("lz4")?)
//!         .max_pool_bytes(256 << 20)
//!         .build()?,
//! );
//! let pager = Pager::builder(tier.clone()) // the builder by value, as the tier's
//!     .resident_limit(64 << 20)            // optional: RAM kept for the regions, in bytes
//!     .build()?;                           // Send + Sync; says why userfaultfd is refused
//! let len: usize = 1 << 30;
//! let region: Region = pager.region(len)?; // anonymous, page-aligned, zero-filled
//! region.write_at(0, &[7; 4096])?;          // plain memory (also raw: `region.as_ptr()`)
//! let moved = region.page_out(0, len)?;    // pages now in the tier: 1
//! let mut back = [0u8; 4096];
//! region.read_at(0, &mut back)?;           // a fault brings it back
//! assert_eq!(back, [7; 4096]);
//! println!("{moved} paged out; {:?}", pager.stats());
//! drop(region);                            // unmapped; its pages leave the tier
//! # Ok(())
//! # }
//! ```
//!
//! # The contract
//!
//! - A region reads and writes as anonymous memory: whatever is paged out, each page reads
//!   back the bytes last written to it, to the program's threads and to the kernel's own
//!   accesses (`read(2)` into a region, `write(2)` from it: they fault and are served the
//!   same way; with [`Builder::signal_faults`] the kernel's accesses to a page not in
//!   memory fail with `EFAULT` instead, and change nothing). A page never written reads as zeros and costs nothing (the zero page is
//!   mapped; nothing is stored), and so does a page of zeros paged out (dropped, stored
//!   nowhere). The pager's own state for a region grows with the pages touched, not with
//!   its length: a 1 TiB region with 64 pages touched costs under 8 MiB and is made, used
//!   and dropped in milliseconds (its per-page arrays are mappings of their own, zero until
//!   written, and walks skip runs of 4,096 pages never touched).
//! - The tier may be shared: by several pagers, and by the program's own stores. A pager's
//!   offsets are the top half of the tier's key space, `2^63 | region id << 36 | page
//!   index` ([`Region::tier_offset`]), with region ids counted for the whole process (2^27
//!   of them: past that, [`Error::OutOfRegionIds`]); a program storing into the tier beside
//!   a pager keeps its own offsets below 2^63.
//! - Pages the kernel's own swap took (a swap device under memory pressure, the program's
//!   `MADV_PAGEOUT`) are data, not zeros: a page-out tells them from dropped pages by their
//!   swap entry (`/proc/self/pagemap`; where it cannot be read, such a page stays as it is)
//!   and reads them back through the kernel's swap-in before storing them.
//! - [`Region::page_out`] write-protects each page before reading it for compression: a
//!   write racing it faults, waits for that page, and lands after it on the page faulted
//!   back in. It is never lost. The pages that leave are moved out of the region
//!   (`UFFDIO_MOVE`, Linux 6.8) into a scratch mapping of a second userfaultfd and freed
//!   there: no remove event, which would keep every fault's mapping out (`EAGAIN`) until a
//!   handler thread read it; where a move is refused (a pinned page, `mprotect`, `mlock`)
//!   or the kernel has none, `MADV_DONTNEED` as before.
//! - A page faulted back in by a read keeps its compressed copy in the tier as a clean
//!   copy, and stays write-protected: paged out again before it is written, it costs no
//!   compression. Its first write drops the copy (one write-protect fault). Under a limit
//!   (either), a page written in one residency (a clean page's first write, or a write
//!   that faulted it in or first wrote it) is taken as written again: its next three read
//!   fault-ins map it writable without a copy (its writes then take no fault, as the
//!   kernel's zram frees a slot on swap-in), then it is kept clean again. The tier drops
//!   clean copies first when it reaches its budget (they are redundant). Under a
//!   [`Builder::memory_limit`], which counts the copies, a page keeps its copy only where
//!   the limit has room for both; otherwise the fault takes the copy out of the tier and
//!   maps the page writable (memory counted once, as zram frees a slot on swap-in).
//! - The program's `madvise(MADV_DONTNEED)` or `MADV_REMOVE` over a region works as on
//!   anonymous memory: the pages read as zeros after it, and their copies in the tier are
//!   dropped (the pager registers for `UFFD_EVENT_REMOVE`), a call racing a page-out of
//!   the same pages included. On a region, a private
//!   anonymous mapping, the kernel refuses `MADV_REMOVE` itself (`EINVAL`, before any
//!   event: nothing changes), as on any such mapping. `MADV_FREE` raises the same event:
//!   the copies are dropped, and the pages read as zeros or, where the kernel has not freed
//!   them yet, as they were; a page written after it keeps what was written (one resident
//!   before it stays in memory: `page_out` skips it).
//! - A fault that cannot be served (the tier's load fails: a device error, a corrupt page)
//!   never leaves the thread waiting: its page is poisoned (`UFFDIO_POISON`) and the access
//!   gets SIGBUS, as the kernel fails a swap-in whose read failed; the reason is printed
//!   as a message and counted ([`Stats::failed_faults`]). A panic in a pager thread is
//!   caught and counted ([`Stats::panics`]): the fault it was serving gets SIGBUS, the page
//!   it held is released as it was (a page-out and the region's drop never wait on it),
//!   and the thread goes on; a panic in the reclaimer is taken as a stall (below).
//! - Faults are served by several threads ([`Builder::handler_threads`]), or on the
//!   faulting thread itself in a SIGBUS handler ([`Builder::signal_faults`]: what it
//!   costs is in its docs); a fault on a page that another thread holds (a page-out in
//!   progress) is deferred and retried when the page is released, never waited on by a
//!   handler thread (a faulting thread waits for it).
//! - A fault on the page after a run of swap-ins in order brings in the pages out after
//!   it too, up to [`Builder::fault_around`] (16 by default): a sweep takes one fault per
//!   window; random accesses bring in nothing more ([`Stats::swap_readahead`]).
//! - `fork`: regions are not inherited (`MADV_DONTFORK`, as RDMA buffers are): in a child
//!   the range is unmapped, and touching it is SIGSEGV, never zeros in place of data.
//!   Whatever a child does with the copies of its parent's handles changes nothing in the
//!   parent: dropping a [`Region`] or a [`Pager`] (or exiting, which may drop both) does
//!   nothing in a child (no system call on the parent's userfaultfd, no tier call, no
//!   unmapping), and [`Pager::region`] and [`Region::page_out`] return [`Error::Forked`].
//!   The parent's pages read as they were and its threads stay idle.
//! - Huge pages: a region is `MADV_NOHUGEPAGE` and its faults are served a 4 KiB page at a
//!   time; the program's `MADV_HUGEPAGE` on it changes nothing (the kernel allocates no
//!   transparent huge page in a userfaultfd-registered missing range).
//! - `mprotect`, `mlock`, `madvise` over part of a region (which splits its mapping in
//!   several): nothing is lost across the splits. A part made read-only is still served
//!   and paged out; a page made `PROT_NONE` cannot be read for compression and stays in
//!   memory as it is (`page_out` has the kernel check that each page it reads is
//!   readable, so that an unreadable one fails the check, not the thread; a page made
//!   unreadable while a page-out reads it faults that thread, as any reader's); a locked page (`mlock`)
//!   stays in memory too, as `MADV_PAGEOUT` leaves it. Neither is counted in what
//!   `page_out` returns.
//! - `mremap` and `munmap` over a region are not supported: the region's mapping is the
//!   pager's, as a `Vec`'s buffer is the `Vec`'s. Moved elsewhere, its paged-out pages read
//!   as zeros at the new address with no fault reaching the pager (it does not ask for
//!   `UFFD_EVENT_REMAP` or `UFFD_EVENT_UNMAP`); shrunk, the region's drop still unmaps its
//!   whole length, whatever the kernel has mapped in the freed part since (a thread's
//!   stack, in a new user's trial) included. For another size, make another region.
//! - Debuggers: `/proc/PID/mem` and `ptrace` reads of a paged-out page fail (`EIO`): the
//!   kernel does not wait on a userfaultfd for them.
//! - Messages: a fault that cannot be served, a panic caught, a stalled reclaimer, a
//!   userfaultfd call that fails unexpectedly each go to the [`log`](https://docs.rs/log)
//!   facade (targets under `acomp_pager`, the module's path: `acomp_pager::fault`,
//!   `acomp_pager::reclaim`, ...; `error` or `warn`), a record each, prefixed
//!   `acomp-pager:`: the program's logger decides where they go (none installed: nowhere).
//! - Errors are [`Error`]: a variant per cause, the errno where a system call refused
//!   ([`Error::raw_os_error`]: `EPERM` for a refused userfaultfd), the tier's
//!   `StoreError` as the source of [`Error::TierRefused`]; it converts into an
//!   `io::Error` of the matching kind.
//! - Dropping a region first makes it inaccessible (`PROT_NONE`, once no pager thread is
//!   reading its pages), then unregisters it, invalidates its pages in the tier and unmaps
//!   it. A thread touching it while it is dropped either gets the page's bytes (its access
//!   came before the range was made inaccessible) or SIGSEGV, never zeros or another
//!   page's bytes; a thread waiting on one of its faults is woken and retries into SIGSEGV;
//!   the kernel's own accesses get `EFAULT`. After the drop, an access is SIGSEGV until the
//!   addresses are unmapped (with the last pager thread using the region, at once or soon
//!   after), and then what any access to unmapped memory gives: SIGSEGV, or whatever a new
//!   mapping at those addresses holds.
//!
//! # Fault latency
//!
//! By default a fault is a round trip through a handler thread: the faulting thread sleeps
//! in the kernel with its message queued, a handler reads it, loads the page from the tier
//! and maps it with `UFFDIO_COPY`, which wakes the faulting thread. The kernel's own
//! swap-in from zram makes no such trip, and on a virtual machine whose idle CPUs are slow
//! to wake the trip alone costs about what the kernel's whole swap-in does: BENCHMARKS.md
//! measures both and the floor under any user-space pager. A handler that served a fault
//! spins for the next ([`Builder::handler_spin`]), which takes the wake-up of the handler
//! off bursts of faults. [`Builder::signal_faults`] takes the trip away: the faulting
//! thread serves its own fault in a SIGBUS handler, at about half the cost (BENCHMARKS.md),
//! for what its docs say it costs.
//!
//! # Cold pages
//!
//! With [`Builder::resident_limit`] (the regions' pages) or [`Builder::memory_limit`] (the
//! regions' pages and the tier's pool together, as a memory cgroup counts a task's memory),
//! a reclaim thread keeps the regions' resident pages under the limit, paging out the
//! coldest (see `reclaim.rs`: an inactive and an active FIFO, with refault distances as
//! the kernel's `mm/workingset.c`), since a userfaultfd sees no accessed bits. It wakes a
//! sixty-fourth under the limit and pages out to a thirty-second under it, as kswapd works
//! between watermarks. Faults that would take the regions past the limit by more than a
//! sixteenth of it (at least 128 pages) wait for the reclaimer, as a task waits in direct
//! reclaim ([`Stats::throttled_faults`]), and are served once it made room: the access
//! faults once. Faults served on the faulting thread ([`Builder::signal_faults`]) reclaim
//! themselves, as the kernel's direct reclaim does: one that would take the regions past
//! the limit first pages out a batch of 32 of the coldest pages ([`Builder::direct_reclaim`],
//! [`Stats::direct_reclaimed`]), and the reclaim thread is woken only where they cannot
//! keep under it. A memory limit is hard: its slack (a sixty-fourth) comes out of the
//! resident pages it leaves, so faults reach the limit and no further, give or take a batch
//! of 32 pages the reclaimer stored since it last read the pool's size, and a page for
//! each further thread whose fault passed the check before the others' pages were counted
//! (threads faulting at once). A victim the reclaimer cannot page out
//! (the tier refuses it, it is locked or unreadable) stays in memory and goes back on its
//! list ([`Stats::reclaim_kept`]). When it can page nothing out while over the limit (a
//! pool too small for the limit, every victim held by the program's own page-outs or
//! `madvise`), the reclaimer stalls ([`Stats::reclaim_stalls`], one
//! warning logged): faults go past the limit instead of waiting, and it retries every
//! 50 ms until the tier takes pages again; its first batch paged out ends the stall. Lists
//! that faults' direct reclaims emptied (their victims being paged out) are waited for, not
//! a stall.
//!
//! # Where it comes from
//!
//! The kernel's `Documentation/admin-guide/mm/userfaultfd.rst` (missing and write-protect
//! modes, `UFFDIO_COPY` with `UFFDIO_COPY_MODE_WP`, remove events, poison) and its swap
//! path (`do_swap_page`, the swap cache keeping a clean page's slot, `mm/workingset.c`);
//! LLNL's umap and Firecracker's fault handlers for what goes wrong in user space (races
//! with `MADV_DONTNEED`, write-protect on unpopulated pages, one handler thread); Android
//! ART's concurrent compacting collector for faults served in a SIGBUS handler
//! (`UFFD_FEATURE_SIGBUS`) and pages moved with `UFFDIO_MOVE`.
//!
//! Linux only, 6.6 or later (write-protect on anonymous memory, `UFFDIO_POISON`); 6.8 or
//! later for page-outs without remove events (`UFFDIO_MOVE`).

#![deny(missing_docs, missing_debug_implementations)]
#![deny(unsafe_code)]

// The modules in layers, each using only modules of the layers above it, so that no two use
// each other, directly or through others (ARCHITECTURE.md describes each):
//
//   hooks                                (feature test-hooks) kernels' quirks, forced
//   error                                the pager's error
//   sys (sys/uffd, sys/mapping, zeroed), state   the kernel's interfaces; a page's state
//   stats                                the counters
//   pages                                what the threads know of a region; keys; BATCH
//   lru                                  the reclaimer's state
//   shared                               Shared, Owner; releasing a held page
//   pageout                              a page-out's batch
//   reclaim                              the reclaimer's work and its thread
//   events, around                       remove events; fault-around and clean copies
//   fault, region                        the handler threads' faults; Region
//   signal_fault                         faults served on the faulting thread
//   pager                                Builder, Pager
mod around;
mod error;
mod events;
mod fault;
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub mod hooks;
mod lru;
mod pageout;
mod pager;
mod pages;
mod reclaim;
mod region;
mod shared;
mod signal_fault;
mod state;
mod stats;
mod sys;

pub use acomp_zswap::PAGE_SIZE;
pub use error::Error;
pub use pager::{Builder, Pager};
pub use region::Region;
pub use stats::Stats;

#[doc(hidden)]
pub use pager::_assert_send_sync;
