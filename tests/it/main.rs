//! The integration tests: one crate (one build, one link of acomp), a module per behaviour.
//! `cargo test --test it fragmentation::` runs one behaviour.

mod common;

mod batch;
mod block_max;
mod buffers;
mod content_size;
mod contract;
mod destination;
mod dictionary;
mod early_rejection;
mod fragmentation;
mod frames;
mod fuzz_seeds;
mod golden;
mod hostile;
mod lz4;
mod lz4_decoder;
mod lz4_golden;
mod memory;
mod messages;
mod params;
mod plain_blocks;
mod precedence;
mod range;
mod readme;
mod regressions;
mod reuse;
mod seek_cache;
mod seekable;
mod stress;
mod threads;
mod units;
