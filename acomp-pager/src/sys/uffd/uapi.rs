//! The kernel's uapi `linux/userfaultfd.h`, written out (libc has none of it): the ioctl
//! numbers, the features and modes, the structures the ioctls take, and the message.

pub(super) const UFFDIO: u64 = 0xAA;
const fn iowr(nr: u64, size: usize) -> u64 {
    (3 << 30) | ((size as u64) << 16) | (UFFDIO << 8) | nr
}
const fn ior(nr: u64, size: usize) -> u64 {
    (2 << 30) | ((size as u64) << 16) | (UFFDIO << 8) | nr
}

pub(super) const UFFD_API: u64 = 0xAA;
pub(super) const UFFDIO_API: u64 = iowr(0x3F, 24);
pub(super) const UFFDIO_REGISTER: u64 = iowr(0x00, 32);
pub(super) const UFFDIO_UNREGISTER: u64 = ior(0x01, 16);
pub(super) const UFFDIO_WAKE: u64 = ior(0x02, 16);
pub(super) const UFFDIO_COPY: u64 = iowr(0x03, 40);
pub(super) const UFFDIO_ZEROPAGE: u64 = iowr(0x04, 32);
pub(super) const UFFDIO_WRITEPROTECT: u64 = iowr(0x06, 24);
pub(super) const UFFDIO_POISON: u64 = iowr(0x08, 32);
pub(super) const UFFDIO_MOVE: u64 = iowr(0x05, 40);
/// `/dev/userfaultfd`'s one ioctl: a new userfaultfd, as the syscall makes (Linux 6.1).
pub(super) const USERFAULTFD_IOC_NEW: u64 = 0xAA00;

pub(super) const UFFD_FEATURE_PAGEFAULT_FLAG_WP: u64 = 1 << 0;
pub(super) const UFFD_FEATURE_EVENT_REMOVE: u64 = 1 << 3;
pub(super) const UFFD_FEATURE_SIGBUS: u64 = 1 << 7;
pub(super) const UFFD_FEATURE_THREAD_ID: u64 = 1 << 8;
pub(super) const UFFD_FEATURE_POISON: u64 = 1 << 14;
pub(super) const UFFD_FEATURE_MOVE: u64 = 1 << 16;
/// The features the pager needs: write-protect faults (page-out racing writers, clean
/// copies), remove events (the program's `MADV_DONTNEED`/`MADV_REMOVE`), thread ids (in
/// messages), poison (a fault that cannot be served is SIGBUS, not a hang).
pub(super) const FEATURES: u64 = UFFD_FEATURE_PAGEFAULT_FLAG_WP
    | UFFD_FEATURE_EVENT_REMOVE
    | UFFD_FEATURE_THREAD_ID
    | UFFD_FEATURE_POISON;

/// userfaultfd(2)'s flag: faults from user mode only; the kernel's own accesses to a
/// missing page fail (`EFAULT`). Such a userfaultfd needs no privilege (Linux 5.11).
pub(super) const UFFD_USER_MODE_ONLY: libc::c_int = 1;

pub(super) const UFFDIO_REGISTER_MODE_MISSING: u64 = 1;
pub(super) const UFFDIO_REGISTER_MODE_WP: u64 = 2;
pub(super) const UFFDIO_COPY_MODE_DONTWAKE: u64 = 1;
pub(super) const UFFDIO_COPY_MODE_WP: u64 = 2;
pub(super) const UFFDIO_ZEROPAGE_MODE_DONTWAKE: u64 = 1;
pub(super) const UFFDIO_WRITEPROTECT_MODE_WP: u64 = 1;
pub(super) const UFFDIO_WRITEPROTECT_MODE_DONTWAKE: u64 = 2;
pub(super) const UFFDIO_MOVE_MODE_DONTWAKE: u64 = 1;

/// The event of a page fault.
pub const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
/// The event of the program's `MADV_DONTNEED` or `MADV_REMOVE` over a registered range.
pub const UFFD_EVENT_REMOVE: u8 = 0x15;
/// A fault's flag: the access was a write.
pub const UFFD_PAGEFAULT_FLAG_WRITE: u64 = 1;
/// A fault's flag: a write to a write-protected page.
pub const UFFD_PAGEFAULT_FLAG_WP: u64 = 2;

#[repr(C)]
#[derive(Default)]
pub(super) struct UffdioApi {
    pub(super) api: u64,
    pub(super) features: u64,
    pub(super) ioctls: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(super) struct UffdioRange {
    pub(super) start: u64,
    pub(super) len: u64,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct UffdioRegister {
    pub(super) range: UffdioRange,
    pub(super) mode: u64,
    pub(super) ioctls: u64,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct UffdioCopy {
    pub(super) dst: u64,
    pub(super) src: u64,
    pub(super) len: u64,
    pub(super) mode: u64,
    pub(super) copy: i64,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct UffdioZeropage {
    pub(super) range: UffdioRange,
    pub(super) mode: u64,
    pub(super) zeropage: i64,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct UffdioWriteprotect {
    pub(super) range: UffdioRange,
    pub(super) mode: u64,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct UffdioMove {
    pub(super) dst: u64,
    pub(super) src: u64,
    pub(super) len: u64,
    pub(super) mode: u64,
    pub(super) moved: i64,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct UffdioPoison {
    pub(super) range: UffdioRange,
    pub(super) mode: u64,
    pub(super) updated: i64,
}

/// `struct uffd_msg`: 32 bytes, the event in the first byte and its arguments from byte 8.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Msg {
    /// `UFFD_EVENT_*`.
    pub event: u8,
    _reserved: [u8; 7],
    /// Page fault: `flags`; remove: `start`.
    pub arg0: u64,
    /// Page fault: `address`; remove: `end`.
    pub arg1: u64,
    /// Page fault: the faulting thread's id (`ptid`, with `UFFD_FEATURE_THREAD_ID`).
    pub arg2: u64,
}

const _: () = assert!(size_of::<Msg>() == 32);
