//! Pages cut from a file, and the default run's sample of the system's files.

use acomp_pages::PAGE_SIZE;
use acomp_pages::input::Input;

#[test]
fn input_pads_the_last_page() {
    let input = Input::from_bytes("odd".into(), vec![7; PAGE_SIZE + 10]);
    assert_eq!(
        (input.len(), input.padding, input.file_len()),
        (2, PAGE_SIZE - 10, PAGE_SIZE + 10)
    );
    assert!(input.page(1)[..10].iter().all(|&b| b == 7));
    assert!(input.page(1)[10..].iter().all(|&b| b == 0));
    let empty = Input::from_bytes("empty".into(), vec![]);
    assert!(empty.is_empty());
    assert_eq!(empty.len(), 0);
    let missing = Input::read("/nonexistent/zswap-input".as_ref()).unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/zswap-input"),
        "{missing}"
    );
    assert!(Input::read(env!("CARGO_MANIFEST_DIR").as_ref()).is_err());
}

/// The default input: files picked among those under the folders, each padded to whole
/// pages, at most `file_max` of each, up to the budget; an error where no file is there.
#[test]
fn sample_files_pads_each_file_and_keeps_to_the_budget() {
    let dir = std::env::temp_dir().join(format!("acomp-zswap-sample-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a"), vec![b'a'; 5000]).unwrap();
    std::fs::write(dir.join("sub/b"), vec![b'b'; 10]).unwrap();
    std::fs::write(dir.join("empty"), b"").unwrap();
    let d = dir.to_str().unwrap();

    let all = Input::sample_files(&[d], 1 << 20, 1 << 20, 1).unwrap();
    assert_eq!(all.len(), 3, "2 pages of a, 1 of b");
    assert_eq!(all.padding, (8192 - 5000) + (4096 - 10));
    assert_eq!(all.path.to_str().unwrap(), format!("2 files under {d}"));
    assert_eq!(&all.page(0)[..], &[b'a'; 4096][..]);
    assert_eq!(&all.page(1)[..904], &[b'a'; 904][..]);
    assert!(all.page(1)[904..].iter().all(|&b| b == 0));
    assert_eq!(&all.page(2)[..10], b"bbbbbbbbbb");

    // At most 100 bytes of each file: a page each.
    let capped = Input::sample_files(&[d], 1 << 20, 100, 1).unwrap();
    assert_eq!((capped.len(), capped.padding), (2, 2 * 4096 - 100 - 10));
    // A budget of one page: one file, the first picked.
    let one = Input::sample_files(&[d], 4096, 1 << 20, 1).unwrap();
    assert_eq!(one.len(), 1);

    let none = Input::sample_files(&[dir.join("missing").to_str().unwrap()], 4096, 4096, 1);
    assert!(none.is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
