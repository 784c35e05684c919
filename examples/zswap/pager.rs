//! `--pager`: the pager's side. The input's pages are written into a region of
//! `acomp-pager` over an lz4 tier (`acomp-zswap`, a budget that holds every page: nothing
//! is refused, nothing written back), paged out with `Region::page_out`, and touched back
//! ([`crate::paging`]), once per order, as the kernel's side does with its mapping.

use std::sync::Arc;
use std::time::Instant;

use acomp_pager::{Pager, Region};

use crate::paging::{self, KIND_PAGER, KIND_PAGER_SIGNAL, Mapping, Order, Pass, Row};
use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;

/// The tier's algorithm: the one zram and the kernel's zswap use most beside lzo-rle.
pub const ALGORITHM: &str = "lz4";

/// The tier's budget for `pages` pages: twice their bytes and 64 MiB more, so that every
/// page is stored (incompressible pages are kept whole, some objects straddle two backing
/// pages).
pub fn budget(pages: u64) -> u64 {
    pages * PAGE_SIZE as u64 * 2 + (64 << 20)
}

/// One page-out of the region and the touches of `order`.
fn pass(
    pager: &Pager,
    region: &Region,
    map: &Mapping,
    input: &Input,
    order: Order,
    seed: u64,
    recompress: bool,
) -> Result<Pass, String> {
    let pages = input.len() as u64;
    let start = Instant::now();
    let moved = region
        .page_out(0, region.len())
        .map_err(|e| format!("page_out: {e}"))?;
    let page_out = start.elapsed();
    if recompress {
        // Every page paged out is idle: zram's `recompress type=idle` over all of them.
        let tier = pager.tier();
        tier.mark_idle();
        tier.recompress_idle(usize::MAX);
    }
    let store_bytes = pager.tier().stats().pool_total_size;
    let out = map.paged_out()?;
    let paged_out = paging::count(&out);
    if moved as u64 != paged_out {
        println!(
            "  pager {}: page_out reported {moved} pages, {paged_out} left memory (mincore)",
            order.name()
        );
    }
    let before = pager.stats().faults;
    let faults = map.touch(&order.touches(input.len(), seed), &out, &|| false);
    let served = pager.stats().faults - before;
    if served != faults.len() as u64 {
        println!(
            "  pager {}: {} first accesses timed, {served} faults served by the pager",
            order.name(),
            faults.len()
        );
    }
    Ok(Pass {
        paged_out_pages: paged_out,
        resident_bytes: (pages - paged_out) * PAGE_SIZE as u64,
        store_bytes,
        page_out,
        faults,
        verified_pages: map.verify(input),
    })
}

/// The pager's rows, one per order: a tier and a pager of their own, a region of the
/// input's pages written afresh before each page-out (so that each page-out compresses
/// every page, as `MADV_PAGEOUT` does after a swap-in freed the zram slot).
///
/// # Errors
///
/// A line saying what failed: the tier or the pager not built (userfaultfd refused: the
/// pager's error says why and what fixes it), the region not mapped, a page-out refused.
pub fn run(input: &Input, seed: u64) -> Result<Vec<Row>, String> {
    let tfm = acomp::Acomp::new(ALGORITHM).map_err(|e| e.to_string())?;
    let mut rows = rows_of(input, seed, tfm, None, &Order::ALL, false)?;
    // The same with faults served on the faulting thread (`Builder::signal_faults`).
    let tfm = acomp::Acomp::new(ALGORITHM).map_err(|e| e.to_string())?;
    rows.extend(rows_of(input, seed, tfm, None, &Order::ALL, true)?);
    // The tier with idle pages recompressed by zstd, page by page (level 9 and a dictionary
    // trained on the input, `--recompress 9+dict`): the random order, after page-out.
    let trained = crate::dict::train(input, 5, 64 << 10).map_err(|e| e.to_string())?;
    let zstd =
        crate::dict::transform(RECOMPRESS_LEVEL, Some(&trained.dict)).map_err(|e| e.to_string())?;
    let tfm = acomp::Acomp::new(ALGORITHM).map_err(|e| e.to_string())?;
    rows.extend(rows_of(
        input,
        seed,
        tfm,
        Some(zstd),
        &[Order::Random],
        false,
    )?);
    Ok(rows)
}

/// The zstd level of the recompressed row's tier.
pub const RECOMPRESS_LEVEL: i32 = 9;

/// The algorithm of the recompressed row: lz4, idle pages recompressed with zstd.
pub const RECOMPRESSED: &str = "lz4+zstd";

/// A tier (recompressing with `recompress`), a pager (its faults served on the faulting
/// thread with `signal`) and a region of the input's pages, and a row per order.
fn rows_of(
    input: &Input,
    seed: u64,
    tfm: acomp::Acomp,
    recompress: Option<acomp::Acomp>,
    orders: &[Order],
    signal: bool,
) -> Result<Vec<Row>, String> {
    let recompressing = recompress.is_some();
    let mut builder = acomp_zswap::Zswap::builder(tfm).max_pool_bytes(budget(input.len() as u64));
    if let Some(r) = recompress {
        builder = builder.recompress(r);
    }
    let tier = Arc::new(builder.build().map_err(|e| format!("the tier: {e}"))?);
    let pager = Pager::builder(tier)
        .signal_faults(signal)
        .build()
        .map_err(|e| format!("the pager: {e}"))?;
    let region = pager
        .region(input.len() * PAGE_SIZE)
        .map_err(|e| format!("a region of {} pages: {e}", input.len()))?;
    // SAFETY: the region is `input.len()` pages, readable and writable, alive until after
    // the last use of `map` below; the program's only accesses are this thread's (the
    // pager's handlers place pages that those accesses wait for).
    let map = unsafe { Mapping::new(region.as_ptr(), input.len()) };
    let algorithm = if recompressing {
        RECOMPRESSED
    } else {
        ALGORITHM
    };
    let mut rows = Vec::new();
    for &order in orders {
        map.fill(input);
        let p = pass(&pager, &region, &map, input, order, seed, recompressing)?;
        rows.push(Row::new(
            if signal {
                KIND_PAGER_SIGNAL
            } else {
                KIND_PAGER
            },
            algorithm,
            order,
            input.len() as u64,
            &p,
        ));
    }
    drop(region);
    Ok(rows)
}
