//! The two calls of the tier that keep a clean page's copy: in one place, so that the
//! pager's use of them reads as the kernel's swap cache does.

use acomp_zswap::{LoadError, Page, Zswap};

/// Loads the page at `key` and keeps the tier's copy as a clean copy: the first thing the
/// tier drops at its budget.
pub fn load_clean(tier: &Zswap, key: u64, page: &mut Page) -> Result<(), LoadError> {
    tier.load(key, page)
}

/// Makes the clean copy at `key` an ordinary entry again: true if the tier still holds it
/// (the page may leave memory without being compressed), false if the tier dropped it.
pub fn clear_clean(tier: &Zswap, key: u64) -> bool {
    tier.contains(key)
}
