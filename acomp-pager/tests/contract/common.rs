//! What the tests share: the pager (or a skip where userfaultfd is refused), pages that name
//! their index and generation, raw access to a region, a watchdog, and children with a
//! deadline for what ends in a signal.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{self, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use acomp::Acomp;
use acomp_pager::{Builder, PAGE_SIZE, Pager, Region};
use acomp_zswap::{Page, SwapDevice, Zswap};
use parking_lot::Mutex;

/// A tier of `budget` bytes, lz4, no device.
pub fn tier_of(budget: u64) -> Arc<Zswap> {
    Arc::new(
        Zswap::builder(Acomp::new("lz4").unwrap())
            .max_pool_bytes(budget)
            .build()
            .unwrap(),
    )
}

/// A tier of 64 MiB, lz4, no device.
pub fn tier() -> Arc<Zswap> {
    tier_of(64 << 20)
}

/// The pager over `tier`, with the defaults.
pub fn pager(tier: Arc<Zswap>) -> Option<Pager> {
    build(Pager::builder(tier))
}

/// The pager over `tier`, with the defaults but fault-around: for tests that count a
/// fault a page in a sweep.
pub fn pager_without_around(tier: Arc<Zswap>) -> Option<Pager> {
    build(Pager::builder(tier).fault_around(0))
}

/// Builds `b`. Where userfaultfd is refused: under `CI=true` the test fails with the
/// error; elsewhere it prints `SKIPPED` and the caller returns.
pub fn build(b: Builder) -> Option<Pager> {
    match b.build() {
        Ok(p) => Some(p),
        Err(e) if refused(&e) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("CI=true and userfaultfd is refused: {e}");
            }
            eprintln!("SKIPPED: userfaultfd is refused: {e}");
            None
        }
        Err(e) => panic!("the pager could not be built: {e}"),
    }
}

fn refused(e: &acomp_pager::Error) -> bool {
    matches!(e, acomp_pager::Error::Unavailable { .. })
}

/// The tier's offset of page `p` of `region`.
pub fn key(region: &Region, p: usize) -> u64 {
    region.tier_offset(p * PAGE_SIZE)
}

/// The page of index `index`, generation `gen`: each 64-byte line begins with the word
/// `index << 32 | gen`, then says both in text (compressible; not same-filled). Any two
/// (index, gen) give other pages.
pub fn page(index: usize, generation: u32) -> Page {
    let mut p = [0u8; PAGE_SIZE];
    let word = ((index as u64) << 32) | u64::from(generation);
    for (j, line) in p.chunks_exact_mut(64).enumerate() {
        line[..8].copy_from_slice(&word.to_le_bytes());
        let text = format!(" page {index:>9} generation {generation:>9} line {j:>2} ...........");
        line[8..].copy_from_slice(&text.as_bytes()[..56]);
    }
    p
}

/// [`page`] with `noise` bytes of a random stream from (index, gen) after the first line:
/// a page that compresses less, by about `noise` bytes.
pub fn noisy_page(index: usize, generation: u32, noise: usize) -> Page {
    let mut p = page(index, generation);
    let mut s = ((index as u64) << 32) | u64::from(generation);
    for b in &mut p[64..64 + noise] {
        s = mix(s);
        *b = s as u8;
    }
    p
}

/// splitmix64.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

pub const ZEROS: Page = [0; PAGE_SIZE];

/// A region of `pages` pages of `pager`, each written with [`page`]`(p, 1)`.
pub fn written(pager: &Pager, pages: usize) -> (Region, Mem) {
    let region = pager.region(pages * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    for p in 0..pages {
        mem.write(p, &page(p, 1));
    }
    (region, mem)
}

/// A region's memory by address, for threads (a raw pointer is not `Send`).
#[derive(Clone, Copy, Debug)]
pub struct Mem {
    pub base: usize,
    pub pages: usize,
}

impl Mem {
    pub fn of(r: &Region) -> Mem {
        Mem {
            base: r.as_ptr() as usize,
            pages: r.len() / PAGE_SIZE,
        }
    }

    pub fn addr(&self, p: usize) -> usize {
        assert!(p < self.pages);
        self.base + p * PAGE_SIZE
    }

    /// Writes page `p` (faults it in, or write-protect-faults it, as the access does).
    pub fn write(&self, p: usize, bytes: &Page) {
        // SAFETY: page `p` lies inside the region, alive while the test holds it; region
        // memory is reached through raw pointers only.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.addr(p) as *mut u8, PAGE_SIZE)
        };
    }

    /// Reads page `p`.
    pub fn read(&self, p: usize) -> Box<Page> {
        let mut out = Box::new([0u8; PAGE_SIZE]);
        // SAFETY: as in `write`.
        unsafe {
            std::ptr::copy_nonoverlapping(self.addr(p) as *const u8, out.as_mut_ptr(), PAGE_SIZE)
        };
        out
    }

    /// One byte of page `p`, read.
    pub fn touch(&self, p: usize) -> u8 {
        // SAFETY: as in `write`.
        unsafe { std::ptr::read_volatile(self.addr(p) as *const u8) }
    }

    /// Asserts that page `p` reads `want`, naming what it reads where it does not.
    pub fn check(&self, p: usize, want: &Page, what: &str) {
        let got = self.read(p);
        if *got != *want {
            panic!(
                "{what}: page {p} is not the page last written: {}",
                describe(&got, want)
            );
        }
    }

    /// `madvise` over pages `[first, first + n)`.
    pub fn advise(&self, first: usize, n: usize, advice: libc::c_int) -> io::Result<()> {
        assert!(first + n <= self.pages);
        // SAFETY: the range lies inside the region; the advice changes no memory a Rust
        // reference points into.
        let rc = unsafe { libc::madvise(self.addr(first) as *mut _, n * PAGE_SIZE, advice) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// `mprotect` over the whole region.
    pub fn protect(&self, prot: libc::c_int) -> io::Result<()> {
        // SAFETY: the range is the region's own mapping.
        let rc = unsafe { libc::mprotect(self.base as *mut _, self.pages * PAGE_SIZE, prot) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// What a page that is not `want` holds, in the words of [`page`]: the (index, gen) of its
/// first word and the first byte that differs.
pub fn describe(got: &Page, want: &Page) -> String {
    let w = |p: &Page| u64::from_le_bytes(p[..8].try_into().unwrap());
    let first = (0..PAGE_SIZE)
        .find(|&i| got[i] != want[i])
        .unwrap_or(PAGE_SIZE);
    let name = |x: u64| format!("page {} gen {}", x >> 32, x & 0xffff_ffff);
    format!(
        "it begins as {} (zeros: {}), not {}; first difference at byte {first}",
        name(w(got)),
        got.iter().all(|&b| b == 0),
        name(w(want))
    )
}

/// Aborts the test binary, naming `what`, if the guard is not dropped within `secs`: a
/// hang in the pager fails the run instead of stalling it.
pub struct Watchdog(Option<mpsc::Sender<()>>);

pub fn watchdog(what: &'static str, secs: u64) -> Watchdog {
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(secs)) {
            eprintln!("{what}: not done after {secs} s: the pager hangs; aborting");
            std::process::abort();
        }
    });
    Watchdog(Some(tx))
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.0.take());
    }
}

/// The environment variable that tells a re-run of this binary which child part to run.
pub const CHILD: &str = "ACOMP_PAGER_TEST_CHILD";

/// True in the child run of `role`.
pub fn is_child(role: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|v| v == role)
}

/// What a child ended with.
#[derive(Debug)]
pub struct Ended {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs test `test` (its path in this binary) of this binary again in a child process with
/// [`CHILD`] set to `role`; kills it and fails after `secs`.
pub fn run_child(test: &str, role: &str, secs: u64) -> Ended {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        // `--include-ignored`: an ignored test run with `--ignored` runs its child too.
        .args([
            test,
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "--include-ignored",
        ])
        .env(CHILD, role)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the child {role} is not done after {secs} s (hung); its stdout:\n{}\nits \
                 stderr:\n{}",
                out.join().unwrap(),
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ended {
        code: status.code(),
        signal: status.signal(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Polls `done` every millisecond until it holds, for at most `secs`; whether it held. For
/// what a handler thread finishes after the call that woke it has returned.
pub fn wait_until(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs test `name` of `module` (`module_path!()`) of this binary again in a child process
/// as `role` ([`run_child`], killed and failed after `secs`); `None` where userfaultfd is
/// refused (the test skips, or fails under `CI=true`, as [`build`] says).
pub fn in_child_process(module: &str, name: &str, role: &str, secs: u64) -> Option<Ended> {
    pager(tier())?;
    Some(run_child(&test_path(module, name), role, secs))
}

/// `fork`s; the child runs `f` (async-signal-safe work only: the other threads are not in
/// it) and `_exit`s with its code. Returns the child's end (code or signal), killing it
/// after `secs`.
pub fn fork_child(secs: u64, f: impl FnOnce() -> i32) -> (Option<i32>, Option<i32>) {
    // SAFETY: the child runs `f`, which touches memory and returns a code, then `_exit`s;
    // it allocates nothing and takes no lock another thread could hold.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
    if pid == 0 {
        let code = f();
        // SAFETY: ends the child at once, running no destructor or atexit handler.
        unsafe { libc::_exit(code) };
    }
    let start = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child, without blocking.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(rc >= 0, "waitpid: {}", io::Error::last_os_error());
        if rc == pid {
            break;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            // SAFETY: our own child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child is not done after {secs} s (hung)");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        panic!("the forked child ended with status {status:#x}")
    }
}

/// A device in memory whose reads fail while `fail_reads` is set, and whose reads or
/// writes panic while `panic_reads` or `panic_writes` is.
#[derive(Default)]
pub struct FailingReads {
    pages: Mutex<HashMap<u64, Box<Page>>>,
    pub fail_reads: AtomicBool,
    pub panic_reads: AtomicBool,
    pub panic_writes: AtomicBool,
}

impl SwapDevice for FailingReads {
    fn write_page(&self, key: u64, page: &Page) -> io::Result<()> {
        assert!(
            !self.panic_writes.load(Relaxed),
            "a planted panic in a write"
        );
        self.pages.lock().insert(key, Box::new(*page));
        Ok(())
    }

    fn read_page(&self, key: u64, page: &mut Page) -> io::Result<()> {
        assert!(!self.panic_reads.load(Relaxed), "a planted panic in a read");
        if self.fail_reads.load(Relaxed) {
            return Err(io::Error::other("a planted read failure"));
        }
        let pages = self.pages.lock();
        page.copy_from_slice(&pages.get(&key).ok_or(io::ErrorKind::NotFound)?[..]);
        Ok(())
    }

    fn discard(&self, key: u64) -> io::Result<()> {
        self.pages.lock().remove(&key);
        Ok(())
    }
}

/// The path of test `name` of module `module` (`module_path!()`) in this binary.
pub fn test_path(module: &str, name: &str) -> String {
    let m = module.split_once("::").map_or("", |(_, m)| m);
    format!("{m}::{name}")
}

/// Routes the `log` facade's records (the pager's messages) to stderr, one line each, as a
/// program's logger would; for the tests that read them. Idempotent.
pub fn log_to_stderr() {
    struct Stderr;
    impl log::Log for Stderr {
        fn enabled(&self, _: &log::Metadata<'_>) -> bool {
            true
        }
        fn log(&self, record: &log::Record<'_>) {
            eprintln!("{}: {}", record.level(), record.args());
        }
        fn flush(&self) {}
    }
    static LOGGER: Stderr = Stderr;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Warn);
    }
}
