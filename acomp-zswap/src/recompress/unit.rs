//! Recompression into units ([`crate::Builder::recompress_unit_pages`]): the idle entries of
//! one aligned window of offsets recompressed together as one frame of page-sized blocks,
//! a folio's frame ([`Folio`]) written by the recompression transform, each page still an
//! entry of its own offset.
//!
//! - A pass sorts the idle candidates by offset and takes them window by window (offsets
//!   `w * n..(w + 1) * n` for a unit of `n` pages). A window with one candidate is
//!   recompressed page by page, as without units.
//! - Each candidate's page is decoded under its entry's lock held for reading into its slot
//!   of a buffer that spans the window's candidates, first to last; slots of offsets that are
//!   not candidates (hot, same-filled, absent) stay zero, and the unit does not serve them.
//!   The buffer is compressed outside any lock.
//! - The unit is kept only where its frame takes less of the pool (whole pages and a tail
//!   in its class) than its pages' objects did. Its objects are written, then every page's
//!   entry is locked for writing, in offset order, and only the pages whose entry still
//!   holds the same object, idle and not a clean copy, join it; with fewer than two, the
//!   unit is thrown away and the pages are tried again on the next pass.
//! - A page of a unit loads by itself: a range read of the frame up to its page, into a
//!   per-thread buffer; a second load from the same unit decodes the whole frame there, and
//!   further loads of it copy from there (units are never changed, their ids never reused).
//!   It takes, invalidates and is written back by its offset, as a folio's page does; the
//!   frame is freed when its last page leaves.

use std::cell::RefCell;
use std::io::{IoSlice, IoSliceMut};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use acomp::Acomp;

use crate::slab::{EntryRef, Write};
use crate::slab::{Folio, FrameTag, Mark, State};
use crate::stats::inc;
use crate::tier::Zswap;
use crate::{PAGE_SIZE, Page, sys};

thread_local! {
    /// The window's pages, and the unit's frame.
    static BUFFERS: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// A page read for a unit: its offset, its entry, and its object as read (place, length).
struct Member<'a> {
    offset: u64,
    entry: EntryRef<'a>,
    place: (u16, u32, u16),
    length: u16,
}

/// Whether `state` holds the same object of the tier's transform as `m` was read from.
fn unchanged(m: &Member<'_>, state: &State) -> bool {
    m.entry.marks.get(Mark::Idle)
        && !m.entry.marks.get(Mark::Clean)
        && state
            .primary_frame()
            .is_some_and(|(handle, length)| length == m.length && handle.place() == m.place)
}

impl Zswap {
    /// A pass of recompression into units of `self.unit_pages`: up to `max_pages` idle
    /// entries tried, window by window; stops before the next window once `stop()` says
    /// so. Returns how many pages were recompressed (into units or alone).
    pub(super) fn recompress_units(
        &self,
        recomp: &Acomp,
        max_pages: usize,
        stop: &dyn Fn() -> bool,
    ) -> usize {
        let n = self.unit_pages as u64;
        let mut offsets: Vec<u64> = Vec::new();
        for shard in self.index.shards() {
            let shard = shard.lock();
            // Under the shard's lock: each slot is its offset's entry.
            let idle = shard.iter().filter(|&(o, slot)| {
                let e = self.entries.at(slot, o);
                e.marks.get(Mark::Idle) && !e.marks.get(Mark::Tried) && !e.marks.get(Mark::Clean)
            });
            offsets.extend(idle.map(|(o, _)| o));
        }
        offsets.sort_unstable();
        let (mut done, mut tried) = (0, 0);
        for window in offsets.chunk_by(|a, b| a / n == b / n) {
            if tried >= max_pages || stop() {
                break;
            }
            let window = &window[..window.len().min(max_pages - tried)];
            tried += window.len();
            let start = sys::thread_cpu_ns();
            done += match window {
                [one] => self.recompress_single(recomp, *one),
                _ => self.recompress_window(recomp, window),
            };
            self.counters
                .recompress_cpu_ns
                .fetch_add(sys::thread_cpu_ns().saturating_sub(start), Relaxed);
        }
        done
    }

    /// The pages at `offsets` (sorted, in one window) as one unit where that pays, else as
    /// they were; returns how many joined a unit.
    fn recompress_window(&self, recomp: &Acomp, offsets: &[u64]) -> usize {
        let first = offsets[0];
        let span = (offsets[offsets.len() - 1] - first + 1) as usize;
        BUFFERS.with_borrow_mut(|(src, dst)| {
            src.clear();
            src.resize(span * PAGE_SIZE, 0);
            let members = self.read_members(offsets, first, src);
            let [m0, .., last] = &members[..] else {
                // One page or none: alone, as without units.
                return members
                    .first()
                    .map_or(0, |m| self.recompress_single(recomp, m.offset));
            };
            let from = (m0.offset - first) as usize * PAGE_SIZE;
            let to = (last.offset - first + 1) as usize * PAGE_SIZE;
            dst.resize(to - from, 0);
            #[cfg(feature = "test-hooks")]
            crate::hooks::run_while_recompressing(m0.offset);
            let length = match recomp
                .compress(&[IoSlice::new(&src[from..to])], &mut [IoSliceMut::new(dst)])
            {
                Ok(len) if self.footprint(len) < self.footprint_of(&members) => len,
                _ => {
                    // Not smaller, or failed: the pages stay as they are, not tried again.
                    for m in &members {
                        m.entry.mark_tried();
                        inc(&self.counters.recompress_skipped_pages);
                    }
                    return 0;
                }
            };
            self.swap_in_unit(members, &dst[..length])
        })
    }

    /// Reads the pages of `offsets` that can join a unit into their slots of `src` (slot 0 is
    /// `first`'s), each under its entry's lock held for reading; marks the others tried.
    fn read_members(&self, offsets: &[u64], first: u64, src: &mut [u8]) -> Vec<Member<'_>> {
        let mut members = Vec::with_capacity(offsets.len());
        for &offset in offsets {
            let Some(entry) = self.lookup(offset) else {
                continue;
            };
            let state = entry.read();
            let Some((handle, length)) = state.primary_frame() else {
                if !matches!(*state, State::Dead) {
                    entry.marks.set(Mark::Tried);
                }
                continue;
            };
            let slot: &mut Page = (&mut src[(offset - first) as usize * PAGE_SIZE..][..PAGE_SIZE])
                .try_into()
                .expect("a page");
            if self.read(&state, slot).is_err() {
                slot.fill(0);
                entry.marks.set(Mark::Tried);
                inc(&self.counters.recompress_skipped_pages);
                continue;
            }
            let place = handle.place();
            drop(state);
            members.push(Member {
                offset,
                entry,
                place,
                length,
            });
        }
        members
    }

    /// Pool bytes a frame of `len` bytes takes: whole pages, and its tail's size class.
    fn footprint(&self, len: usize) -> usize {
        let tail = len % PAGE_SIZE;
        let tail = if tail == 0 {
            0
        } else {
            self.pool.class_info(tail).map_or(PAGE_SIZE, |c| c.size)
        };
        len / PAGE_SIZE * PAGE_SIZE + tail
    }

    /// Pool bytes the objects of `members` take.
    fn footprint_of(&self, members: &[Member<'_>]) -> usize {
        members
            .iter()
            .map(|m| self.footprint(m.length as usize))
            .sum()
    }

    /// Writes the unit's `frame` and swaps it in for each member whose entry is unchanged;
    /// returns how many joined (0 where fewer than two are unchanged, or where the pool's
    /// budget has no room: tried again on the next pass).
    fn swap_in_unit(&self, members: Vec<Member<'_>>, frame: &[u8]) -> usize {
        let first = members[0].offset;
        let Ok(chunks) = self
            .pool
            .write_frame(frame, |len| self.pool.alloc(len, first))
        else {
            return 0;
        };
        // The first member's lock, then the others' where no one holds them: a thread that
        // holds an entry's lock never waits for another's (`slab.rs`). A member whose lock
        // is busy (a load) stays out of the unit, to be tried on the next pass.
        let mut guards: Vec<Option<Write<'_>>> = members
            .iter()
            .enumerate()
            .map(|(i, m)| match i {
                0 => Some(m.entry.write()),
                _ => m.entry.try_write(),
            })
            .collect();
        let keep: Vec<bool> = members
            .iter()
            .zip(&guards)
            .map(|(m, g)| g.as_ref().is_some_and(|g| unchanged(m, g)))
            .collect();
        let kept: Vec<&Member<'_>> = members
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(m, _)| m)
            .collect();
        let old = kept
            .iter()
            .map(|m| self.footprint(m.length as usize))
            .sum::<usize>();
        let new = self.footprint(frame.len());
        if kept.len() < 2 || new >= old {
            drop(guards);
            self.pool.free_frame(chunks);
            return 0;
        }
        let last = members[members.len() - 1].offset;
        let pages = (last - first + 1) as usize;
        let folio = Folio::new(
            first,
            pages,
            kept.len(),
            FrameTag::Recompressed,
            frame.len(),
            chunks,
        );
        let folio = Arc::new(folio);
        let mut freed = 0u64;
        for ((m, guard), keep) in members.iter().zip(guards.iter_mut()).zip(keep) {
            let (true, Some(guard)) = (keep, guard) else {
                continue;
            };
            let index = (m.offset - first) as u32;
            let state = State::Folio {
                folio: Arc::clone(&folio),
                index,
            };
            let State::Pool { handle, length, .. } = std::mem::replace(&mut **guard, state) else {
                unreachable!("checked above, under the same lock")
            };
            self.pool.free(handle);
            freed += u64::from(length);
        }
        drop(guards);
        let c = &self.counters;
        let k = kept.len() as u64;
        c.stored_bytes.fetch_sub(freed, Relaxed);
        self.count_folio(&folio);
        c.recompressed_unit_pages.fetch_add(k, Relaxed);
        c.recompressed_pages.fetch_add(k, Relaxed);
        c.recompress_saved_bytes
            .fetch_add((old - new) as u64, Relaxed);
        kept.len()
    }
}
