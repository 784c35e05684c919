//! The pages of the workload, cut from a file.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::pool::PAGE_SIZE;
use crate::zswap::Page;

/// A file cut into pages; its last page zero-padded where the file is not whole pages.
#[derive(Debug)]
pub struct Input {
    /// Where the pages come from.
    pub path: PathBuf,
    /// The file's bytes, then the padding: a whole number of pages.
    data: Vec<u8>,
    /// Zero bytes added to fill the last page.
    pub padding: usize,
}

/// A file that could not be read, with its path.
#[derive(Debug)]
pub struct InputError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: io::Error,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot read {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl Input {
    /// Reads the whole file (memory images and core dumps included: they are what a swap
    /// cache holds) and pads it to whole pages.
    ///
    /// # Errors
    ///
    /// [`InputError`] where the file is missing, unreadable or a directory.
    pub fn read(path: &Path) -> Result<Input, InputError> {
        let err = |source| InputError {
            path: path.to_owned(),
            source,
        };
        if path.is_dir() {
            return Err(err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory",
            )));
        }
        std::fs::read(path)
            .map(|data| Input::from_bytes(path.to_owned(), data))
            .map_err(err)
    }

    /// Pages from bytes already read, zero-padding the last page.
    pub fn from_bytes(path: PathBuf, mut data: Vec<u8>) -> Input {
        let padding = data.len().next_multiple_of(PAGE_SIZE) - data.len();
        data.resize(data.len() + padding, 0);
        Input {
            path,
            data,
            padding,
        }
    }

    /// Bytes of the file, without the padding.
    pub fn file_len(&self) -> usize {
        self.data.len() - self.padding
    }

    /// Number of pages.
    pub fn len(&self) -> usize {
        self.data.len() / PAGE_SIZE
    }

    /// Whether the file is empty: there is nothing to store.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Pages `first..first + count`, contiguous.
    ///
    /// # Panics
    ///
    /// If they run past the last page.
    pub fn pages(&self, first: usize, count: usize) -> &[u8] {
        &self.data[first * PAGE_SIZE..(first + count) * PAGE_SIZE]
    }

    /// Page `i`.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    pub fn page(&self, i: usize) -> &Page {
        self.data[i * PAGE_SIZE..][..PAGE_SIZE]
            .try_into()
            .expect("a page")
    }
}
