//! The pager's contract (the crate docs, "The contract"), a module per line of it: every
//! page checked byte for byte, counters exact where they are determined.
//!
//! The tests need userfaultfd; where it is refused they print `SKIPPED` and pass, and fail
//! under `CI=true` (`common::build`). What ends in a signal runs in a child process with a
//! deadline; everything else under a watchdog that aborts a hung run.

mod common;

mod budget;
mod clean;
mod errors;
mod fault_around;
mod faults;
mod fork;
mod fork_drop;
mod huge;
mod kernel;
mod lifecycle;
mod memory_limit;
mod mprotect;
mod races;
mod reclaim;
mod remove;
mod round_trip;
mod shared_tier;
mod short_moves;
mod sigbus;
mod signal_faults;
mod sparse;
mod split;
mod stall;
mod system_swap;
mod zeros;
