//! Test hooks, built only with the `test-hooks` feature (the crate's own tests enable it;
//! it is not for users): a call at a point of the load path, of recompression, of the
//! shrinker's drop of clean copies, of the pool's setup of a zspage or of the arena's thread
//! giving pages back that a test
//! holds to make a race happen every time instead of now and then.

use std::sync::Arc;

use parking_lot::RwLock;

type Hook = Arc<dyn Fn(u64) + Send + Sync>;

static AFTER_LOOKUP: RwLock<Option<Hook>> = RwLock::new(None);
static WHILE_RECOMPRESSING: RwLock<Option<Hook>> = RwLock::new(None);
static WHILE_DROPPING_CLEAN: RwLock<Option<Hook>> = RwLock::new(None);
static BEFORE_DROPPING_CLEAN: RwLock<Option<Hook>> = RwLock::new(None);
static BEFORE_WRITING_BACK: RwLock<Option<Hook>> = RwLock::new(None);
static SETTING_UP_ZSPAGE: RwLock<Option<Hook>> = RwLock::new(None);
static WHILE_TRIMMING: RwLock<Option<Hook>> = RwLock::new(None);

/// Calls `f(offset)` in every load (`load`, `load_clean`) after it has looked the offset up
/// and before it locks the entry it found: the point where a store may replace the entry.
/// `None` removes the hook.
pub fn after_lookup(f: Option<Hook>) {
    *AFTER_LOOKUP.write() = f;
}

/// Runs the hook, if set.
pub(crate) fn run_after_lookup(offset: u64) {
    let hook = AFTER_LOOKUP.read().clone();
    if let Some(f) = hook {
        f(offset);
    }
}

/// Calls `f(offset)` in recompression ([`crate::Zswap::recompress_idle`], the thread of
/// [`crate::Zswap::recompress_every`]) for each entry it recompresses, after the entry's page
/// was decompressed and before it is compressed with the second transform: the window in
/// which recompression must hold no lock that other offsets need; for a unit, once, with the
/// offset of its first page, after all its pages were decompressed. `None` removes the hook.
pub fn while_recompressing(f: Option<Hook>) {
    *WHILE_RECOMPRESSING.write() = f;
}

/// Runs the hook, if set.
pub(crate) fn run_while_recompressing(offset: u64) {
    let hook = WHILE_RECOMPRESSING.read().clone();
    if let Some(f) = hook {
        f(offset);
    }
}

/// Calls `f(offset)` where the shrinker drops a clean copy ([`crate::Zswap::load_clean`]),
/// under the entry's lock, after it found the entry still clean and before it takes it out:
/// the window in which [`crate::Zswap::clear_clean`] must wait for the drop and then say
/// the copy is gone. `None` removes the hook.
pub fn while_dropping_clean(f: Option<Hook>) {
    *WHILE_DROPPING_CLEAN.write() = f;
}

/// Runs the hook, if set.
pub(crate) fn run_while_dropping_clean(offset: u64) {
    let hook = WHILE_DROPPING_CLEAN.read().clone();
    if let Some(f) = hook {
        f(offset);
    }
}

/// Calls `f(offset)` where the shrinker has taken a clean copy out of the clean list and
/// before it locks the entry: the window in which a [`crate::Zswap::clear_clean`] that
/// completes must keep the entry from being dropped. `None` removes the hook.
pub fn before_dropping_clean(f: Option<Hook>) {
    *BEFORE_DROPPING_CLEAN.write() = f;
}

/// Runs the hook, if set.
pub(crate) fn run_before_dropping_clean(offset: u64) {
    let hook = BEFORE_DROPPING_CLEAN.read().clone();
    if let Some(f) = hook {
        f(offset);
    }
}

/// Calls `f(offset)` where writeback has taken an entry out of the LRU and before it locks
/// the entry: the window in which a [`crate::Zswap::load_clean`] may mark it clean, which
/// writeback must see under the lock. `None` removes the hook.
pub fn before_writing_back(f: Option<Hook>) {
    *BEFORE_WRITING_BACK.write() = f;
}

/// Runs the hook, if set.
pub(crate) fn run_before_writing_back(offset: u64) {
    let hook = BEFORE_WRITING_BACK.read().clone();
    if let Some(f) = hook {
        f(offset);
    }
}

/// Calls `f(owner)` where the pool sets up a new zspage for an object of `owner` (the
/// store's offset), after its pages are counted and before its object is: the window in
/// which a pool at its limit counts pages but not their object, which a shrinker must wait
/// out rather than refuse a store. `None` removes the hook.
pub fn setting_up_zspage(f: Option<Hook>) {
    *SETTING_UP_ZSPAGE.write() = f;
}

/// Runs the hook, if set.
pub(crate) fn run_setting_up_zspage(owner: u64) {
    let hook = SETTING_UP_ZSPAGE.read().clone();
    if let Some(f) = hook {
        f(owner);
    }
}

/// Calls `f(pages)` where the arena's thread gives free pages back, after it took them out
/// of its lists and before its `MADV_DONTNEED`s: the window in which a recompression pass
/// that freed them must wait rather than return with them still resident. `None` removes
/// the hook.
pub fn while_trimming(f: Option<Hook>) {
    *WHILE_TRIMMING.write() = f;
}

/// Runs the hook, if set.
pub(crate) fn run_while_trimming(pages: u64) {
    let hook = WHILE_TRIMMING.read().clone();
    if let Some(f) = hook {
        f(pages);
    }
}
