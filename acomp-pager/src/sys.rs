//! Every `unsafe` block of the crate: the userfaultfd ioctls, the mappings, and the copies
//! in and out of a region's pages. `sys/uffd.rs`: the userfaultfd (after the kernel's uapi
//! `linux/userfaultfd.h`); `sys/mapping.rs`: a region's mapping; `sys/zeroed.rs`: arrays of
//! atomics resident only where written; `sys/mover.rs`: dropping pages without a remove event; `sys/signal.rs`: the SIGBUS handler of faults served
//! on the faulting thread, and a futex; here: the eventfd and
//! `poll` the handler threads wait in.

#![allow(unsafe_code)]

mod mapping;
mod mover;
mod signal;
mod uffd;
mod zeroed;

pub use mapping::{Mapping, Pte};
pub use mover::Mover;
pub use signal::{
    WRITE_KNOWN, block_async_signals, futex_wait, futex_wake, install as install_sigbus_handler,
};
pub use uffd::{
    Msg, UFFD_EVENT_PAGEFAULT, UFFD_EVENT_REMOVE, UFFD_PAGEFAULT_FLAG_WP,
    UFFD_PAGEFAULT_FLAG_WRITE, Uffd,
};
pub use zeroed::Zeroed;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// This process's id. `getpid` is a system call (glibc no longer caches it) and the pager
/// asks on every fault served on the faulting thread and every page-table read, so it is
/// kept here, and a `pthread_atfork` handler forgets it in a forked child, which asks
/// again. A child made by a raw `clone` without `fork`'s handlers (not `posix_spawn` or
/// `vfork`, whose child runs no pager code before it execs) would be taken for its parent.
/// Async-signal-safe (the pager's build makes the first call, which registers the handler).
pub fn pid() -> u32 {
    use std::sync::atomic::Ordering::Relaxed;
    let p = PID.load(Relaxed);
    if p != 0 {
        return p;
    }
    // The handler first: a fork between the two would otherwise leave its child our pid.
    // Registered once, by whichever thread comes first, with no lock (a `Once` a fork
    // caught running would hang the child's first call).
    // A thread that finds another registering asks the kernel and keeps nothing.
    use std::sync::atomic::{AtomicBool, Ordering::AcqRel, Ordering::Acquire, Ordering::Release};
    static ATFORK: AtomicBool = AtomicBool::new(false);
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if !ATFORK.swap(true, AcqRel) {
        // SAFETY: pthread_atfork registers a handler with no preconditions; the child's,
        // `forget_pid`, only stores to an atomic (async-signal-safe, as a child's handler
        // must be).
        unsafe { libc::pthread_atfork(None, None, Some(forget_pid)) };
        REGISTERED.store(true, Release);
    }
    let now = std::process::id();
    if REGISTERED.load(Acquire) {
        PID.store(now, Relaxed);
    }
    now
}

static PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

extern "C" fn forget_pid() {
    PID.store(0, std::sync::atomic::Ordering::Relaxed);
}

/// An eventfd that stops or nudges the handler threads.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// A new non-blocking eventfd.
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd(2) takes an initial count and flags, returns a descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(EventFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Makes the eventfd readable (for every poller, until drained).
    pub fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64; an eventfd takes exactly that.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// The descriptor, for `poll`.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Whether `fd` is readable now, without waiting.
pub fn readable(fd: RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is one live pollfd structure; a timeout of 0 never blocks.
    unsafe { libc::poll(&mut pfd, 1, 0) > 0 && pfd.revents & libc::POLLIN != 0 }
}

/// Waits until `uffd` or `event` is readable: true if `event` is.
pub fn poll2(uffd: RawFd, event: RawFd) -> bool {
    let mut fds = [
        libc::pollfd {
            fd: uffd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: event,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: `fds` is a live array of two pollfd structures, its length passed with it.
    unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
    fds[1].revents & libc::POLLIN != 0
}
