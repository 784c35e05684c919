//! The arena's own thread (`Builder::arena_thread`, on in the tier by default): it adds the
//! next chunk ahead of the takers, and gives free pages beyond the mark back in runs,
//! outside the lock.
//!
//! Growth: one chunk is added at a time. With the thread on, a `take` that leaves fewer
//! than `GROW_AHEAD_PAGES` free pages asks it for the next chunk, so that the page faults
//! of growth (the kernel's zeroing, 0.5-0.9 ms a chunk on this VM, and where the system
//! gives huge pages their compaction, several ms) fall outside the stores; a `take` that
//! finds too few pages meanwhile waits for that chunk. Off, the taker that finds too few
//! adds it. Either way the free pages kept resident are under `GROW_AHEAD_PAGES` + a
//! chunk while a chunk is new.
//!
//! Giving back: without the thread, a page freed while [`ARENA_HIGH_PAGES`] free pages are
//! resident goes back to the kernel at once, under the lock (one `MADV_DONTNEED` a page:
//! 1-2 µs, but 11-19 µs where another thread of the process runs on another CPU, which the
//! TLB shootdown interrupts). With it, frees keep their pages and, past
//! [`ARENA_HIGH_PAGES`] + `TRIM_SLACK`, ask the thread, which gives the pages beyond the
//! mark back from the chunks with the most free pages, in runs of neighbours, outside the
//! lock.

use std::sync::Arc;

use parking_lot::MutexGuard;

use super::{ARENA_HIGH_PAGES, Arena, ArenaState, Inner};

/// The state of growth ahead ([`Arena::set_thread`]).
#[derive(Default)]
pub(super) struct Ahead {
    /// On: a `take` that leaves fewer than `GROW_AHEAD_PAGES` free asks for a chunk.
    pub(super) enabled: bool,
    /// The thread was started.
    pub(super) started: bool,
    /// A chunk is asked of the thread or being added (by it or a taker): one at a time.
    pub(super) growing: bool,
    /// The thread is asked for a chunk.
    pub(super) asked: bool,
    /// The thread is asked to give free pages beyond [`ARENA_HIGH_PAGES`] back.
    pub(super) trim: bool,
    /// The thread is giving pages back (from taking `trim` to its last `MADV_DONTNEED`,
    /// whole chunks included).
    pub(super) trimming: bool,
    /// The arena is gone: the thread ends.
    pub(super) closed: bool,
}

impl Arena {
    /// The arena's thread (off by default): on, a `take` that leaves fewer than
    /// `GROW_AHEAD_PAGES` free pages has it (started then, ended with the arena) add the
    /// next chunk, so that a store does not wait on the kernel's page faults (its zeroing,
    /// and where the system gives huge pages their compaction), and a `take` that finds too
    /// few free pages while that chunk is being added waits for it; and a `give` that leaves
    /// more than [`ARENA_HIGH_PAGES`] + `TRIM_SLACK` free pages resident has it give those
    /// beyond the mark back, in runs. Off, the taker that finds too few free pages adds the chunk,
    /// and `give` gives each page beyond the mark back at once.
    pub(in crate::pool) fn set_thread(&self, on: bool) {
        self.inner.state.lock().ahead.enabled = on;
    }

    /// Waits until the arena's thread has given back the pages it was asked to (none asked
    /// or being given back), so that a caller that freed many pages returns with them gone
    /// rather than leave the thread's `MADV_DONTNEED`s running beside the program's next
    /// accesses (each one's TLB shootdown interrupts the process's threads on other CPUs).
    /// At once where the thread is off: `give` gave the pages back itself.
    pub(in crate::pool) fn settle(&self) {
        let mut state = self.inner.state.lock();
        while state.ahead.trim || state.ahead.trimming {
            self.inner.trimmed.wait(&mut state);
        }
    }

    /// Wakes the arena's thread for what it was asked, starting it where `start`; where the
    /// system refuses a thread, the thread is turned off and takers add chunks (and `give`
    /// gives pages back) themselves.
    pub(super) fn wake(&self, start: bool) {
        if !start {
            self.inner.work.notify_one();
            return;
        }
        let inner = Arc::clone(&self.inner);
        let spawned = std::thread::Builder::new()
            .name("acomp-zswap-arena".into())
            .spawn(move || inner.run());
        if spawned.is_err() {
            let mut state = self.inner.state.lock();
            let ahead = &mut state.ahead;
            ahead.enabled = false;
            ahead.started = false;
            ahead.trim = false;
            // `growing` was the thread's only where it was asked: a taker adding a chunk
            // itself keeps its own.
            if std::mem::take(&mut ahead.asked) {
                ahead.growing = false;
            }
            drop(state);
            self.inner.grown.notify_all();
            self.inner.trimmed.notify_all();
        }
    }
}

impl Inner {
    /// The arena's thread: adds a chunk each time a taker asks, and gives free pages beyond
    /// [`ARENA_HIGH_PAGES`] back each time `give` asks, until the arena is gone. A chunk the
    /// kernel refuses is left to the takers (who fail as an allocation does), and turns the
    /// thread's work off for good: takers add chunks and `give` gives pages back itself.
    pub(super) fn run(&self) {
        let mut state = self.state.lock();
        loop {
            while !state.ahead.asked && !state.ahead.trim && !state.ahead.closed {
                self.work.wait(&mut state);
            }
            if state.ahead.closed {
                return;
            }
            if state.ahead.asked {
                state.ahead.asked = false;
                drop(state);
                let grown = self.grow();
                state = self.state.lock();
                state.ahead.growing = false;
                if !grown {
                    state.ahead.enabled = false;
                }
                self.grown.notify_all();
            } else {
                state.ahead.trim = false;
                state.ahead.trimming = true;
                state = self.trim(state);
                state.ahead.trimming = false;
                self.trimmed.notify_all();
            }
        }
    }

    /// Gives the resident free pages beyond [`ARENA_HIGH_PAGES`] back to the kernel, from
    /// the chunks with the most free pages (the last that `take` draws on), in runs of
    /// neighbouring pages (one `MADV_DONTNEED` a run, outside the lock: the pages are out of
    /// every list meanwhile); a chunk whose pages are then all free goes back whole, as in
    /// `give`.
    fn trim<'a>(&'a self, mut state: MutexGuard<'a, ArenaState>) -> MutexGuard<'a, ArenaState> {
        let excess = state.resident_free.saturating_sub(ARENA_HIGH_PAGES);
        let ids: Vec<u32> = state.partial.iter().rev().map(|&(_, id)| id).collect();
        let mut batch: Vec<(u32, u16)> = Vec::with_capacity(excess);
        for id in ids {
            if batch.len() == excess {
                break;
            }
            let slot = &mut state.slots[id as usize];
            let k = slot.free.len().min(excess - batch.len());
            if k == 0 {
                continue;
            }
            let before = slot.free_count() as u16;
            // The highest pages, which `take` takes last.
            batch.extend((0..k).map(|_| {
                let index = slot
                    .free
                    .pop_highest()
                    .expect("k is at most its free pages");
                (id, index)
            }));
            let after = before - k as u16;
            state.partial.remove(&(before, id));
            if after > 0 {
                state.partial.insert((after, id));
            }
        }
        state.free_pages -= batch.len();
        state.resident_free -= batch.len();
        state.trimming += batch.len();
        drop(state);
        #[cfg(feature = "test-hooks")]
        crate::hooks::run_while_trimming(batch.len() as u64);
        batch.sort_unstable();
        for run in batch.chunk_by(|a, b| a.0 == b.0 && a.1 + 1 == b.1) {
            let (id, first) = run[0];
            // SAFETY: the run's pages are free and out of every list (taken out above,
            // counted in `trimming`): no handle names them and no `take` hands them out.
            unsafe { self.chunks[id as usize].release(first, run.len() as u16) };
        }
        let mut state = self.state.lock();
        let mut whole = Vec::new();
        for &(id, index) in &batch {
            state.trimming -= 1;
            if state.put_back(id, index, true) {
                whole.push(id);
            }
        }
        if whole.is_empty() {
            return state;
        }
        drop(state);
        self.give_back_whole(&whole);
        self.state.lock()
    }
}
