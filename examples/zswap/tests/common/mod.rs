//! What the main job's test files share: page inputs, and whether the pager can run here.

use acomp_zswap::PAGE_SIZE;

/// `n` pages, each of its own bytes (page `i`'s a pattern of `i`), compressible.
pub fn pages(n: usize) -> Vec<u8> {
    (0..n * PAGE_SIZE)
        .map(|i| (i / PAGE_SIZE * 7 + i % 251) as u8)
        .collect()
}

/// Why a pager cannot run here (userfaultfd refused: an unprivileged user,
/// `vm.unprivileged_userfaultfd=0`), printed as the test's skip line; `None` where it can.
pub fn pager_refused() -> Option<String> {
    let tier = acomp_zswap::Zswap::builder(acomp::Acomp::new("lz4").unwrap())
        .build()
        .unwrap();
    let e = acomp_pager::Pager::builder(std::sync::Arc::new(tier))
        .build()
        .err()?;
    println!("skipped: the pager cannot run here: {e}");
    Some(e.to_string())
}
