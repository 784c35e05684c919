//! Which workspace slot a thread should try first: the CPU it runs on where the platform
//! can tell (Linux's `sched_getcpu`), else a number the thread keeps for its life, handed
//! out round-robin. Either way a hint: the answer may be stale as soon as it is returned.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The calling thread's CPU, or its round-robin number where the CPU cannot be known.
#[inline]
pub(crate) fn current() -> usize {
    #[cfg(target_os = "linux")]
    {
        crate::sys::sched_getcpu().unwrap_or_else(thread_number)
    }
    #[cfg(not(target_os = "linux"))]
    {
        thread_number()
    }
}

/// The number of configured CPUs: one workspace slot each. At least 1.
pub(crate) fn configured() -> usize {
    #[cfg(unix)]
    if let Some(n) = crate::sys::configured_cpus() {
        return n;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A number per thread, from a global counter at the thread's first call: threads spread
/// over the slots round-robin, and a thread keeps to one slot.
#[inline]
pub(crate) fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Relaxed);
    }
    NUMBER.with(|n| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_numbers_are_stable_and_distinct() {
        let mine = thread_number();
        assert_eq!(thread_number(), mine);
        let others: Vec<usize> = (0..4)
            .map(|_| std::thread::spawn(thread_number).join().unwrap())
            .collect();
        let mut all = others.clone();
        all.push(mine);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 5, "{others:?} and {mine}");
    }

    #[test]
    fn current_is_within_the_configured_cpus() {
        assert!(configured() >= 1);
        #[cfg(target_os = "linux")]
        assert!(current() < configured());
    }
}
