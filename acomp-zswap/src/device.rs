//! Where cold pages go: the [`SwapDevice`] trait and [`SwapFile`], a file of page slots.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use parking_lot::Mutex;

use crate::sys;
use crate::{PAGE_SIZE, Page};

/// A store of whole pages by key: the swap device behind the tier, where the shrinker
/// writes the coldest pages (zswap's writeback to the backing swap device).
///
/// The key the tier passes is its own: unique for each written-back copy of a page (a
/// generation number), so that a slot reused by the device is never read back as another
/// page's. Keys are sparse and may be any `u64`. The tier checks every page it reads back
/// against a checksum kept in memory; a device need not check its own.
///
/// The methods take `&self` and may be called from several threads at once, for different
/// keys: a device does its own locking.
pub trait SwapDevice: Send + Sync {
    /// Writes `page` under `key`, replacing what the key held.
    ///
    /// # Errors
    ///
    /// Any I/O error: the tier keeps the page in memory and counts the failure.
    fn write_page(&self, key: u64, page: &Page) -> io::Result<()>;

    /// Reads the page last written under `key` into `page`.
    ///
    /// # Errors
    ///
    /// Any I/O error: the tier's load fails with [`crate::LoadError::Io`] and keeps the
    /// entry, so that the same load may succeed later.
    fn read_page(&self, key: u64, page: &mut Page) -> io::Result<()>;

    /// Forgets `key`: its slot may be reused.
    ///
    /// # Errors
    ///
    /// Any I/O error: the tier has forgotten the page already and counts the failure.
    fn discard(&self, key: u64) -> io::Result<()>;

    /// Writes several pages, as the shrinker does when it writes back a batch. The default
    /// calls [`SwapDevice::write_page`] for each; a device that can write a batch in fewer
    /// operations overrides it ([`SwapFile`] does).
    ///
    /// # Errors
    ///
    /// The first I/O error: the tier then takes none of the batch as written and discards
    /// every key of it.
    fn write_pages(&self, batch: &[(u64, &Page)]) -> io::Result<()> {
        batch
            .iter()
            .try_for_each(|&(key, page)| self.write_page(key, page))
    }
}

/// The checksum of a written-back page: CRC-32 of its key and bytes, so that a page read
/// from another key's slot does not match either.
pub(crate) fn checksum(key: u64, page: &Page) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&key.to_le_bytes());
    h.update(page);
    h.finalize()
}

impl<D: SwapDevice + ?Sized> SwapDevice for std::sync::Arc<D> {
    fn write_page(&self, key: u64, page: &Page) -> io::Result<()> {
        (**self).write_page(key, page)
    }
    fn read_page(&self, key: u64, page: &mut Page) -> io::Result<()> {
        (**self).read_page(key, page)
    }
    fn discard(&self, key: u64) -> io::Result<()> {
        (**self).discard(key)
    }
    fn write_pages(&self, batch: &[(u64, &Page)]) -> io::Result<()> {
        (**self).write_pages(batch)
    }
}

/// Which slot of the file holds each key, and which slots are free (the slab's table of
/// entries is `slab::Slots`).
#[derive(Default)]
struct FileSlots {
    by_key: HashMap<u64, u64>,
    free: Vec<u64>,
    /// Slots ever used: the file's length in pages.
    next: u64,
}

impl FileSlots {
    /// A slot for `key`: its own if it has one, else a free one, else a new one at the end.
    fn slot(&mut self, key: u64) -> u64 {
        if let Some(&s) = self.by_key.get(&key) {
            return s;
        }
        let s = self.free.pop().unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        });
        self.by_key.insert(key, s);
        s
    }
}

/// A swap file: page slots in a file, written and read with positional I/O (`pwrite`,
/// `pread`; `pwritev` for a batch of neighbouring slots), so that threads never share a
/// file position. Slots are handed out as keys arrive and reused once discarded; a
/// discarded slot's blocks are given back to the file system (`FALLOC_FL_PUNCH_HOLE`,
/// where the file system supports it). `Send + Sync`.
pub struct SwapFile {
    file: File,
    slots: Mutex<FileSlots>,
}

impl std::fmt::Debug for SwapFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let slots = self.slots.lock();
        f.debug_struct("SwapFile")
            .field("pages", &slots.by_key.len())
            .field("slots", &slots.next)
            .finish_non_exhaustive()
    }
}

impl SwapFile {
    /// Creates (or truncates) the file at `path`.
    ///
    /// # Errors
    ///
    /// The error of opening the file for reading and writing.
    pub fn create(path: impl AsRef<Path>) -> io::Result<SwapFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(SwapFile {
            file,
            slots: Mutex::default(),
        })
    }

    /// Pages held now.
    pub fn pages(&self) -> usize {
        self.slots.lock().by_key.len()
    }

    /// Slots the file has used, held or free: its length in pages.
    pub fn slots(&self) -> u64 {
        self.slots.lock().next
    }

    fn pos(slot: u64) -> u64 {
        slot * PAGE_SIZE as u64
    }

    /// `pwritev` of neighbouring slots from `first`, finished page by page if short.
    fn write_run(&self, first: u64, pages: &[&Page]) -> io::Result<()> {
        let mut done = match sys::pwritev_pages(&self.file, pages, Self::pos(first)) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => return Err(e),
        };
        // A short write: the rest page by page (write_all_at retries what is left).
        let total = pages.len() * PAGE_SIZE;
        while done < total {
            let (i, at) = (done / PAGE_SIZE, done % PAGE_SIZE);
            self.file
                .write_all_at(&pages[i][at..], Self::pos(first + i as u64) + at as u64)?;
            done += PAGE_SIZE - at;
        }
        Ok(())
    }
}

impl SwapDevice for SwapFile {
    fn write_page(&self, key: u64, page: &Page) -> io::Result<()> {
        let slot = self.slots.lock().slot(key);
        self.file.write_all_at(page, Self::pos(slot))
    }

    fn read_page(&self, key: u64, page: &mut Page) -> io::Result<()> {
        let slot = self.slots.lock().by_key.get(&key).copied();
        let slot = slot.ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("no page under key {key}"))
        })?;
        self.file.read_exact_at(page, Self::pos(slot))
    }

    fn discard(&self, key: u64) -> io::Result<()> {
        let Some(slot) = self.slots.lock().by_key.remove(&key) else {
            return Ok(());
        };
        // The hole is punched before the slot is free, so that it cannot punch a page
        // written there after.
        let err = sys::punch_hole(&self.file, Self::pos(slot), PAGE_SIZE as u64).err();
        self.slots.lock().free.push(slot);
        match err {
            // A file system without hole punching keeps the blocks; the slot is reused.
            Some(e) if e.raw_os_error() != Some(libc::EOPNOTSUPP) => Err(e),
            _ => Ok(()),
        }
    }

    fn write_pages(&self, batch: &[(u64, &Page)]) -> io::Result<()> {
        let mut placed: Vec<(u64, &Page)> = {
            let mut slots = self.slots.lock();
            batch.iter().map(|&(k, p)| (slots.slot(k), p)).collect()
        };
        placed.sort_unstable_by_key(|&(s, _)| s);
        let mut i = 0;
        while i < placed.len() {
            let mut j = i + 1;
            while j < placed.len() && placed[j].0 == placed[j - 1].0 + 1 && j - i < 1024 {
                j += 1;
            }
            let pages: Vec<&Page> = placed[i..j].iter().map(|&(_, p)| p).collect();
            self.write_run(placed[i].0, &pages)?;
            i = j;
        }
        Ok(())
    }
}
