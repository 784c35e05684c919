//! The load path (`zswap_load`): the entry by offset, locked for reading, and its page read
//! out of whatever holds it (`read.rs`). Exclusive loads (`take`) and clean copies
//! ([`Zswap::load_clean`]) are loads too.

use crate::Page;
use crate::outcome::{LoadError, LoadKind};
use crate::slab::{Mark, State};
use crate::stats::{dec, inc};
use crate::tier::Zswap;

impl Zswap {
    /// Loads the page at `offset` into `page` (a whole page, 4096 bytes); the entry stays.
    /// Returns where the page came from (decompressed, copied, filled, a folio's frame, the
    /// device).
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`] where the offset has no entry; [`LoadError::Io`] and
    /// [`LoadError::Corrupt`] from the device; [`LoadError::Decompress`] and
    /// [`LoadError::WrongLength`] where the pool's frame is bad. The entry is kept.
    pub fn load(&self, offset: u64, page: &mut Page) -> Result<LoadKind, LoadError> {
        self.load_marking::<false>(offset, page)
    }

    /// [`Zswap::load`] for a pager that keeps the page and its compressed copy both (the
    /// kernel's swap cache keeping a page's swap slot after a swap-in for reading): the entry
    /// stays as a clean copy, so that paging the page out again costs no compression. A
    /// clean copy is redundant while its owner holds the page, and is the first thing the
    /// tier drops at its budget ([`Stats::clean_dropped`](crate::Stats::clean_dropped)),
    /// before writing anything back and instead of refusing a store: it is never written
    /// back to the device. Before the owner drops its page, [`Zswap::clear_clean`] turns the
    /// copy back into an ordinary entry, or says that it is gone. A store at the offset,
    /// [`Zswap::invalidate`] and [`Zswap::take`] end the mark with the entry; a load keeps
    /// it. Only copies in the pool are dropped: a same-filled page or one on the device
    /// holds no pool memory.
    ///
    /// ```
    /// use acomp_zswap::{PAGE_SIZE, Page, Zswap};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let zswap = Zswap::builder(acomp::Acomp::new("lz4")?).build()?;
    /// let mut page: Page = [0; PAGE_SIZE];
    /// page[..13].copy_from_slice(b"a clean page!");
    /// zswap.store(7, &page)?; // paged out
    /// let mut back = [0; PAGE_SIZE];
    /// zswap.load_clean(7, &mut back)?; // faulted in for reading: the copy stays
    /// assert_eq!(zswap.stats().clean_pages, 1);
    /// // Paging it out again: no store, as long as the copy is still there.
    /// assert!(zswap.clear_clean(7));
    /// assert_eq!(zswap.stats().clean_pages, 0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Zswap::load`]; on an error the entry is not marked.
    pub fn load_clean(&self, offset: u64, page: &mut Page) -> Result<LoadKind, LoadError> {
        self.load_marking::<true>(offset, page)
    }

    /// Turns the clean copy at `offset` back into an ordinary entry, under the entry's
    /// lock, so that the tier can no longer drop it. Returns whether `offset` still has an
    /// entry: true, and the owner may drop its page (the entry is the page again); false
    /// where the tier dropped the copy at its budget (or it was invalidated), and the owner
    /// must store the page again to page it out. True also where the entry was not clean.
    pub fn clear_clean(&self, offset: u64) -> bool {
        loop {
            let Some(entry) = self.lookup(offset) else {
                return false;
            };
            let state = entry.write();
            if matches!(*state, State::Dead) {
                // Dropped, invalidated or replaced since the lookup: look again.
                continue;
            }
            if entry.marks.clear(Mark::Clean) {
                dec(&self.counters.clean_pages);
                self.entries.follow_mark(&entry);
            }
            return true;
        }
    }

    /// A load; one of [`Zswap::load_clean`] where `CLEAN`, marking the entry under the same
    /// lock as it reads it.
    #[inline(always)]
    fn load_marking<const CLEAN: bool>(
        &self,
        offset: u64,
        page: &mut Page,
    ) -> Result<LoadKind, LoadError> {
        loop {
            let entry = self.lookup(offset).ok_or(LoadError::NotFound)?;
            #[cfg(feature = "test-hooks")]
            crate::hooks::run_after_lookup(offset);
            let state = entry.read();
            if matches!(*state, State::Dead) {
                // Replaced or invalidated since the lookup: look again.
                continue;
            }
            entry.marks.loaded();
            if !CLEAN {
                return self.read(&state, page);
            }
            let kind = self.read(&state, page)?;
            if !entry.marks.set(Mark::Clean) {
                inc(&self.counters.clean_pages);
                self.entries.follow_mark(&entry);
            }
            return Ok(kind);
        }
    }

    /// Loads and invalidates in one step (an exclusive load, as zswap's for a page that
    /// leaves swap): no other load sees the entry after this one. Returns where the page
    /// came from, as [`Zswap::load`].
    ///
    /// # Errors
    ///
    /// As [`Zswap::load`]; on an error the entry is kept.
    pub fn take(&self, offset: u64, page: &mut Page) -> Result<LoadKind, LoadError> {
        loop {
            let entry = self.lookup(offset).ok_or(LoadError::NotFound)?;
            let state = entry.write();
            if matches!(*state, State::Dead) {
                continue;
            }
            let kind = self.read(&state, page)?;
            self.end(&entry, state);
            return Ok(kind);
        }
    }
}
