//! The pages the tier's and the main job's tests store: the shared test cases (every file
//! under `../shared/testdata/cases`), or where that folder is absent (a plain clone) pages
//! of the test binary itself; then random pages, pages that compress to every size, and
//! same-filled ones. And [`units`], pages in runs that folio tests store as units.

use std::path::PathBuf;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::input::Input;
use crate::{PAGE_SIZE, Page};

/// `../shared/testdata/cases` beside the repository (or `ZSWAP_TEST_CASES`), or `None`
/// where the folder is absent (a plain clone): the tests then run on pages the repository
/// makes. Under `CI=true` its absence panics, naming it, so that a green CI has run on the
/// shared data.
pub fn dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/testdata/cases");
    let dir = std::env::var_os("ZSWAP_TEST_CASES").map_or(dir, PathBuf::from);
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is absent: under CI=true the zswap tests must run over the shared test data",
        dir.display()
    );
    eprintln!(
        "SKIPPED: {} is absent; the zswap tests run on pages of the test binary instead",
        dir.display()
    );
    None
}

/// At most this many pages of the test binary stand in for the shared cases.
const OWN_PAGES: usize = 1500;

/// Pages of every file under [`dir`] (the last of each zero-padded), or where it is absent
/// of the running test binary (machine code, tables and strings: pages that compress to many
/// sizes, so that objects straddle backing pages as the cases' do); then 64 random pages,
/// pages of random bytes then zeros (every 61st length), a zero page and a page of 0xAB.
///
/// # Panics
///
/// Where a file cannot be read, and as [`dir`].
pub fn pages() -> Vec<Box<Page>> {
    let mut pages = Vec::new();
    if let Some(dir) = dir() {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("the cases' folder")
            .map(|e| e.expect("a file of the cases").path())
            .collect();
        files.sort();
        for path in files {
            let input = Input::read(&path).unwrap_or_else(|e| panic!("{e}"));
            pages.extend((0..input.len()).map(|i| Box::new(*input.page(i))));
        }
    } else {
        let exe = std::env::current_exe().expect("the test binary's path");
        let input = Input::read(&exe).unwrap_or_else(|e| panic!("{e}"));
        pages.extend((0..input.len().min(OWN_PAGES)).map(|i| Box::new(*input.page(i))));
    }
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..64 {
        let mut page = Box::new([0u8; PAGE_SIZE]);
        rng.fill(&mut page[..]);
        pages.push(page);
    }
    // Pages that compress to every size: random bytes, then zeros.
    for random in (0..PAGE_SIZE).step_by(61) {
        let mut page = Box::new([0u8; PAGE_SIZE]);
        rng.fill(&mut page[..random]);
        pages.push(page);
    }
    pages.push(Box::new([0; PAGE_SIZE]));
    pages.push(Box::new([0xAB; PAGE_SIZE]));
    pages
}

/// `n` pages to store as units of up to 16 pages: lines of text with a random byte in each
/// page, a zero page now and then, an incompressible page now and then; 16 zero pages (all
/// same-filled) at 16..32 and 16 random pages (incompressible) at 32..48 where there is room.
pub fn units(n: usize) -> Vec<Page> {
    let mut rng = StdRng::seed_from_u64(11);
    (0..n)
        .map(|i| {
            let mut page = [0u8; PAGE_SIZE];
            match i {
                16..32 => {}
                32..48 => rng.fill(&mut page[..]),
                _ if i % 5 == 2 => {}
                _ if i % 7 == 3 => rng.fill(&mut page[..]),
                _ => {
                    let line = format!("object {} of kind {} at {:#x}; ", i % 3, i % 11, i * 64);
                    for (b, c) in page.iter_mut().zip(line.bytes().cycle()) {
                        *b = c;
                    }
                    page[rng.random_range(0..PAGE_SIZE)] = rng.random();
                }
            }
            page
        })
        .collect()
}
