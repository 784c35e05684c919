//! The file of pages a bench over many distinct pages reads: `ACOMP_PAGES` (e.g. one the
//! zswap example writes with `--save-pages`), or the bench's own executable.

/// The path and bytes of `ACOMP_PAGES`, or of the running bench's executable.
///
/// # Panics
///
/// Where the file cannot be read.
pub fn read() -> (String, Vec<u8>) {
    let path = std::env::var("ACOMP_PAGES").unwrap_or_else(|_| {
        let exe = std::env::current_exe().expect("path of the running bench");
        exe.to_string_lossy().into_owned()
    });
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (path, bytes)
}

/// How many pages to take: `ACOMP_PAGES_MAX`, else `default`.
///
/// # Panics
///
/// Where `ACOMP_PAGES_MAX` is not a number.
pub fn max_pages(default: usize) -> usize {
    std::env::var("ACOMP_PAGES_MAX")
        .ok()
        .map(|v| v.parse().expect("ACOMP_PAGES_MAX: a number"))
        .unwrap_or(default)
}
