//! The `heap` group: the live Python heap stored with no budget and under a quarter of its
//! compressed size with a `SwapFile`, then loaded in a random order (the crate's bench docs,
//! `main.rs`).

use super::*;

/// The Python heap's first `max` pages, or why not.
fn heap_pages(max: usize) -> Result<Vec<Box<Page>>, String> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/workloads/python_heap.py");
    if !script.is_file() {
        return Err(format!("{} is absent", script.display()));
    }
    let mut child = Command::new("python3")
        .arg(&script)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("python3: {e}"))?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let pid = child.id() as i32;
    let res = (|| {
        if !line.starts_with("ready") {
            return Err(format!("the workload said {line:?}"));
        }
        let maps = snapshot::read_maps(pid).map_err(|e| e.to_string())?;
        let snap = snapshot::read_mappings(pid, &maps, None).map_err(|e| e.to_string())?;
        Ok(snap
            .data
            .chunks_exact(PAGE_SIZE)
            .take(max)
            .map(|c| Box::new(<Page>::try_from(c).expect("a page")))
            .collect())
    })();
    let _ = child.kill();
    let _ = child.wait();
    res
}

fn swap_path(run: usize) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tier-bench-{}-{run}.swap", std::process::id()))
}

fn budgeted(budget: u64, run: usize) -> Zswap {
    Zswap::builder(lz4())
        .max_pool_bytes(budget)
        .device(SwapFile::create(swap_path(run)).expect("a swap file"))
        .build()
        .expect("a tier")
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0
}

pub(crate) fn heap(c: &mut Criterion) {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("heap: SKIPPED outside `cargo bench` (it takes a minute)");
        return;
    }
    let max = std::env::var("ACOMP_TIER_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16384);
    let pages = match heap_pages(max) {
        Ok(p) => p,
        Err(why) => {
            eprintln!("heap: SKIPPED: {why}");
            return;
        }
    };
    let z = unbudgeted(lz4());
    for (i, p) in pages.iter().enumerate() {
        z.store(i as u64, p).expect("no budget");
    }
    let compressed = z.stats().pool_total_size;
    drop(z);
    let budget = compressed / 4;
    eprintln!(
        "heap: {} pages ({} MiB), pool {:.1} MiB unbudgeted, budget {:.1} MiB",
        pages.len(),
        (pages.len() * PAGE_SIZE) >> 20,
        compressed as f64 / (1 << 20) as f64,
        budget as f64 / (1 << 20) as f64
    );
    let mut g = c.benchmark_group("heap");
    g.throughput(Throughput::Elements(pages.len() as u64));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    // acomp's own call on the same pages into one buffer: what a store costs without the
    // tier (the pool's allocation and copy, the entry, the LRU and the map).
    let tfm = lz4();
    let mut dst = vec![0u8; PAGE_SIZE];
    g.bench_function("acomp/compress", |b| {
        b.iter(|| compress_each(&tfm, &pages, &mut dst))
    });
    g.bench_function("store/unbudgeted", |b| {
        b.iter_batched(
            || unbudgeted(lz4()),
            |z| {
                for (i, p) in pages.iter().enumerate() {
                    z.store(i as u64, p).expect("no budget");
                }
                z
            },
            BatchSize::PerIteration,
        )
    });
    let mut run = 0;
    g.bench_function("store/quarter-budget-swapfile", |b| {
        b.iter_batched(
            || {
                run += 1;
                let _ = std::fs::remove_file(swap_path(run - 1));
                budgeted(budget, run)
            },
            |z| {
                for (i, p) in pages.iter().enumerate() {
                    z.store(i as u64, p).expect("a device takes the cold pages");
                }
                z
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    let _ = std::fs::remove_file(swap_path(run));

    // Loads by source, from one budgeted run, in a random order.
    let z = budgeted(budget, usize::MAX);
    let t = Instant::now();
    for (i, p) in pages.iter().enumerate() {
        z.store(i as u64, p).expect("a device takes the cold pages");
    }
    let store_s = t.elapsed().as_secs_f64();
    let mut order: Vec<usize> = (0..pages.len()).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let (mut memory, mut device) = (Vec::new(), Vec::new());
    let mut out = [0u8; PAGE_SIZE];
    for &i in &order {
        let t = Instant::now();
        let kind = z.load(i as u64, &mut out).expect("stored");
        let ns = t.elapsed().as_nanos() as u64;
        assert!(out == *pages[i], "page {i} came back changed");
        match kind {
            LoadKind::Device => device.push(ns),
            _ => memory.push(ns),
        }
    }
    memory.sort_unstable();
    device.sort_unstable();
    let s = z.stats();
    eprintln!(
        "heap, quarter budget: stored in {store_s:.2} s; written back {} pages ({} batches of up to {}), pool {:.1} of {:.1} MiB; \
         loads from memory {} (p50 {:.1} us, p99 {:.1} us), from the device {} (p50 {:.1} us, p99 {:.1} us)",
        s.written_back_pages,
        s.written_back_pages
            .div_ceil(acomp_zswap::WRITEBACK_BATCH as u64),
        acomp_zswap::WRITEBACK_BATCH,
        s.pool_total_size as f64 / (1 << 20) as f64,
        s.max_pool_size as f64 / (1 << 20) as f64,
        memory.len(),
        percentile(&memory, 0.5),
        percentile(&memory, 0.99),
        device.len(),
        percentile(&device, 0.5),
        percentile(&device, 0.99),
    );
    drop(z);
    let _ = std::fs::remove_file(swap_path(usize::MAX));
}
