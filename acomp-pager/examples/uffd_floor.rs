//! The floor of a userfaultfd fault: a handler that does nothing but map the zero page
//! (`UFFDIO_ZEROPAGE`), one thread, waiting by a blocking `read`, by `poll`, or spinning on
//! a non-blocking `read`; beside a fault on plain anonymous memory (the kernel maps the
//! zero page itself). No tier, no pager: what the kernel's round trip through user space
//! costs on this machine.
//!
//! `cargo run --release -p acomp-pager --example uffd_floor -- [PAGES]`
#![allow(unsafe_code)]

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

const PAGE: usize = 4096;
const UFFDIO_API: u64 = (3 << 30) | (24 << 16) | (0xAA << 8) | 0x3F;
const UFFDIO_REGISTER: u64 = (3 << 30) | (32 << 16) | (0xAA << 8);
const UFFDIO_ZEROPAGE: u64 = (3 << 30) | (32 << 16) | (0xAA << 8) | 0x04;

fn map(pages: usize) -> *mut u8 {
    // SAFETY: a new private anonymous mapping.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            pages * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    unsafe { libc::madvise(p, pages * PAGE, libc::MADV_NOHUGEPAGE) };
    p.cast()
}

fn touch(base: *mut u8, order: &[usize]) -> (f64, f64) {
    let mut t = Vec::with_capacity(order.len());
    for &p in order {
        let s = Instant::now();
        // SAFETY: inside the mapping.
        unsafe { std::ptr::read_volatile(base.add(p * PAGE)) };
        t.push(s.elapsed().as_nanos() as u64);
    }
    t.sort_unstable();
    (
        t[t.len() / 2] as f64 / 1e3,
        t[t.len() * 99 / 100] as f64 / 1e3,
    )
}

fn uffd_run(mode: &str, pages: usize, order: &[usize]) -> (f64, f64) {
    let blocking = mode.starts_with("block") || mode.starts_with("pin");
    let nonblock = if blocking { 0 } else { libc::O_NONBLOCK };
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC | nonblock) } as i32;
    assert!(fd >= 0, "userfaultfd: {}", std::io::Error::last_os_error());
    let mut api = [0xAAu64, 0, 0];
    assert_eq!(
        unsafe { libc::ioctl(fd, UFFDIO_API as _, api.as_mut_ptr()) },
        0
    );
    let base = map(pages);
    let mut reg = [base as u64, (pages * PAGE) as u64, 1, 0];
    assert_eq!(
        unsafe { libc::ioctl(fd, UFFDIO_REGISTER as _, reg.as_mut_ptr()) },
        0
    );
    let stop = Arc::new(AtomicBool::new(false));
    let cpus = if mode == "pin2" {
        vec![Some(0), Some(1)]
    } else if mode == "pin1" {
        vec![Some(0)]
    } else {
        vec![None]
    };
    let mut hs = Vec::new();
    for cpu in cpus.clone() {
        let s2 = stop.clone();
        let mode2 = mode.to_string();
        hs.push(std::thread::spawn(move || {
            if let Some(c) = cpu {
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(c, &mut set);
                    libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
                }
            }
            let mut msg = [0u64; 4];
            while !s2.load(Ordering::Relaxed) {
                if mode2 == "poll" {
                    let mut pfd = libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    unsafe { libc::poll(&mut pfd, 1, 100) };
                }
                let n = unsafe { libc::read(fd, msg.as_mut_ptr().cast(), 32) };
                if n != 32 {
                    if mode2 == "spin" {
                        std::hint::spin_loop();
                    }
                    continue;
                }
                let addr = msg[2] & !(PAGE as u64 - 1);
                let mut zp = [addr, PAGE as u64, 0, 0];
                unsafe { libc::ioctl(fd, UFFDIO_ZEROPAGE as _, zp.as_mut_ptr()) };
            }
        }));
    }
    if mode == "pin1" || mode == "pin2" {
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
        }
    }
    let r = touch(base, order);
    stop.store(true, Ordering::Relaxed);
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::CPU_SET(1, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
    }
    if blocking {
        // Wakes the blocking reads: faults on one more page each.
        for _ in 0..cpus.len() {
            let extra = map(1);
            let mut reg = [extra as u64, PAGE as u64, 1, 0];
            unsafe { libc::ioctl(fd, UFFDIO_REGISTER as _, reg.as_mut_ptr()) };
            unsafe { std::ptr::read_volatile(extra) };
        }
    }
    for h in hs {
        h.join().unwrap();
    }
    r
}

fn main() {
    let pages: usize = std::env::args().nth(1).map_or(4096, |s| s.parse().unwrap());
    let mut order: Vec<usize> = (0..pages).collect();
    order.shuffle(&mut StdRng::seed_from_u64(1));
    let (p50, p99) = touch(map(pages), &order);
    println!("kernel zero page    p50 {p50:6.2} us p99 {p99:6.2} us");
    let modes: Vec<String> = std::env::args().skip(2).collect();
    let all = ["block", "poll", "spin", "pin1", "pin2"].map(String::from);
    for mode in if modes.is_empty() {
        &all[..]
    } else {
        &modes[..]
    } {
        let (p50, p99) = uffd_run(mode, pages, &order);
        let mode = mode.as_str();
        println!("uffd {mode:5} handler p50 {p50:6.2} us p99 {p99:6.2} us");
    }
}
