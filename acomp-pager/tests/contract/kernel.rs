//! The kernel's own accesses to a region are served as the program's are: `write(2)` from
//! paged-out pages (the kernel reads them, `copy_from_user`) and `read(2)` into paged-out
//! pages (the kernel writes them, `copy_to_user`) fault and are served, never `EFAULT`.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;

use acomp_pager::PAGE_SIZE;

use crate::common::{self, Mem, page};

#[test]
fn syscalls_read_and_write_paged_out_pages() {
    let _w = common::watchdog("kernel accesses", 300);
    let Some(pager) = common::pager_without_around(common::tier()) else {
        return;
    };
    const PAGES: usize = 8;
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let before = pager.stats().swap_ins;

    // write(2) from the region: the kernel reads pages 0..4 out of the tier.
    let path = std::env::temp_dir().join(format!("acomp-pager-kernel-{}", std::process::id()));
    let mut file = std::fs::File::create(&path).unwrap();
    // SAFETY: pages 0..4 lie inside the region, which is readable; the kernel reads them.
    let n = unsafe { libc::write(file.as_raw_fd(), region.as_ptr().cast(), 4 * PAGE_SIZE) };
    assert_eq!(
        n,
        (4 * PAGE_SIZE) as isize,
        "{}",
        std::io::Error::last_os_error()
    );
    file.flush().unwrap();
    assert_eq!(pager.stats().swap_ins - before, 4);

    // read(2) into the region: the kernel writes pages 4..8, which are paged out, with the
    // file's bytes (pages 0..4 of generation 1).
    let mut file = std::fs::File::open(&path).unwrap();
    // SAFETY: pages 4..8 lie inside the region, which is writable; the kernel writes them.
    let n = unsafe {
        libc::read(
            file.as_raw_fd(),
            region.as_ptr().add(4 * PAGE_SIZE).cast(),
            4 * PAGE_SIZE,
        )
    };
    assert_eq!(
        n,
        (4 * PAGE_SIZE) as isize,
        "{}",
        std::io::Error::last_os_error()
    );
    let mut rest = Vec::new();
    file.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    std::fs::remove_file(&path).unwrap();

    for p in 0..4 {
        mem.check(p, &page(p, 1), "a page write(2) read out of the tier");
        mem.check(
            p + 4,
            &page(p, 1),
            "a page read(2) wrote over its paged-out bytes",
        );
    }
    // Paged out again, every page comes back as the syscalls left it.
    region.page_out(0, region.len()).unwrap();
    for p in 0..4 {
        mem.check(p + 4, &page(p, 1), "after a second page-out");
    }
}

/// `/proc/PID/mem` (a debugger's read) does not fault through the userfaultfd: a paged-out
/// page fails with `EIO`, as the crate docs say, and the page is still the pager's after.
#[test]
fn proc_mem_reads_of_a_paged_out_page_fail_with_eio() {
    use std::os::unix::fs::FileExt;
    let _w = common::watchdog("/proc/self/mem", 300);
    let Some(pager) = common::pager_without_around(common::tier()) else {
        return;
    };
    let region = pager.region(2 * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    mem.write(0, &page(0, 1));
    mem.write(1, &page(1, 1));
    assert_eq!(region.page_out(0, PAGE_SIZE).unwrap(), 1);
    let proc_mem = std::fs::File::open("/proc/self/mem").unwrap();
    let mut buf = vec![0u8; PAGE_SIZE];
    let err = proc_mem
        .read_exact_at(&mut buf, region.as_ptr() as u64)
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    // A resident page reads as it is.
    proc_mem
        .read_exact_at(&mut buf, region.as_ptr() as u64 + PAGE_SIZE as u64)
        .unwrap();
    assert!(buf[..] == page(1, 1)[..]);
    mem.check(0, &page(0, 1), "after the failed read");
}
