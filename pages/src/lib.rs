//! The pages that acomp's benches, the tier's benches and tests and the zswap main job send,
//! in one crate that each depends on (not published):
//!
//! - [`kinds`]: one 4 KiB page of each kind a swap or cache layer meets (zero, same-filled,
//!   text, machine code, random), a page of a live heap and a dictionary trained on that
//!   heap, the same bytes on every run;
//! - [`file`](mod@file): the file of many distinct pages a bench reads (`ACOMP_PAGES`, or the bench's
//!   own executable);
//! - [`input`]: a file, or a sample of the system's files, cut into pages;
//! - [`snapshot`]: a running process's private writable memory (`/proc/PID/maps`,
//!   `process_vm_readv`);
//! - [`cases`]: the pages the tier's and the main job's tests store (the shared test cases,
//!   or the test binary's pages; random, partly random and same-filled pages), and pages
//!   for folio tests.

#![deny(missing_docs)]

pub mod cases;
pub mod file;
pub mod input;
pub mod kinds;
pub mod snapshot;

/// Bytes in a page: the tier's `PAGE_SIZE`.
pub const PAGE_SIZE: usize = 4096;

/// A page: the tier's `Page`, the same type.
pub type Page = [u8; PAGE_SIZE];
