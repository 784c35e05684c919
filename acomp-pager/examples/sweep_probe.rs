use acomp_pager::{PAGE_SIZE, Pager};
use std::sync::Arc;
use std::time::Instant;
fn main() {
    let pages = 65536usize;
    let around: usize = std::env::var("AROUND")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let signal = std::env::var("SIGNAL").is_ok();
    let keep = std::env::var("NOCLEAN").is_err();
    let tier = Arc::new(
        acomp_zswap::Zswap::builder(acomp::Acomp::new("lz4").unwrap())
            .max_pool_bytes(4 << 30)
            .build()
            .unwrap(),
    );
    let p = Pager::builder(tier.clone())
        .fault_around(around)
        .signal_faults(signal)
        .keep_clean_copies(keep)
        .build()
        .unwrap();
    let r = p.region(pages * PAGE_SIZE).unwrap();
    let bytes = std::fs::read("/work/main/target/release/deps/").unwrap_or_default();
    let _ = bytes;
    let mut x = 1u64;
    for i in 0..pages {
        let mut pg = [0u8; PAGE_SIZE];
        for (j, b) in pg.iter_mut().enumerate() {
            if j % 16 == 0 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
            }
            *b = b"abcdefghij klmno "[((x >> 33) as usize + j) % 17];
        }
        r.write_at(i * PAGE_SIZE, &pg).unwrap();
    }
    for round in 0..3 {
        r.page_out(0, r.len()).unwrap();
        let t = Instant::now();
        let mut s = 0u64;
        for i in 0..pages {
            s += unsafe { std::ptr::read_volatile(r.as_ptr().add(i * PAGE_SIZE)) } as u64;
        }
        let e = t.elapsed();
        let st = p.stats();
        println!(
            "round {round}: {:.2} us/page faults {} ra {} (sum {s})",
            e.as_nanos() as f64 / pages as f64 / 1000.0,
            st.faults,
            st.swap_readahead
        );
    }
}
