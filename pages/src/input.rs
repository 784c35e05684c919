//! The pages of the workload, cut from a file, or from files every Linux system has.

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use crate::{PAGE_SIZE, Page};

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

/// Where the default run's pages come from: the system's programs, libraries and data,
/// which every Linux machine has (and a page cache holds).
pub const SYSTEM_DIRS: [&str; 3] = ["/usr/lib", "/usr/bin", "/usr/share"];

/// How many bytes of system files the default run stores: enough pages to pack the pool as
/// it is packed in use (a few hundred pages leave most zsmalloc-style size classes part
/// empty, and the pool larger than the pages).
pub const SYSTEM_BYTES: usize = 64 << 20;

/// The most the default run takes of one file, so that the sample spans many files.
pub const SYSTEM_FILE_BYTES: usize = 256 << 10;

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

    /// The pages of regular files picked at random (from `seed`) among those under `dirs`,
    /// until `budget` bytes: at most `file_max` bytes of each, each file's last page
    /// zero-padded, the files in path order, as a page cache holds them. Files that cannot
    /// be read are passed over; `path` names the folders and the number of files.
    ///
    /// # Errors
    ///
    /// [`InputError`] (for the first folder) where no file under `dirs` could be read.
    pub fn sample_files(
        dirs: &[&str],
        budget: usize,
        file_max: usize,
        seed: u64,
    ) -> Result<Input, InputError> {
        let mut files: Vec<(PathBuf, u64)> = dirs
            .iter()
            .flat_map(|dir| walkdir::WalkDir::new(dir).follow_links(false))
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .filter_map(|e| Some((e.path().to_owned(), e.metadata().ok()?.len())))
            .filter(|&(_, len)| len > 0)
            .collect();
        files.sort();
        files.shuffle(&mut StdRng::seed_from_u64(seed));
        let mut picked = Vec::new();
        let mut total = 0;
        for (path, len) in files {
            if total >= budget {
                break;
            }
            let take = (len as usize).min(file_max).min(budget - total);
            total += take.next_multiple_of(PAGE_SIZE);
            picked.push((path, take));
        }
        picked.sort();
        let (mut data, mut padding, mut read) = (Vec::with_capacity(total), 0, 0);
        for (path, take) in &picked {
            let Ok(file) = std::fs::File::open(path) else {
                continue;
            };
            let start = data.len();
            if file.take(*take as u64).read_to_end(&mut data).is_err() || data.len() == start {
                data.truncate(start);
                continue;
            }
            let pad = data.len().next_multiple_of(PAGE_SIZE) - data.len();
            data.resize(data.len() + pad, 0);
            padding += pad;
            read += 1;
        }
        if read == 0 {
            return Err(InputError {
                path: dirs.first().map_or_else(PathBuf::new, PathBuf::from),
                source: io::Error::new(io::ErrorKind::NotFound, "no readable file"),
            });
        }
        Ok(Input {
            path: format!("{read} files under {}", dirs.join(", ")).into(),
            data,
            padding,
        })
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
