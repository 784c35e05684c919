//! Per-CPU workspace slots, after the kernel's `struct crypto_acomp_streams`.
//!
//! One slot per configured CPU, each cache-padded behind its own lock. A request takes the
//! slot of the CPU it runs on. A slot is filled on first use by the request that finds it
//! empty, which allocates outside any lock; if that fails, the request uses the first slot,
//! filled when the transform was made (`crypto_acomp_lock_stream_bh` does the same). A
//! request whose slot is busy (its holder was preempted) takes any other filled slot that
//! is free before it waits. The lock is held only around the codec calls: counting happens
//! after it is released, on the counters of the slot used, which sit in its cache line.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crossbeam_utils::CachePadded;
use once_cell::sync::OnceCell;
use parking_lot::{Mutex, MutexGuard};

use crate::alg::{Algorithm, Path};
use crate::segment::{self, Segment};
use crate::{Error, Stats, Walk, sys};

/// The two directions of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Compress = 0,
    Decompress = 1,
}

pub(crate) struct Streams<A: Algorithm> {
    alg: A,
    slots: Box<[CachePadded<Slot<A::Workspace>>]>,
}

struct Slot<W> {
    ws: OnceCell<Mutex<W>>,
    /// Successful requests by direction and path.
    done: [[AtomicU64; 2]; 2],
    /// Failed requests by direction and errno kind (ENOSPC, EBADMSG, EINVAL, ENOMEM).
    failed: [[AtomicU64; 4]; 2],
    /// Range reads (also counted as decompressions).
    range: AtomicU64,
    /// Requests served here because their own CPU's slot was busy.
    busy: AtomicU64,
    /// Requests served here because their own CPU's slot could not be filled.
    fallback: AtomicU64,
}

impl<W> Slot<W> {
    fn new() -> Self {
        Slot {
            ws: OnceCell::new(),
            done: Default::default(),
            failed: Default::default(),
            range: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            fallback: AtomicU64::new(0),
        }
    }

    /// Counts one request: by path where it succeeded, by error kind where it failed, and as
    /// a range read where it was one.
    #[inline]
    fn record(&self, dir: Direction, range: bool, res: Result<Path, &Error>) {
        match res {
            Ok(path) => self.done[dir as usize][path as usize].fetch_add(1, Relaxed),
            Err(e) => self.failed[dir as usize][error_index(e)].fetch_add(1, Relaxed),
        };
        if range {
            self.range.fetch_add(1, Relaxed);
        }
    }
}

fn error_index(e: &Error) -> usize {
    match e.errno() {
        libc::ENOSPC => 0,
        libc::EBADMSG => 1,
        libc::ENOMEM => 3,
        _ => 2,
    }
}

impl<A: Algorithm> Streams<A> {
    /// One slot per configured CPU; the first is filled now.
    pub(crate) fn new(alg: A) -> Result<Self, Error> {
        let slots: Box<[_]> = (0..sys::configured_cpus())
            .map(|_| CachePadded::new(Slot::new()))
            .collect();
        let ws = alg.new_workspace()?;
        let _ = slots[0].ws.set(Mutex::new(ws));
        Ok(Streams { alg, slots })
    }

    pub(crate) fn alg(&self) -> &A {
        &self.alg
    }

    /// Serves one request on a locked workspace; resets the workspace after an error.
    pub(crate) fn request(&self, dir: Direction, walk: &mut Walk<'_, '_>) -> Result<(), Error> {
        if dir == Direction::Decompress && walk.slen() == 0 {
            return self.refuse(dir, false, Error::EmptySource);
        }
        self.serve(dir, false, |alg, ws| {
            let path = match dir {
                Direction::Compress => alg.compress(ws, walk)?,
                Direction::Decompress => alg.decompress(ws, walk)?,
            };
            Ok((path, ()))
        })
    }

    /// Serves one range read: decodes under the lock, zero-fills after it. Counts as a
    /// decompression on the stream path.
    pub(crate) fn request_range(
        &self,
        walk: &mut Walk<'_, '_>,
        segments: &mut [Segment<'_>],
    ) -> Result<usize, Error> {
        let dir = Direction::Decompress;
        if let Err(e) = segment::validate(segments) {
            return self.refuse(dir, true, e);
        }
        if walk.slen() == 0 {
            return self.refuse(dir, true, Error::EmptySource);
        }
        let end = self.serve(dir, true, |alg, ws| {
            Ok((Path::Stream, alg.decompress_range(ws, walk, segments)?))
        })?;
        Ok(segment::finish(segments, end))
    }

    /// Runs `op` on a locked workspace, resets the workspace if `op` failed, unlocks, then
    /// counts the request on the slot that served it.
    #[inline]
    fn serve<R>(
        &self,
        dir: Direction,
        range: bool,
        op: impl FnOnce(&A, &mut A::Workspace) -> Result<(Path, R), Error>,
    ) -> Result<R, Error> {
        let (slot, mut ws) = self.lock();
        let res = op(&self.alg, &mut ws);
        if res.is_err() {
            self.alg.reset(&mut ws);
        }
        drop(ws);
        slot.record(dir, range, res.as_ref().map(|&(path, _)| path));
        res.map(|(_, r)| r)
    }

    /// Counts a request refused before any workspace was touched, and refuses it.
    #[cold]
    fn refuse<R>(&self, dir: Direction, range: bool, e: Error) -> Result<R, Error> {
        self.slots[self.own_index()].record(dir, range, Err(&e));
        Err(e)
    }

    fn own_index(&self) -> usize {
        let cpu = sys::current_cpu();
        if cpu < self.slots.len() {
            cpu
        } else {
            cpu % self.slots.len()
        }
    }

    /// Picks and locks a slot: the current CPU's; if busy, any other filled one that is
    /// free; if none is, waits for the CPU's own.
    fn lock(&self) -> (&Slot<A::Workspace>, MutexGuard<'_, A::Workspace>) {
        let cpu = self.own_index();
        let own = &self.slots[cpu];
        let Some(mutex) = own.ws.get().or_else(|| self.fill(own)) else {
            let first = &self.slots[0];
            first.fallback.fetch_add(1, Relaxed);
            return (first, first.ws.get().expect("filled by new()").lock());
        };
        if let Some(guard) = mutex.try_lock() {
            return (own, guard);
        }
        let n = self.slots.len();
        for i in 1..n {
            let slot = &self.slots[(cpu + i) % n];
            if let Some(guard) = slot.ws.get().and_then(|m| m.try_lock()) {
                slot.busy.fetch_add(1, Relaxed);
                return (slot, guard);
            }
        }
        (own, mutex.lock())
    }

    /// Fills an empty slot. The workspace is allocated before the slot is touched, so no
    /// lock is held while allocating; if another request filled the slot meanwhile, this
    /// workspace is dropped.
    #[cold]
    fn fill<'s>(&self, slot: &'s Slot<A::Workspace>) -> Option<&'s Mutex<A::Workspace>> {
        let ws = self.alg.new_workspace().ok()?;
        Some(slot.ws.get_or_init(|| Mutex::new(ws)))
    }

    /// A snapshot of the counters; briefly locks each filled slot to read its size.
    pub(crate) fn stats(&self) -> Stats {
        let mut s = Stats {
            slots: self.slots.len(),
            ..Stats::default()
        };
        for slot in self.slots.iter() {
            let get = |a: &AtomicU64| a.load(Relaxed);
            for (dir, (done, failed)) in slot.done.iter().zip(&slot.failed).enumerate() {
                let requests = done.iter().chain(failed).map(get).sum::<u64>();
                if dir == Direction::Compress as usize {
                    s.compress += requests;
                } else {
                    s.decompress += requests;
                }
                s.one_shot += get(&done[Path::OneShot as usize]);
                s.stream += get(&done[Path::Stream as usize]);
                s.no_space += get(&failed[0]);
                s.corrupt += get(&failed[1]);
                s.invalid += get(&failed[2]);
                s.no_memory += get(&failed[3]);
            }
            s.range += get(&slot.range);
            s.busy += get(&slot.busy);
            s.fallback += get(&slot.fallback);
            if let Some(m) = slot.ws.get() {
                s.workspaces += 1;
                s.workspace_bytes += self.alg.workspace_bytes(&m.lock());
            }
        }
        s
    }
}
