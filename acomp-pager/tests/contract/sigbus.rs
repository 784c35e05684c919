//! A fault the tier cannot serve (its device fails the read) is SIGBUS for the access,
//! never a hang; the pager serves the other pages on. In a child process.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use acomp::Acomp;
use acomp_pager::{PAGE_SIZE, Pager, Region};
use acomp_zswap::Zswap;

use crate::common::{self, FailingReads, Mem, key, page};

const ROLE: &str = "sigbus";
const PANIC_ROLE: &str = "sigbus-panic";
const SIGNAL_ROLE: &str = "sigbus-signal";

#[test]
fn a_page_the_tier_cannot_load_is_sigbus_and_others_are_served() {
    if common::is_child(ROLE) {
        return child();
    }
    let Some(end) = common::in_child_process(
        module_path!(),
        "a_page_the_tier_cannot_load_is_sigbus_and_others_are_served",
        ROLE,
        120,
    ) else {
        return;
    };
    for line in [
        "CHILD: page 0 on the device, its reads failing",
        "CHILD: SIGBUS at page 0",
        "CHILD: failed_faults 1",
        "CHILD: the other pages served",
        "CHILD: page 0 again, with the default action",
    ] {
        assert!(
            end.stdout.contains(line),
            "no {line:?} from the child: {end:?}"
        );
    }
    assert!(
        end.stderr.contains("cannot be served") && end.stderr.contains("planted read failure"),
        "the pager's message: {end:?}"
    );
    assert_eq!(
        (end.code, end.signal),
        (None, Some(libc::SIGBUS)),
        "{end:?}"
    );
}

/// The same with faults served on the faulting thread (`signal_faults`): the access gets
/// SIGBUS from the program's own action, to which the pager's handler passes it on. On a
/// kernel without `CONFIG_MEMORY_FAILURE` the retried access to the poisoned page is raised
/// as `BUS_ADRERR`, as the userfaultfd's faults are: the pager served it again, and its
/// thread retried for good, flooding the log (a new user's trial found it). In a child
/// process.
#[test]
fn a_page_the_tier_cannot_load_is_sigbus_on_the_faulting_thread_too() {
    if common::is_child(SIGNAL_ROLE) {
        return signal_child();
    }
    let Some(end) = common::in_child_process(
        module_path!(),
        "a_page_the_tier_cannot_load_is_sigbus_on_the_faulting_thread_too",
        SIGNAL_ROLE,
        120,
    ) else {
        return;
    };
    for line in [
        "CHILD: signal faults, page 0 on the device, its reads failing",
        "CHILD: SIGBUS at page 0",
        "CHILD: failed_faults 1",
        "CHILD: the other pages served",
    ] {
        assert!(
            end.stdout.contains(line),
            "no {line:?} from the child: {end:?}"
        );
    }
    assert_eq!(
        end.stderr.matches("cannot be served").count(),
        1,
        "one message for the failed fault: {end:?}"
    );
    assert_eq!((end.code, end.signal), (Some(0), None), "{end:?}");
}

/// A panic in the tier's load (its device's read panics) while a handler serves a fault:
/// the fault gets SIGBUS, the panic is counted, and the page is released, so that a
/// page-out over it and the region's drop go on (with the page left held, both waited for
/// it for good). In a child process.
#[test]
fn a_panic_serving_a_fault_is_sigbus_and_leaves_no_page_held() {
    if common::is_child(PANIC_ROLE) {
        return panic_child();
    }
    let Some(end) = common::in_child_process(
        module_path!(),
        "a_panic_serving_a_fault_is_sigbus_and_leaves_no_page_held",
        PANIC_ROLE,
        120,
    ) else {
        return;
    };
    for line in [
        "CHILD: SIGBUS at page 0",
        "CHILD: panics 1, failed_faults 1",
        "CHILD: page_out after the panic: 1",
        "CHILD: the region dropped",
    ] {
        assert!(
            end.stdout.contains(line),
            "no {line:?} from the child: {end:?}"
        );
    }
    assert_eq!((end.code, end.signal), (Some(0), None), "{end:?}");
}

fn panic_child() {
    let (dev, pager, region, mem) = page_0_on_a_device();
    dev.panic_reads.store(true, SeqCst);
    println!("CHILD: SIGBUS at page {}", sigbus_reading_page_0(&mem));
    let s = pager.stats();
    println!(
        "CHILD: panics {}, failed_faults {}",
        s.panics, s.failed_faults
    );
    // Page 1 read back, then the range paged out again: page 1 (clean) leaves; page 0,
    // out and poisoned, is skipped. Waits for good if the panic left page 0 held.
    mem.check(1, &page(1, 1), "a page beside the panicked one");
    println!(
        "CHILD: page_out after the panic: {}",
        region.page_out(0, 2 * PAGE_SIZE).unwrap()
    );
    dev.panic_reads.store(false, SeqCst);
    drop(region);
    println!("CHILD: the region dropped");
    std::process::exit(0);
}

/// Pages of the children's region.
const PAGES: usize = 8;

/// A pager over a tier with a device (a [`FailingReads`]), a region of [`PAGES`] pages
/// written and paged out, and page 0, the coldest, written back to the device.
fn page_0_on_a_device() -> (Arc<FailingReads>, Pager, Region, Mem) {
    page_0_on_a_device_of(Pager::builder)
}

/// [`page_0_on_a_device`] with the pager `builder` makes of the tier.
fn page_0_on_a_device_of(
    builder: impl FnOnce(Arc<Zswap>) -> acomp_pager::Builder,
) -> (Arc<FailingReads>, Pager, Region, Mem) {
    let dev = Arc::new(FailingReads::default());
    let tier = Arc::new(
        Zswap::builder(Acomp::new("lz4").unwrap())
            .max_pool_bytes(64 << 20)
            .device(dev.clone())
            .build()
            .unwrap(),
    );
    let pager = common::build(builder(tier.clone())).expect("userfaultfd, as in the parent");
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    assert_eq!(tier.writeback(1).unwrap(), 1);
    let on_device: Vec<usize> = (0..PAGES)
        .filter(|&p| tier.on_device(key(&region, p)))
        .collect();
    assert_eq!(on_device, [0]);
    (dev, pager, region, mem)
}

/// Reads page 0 in a thread of its own, with [`on_sigbus`] as the SIGBUS handler, and
/// waits (at most 60 s) for its SIGBUS: the index of the page it came at.
fn sigbus_reading_page_0(mem: &Mem) -> usize {
    set_sigbus(
        on_sigbus as *const () as libc::sighandler_t,
        libc::SA_SIGINFO,
    );
    wait_for_sigbus_at_page_0(mem)
}

/// Reads page 0 in a thread of its own and waits (at most 60 s) for [`on_sigbus`], the
/// SIGBUS handler set before: the index of the page it came at.
fn wait_for_sigbus_at_page_0(mem: &Mem) -> usize {
    let at = mem.addr(0);
    std::thread::spawn(move || {
        // SAFETY: the page is the region's; the access is meant to get SIGBUS.
        unsafe { std::ptr::read_volatile(at as *const u8) };
        println!("CHILD: the access to page 0 returned");
    });
    assert!(
        common::wait_until(60, || BUS_ADDR.load(SeqCst) != 0),
        "no SIGBUS in 60 s"
    );
    (BUS_ADDR.load(SeqCst) - mem.base) / PAGE_SIZE
}

/// Where the handler's SIGBUS came.
static BUS_ADDR: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    BUS_ADDR.store(addr, SeqCst);
    // The faulting thread stays here: the access is not retried.
    loop {
        // SAFETY: pause(2) is async-signal-safe.
        unsafe { libc::pause() };
    }
}

fn set_sigbus(handler: libc::sighandler_t, flags: libc::c_int) {
    // SAFETY: a zeroed sigaction with a handler and flags; the handler does only
    // async-signal-safe work.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler;
        sa.sa_flags = flags;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut()), 0);
    }
}

fn child() {
    common::log_to_stderr();
    let (dev, pager, region, mem) = page_0_on_a_device();
    dev.fail_reads.store(true, SeqCst);
    println!("CHILD: page 0 on the device, its reads failing");
    println!("CHILD: SIGBUS at page {}", sigbus_reading_page_0(&mem));
    println!("CHILD: failed_faults {}", pager.stats().failed_faults);

    for p in 1..PAGES {
        mem.check(p, &page(p, 1), "a page beside the failed one");
    }
    mem.write(1, &page(1, 2));
    region.page_out(PAGE_SIZE, PAGE_SIZE).unwrap();
    mem.check(1, &page(1, 2), "written after the failed fault");
    let s = pager.stats();
    assert_eq!((s.swap_ins, s.failed_faults), (8, 1), "{s:?}");
    println!("CHILD: the other pages served");

    // The page stays poisoned: with the default action, its access ends the process.
    set_sigbus(libc::SIG_DFL, 0);
    println!("CHILD: page 0 again, with the default action");
    mem.touch(0);
    println!("CHILD: page 0 read after SIGBUS");
    std::process::exit(3);
}

fn signal_child() {
    common::log_to_stderr();
    // The program's own action first: the pager's handler, installed over it by the
    // pager's build, passes on the SIGBUS it does not serve.
    set_sigbus(
        on_sigbus as *const () as libc::sighandler_t,
        libc::SA_SIGINFO,
    );
    let (dev, pager, _region, mem) =
        page_0_on_a_device_of(|tier| Pager::builder(tier).signal_faults(true));
    dev.fail_reads.store(true, SeqCst);
    println!("CHILD: signal faults, page 0 on the device, its reads failing");
    println!("CHILD: SIGBUS at page {}", wait_for_sigbus_at_page_0(&mem));
    println!("CHILD: failed_faults {}", pager.stats().failed_faults);
    for p in 1..PAGES {
        mem.check(p, &page(p, 1), "a page beside the failed one");
    }
    let s = pager.stats();
    assert_eq!((s.swap_ins, s.failed_faults), (7, 1), "{s:?}");
    println!("CHILD: the other pages served");
    std::process::exit(0);
}
