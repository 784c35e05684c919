//! The page of a live entry, under its lock, whatever holds it: a frame in the pool
//! decompressed straight out of the pool's fragments (two where the object straddles
//! backing pages that are not neighbours in one chunk), through the transform that wrote
//! it; a page kept as it is, copied; a fill; a page of a folio's or a unit's frame
//! (`read/frame.rs`); or a page on the device, read and checked against its checksum.
//! Loads, takes, writeback and recompression all read through here.

use std::io::IoSliceMut;

use crate::device::checksum;
use crate::filled::fill_word;
use crate::outcome::{LoadError, LoadKind};
use crate::pool;
use crate::slab::{AS_IS, State};
use crate::stats::inc;
use crate::tier::Zswap;
use crate::{PAGE_SIZE, Page};

mod frame;

impl Zswap {
    /// The page of a live entry, under its lock.
    pub(crate) fn read(&self, state: &State, page: &mut Page) -> Result<LoadKind, LoadError> {
        let c = &self.counters;
        match state {
            State::Dead => unreachable!("callers look dead entries up again"),
            State::Filled(word) => {
                fill_word(page, *word);
                Ok(LoadKind::Filled)
            }
            State::Pool {
                handle,
                length: AS_IS,
                ..
            } => {
                self.pool
                    .read_sg(handle, PAGE_SIZE, |frags| pool::copy_frags(frags, page));
                Ok(LoadKind::Incompressible)
            }
            State::Pool {
                handle,
                length,
                codec,
                ..
            } => {
                let tfm = self.transform(*codec);
                let res = self.pool.read_sg(handle, *length as usize, |src| {
                    tfm.decompress(src, &mut [IoSliceMut::new(page)])
                });
                match res {
                    Ok(PAGE_SIZE) => Ok(LoadKind::Decompressed),
                    Ok(n) => Err(LoadError::WrongLength(n)),
                    Err(e) => Err(LoadError::Decompress(e)),
                }
                .inspect_err(|_| inc(&c.decompress_fail))
            }
            State::Folio { folio, index } => self.read_frame_page(folio, *index as usize, page),
            State::Device {
                key,
                checksum: expected,
            } => {
                let dev = self.device.as_ref().expect("written back to a device");
                if let Err(e) = dev.read_page(*key, page) {
                    inc(&c.device_read_fail);
                    return Err(LoadError::Io(e));
                }
                let found = checksum(*key, page);
                if found != *expected {
                    inc(&c.device_corrupt);
                    return Err(LoadError::Corrupt {
                        key: *key,
                        expected: *expected,
                        found,
                    });
                }
                inc(&c.device_loads);
                Ok(LoadKind::Device)
            }
        }
    }
}
