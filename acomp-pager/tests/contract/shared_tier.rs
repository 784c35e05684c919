//! A shared tier (`Pager::builder`: "the tier may serve other users too"): each page of a
//! region reads back the bytes last written to it whoever else stores into the same tier,
//! another pager or the program itself, and their pages are left as they stored them.

use acomp_pager::{PAGE_SIZE, Pager, Region};

use crate::common::{self, Mem, describe, page};

const PAGES: usize = 512;

/// The pages of `mem` that do not read `page(p, generation)`: how many, and the first's
/// description.
fn wrong_pages(mem: &Mem, generation: u32) -> (usize, Option<String>) {
    let mut wrong = (0, None);
    for p in 0..mem.pages {
        let (got, want) = (mem.read(p), page(p, generation));
        if *got != want {
            wrong.0 += 1;
            wrong
                .1
                .get_or_insert_with(|| format!("page {p}: {}", describe(&got, &want)));
        }
    }
    wrong
}

/// A region of [`PAGES`] pages of `pager`, each written `page(p, generation)`, all paged out.
fn paged_out(pager: &Pager, generation: u32) -> (Region, Mem) {
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    for p in 0..PAGES {
        mem.write(p, &page(p, generation));
    }
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    (region, mem)
}

#[test]
fn two_pagers_over_one_tier_keep_their_own_pages() {
    let _w = common::watchdog("two pagers, one tier", 300);
    let tier = common::tier();
    let (Some(a), Some(b)) = (common::pager(tier.clone()), common::pager(tier.clone())) else {
        return;
    };
    let (_ra, ma) = paged_out(&a, 1);
    let (_rb, mb) = paged_out(&b, 2);
    let stored = tier.stats().stored_pages;
    assert_eq!(wrong_pages(&ma, 1), (0, None), "pager A's pages read back");
    assert_eq!(wrong_pages(&mb, 2), (0, None), "pager B's pages read back");
    assert_eq!(
        stored,
        2 * PAGES as u64,
        "the tier held both regions' pages"
    );
    for (name, pager) in [("A", &a), ("B", &b)] {
        let s = pager.stats();
        assert_eq!(
            (s.swap_outs, s.swap_ins, s.failed_faults),
            (PAGES as u64, PAGES as u64, 0),
            "pager {name}'s swap-outs, swap-ins, failed faults"
        );
    }
}

#[test]
fn a_program_storing_small_offsets_beside_a_pager_keeps_its_pages_and_the_pagers() {
    let _w = common::watchdog("direct stores beside a pager", 300);
    let tier = common::tier();
    let Some(pager) = common::pager(tier.clone()) else {
        return;
    };
    // The program's own pages at offsets 0..PAGES, half stored before the region's
    // page-out and half after, so that a collision shows whichever store came last.
    let direct = |p: usize| page(p, 3);
    for p in 0..PAGES / 2 {
        tier.store(p as u64, &direct(p)).unwrap();
    }
    let (_region, mem) = paged_out(&pager, 1);
    for p in PAGES / 2..PAGES {
        tier.store(p as u64, &direct(p)).unwrap();
    }
    assert_eq!(tier.stats().stored_pages, 2 * PAGES as u64);
    assert_eq!(
        wrong_pages(&mem, 1),
        (0, None),
        "the region's pages read back"
    );
    let mut wrong = Vec::new();
    for p in 0..PAGES {
        let mut got = [0u8; PAGE_SIZE];
        match tier.load(p as u64, &mut got) {
            Ok(_) if got == direct(p) => {}
            Ok(_) => wrong.push(format!("offset {p}: {}", describe(&got, &direct(p)))),
            Err(e) => wrong.push(format!("offset {p}: {e}")),
        }
    }
    assert_eq!(
        (wrong.len(), wrong.first()),
        (0, None),
        "the program's own pages load back"
    );
    let s = pager.stats();
    assert_eq!((s.swap_ins, s.failed_faults), (PAGES as u64, 0));
}
