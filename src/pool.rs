//! The workspace pool: per-CPU workspace slots, after the kernel's
//! `struct crypto_acomp_streams` (whose "streams" are workspaces: named here for what they
//! hold, since a workspace serves one-shot requests as well as streams).
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

use crate::RequestPath;
use crate::alg::Algorithm;
use crate::request::Request;
use crate::route::{Fragments, route};
use crate::{Error, ErrorKind, Stats, Walk, cpu};

/// The kinds of request, each counted on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    Compress,
    Decompress,
    /// A range read: a decompression into segments.
    Range,
}

impl RequestKind {
    /// Why a request of this kind is refused before it reaches a workspace, if it is: a
    /// decompression or range read of an empty source has no frame at all (`EINVAL`).
    #[inline]
    pub(crate) fn refusal(self, slen: usize) -> Option<Error> {
        (self != RequestKind::Compress && slen == 0).then_some(Error::EmptySource)
    }
}

/// Most requests a batch serves under one hold of a workspace: 16 pages, a 64 KiB folio
/// (see BENCHMARKS.md, "Batches", for the measurement behind it).
pub(crate) const BATCH_HOLD_REQUESTS: usize = 16;

/// Most source bytes a batch serves under one hold of a workspace.
pub(crate) const BATCH_HOLD_BYTES: usize = 64 * 1024;

pub(crate) struct WorkspacePool<A: Algorithm> {
    alg: A,
    slots: Box<[CachePadded<Slot<A::Workspace>>]>,
}

struct Slot<W> {
    ws: OnceCell<Mutex<W>>,
    compress: Outcomes,
    decompress: Outcomes,
    range: Outcomes,
    /// Requests served here because their own CPU's slot was busy.
    busy: AtomicU64,
    /// Requests served here because their own CPU's slot could not be filled.
    fallback: AtomicU64,
}

/// Requests of one kind, by how they ended: one counter per outcome, so that a request
/// costs one atomic add.
#[derive(Default)]
struct Outcomes {
    /// Compressions refused by early rejection (`Error::Incompressible`), not counted in
    /// `no_space`.
    rejected: AtomicU64,
    one_shot: AtomicU64,
    stream: AtomicU64,
    linearised: AtomicU64,
    no_space: AtomicU64,
    corrupt: AtomicU64,
    invalid: AtomicU64,
    no_memory: AtomicU64,
}

/// Outcomes of the requests of a batch, counted locally and added to a slot's counters once,
/// after the lock is released.
#[derive(Default)]
struct Tally {
    rejected: u64,
    one_shot: u64,
    stream: u64,
    linearised: u64,
    no_space: u64,
    corrupt: u64,
    invalid: u64,
    no_memory: u64,
}

impl Tally {
    #[inline]
    fn record(&mut self, res: Result<RequestPath, &Error>) {
        *match res {
            Err(Error::Incompressible { .. }) => &mut self.rejected,
            Ok(RequestPath::OneShot) => &mut self.one_shot,
            Ok(RequestPath::Stream) => &mut self.stream,
            Ok(RequestPath::Linearised) => &mut self.linearised,
            Err(e) => match e.kind() {
                ErrorKind::NoSpace => &mut self.no_space,
                ErrorKind::Corrupt => &mut self.corrupt,
                ErrorKind::NoMemory => &mut self.no_memory,
                ErrorKind::Invalid => &mut self.invalid,
            },
        } += 1;
    }
}

impl Outcomes {
    /// Adds a batch's tally: one atomic add per outcome that occurred.
    fn add(&self, t: &Tally) {
        for (counter, n) in [
            (&self.rejected, t.rejected),
            (&self.one_shot, t.one_shot),
            (&self.stream, t.stream),
            (&self.linearised, t.linearised),
            (&self.no_space, t.no_space),
            (&self.corrupt, t.corrupt),
            (&self.invalid, t.invalid),
            (&self.no_memory, t.no_memory),
        ] {
            if n > 0 {
                counter.fetch_add(n, Relaxed);
            }
        }
    }

    #[inline]
    fn record(&self, res: Result<RequestPath, &Error>) {
        let counter = match res {
            Err(Error::Incompressible { .. }) => &self.rejected,
            Ok(RequestPath::OneShot) => &self.one_shot,
            Ok(RequestPath::Stream) => &self.stream,
            Ok(RequestPath::Linearised) => &self.linearised,
            Err(e) => match e.kind() {
                ErrorKind::NoSpace => &self.no_space,
                ErrorKind::Corrupt => &self.corrupt,
                ErrorKind::NoMemory => &self.no_memory,
                ErrorKind::Invalid => &self.invalid,
            },
        };
        counter.fetch_add(1, Relaxed);
    }

    /// Adds these counters to `s`, as requests of `kind`.
    fn add_to(&self, s: &mut Stats, kind: RequestKind) {
        let get = |a: &AtomicU64| a.load(Relaxed);
        let (one_shot, stream) = (get(&self.one_shot), get(&self.stream));
        let linearised = get(&self.linearised);
        let (no_space, corrupt) = (get(&self.no_space), get(&self.corrupt));
        let (invalid, no_memory) = (get(&self.invalid), get(&self.no_memory));
        let rejected = get(&self.rejected);
        let served = one_shot + stream + linearised;
        let requests = served + rejected + no_space + corrupt + invalid + no_memory;
        match kind {
            RequestKind::Compress => s.compress += requests,
            RequestKind::Decompress => s.decompress += requests,
            RequestKind::Range => {
                s.decompress += requests;
                s.range += requests;
            }
        }
        s.rejected += rejected;
        s.one_shot += one_shot;
        s.stream += stream;
        s.linearised += linearised;
        s.no_space += no_space;
        s.corrupt += corrupt;
        s.invalid += invalid;
        s.no_memory += no_memory;
    }
}

impl<W> Slot<W> {
    fn new() -> Self {
        Slot {
            ws: OnceCell::new(),
            compress: Outcomes::default(),
            decompress: Outcomes::default(),
            range: Outcomes::default(),
            busy: AtomicU64::new(0),
            fallback: AtomicU64::new(0),
        }
    }

    fn outcomes(&self, kind: RequestKind) -> &Outcomes {
        match kind {
            RequestKind::Compress => &self.compress,
            RequestKind::Decompress => &self.decompress,
            RequestKind::Range => &self.range,
        }
    }

    /// Counts one request: by path where it succeeded, by error kind where it failed.
    #[inline]
    fn record(&self, kind: RequestKind, res: Result<RequestPath, &Error>) {
        self.outcomes(kind).record(res);
    }
}

impl<A: Algorithm> WorkspacePool<A> {
    /// One slot per configured CPU; the first is filled now.
    pub(crate) fn new(alg: A) -> Result<Self, Error> {
        let slots: Box<[_]> = (0..cpu::configured())
            .map(|_| CachePadded::new(Slot::new()))
            .collect();
        let ws = alg.new_workspace()?;
        let _ = slots[0].ws.set(Mutex::new(ws));
        Ok(WorkspacePool { alg, slots })
    }

    pub(crate) fn alg(&self) -> &A {
        &self.alg
    }

    /// Runs `op` on a locked workspace, resets the workspace if `op` failed, unlocks, then
    /// counts the request on the slot that served it.
    #[inline]
    pub(crate) fn serve<R>(
        &self,
        kind: RequestKind,
        op: impl FnOnce(&A, &mut A::Workspace) -> Result<(RequestPath, R), Error>,
    ) -> Result<R, Error> {
        let (slot, mut ws) = self.lock();
        let res = op(&self.alg, &mut ws);
        if res.is_err() {
            self.alg.reset(&mut ws);
        }
        drop(ws);
        slot.record(kind, res.as_ref().map(|&(path, _)| path));
        res.map(|(_, r)| r)
    }

    /// Serves a one-shot decompression without a workspace where the algorithm can
    /// ([`Algorithm::decompress_stateless`]), and counts it on the slot of the thread's
    /// number (no CPU lookup: the counters are only ever summed); `None` where it cannot.
    #[inline(always)]
    pub(crate) fn serve_stateless(
        &self,
        src: &[u8],
        dst: &mut [u8],
    ) -> Option<Result<usize, Error>> {
        let res = self.alg.decompress_stateless(src, dst)?;
        self.record_stateless(res.as_ref().map(|_| RequestPath::OneShot));
        Some(res)
    }

    /// [`serve_stateless`](WorkspacePool::serve_stateless) for a request of any other cut
    /// ([`Algorithm::decompress_stateless_walk`]), counted as linearised.
    #[inline(always)]
    pub(crate) fn serve_stateless_walk(
        &self,
        walk: &mut Walk<'_, '_>,
    ) -> Option<Result<usize, Error>> {
        let res = self.alg.decompress_stateless_walk(walk)?;
        self.record_stateless(res.as_ref().map(|_| RequestPath::Linearised));
        Some(res)
    }

    /// Counts a decompression served without a workspace on the slot of the calling
    /// thread's number: no CPU lookup, and no slot is locked, so any will do.
    #[inline(always)]
    fn record_stateless(&self, res: Result<RequestPath, &Error>) {
        let slot = &self.slots[self.slot_index(cpu::thread_number())];
        slot.record(RequestKind::Decompress, res);
    }

    /// Serves a batch of requests of one kind: one CPU lookup and one lock for up to
    /// [`BATCH_HOLD_REQUESTS`] requests or [`BATCH_HOLD_BYTES`] of source, then the
    /// workspace is let go and taken again, so that other threads never queue behind a long
    /// batch. Each request gets the outcome the single call gives (a decompression of an
    /// empty source is refused without touching the workspace); the workspace is reset
    /// after each failure; the counters are added once, after the last release.
    pub(crate) fn serve_batch(
        &self,
        kind: RequestKind,
        reqs: &mut [Request<'_, '_>],
        op: impl Fn(&A, &mut A::Workspace, Fragments<'_, '_, '_>) -> Result<(usize, RequestPath), Error>,
    ) {
        let mut tally = Tally::default();
        let mut rest = reqs;
        let mut last = None;
        while !rest.is_empty() {
            let (slot, mut ws) = self.lock();
            let mut bytes = 0;
            let mut served = 0;
            for req in rest.iter_mut() {
                if served == BATCH_HOLD_REQUESTS || bytes >= BATCH_HOLD_BYTES {
                    break;
                }
                let res = route(req.src, req.dst, |frags| {
                    bytes += frags.slen();
                    match kind.refusal(frags.slen()) {
                        Some(e) => Err(e),
                        None => op(&self.alg, &mut ws, frags),
                    }
                });
                if res.is_err() {
                    self.alg.reset(&mut ws);
                }
                tally.record(res.as_ref().map(|&(_, p)| p));
                req.finish(res);
                served += 1;
            }
            drop(ws);
            rest = &mut rest[served..];
            last = Some(slot);
        }
        if let Some(slot) = last {
            slot.outcomes(kind).add(&tally);
        }
    }

    /// Counts a request refused before any workspace was touched, and refuses it.
    #[cold]
    pub(crate) fn refuse(&self, kind: RequestKind, e: Error) -> Error {
        self.slots[self.own_index()].record(kind, Err(&e));
        e
    }

    fn own_index(&self) -> usize {
        self.slot_index(cpu::current())
    }

    /// The slot of CPU or thread number `n`: itself where there is such a slot, else wrapped
    /// round (a CPU brought online after the transform was made, a thread number).
    #[inline]
    fn slot_index(&self, n: usize) -> usize {
        if n < self.slots.len() {
            n
        } else {
            n % self.slots.len()
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
            dictionary_bytes: self.alg.dictionary_bytes(),
            ..Stats::default()
        };
        for slot in self.slots.iter() {
            slot.compress.add_to(&mut s, RequestKind::Compress);
            slot.decompress.add_to(&mut s, RequestKind::Decompress);
            slot.range.add_to(&mut s, RequestKind::Range);
            s.busy += slot.busy.load(Relaxed);
            s.fallback += slot.fallback.load(Relaxed);
            if let Some(m) = slot.ws.get() {
                s.workspaces += 1;
                s.workspace_bytes += self.alg.workspace_bytes(&m.lock());
            }
        }
        s
    }
}
