//! The SIGBUS handler of [`Builder::signal_faults`](crate::Builder::signal_faults): with
//! `UFFD_FEATURE_SIGBUS` a fault in a registered range raises SIGBUS (`BUS_ADRERR`) in the
//! faulting thread instead of queueing a message, and this handler serves it there.
//!
//! Installed once per process, the first time a pager asks for it, over whatever action
//! SIGBUS had (the Rust runtime's, which tells a stack overflow from other faults, or the
//! program's): a SIGBUS the pager does not serve (an address outside its regions, a
//! poisoned page's `BUS_MCEERR_AR`, any other cause) goes on to that action as if this
//! handler were not there. A default or ignored action is restored and the access retried,
//! so that the kernel's default (the process killed, a core dumped) happens as it would
//! have. The handler keeps `errno` as it found it. Also here: the futex the faults that wait
//! for the reclaimer sleep on.

use std::sync::OnceLock;
use std::sync::atomic::AtomicU32;

/// What serves a fault: called with the faulting address and whether the access was a
/// write (where the architecture says; false where it does not); true if it was served
/// (the access is retried), false to pass the signal on.
pub type Serve = fn(addr: usize, write: bool) -> bool;

/// The function that serves faults and the action SIGBUS had before.
struct Installed {
    serve: Serve,
    previous: libc::sigaction,
}

// SAFETY: `previous` is plain data (function pointers and a signal mask), written once
// before the handler is installed and only read afterwards.
unsafe impl Sync for Installed {}
// SAFETY: as above.
unsafe impl Send for Installed {}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

/// Installs the handler with `serve` (once per process: later calls change nothing).
///
/// # Errors
///
/// `sigaction`'s.
pub fn install(serve: Serve) -> std::io::Result<()> {
    let mut result = Ok(());
    INSTALLED.get_or_init(|| {
        // SAFETY: a zeroed sigaction is a valid value to have the kernel fill in, and
        // `sigaction` with a null new action only reads the current one into it.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) } != 0 {
            result = Err(std::io::Error::last_os_error());
        }
        Installed { serve, previous }
    });
    result?;
    // SAFETY: a zeroed sigaction is valid; its fields are set below, and `on_sigbus` has
    // the three-argument signature SA_SIGINFO asks for. The previous action was stored
    // before ours is installed, so the handler always finds it.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // Every other signal held off while a fault is served: a handler of the program's
        // that touched a region inside this one would fault with this one's locks and
        // page held (a deadlock), or with SIGBUS blocked (the kernel kills the process).
        libc::sigfillset(&mut action.sa_mask);
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut current);
        if current.sa_sigaction != action.sa_sigaction
            && libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `BUS_ADRERR` of `<asm-generic/siginfo.h>`: what a userfaultfd's SIGBUS carries.
const BUS_ADRERR: libc::c_int = 2;

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let Some(installed) = INSTALLED.get() else {
        return;
    };
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler; `errno` is this
    // thread's, restored before the handler returns into the interrupted code.
    unsafe {
        let errno = *libc::__errno_location();
        if (*info).si_code == BUS_ADRERR {
            let addr = (*info).si_addr() as usize;
            if (installed.serve)(addr, was_write(ctx)) {
                *libc::__errno_location() = errno;
                return;
            }
        }
        *libc::__errno_location() = errno;
        pass_on(&installed.previous, sig, info, ctx);
    }
}

/// Whether [`on_sigbus`] knows a fault's access kind (x86_64) or takes every fault for a
/// read (elsewhere).
pub const WRITE_KNOWN: bool = cfg!(target_arch = "x86_64");

/// Whether the fault was a write: the page-fault error code's write bit on x86_64
/// (`REG_ERR`, `X86_PF_WRITE`).
#[cfg(target_arch = "x86_64")]
fn was_write(ctx: *mut libc::c_void) -> bool {
    if ctx.is_null() {
        return false;
    }
    // SAFETY: an SA_SIGINFO handler's third argument is the interrupted context, a
    // `ucontext_t`, live for the handler's length.
    let err =
        unsafe { (*ctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_ERR as usize] };
    err & 2 != 0
}

/// Whether the fault was a write: not known here (taken as a read; a write then takes a
/// second fault on a write-protected page, served as such).
#[cfg(not(target_arch = "x86_64"))]
fn was_write(_ctx: *mut libc::c_void) -> bool {
    false
}

/// Hands the signal to the action SIGBUS had before ours.
///
/// # Safety
///
/// The arguments are those the kernel passed to the handler.
unsafe fn pass_on(
    previous: &libc::sigaction,
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    ctx: *mut libc::c_void,
) {
    match previous.sa_sigaction {
        libc::SIG_DFL | libc::SIG_IGN => {
            // The default action (a synchronous SIGBUS cannot be ignored): restored, and
            // the access retried raises it.
            // SAFETY: a zeroed sigaction with SIG_DFL is the default action.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
        f if previous.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: an SA_SIGINFO action's handler has this signature.
            let h: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(f) };
            h(sig, info, ctx);
        }
        f => {
            // SAFETY: a plain action's handler takes the signal number alone.
            let h: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(f) };
            h(sig);
        }
    }
}

/// Blocks, in the calling thread, every signal but those a fault raises (SIGSEGV, SIGBUS,
/// SIGFPE, SIGILL, SIGTRAP): for the pager's own threads, so that a signal sent to the
/// process (a timer's, the program's) runs the program's handler on one of its threads,
/// never on a pager thread in the middle of a page-out or a fault, where a handler that
/// touched a region would wait on that very thread.
pub fn block_async_signals() {
    // SAFETY: `set` is a live sigset_t, filled and trimmed by the libc calls made for it;
    // pthread_sigmask changes this thread's mask only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        for sig in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
        ] {
            libc::sigdelset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Sleeps while `word` holds `expected`, at most `timeout_us` microseconds (`FUTEX_WAIT`,
/// async-signal-safe).
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout_us: u64) {
    let ts = libc::timespec {
        tv_sec: (timeout_us / 1_000_000) as libc::time_t,
        tv_nsec: ((timeout_us % 1_000_000) * 1000) as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT reads the live u32 behind `word` and the timespec; it writes
    // nothing of ours.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// Wakes every thread sleeping on `word` (`FUTEX_WAKE`).
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}
