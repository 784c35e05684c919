//! One entry recompressed alone (zram's `recompress` of a slot): its page decompressed
//! under the entry's lock held for reading, recompressed outside any lock into a private
//! buffer, written into a new object, and swapped in under the entry's lock held for
//! writing only if the entry still holds the same frame of the first transform and is still
//! idle; else the new object is freed. A frame not at least one size class smaller is
//! thrown away and the entry marked tried. The page-by-page pass and a window of units with
//! one idle page (`unit.rs`) both come here.

use std::io::{IoSlice, IoSliceMut};
use std::sync::atomic::Ordering::Relaxed;

use acomp::Acomp;

use crate::slab::{EntryRef, FrameTag, Mark, State};
use crate::stats::inc;
use crate::tier::Zswap;
use crate::{PAGE_SIZE, Page};

/// What one try at an entry did.
enum Outcome {
    Recompressed,
    /// Not smaller by a size class, or the transform failed: not tried again.
    Skipped,
    /// Changed, accessed or gone meanwhile, or the pool at its budget: may be tried again.
    Raced,
    /// Nothing to recompress, ever, in this entry (same-filled, kept as it is, on the
    /// device, recompressed already, dead): marked tried, not counted.
    Never,
}

impl Zswap {
    /// The entry at `offset` recompressed alone, counted; 1 if it was. A window of units
    /// with one idle page in it comes here.
    pub(super) fn recompress_single(&self, recomp: &Acomp, offset: u64) -> usize {
        let Some(entry) = self.lookup(offset) else {
            return 0;
        };
        let mut src: Box<Page> = Box::new([0; PAGE_SIZE]);
        let mut dst: Box<Page> = Box::new([0; PAGE_SIZE]);
        self.recompress_entry(recomp, offset, &entry, &mut src, &mut dst)
    }

    /// [`Zswap::recompress_one`], counted; 1 if the entry was recompressed.
    pub(super) fn recompress_entry(
        &self,
        recomp: &Acomp,
        offset: u64,
        entry: &EntryRef<'_>,
        src: &mut Page,
        dst: &mut Page,
    ) -> usize {
        let c = &self.counters;
        match self.recompress_one(recomp, offset, entry, src, dst) {
            Outcome::Recompressed => {
                inc(&c.recompressed_pages);
                return 1;
            }
            Outcome::Skipped => {
                entry.mark_tried();
                inc(&c.recompress_skipped_pages);
            }
            Outcome::Never => entry.mark_tried(),
            Outcome::Raced => {}
        }
        0
    }

    fn recompress_one(
        &self,
        recomp: &Acomp,
        offset: u64,
        entry: &EntryRef<'_>,
        src: &mut Page,
        dst: &mut Page,
    ) -> Outcome {
        // 1. The page, under the entry's lock held for reading.
        let old_length = {
            let state = entry.read();
            let Some((_, length)) = state.primary_frame() else {
                // Same-filled, kept as it is, on the device, recompressed, or dead: nothing
                // to gain (a new store makes a new entry).
                return Outcome::Never;
            };
            if self.read(&state, src).is_err() {
                return Outcome::Skipped;
            }
            length as usize
        };
        // 2. Recompressed, outside any lock.
        #[cfg(feature = "test-hooks")]
        crate::hooks::run_while_recompressing(offset);
        let Ok(new_length) =
            recomp.compress(&[IoSlice::new(&src[..])], &mut [IoSliceMut::new(dst)])
        else {
            return Outcome::Skipped;
        };
        let class = |n: usize| self.pool.class_info(n).map(|c| c.size);
        let (Some(old_class), Some(new_class)) = (class(old_length), class(new_length)) else {
            return Outcome::Skipped;
        };
        if new_class >= old_class {
            return Outcome::Skipped;
        }
        // 3. A new object; swapped in only if the entry is as it was.
        let Ok(mut handle) = self.pool.alloc(new_length, offset) else {
            return Outcome::Raced;
        };
        self.pool.write(&mut handle, &dst[..new_length]);
        let mut state = entry.write();
        let unchanged = entry.marks.get(Mark::Idle)
            && state
                .primary_frame()
                .is_some_and(|(_, length)| length as usize == old_length);
        if !unchanged {
            drop(state);
            self.pool.free(handle);
            return Outcome::Raced;
        }
        let old = std::mem::replace(
            &mut *state,
            State::Pool {
                handle,
                length: new_length as u16,
                codec: FrameTag::Recompressed,
            },
        );
        drop(state);
        let State::Pool { handle: old, .. } = old else {
            unreachable!("checked above, under the same lock")
        };
        self.pool.free(old);
        let c = &self.counters;
        c.stored_bytes
            .fetch_sub((old_length - new_length) as u64, Relaxed);
        c.recompress_saved_bytes
            .fetch_add((old_class - new_class) as u64, Relaxed);
        Outcome::Recompressed
    }
}
