//! Writeback (zswap's shrinker): the coldest pool entries to the device, in batches.

use std::io;
use std::sync::atomic::Ordering::Relaxed;

use super::{State, WRITEBACK_BATCH, Zswap, checksum};
use crate::stats::{dec, inc};
use crate::{PAGE_SIZE, Page};

impl Zswap {
    /// The shrinker on demand: writes back up to `max_pages` of the coldest pool entries to
    /// the device, in batches, and frees their objects. Clean copies
    /// ([`Zswap::load_clean`]) are never written back. Returns how many were written back:
    /// fewer when the pool runs out of entries.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::Unsupported`] without a device; the device's error where a batch
    /// fails (its pages stay in the pool; batches written before stay written).
    pub fn writeback(&self, max_pages: usize) -> io::Result<usize> {
        if self.device.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "writeback without a swap device",
            ));
        }
        let _one = self.shrinking.lock();
        let mut written = 0;
        while written < max_pages {
            let n = self.write_batch((max_pages - written).min(WRITEBACK_BATCH))?;
            if n == 0 {
                break;
            }
            written += n;
        }
        Ok(written)
    }

    /// Writes back one batch of up to `n` of the coldest entries; returns how many, 0 only
    /// where the LRU is empty or every entry in it is busy several times over.
    pub(super) fn write_batch(&self, n: usize) -> io::Result<usize> {
        for _ in 0..4 {
            match self.try_write_batch(n)? {
                (0, 0) => return Ok(0),
                (0, _) => continue,
                (written, _) => return Ok(written),
            }
        }
        Ok(0)
    }

    /// One try at a batch: (written, isolated).
    fn try_write_batch(&self, n: usize) -> io::Result<(usize, usize)> {
        let c = &self.counters;
        let dev = self.device.as_ref().expect("callers check for a device");
        let victims = self.lru.isolate(n);
        if victims.is_empty() {
            return Ok((0, 0));
        }
        // Entries busy with a load (hot) or a store go back for another round.
        let mut locked = Vec::with_capacity(victims.len());
        let mut pages: Vec<Box<Page>> = Vec::with_capacity(victims.len());
        for v in &victims {
            let Some(state) = v.state.try_write() else {
                self.lru.push(v);
                continue;
            };
            if v.clean.load(Relaxed) {
                // A clean copy is dropped at the budget, never written back.
                self.lru.push(v);
                continue;
            }
            if !matches!(*state, State::Pool { .. } | State::Folio { .. }) {
                continue;
            }
            let mut page = Box::new([0u8; PAGE_SIZE]);
            if self.read(&state, &mut page).is_err() {
                // A frame the pool cannot give back is left where it is (and counted).
                continue;
            }
            let key = self.next_key.fetch_add(1, Relaxed);
            locked.push((v, state, key, checksum(key, &page)));
            pages.push(page);
        }
        if locked.is_empty() {
            return Ok((0, victims.len()));
        }
        let batch: Vec<(u64, &Page)> = locked
            .iter()
            .zip(&pages)
            .map(|((_, _, key, _), page)| (*key, &**page))
            .collect();
        if let Err(e) = dev.write_pages(&batch) {
            c.device_write_fail.fetch_add(locked.len() as u64, Relaxed);
            for (v, _state, key, _) in &locked {
                let _ = dev.discard(*key);
                self.lru.push(v);
            }
            return Err(e);
        }
        let written = locked.len();
        for (_, mut state, key, sum) in locked {
            let old = std::mem::replace(&mut *state, State::Device { key, checksum: sum });
            dec(&c.stored_pages);
            match old {
                State::Pool {
                    handle,
                    length,
                    raw,
                    ..
                } => {
                    self.pool.free(handle);
                    if raw {
                        dec(&c.stored_incompressible_pages);
                    }
                    c.stored_bytes.fetch_sub(u64::from(length), Relaxed);
                }
                // The frame is freed once its last page leaves it.
                State::Folio { folio, .. } => self.leave_folio(&folio),
                _ => unreachable!("checked above, under the same lock"),
            }
            inc(&c.device_pages);
            inc(&c.written_back_pages);
        }
        Ok((written, victims.len()))
    }
}
