//! Not a module of the main job (whose `pool` is the tier's, `acomp_zswap::pool`): the one
//! item of it that `snapshot.rs` names, for `benches/unit_floor.rs` at the root, which
//! compiles `snapshot.rs` on its own (`#[path]`) beside this file. Remove it once that bench
//! no longer includes it.

/// Bytes in a page, as `acomp_zswap::PAGE_SIZE`.
pub const PAGE_SIZE: usize = 4096;
