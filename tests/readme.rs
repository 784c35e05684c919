//! Every Rust snippet of the README builds and runs, copied unchanged into a new crate that
//! depends on acomp by path: no hidden lines, no dependency the reader does not have.

use std::path::{Path, PathBuf};
use std::process::Command;

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

#[test]
fn readme_snippets_build_and_run_in_a_new_crate() {
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
    }

    let dir = root.join("target/readme-snippets");
    let bin = dir.join("src/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let manifest = format!(
        "[package]\nname = \"readme-snippets\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\nacomp = {{ path = {:?} }}\n\n\
         [profile.dev.package.zstd-sys]\nopt-level = 3\n\n[workspace]\n",
        root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // The same versions as acomp's own build, so that nothing new is fetched.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    for (i, s) in snippets.iter().enumerate() {
        std::fs::write(bin.join(format!("snippet_{i}.rs")), s).unwrap();
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target: PathBuf = dir.join("target");
    let build = Command::new(&cargo)
        .args(["build", "--offline", "--bins", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .expect("cargo runs");
    assert!(
        build.success(),
        "the README snippets do not build in a new crate"
    );
    for i in 0..snippets.len() {
        let out = Command::new(target.join(format!("debug/snippet_{i}")))
            .output()
            .expect("the snippet runs");
        assert!(
            out.status.success(),
            "snippet {i} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
