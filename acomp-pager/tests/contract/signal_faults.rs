//! `Builder::signal_faults`: faults served on the faulting thread in a SIGBUS handler give
//! back every page, as the handler threads do; the kernel's own access to a page not in
//! memory fails with `EFAULT` and changes nothing; a SIGBUS that is not a fault on a region
//! goes on to the action SIGBUS had (the program's handler, or the default: the process
//! killed by SIGBUS).

use std::sync::atomic::{AtomicUsize, Ordering};

use acomp_pager::{PAGE_SIZE, Pager};

use crate::common::{self, Mem, page};

const PAGES: usize = 512;

fn signal_pager(b: acomp_pager::Builder) -> Option<Pager> {
    common::build(b.signal_faults(true))
}

#[test]
fn faults_served_on_the_faulting_thread_give_back_every_page() {
    let _w = common::watchdog("signal faults", 120);
    let Some(pager) = signal_pager(Pager::builder(common::tier())) else {
        return;
    };
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let before = pager.stats();
    // Four threads read every page, each in its own order: every page comes back once.
    std::thread::scope(|s| {
        for t in 0..4u64 {
            s.spawn(move || {
                // An odd stride: each thread reads every page, in an order of its own.
                let stride = 37 * (2 * t as usize + 1);
                for i in 0..PAGES {
                    let p = (i * stride + 101 * t as usize) % PAGES;
                    mem.check(p, &page(p, 1), "read back on the faulting thread");
                }
            });
        }
    });
    let s = pager.stats();
    assert_eq!(s.swap_ins - before.swap_ins, PAGES as u64, "{s:?}");
    assert_eq!(
        s.write_protect_faults, 0,
        "a read racing another's fault on the same page is no write"
    );
    assert_eq!((s.failed_faults, s.panics), (0, 0));
    assert_eq!(
        s.fault_service_p50_ns, 0,
        "no fault went through a handler thread"
    );
    // Written (first writes to clean pages: a write-protect fault each), paged out again,
    // read back.
    for p in 0..PAGES {
        mem.write(p, &page(p, 2));
    }
    assert_eq!(pager.stats().write_protect_faults, PAGES as u64);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    for p in (0..PAGES).rev() {
        mem.check(p, &page(p, 2), "the second generation");
    }
    // Never written: zeros.
    let fresh = pager.region(4 * PAGE_SIZE).unwrap();
    let fm = Mem::of(&fresh);
    assert_eq!(*fm.read(3), common::ZEROS);
    fm.write(1, &page(1, 7));
    fm.check(1, &page(1, 7), "a fresh page written");
}

#[test]
fn the_kernels_own_access_to_a_page_out_gets_efault_and_changes_nothing() {
    let _w = common::watchdog("signal faults, kernel access", 60);
    let Some(pager) = signal_pager(Pager::builder(common::tier())) else {
        return;
    };
    let (region, mem) = common::written(&pager, 4);
    assert_eq!(region.page_out(0, region.len()).unwrap(), 4);
    let mut fds = [0; 2];
    // SAFETY: `fds` is a live array of two descriptors for pipe(2) to fill.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let data = page(9, 9);
    // SAFETY: writes a live page-sized buffer to the pipe just made.
    let n = unsafe { libc::write(fds[1], data.as_ptr().cast(), PAGE_SIZE) };
    assert_eq!(n, PAGE_SIZE as isize);
    // The kernel copies into page 2, paged out: it does not wait for the pager.
    // SAFETY: the destination is page 2 of the live region; the kernel checks it.
    let n = unsafe { libc::read(fds[0], mem.addr(2) as *mut _, PAGE_SIZE) };
    let err = std::io::Error::last_os_error();
    assert_eq!(
        (n, err.raw_os_error()),
        (-1, Some(libc::EFAULT)),
        "read(2) into a paged-out page"
    );
    mem.check(2, &page(2, 1), "after the refused read");
    // Once the program wrote it (a read leaves it write-protected, with its copy kept, and
    // the kernel's write into it fails the same way), the kernel's access goes through.
    mem.write(2, &page(2, 3));
    // SAFETY: as above.
    let n = unsafe { libc::read(fds[0], mem.addr(2) as *mut _, PAGE_SIZE) };
    assert_eq!(n, PAGE_SIZE as isize);
    mem.check(2, &data, "after the read into a resident page");
    // SAFETY: the pipe's two descriptors, closed once.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
}

/// Times the program's own SIGBUS handler ran.
static PROGRAMS_HANDLER: AtomicUsize = AtomicUsize::new(0);

extern "C" fn programs_handler(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    PROGRAMS_HANDLER.fetch_add(1, Ordering::SeqCst);
    // SAFETY: a valid siginfo; the fix maps anonymous memory over the faulting page of the
    // test's file mapping, which nothing else uses.
    unsafe {
        let addr = ((*info).si_addr() as usize) & !(PAGE_SIZE - 1);
        if addr != 0 {
            libc::mmap(
                addr as *mut _,
                PAGE_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            );
        }
    }
}

/// A page of a file mapping past the file's end: touching it is SIGBUS (`BUS_ADRERR`),
/// the same code as a userfaultfd's, outside any region.
fn beyond_a_files_end() -> *mut u8 {
    let f = tempfile_empty();
    // SAFETY: maps one page of an open, empty file (its only page is past the end).
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGE_SIZE,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    p.cast()
}

fn tempfile_empty() -> libc::c_int {
    let path = std::env::temp_dir().join(format!("acomp-pager-sigbus-{}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    let _ = std::fs::remove_file(&path);
    std::os::fd::IntoRawFd::into_raw_fd(f)
}

#[test]
fn a_sigbus_outside_the_regions_goes_to_the_programs_handler() {
    if common::is_child("programs-handler") {
        // SAFETY: installs a handler of the right signature for SA_SIGINFO.
        unsafe {
            let mut a: libc::sigaction = std::mem::zeroed();
            a.sa_sigaction = programs_handler as *const () as usize;
            a.sa_flags = libc::SA_SIGINFO;
            libc::sigaction(libc::SIGBUS, &a, std::ptr::null_mut());
        }
        let pager = signal_pager(Pager::builder(common::tier())).unwrap();
        let (region, mem) = common::written(&pager, 8);
        region.page_out(0, region.len()).unwrap();
        mem.check(5, &page(5, 1), "a region's fault, served");
        assert_eq!(PROGRAMS_HANDLER.load(Ordering::SeqCst), 0);
        // SAFETY: raise(3) sends the signal to this thread.
        unsafe { libc::raise(libc::SIGBUS) };
        assert_eq!(PROGRAMS_HANDLER.load(Ordering::SeqCst), 1, "raise(SIGBUS)");
        let p = beyond_a_files_end();
        // SAFETY: the page is mapped; its access faults, and the handler maps memory there.
        let b = unsafe { std::ptr::read_volatile(p) };
        assert_eq!(b, 0);
        assert_eq!(
            PROGRAMS_HANDLER.load(Ordering::SeqCst),
            2,
            "a file's SIGBUS"
        );
        mem.check(6, &page(6, 1), "a region's fault after them");
        println!("child done");
        return;
    }
    let Some(ended) = common::in_child_process(
        module_path!(),
        "a_sigbus_outside_the_regions_goes_to_the_programs_handler",
        "programs-handler",
        60,
    ) else {
        return;
    };
    assert_eq!(ended.code, Some(0), "{ended:?}");
    assert!(ended.stdout.contains("child done"), "{ended:?}");
}

#[test]
fn a_sigbus_outside_the_regions_without_a_handler_kills_as_before() {
    if common::is_child("default-action") {
        let pager = signal_pager(Pager::builder(common::tier())).unwrap();
        let (region, mem) = common::written(&pager, 8);
        region.page_out(0, region.len()).unwrap();
        mem.check(5, &page(5, 1), "a region's fault, served");
        println!("touching");
        let p = beyond_a_files_end();
        // SAFETY: the page is mapped; its access is SIGBUS, which kills the process.
        let b = unsafe { std::ptr::read_volatile(p) };
        println!("survived: {b}");
        return;
    }
    let Some(ended) = common::in_child_process(
        module_path!(),
        "a_sigbus_outside_the_regions_without_a_handler_kills_as_before",
        "default-action",
        60,
    ) else {
        return;
    };
    assert_eq!(ended.signal, Some(libc::SIGBUS), "{ended:?}");
    assert!(ended.stdout.contains("touching") && !ended.stdout.contains("survived"));
}

/// Reads of a region's page from the program's SIGALRM handler.
static ALARM_READS: AtomicUsize = AtomicUsize::new(0);
/// The region the handler reads, by address (0: none yet).
static ALARM_AT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn alarm_reads_a_region(_: libc::c_int) {
    let at = ALARM_AT.load(Ordering::SeqCst);
    if at != 0 {
        let n = ALARM_READS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: a page of the live region (the test stops the timer before dropping it).
        unsafe { std::ptr::read_volatile((at + (n % 64) * PAGE_SIZE) as *const u8) };
    }
}

/// A known bug (`Builder::signal_faults`'s docs): the SIGALRM handler can interrupt a thread
/// inside the allocator and touch a page that a faulting thread's direct reclaim holds
/// while that page-out allocates; each then waits for the other (seen in 1 of 4 CI runs,
/// and on the first try beside two busy loops: the handler's fault parked on the page, the
/// page-out in `realloc`). Ignored until page-outs hold no page while they allocate; run
/// with `--ignored`.
#[test]
#[ignore = "known deadlock: a program's signal handler in the allocator against a page-out that allocates (Builder::signal_faults)"]
fn a_program_signal_handler_touching_a_region_neither_hangs_nor_kills() {
    if common::is_child("alarm") {
        let tier = common::tier();
        let b = Pager::builder(tier)
            .memory_limit(1 << 20)
            .signal_faults(true);
        let pager = common::build(b).unwrap();
        let (region, mem) = common::written(&pager, 1024);
        ALARM_AT.store(mem.base, Ordering::SeqCst);
        // SAFETY: a plain handler for SIGALRM, and a timer every 200 µs of real time.
        unsafe {
            libc::signal(libc::SIGALRM, alarm_reads_a_region as *const () as usize);
            let t = libc::itimerval {
                it_interval: libc::timeval {
                    tv_sec: 0,
                    tv_usec: 200,
                },
                it_value: libc::timeval {
                    tv_sec: 0,
                    tv_usec: 200,
                },
            };
            libc::setitimer(libc::ITIMER_REAL, &t, std::ptr::null_mut());
        }
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_secs(2) {
            for p in (0..1024).step_by(7) {
                mem.check(
                    p,
                    &page(p, 1),
                    "under a timer whose handler reads the region",
                );
            }
        }
        // The handler told to stop and the timer stopped, then time for a handler already
        // running (on any thread: the signal is the process's) to end, before the region
        // goes.
        ALARM_AT.store(0, Ordering::SeqCst);
        // SAFETY: a zeroed itimerval stops the timer.
        unsafe {
            let t: libc::itimerval = std::mem::zeroed();
            libc::setitimer(libc::ITIMER_REAL, &t, std::ptr::null_mut());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(ALARM_READS.load(Ordering::SeqCst) > 100);
        drop(region);
        println!("child done");
        return;
    }
    let Some(ended) = common::in_child_process(
        module_path!(),
        "a_program_signal_handler_touching_a_region_neither_hangs_nor_kills",
        "alarm",
        60,
    ) else {
        return;
    };
    assert_eq!(ended.code, Some(0), "{ended:?}");
    assert!(ended.stdout.contains("child done"), "{ended:?}");
}
