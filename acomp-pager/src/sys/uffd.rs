//! The userfaultfd: opened by the syscall or `/dev/userfaultfd`, its API agreed, its ioctls
//! and its messages.
//!
//! The structures and numbers are the kernel's uapi `linux/userfaultfd.h`, written out in
//! `uffd/uapi.rs` (libc has none of them); each ioctl is checked against the `ioctls` mask
//! the kernel returns at `UFFDIO_API` and `UFFDIO_REGISTER`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use acomp_zswap::{PAGE_SIZE, Page};

use crate::error::Error;

mod uapi;

use uapi::*;
pub use uapi::{
    Msg, UFFD_EVENT_PAGEFAULT, UFFD_EVENT_REMOVE, UFFD_PAGEFAULT_FLAG_WP, UFFD_PAGEFAULT_FLAG_WRITE,
};

/// Why userfaultfd could not be had, in words a user can act on, the kernel's error kept.
fn refused(source: io::Error) -> Error {
    let why = match source.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "userfaultfd is refused (EPERM): vm.unprivileged_userfaultfd is 0 and this process \
             has no CAP_SYS_PTRACE, no access to /dev/userfaultfd, or a seccomp profile (a \
             container's default) forbids the syscall; fix: `sysctl vm.unprivileged_userfaultfd=1`, \
             read-write access to /dev/userfaultfd (Linux 6.1+), CAP_SYS_PTRACE, or a seccomp \
             profile that allows userfaultfd(2)"
        }
        Some(libc::ENOSYS) => {
            "userfaultfd is not in this kernel (ENOSYS): it needs CONFIG_USERFAULTFD (Linux 4.3+)"
        }
        _ => "userfaultfd could not be opened",
    };
    Error::Unavailable { why, source }
}

/// A userfaultfd of this process, non-blocking, with the pager's features.
#[derive(Debug)]
pub struct Uffd {
    fd: OwnedFd,
    /// Whether the API was agreed with `UFFD_FEATURE_MOVE` (Linux 6.8): pages moved into
    /// its ranges with [`Uffd::move_pages_exact`].
    moves: bool,
}

fn ioctl<T>(fd: RawFd, request: u64, arg: &mut T) -> io::Result<()> {
    // SAFETY:
    // - `arg` is a live, exclusive `#[repr(C)]` structure of the size encoded in `request`
    //   (each request above is built from its structure's size);
    // - the kernel writes at most that many bytes back into it.
    let rc = unsafe { libc::ioctl(fd, request as _, arg as *mut T) };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl Uffd {
    /// Opens a userfaultfd (the syscall, or `/dev/userfaultfd` where the syscall is refused)
    /// and agrees the API with the features the pager needs; with `sigbus`, faults raise
    /// SIGBUS in the faulting thread (`UFFD_FEATURE_SIGBUS`) and come from user mode only
    /// (`UFFD_USER_MODE_ONLY`: the kernel's accesses fail as they would anyway).
    pub fn open(sigbus: bool) -> Result<Uffd, Error> {
        let flags =
            libc::O_CLOEXEC | libc::O_NONBLOCK | if sigbus { UFFD_USER_MODE_ONLY } else { 0 };
        let features = FEATURES | if sigbus { UFFD_FEATURE_SIGBUS } else { 0 };
        // With moves where the kernel has them (a page-out's page the tier refused goes back
        // into its region by a move), else without.
        if let Ok(uffd) = Uffd::open_with(flags, features | UFFD_FEATURE_MOVE) {
            return Ok(uffd);
        }
        Uffd::open_with(flags, features).map_err(|(source, api)| {
            if api {
                Error::Unavailable {
                    why: "userfaultfd lacks a feature the pager needs (write-protect on \
                          anonymous memory, remove events, poison: Linux 6.6+ on x86_64 or \
                          arm64)",
                    source,
                }
            } else {
                refused(source)
            }
        })
    }

    /// A second userfaultfd for moving pages out of the regions (`UFFDIO_MOVE`, Linux 6.8)
    /// into a scratch mapping registered with it alone: it asks for no events, so that
    /// freeing pages there raises none. `None` where the kernel has no `UFFDIO_MOVE`.
    pub fn open_mover() -> Option<Uffd> {
        let flags = libc::O_CLOEXEC | libc::O_NONBLOCK | UFFD_USER_MODE_ONLY;
        Uffd::open_with(flags, UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_MOVE).ok()
    }

    /// A userfaultfd opened with `flags` and the API agreed with `features`; the error, and
    /// whether it was the API's.
    fn open_with(flags: libc::c_int, features: u64) -> Result<Uffd, (io::Error, bool)> {
        // SAFETY: userfaultfd(2) takes one integer of flags and returns a new descriptor or -1.
        let rc = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
        let fd = if rc >= 0 {
            rc as RawFd
        } else {
            let syscall_err = io::Error::last_os_error();
            let dev = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/userfaultfd")
                .map_err(|_| (syscall_err, false))?;
            // SAFETY: USERFAULTFD_IOC_NEW takes the flags by value and returns a new
            // descriptor or -1; `dev` is open for the call.
            let rc = unsafe { libc::ioctl(dev.as_raw_fd(), USERFAULTFD_IOC_NEW as _, flags) };
            if rc < 0 {
                return Err((io::Error::last_os_error(), false));
            }
            rc
        };
        // SAFETY: `fd` is a descriptor this function just opened and owns alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut api = UffdioApi {
            api: UFFD_API,
            features,
            ioctls: 0,
        };
        ioctl(fd.as_raw_fd(), UFFDIO_API, &mut api).map_err(|e| (e, true))?;
        Ok(Uffd {
            fd,
            moves: features & UFFD_FEATURE_MOVE != 0,
        })
    }

    /// Whether pages can be moved into this userfaultfd's ranges ([`Uffd::move_pages_exact`]).
    pub fn moves(&self) -> bool {
        self.moves
    }

    /// Moves the pages of `[src, src + len)` to `[dst, dst + len)` (registered with this
    /// userfaultfd, its page table entries empty), stopping at the first page not mapped
    /// at `src` (`ENOENT`): how many bytes from the start the kernel counts as moved, and
    /// the error that stopped it short (`EBUSY`: a page pinned or shared; `EINVAL`:
    /// mappings that differ, the program's `mprotect` or `mlock`; `EAGAIN`: a page
    /// changing meanwhile; `EEXIST`: a page at `dst`). After an error the count can be
    /// short of what moved (Linux 6.18: `Batch::moved_uncounted` in `pageout/moves.rs`).
    /// No `UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES`: with it the same kernel can loop for good.
    pub fn move_pages_exact(
        &self,
        dst: usize,
        src: usize,
        len: usize,
    ) -> (usize, Option<io::Error>) {
        let mut mv = UffdioMove {
            dst: dst as u64,
            src: src as u64,
            len: len as u64,
            mode: UFFDIO_MOVE_MODE_DONTWAKE,
            moved: 0,
        };
        // The test hook's short move: the first `k + m` pages moved, `k` counted.
        #[cfg(feature = "test-hooks")]
        let mut short = None;
        #[cfg(feature = "test-hooks")]
        if crate::hooks::shortening() && len >= crate::PAGE_SIZE {
            let (k, m) = crate::hooks::short_shape(len / crate::PAGE_SIZE);
            mv.len = ((k + m) * crate::PAGE_SIZE) as u64;
            short = Some(k);
        }
        match ioctl(self.fd.as_raw_fd(), UFFDIO_MOVE, &mut mv) {
            Ok(()) => {
                #[cfg(feature = "test-hooks")]
                if let Some(k) = short {
                    let errno = crate::hooks::short_errno(k);
                    return (
                        k * crate::PAGE_SIZE,
                        Some(io::Error::from_raw_os_error(errno)),
                    );
                }
                (len, None)
            }
            Err(e) => (mv.moved.max(0) as usize, Some(e)),
        }
    }

    /// Registers `[start, start + len)` for missing and write-protect faults.
    pub fn register(&self, start: usize, len: usize) -> io::Result<()> {
        let mut reg = UffdioRegister {
            range: UffdioRange {
                start: start as u64,
                len: len as u64,
            },
            mode: UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
            ioctls: 0,
        };
        ioctl(self.fd.as_raw_fd(), UFFDIO_REGISTER, &mut reg)
    }

    /// Unregisters a range; threads waiting on faults in it are woken.
    pub fn unregister(&self, start: usize, len: usize) -> io::Result<()> {
        let mut range = UffdioRange {
            start: start as u64,
            len: len as u64,
        };
        ioctl(self.fd.as_raw_fd(), UFFDIO_UNREGISTER, &mut range)
    }

    /// Wakes the threads waiting on faults in `[start, start + len)`: they retry the access.
    pub fn wake(&self, start: usize, len: usize) -> io::Result<()> {
        let mut range = UffdioRange {
            start: start as u64,
            len: len as u64,
        };
        ioctl(self.fd.as_raw_fd(), UFFDIO_WAKE, &mut range)
    }

    /// Maps a new page holding `page` at `dst` (write-protected with `wp`), waking the
    /// threads waiting on it with `wake`.
    pub fn copy(&self, dst: usize, page: &Page, wp: bool, wake: bool) -> io::Result<()> {
        let mut copy = UffdioCopy {
            dst: dst as u64,
            src: page.as_ptr() as u64,
            len: PAGE_SIZE as u64,
            mode: if wake { 0 } else { UFFDIO_COPY_MODE_DONTWAKE }
                | if wp { UFFDIO_COPY_MODE_WP } else { 0 },
            copy: 0,
        };
        ioctl(self.fd.as_raw_fd(), UFFDIO_COPY, &mut copy)
    }

    /// Maps new pages holding `pages` at `dst` onwards (write-protected with `wp`), waking
    /// no thread: how many pages were mapped from the first, and the error that stopped it
    /// short.
    pub fn copy_run(&self, dst: usize, pages: &[Page], wp: bool) -> (usize, Option<io::Error>) {
        let mut copy = UffdioCopy {
            dst: dst as u64,
            src: pages.as_ptr() as u64,
            len: size_of_val(pages) as u64,
            mode: UFFDIO_COPY_MODE_DONTWAKE | if wp { UFFDIO_COPY_MODE_WP } else { 0 },
            copy: 0,
        };
        match ioctl(self.fd.as_raw_fd(), UFFDIO_COPY, &mut copy) {
            Ok(()) => (pages.len(), None),
            Err(e) => (copy.copy.max(0) as usize / PAGE_SIZE, Some(e)),
        }
    }

    /// Maps the zero page at `dst`, waking the threads waiting on it with `wake`.
    pub fn zeropage(&self, dst: usize, wake: bool) -> io::Result<()> {
        let mut zp = UffdioZeropage {
            range: UffdioRange {
                start: dst as u64,
                len: PAGE_SIZE as u64,
            },
            mode: if wake {
                0
            } else {
                UFFDIO_ZEROPAGE_MODE_DONTWAKE
            },
            zeropage: 0,
        };
        ioctl(self.fd.as_raw_fd(), UFFDIO_ZEROPAGE, &mut zp)
    }

    /// Write-protects `[start, start + len)`, or unprotects it (`protect` false), waking
    /// the threads waiting on it then with `wake`.
    pub fn write_protect(
        &self,
        start: usize,
        len: usize,
        protect: bool,
        wake: bool,
    ) -> io::Result<()> {
        let mut wp = UffdioWriteprotect {
            range: UffdioRange {
                start: start as u64,
                len: len as u64,
            },
            // The kernel refuses WP together with DONTWAKE (EINVAL): protecting wakes
            // nobody, DONTWAKE only means something when unprotecting.
            mode: match (protect, wake) {
                (true, _) => UFFDIO_WRITEPROTECT_MODE_WP,
                (false, true) => 0,
                (false, false) => UFFDIO_WRITEPROTECT_MODE_DONTWAKE,
            },
        };
        ioctl(self.fd.as_raw_fd(), UFFDIO_WRITEPROTECT, &mut wp)
    }

    /// Poisons the page at `dst`: an access to it raises SIGBUS, as a failed swap read does.
    pub fn poison(&self, dst: usize) -> io::Result<()> {
        let mut p = UffdioPoison {
            range: UffdioRange {
                start: dst as u64,
                len: PAGE_SIZE as u64,
            },
            mode: 0,
            updated: 0,
        };
        ioctl(self.fd.as_raw_fd(), UFFDIO_POISON, &mut p)
    }

    /// Reads the pending messages into `msgs` without blocking: how many were read (0 when
    /// none is pending).
    pub fn read(&self, msgs: &mut [Msg]) -> io::Result<usize> {
        // SAFETY:
        // - `msgs` is a live, exclusive buffer of `msgs.len()` 32-byte messages;
        // - the kernel writes whole messages, at most the length passed.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr().cast(),
                std::mem::size_of_val(msgs),
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::WouldBlock => Ok(0),
                _ => Err(err),
            };
        }
        Ok(n as usize / size_of::<Msg>())
    }

    /// The descriptor, for `poll`.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
