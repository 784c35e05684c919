//! The README's Rust snippets are whole programs a reader can paste: a `fn main()`, no hidden
//! lines, no crate but std and acomp. They also run, as doctests of this build (`cargo test
//! --doc`, `ReadmeDoctests` in `src/lib.rs`), which have every dev-dependency at hand: the
//! crates they name are checked here, against the `use` lines and paths of each snippet.

use std::path::Path;

/// The ```rust blocks of a Markdown text.
fn rust_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```rust") => current = Some(String::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(block), line) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// Roots of paths a snippet may name: the crates a reader of the README has, the path
/// keywords, and the primitive types (`u8::MAX`, `usize::try_from`).
const ALLOWED_ROOTS: &[&str] = &[
    "std", "core", "alloc", "acomp", "crate", "self", "super", "u8", "u16", "u32", "u64", "u128",
    "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "char", "str", "bool",
];

/// The lower-case identifiers that start a path in `code`, and the roots of its `use`
/// lines: the crates and modules its paths start from.
fn path_roots(code: &str) -> Vec<String> {
    let mut roots = Vec::new();
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while let Some(at) = code[i..].find("::") {
        let end = i + at;
        let mut start = end;
        while start > 0 && ident(bytes[start - 1]) {
            start -= 1;
        }
        // Not a root: a segment inside a path, a method call (`.collect::<T>()`), a
        // turbofish (`size_of::<T>`).
        let inside = (start >= 2 && &code[start - 2..start] == "::")
            || (start >= 1 && bytes[start - 1] == b'.')
            || bytes.get(end + 2) == Some(&b'<');
        let word = &code[start..end];
        if !word.is_empty() && !inside && word.starts_with(|c: char| c.is_ascii_lowercase()) {
            roots.push(word.to_owned());
        }
        i = end + 2;
    }
    for line in code.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("use ") {
            let root: String = rest.chars().take_while(|&c| ident(c as u8)).collect();
            roots.push(root);
        }
        if line.contains("extern crate") {
            roots.push(format!("extern crate in {line:?}"));
        }
    }
    roots
}

#[test]
fn readme_snippets_are_whole_programs_on_std_and_acomp() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let snippets = rust_blocks(&readme);
    assert!(
        snippets.len() >= 2,
        "the README's Rust snippets: {}",
        snippets.len()
    );
    for (i, s) in snippets.iter().enumerate() {
        assert!(
            !s.lines().any(|l| l.trim_start().starts_with("# ")),
            "snippet {i} has hidden lines"
        );
        assert!(
            s.contains("fn main()"),
            "snippet {i} is not a whole program"
        );
        for r in path_roots(s) {
            assert!(
                ALLOWED_ROOTS.contains(&r.as_str()),
                "snippet {i} names `{r}`, not a crate a reader of the README has"
            );
        }
    }
}

#[test]
fn path_roots_find_other_crates() {
    let code = "use std::io::IoSlice;\nuse rand::Rng;\nfn main() {\n    \
                let v = zstd_safe::compress_bound(4);\n    let m = u8::MAX;\n    \
                let x = acomp::Acomp::new(\"zstd\");\n    let s = std::mem::size_of::<u8>();\n    \
                let w: Vec<u8> = v.iter().copied().collect::<Vec<_>>();\n}\n";
    let mut roots = path_roots(code);
    roots.sort();
    roots.dedup();
    assert_eq!(roots, ["acomp", "rand", "std", "u8", "zstd_safe"]);
}
