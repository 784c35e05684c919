//! The 4 KiB pages acomp's benches send: one of each kind a swap or cache layer meets.
//!
//! Every page is built the same way on every run (the text is a fixed page of acomp's
//! own sources as they stood at 0.1.0, kept in `data/text_4096.txt` so that it does not move
//! with the code; the random page is from a fixed seed), except the machine-code page,
//! which is read from the running bench's own executable and so follows its build.

use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

use crate::PAGE_SIZE as PAGE;

/// A page of acomp's own sources: real text (code, comments, docs).
const TEXT: &[u8; PAGE] = include_bytes!("../data/text_4096.txt");

/// One page of each kind, in this order: `zero`, `same-filled`, `text`, `code`,
/// `random`. The names are the ones criterion's ids and the tables use.
pub fn pages() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("zero", vec![0; PAGE]),
        ("same-filled", same_filled(0x0123_4567_89ab_cdef)),
        ("text", TEXT.to_vec()),
        ("code", machine_code()),
        ("random", random(4)),
    ]
}

/// A page of one repeated machine word: what zram calls a same-filled page.
fn same_filled(word: u64) -> Vec<u8> {
    word.to_ne_bytes().repeat(PAGE / 8)
}

/// Incompressible: bytes from a seeded generator.
fn random(seed: u64) -> Vec<u8> {
    let mut page = vec![0; PAGE];
    StdRng::seed_from_u64(seed).fill_bytes(&mut page);
    page
}

/// The page in the middle of the running executable's `.text` section.
///
/// # Panics
///
/// Where the executable cannot be read or is not a 64-bit little-endian ELF file with a
/// `.text` section of at least a page.
fn machine_code() -> Vec<u8> {
    let exe = std::env::current_exe().expect("path of the running bench");
    let elf = std::fs::read(&exe).expect("the running bench's executable");
    let (offset, size) = text_section(&elf).expect("a 64-bit ELF file with a .text section");
    assert!(size >= PAGE, ".text is shorter than a page");
    let start = offset + (size / 2 - size / 2 % PAGE).min(size - PAGE);
    elf[start..start + PAGE].to_vec()
}

/// A page of a live Python process's heap (`../shared/workloads/python_heap.py`, page 43597
/// of 87149 private anonymous pages, in the second half: not among the dictionary's samples),
/// of median size among 197 pages of that half at level 3 (690 bytes; 469 with the
/// dictionary).
pub fn heap() -> Vec<u8> {
    include_bytes!("../data/heap_4096.bin").to_vec()
}

/// A 64 KiB dictionary trained (`zstd --train --maxdict=65536`, zstd's fastCover trainer as
/// `Dictionary::train` runs it) on every 20th page of the first half of the same process's
/// pages, same-filled pages left out: 2137 pages.
pub const HEAP_DICT: &[u8] = include_bytes!("../data/heap_dict_65536.bin");

/// File offset and size of the `.text` section of a 64-bit little-endian ELF file.
fn text_section(elf: &[u8]) -> Option<(usize, usize)> {
    let u16_at = |at: usize| Some(u16::from_le_bytes(elf.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(elf.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| {
        let v = u64::from_le_bytes(elf.get(at..at + 8)?.try_into().ok()?);
        usize::try_from(v).ok()
    };
    // ELFCLASS64, ELFDATA2LSB.
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let shoff = u64_at(0x28)?;
    let shentsize = usize::from(u16_at(0x3a)?);
    let shnum = usize::from(u16_at(0x3c)?);
    let shstrndx = usize::from(u16_at(0x3e)?);
    // Section header fields: sh_name at 0, sh_offset at 24, sh_size at 32.
    let section = |i: usize| {
        let at = shoff + i * shentsize;
        Some((u32_at(at)? as usize, u64_at(at + 24)?, u64_at(at + 32)?))
    };
    let (_, names, _) = section(shstrndx)?;
    (0..shnum).find_map(|i| {
        let (name, offset, size) = section(i)?;
        let name = elf.get(names + name..)?;
        name.starts_with(b".text\0").then_some((offset, size))
    })
}
