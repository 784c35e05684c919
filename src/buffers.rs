//! The calls for contiguous buffers and `Vec`s: the common case of one buffer each side,
//! without building fragment lists.

use std::io::{IoSlice, IoSliceMut};

use crate::{Acomp, Error};

impl Acomp {
    /// [`compress`](Acomp::compress) from one contiguous buffer into another: the one-shot
    /// path, at the cost of the scatter-gather call. Returns the frame's size; the frame is
    /// `dst[..n]`.
    ///
    /// ```
    /// let tfm = acomp::Acomp::new("zstd")?;
    /// let page = [42u8; 4096];
    /// let mut frame = [0u8; 4096];
    /// let n = tfm.compress_to_buffer(&page, &mut frame)?;
    /// let mut back = [0u8; 4096];
    /// assert_eq!(tfm.decompress_to_buffer(&frame[..n], &mut back)?, 4096);
    /// assert_eq!(back, page);
    /// # Ok::<(), acomp::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`compress`](Acomp::compress).
    #[inline]
    pub fn compress_to_buffer(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
        self.compress(&[IoSlice::new(src)], &mut [IoSliceMut::new(dst)])
    }

    /// [`decompress`](Acomp::decompress) from one contiguous buffer into another: the
    /// one-shot path where the frame allows it, at the cost of the scatter-gather call.
    /// Returns the bytes written at the front of `dst`.
    ///
    /// # Errors
    ///
    /// As [`decompress`](Acomp::decompress).
    #[inline]
    pub fn decompress_to_buffer(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
        self.decompress(&[IoSlice::new(src)], &mut [IoSliceMut::new(dst)])
    }

    /// Compresses `src` and appends the frame to `dst`, growing it by at most
    /// [`compress_bound`](Acomp::compress_bound)`(src.len())` bytes of capacity. Returns the
    /// frame's size. The room is zeroed before compression writes into it (a `memset` of
    /// the bound), so a reused `Vec` costs that over [`compress_to_buffer`](Acomp::compress_to_buffer).
    ///
    /// ```
    /// let tfm = acomp::Acomp::new("zstd")?;
    /// let mut frame = Vec::new();
    /// tfm.compress_to_vec(b"hello, hello, hello", &mut frame)?;
    /// let mut back = Vec::new();
    /// tfm.decompress_to_vec(&frame, &mut back, 1 << 20)?;
    /// assert_eq!(back, b"hello, hello, hello");
    /// # Ok::<(), acomp::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`compress`](Acomp::compress): lz4's request limit (`EINVAL`) included, refused
    /// before any room is reserved. [`Error::NoMemory`] (`ENOMEM`) where the room cannot be
    /// had. `dst` is as it was after any error.
    pub fn compress_to_vec(&self, src: &[u8], dst: &mut Vec<u8>) -> Result<usize, Error> {
        let start = dst.len();
        let room = self.compress_bound(src.len());
        if room == usize::MAX {
            // No destination takes it: the transform says why.
            return self.compress_to_buffer(src, &mut []);
        }
        let res = grow(dst, room).and_then(|out| self.compress_to_buffer(src, out));
        dst.truncate(start + *res.as_ref().unwrap_or(&0));
        res
    }

    /// Decompresses `src` (one or more frames) and appends the output to `dst`, growing it
    /// by at most `max` bytes. The room is the content size the first frame declares where
    /// it does (and that is within `max`), else a guess of four times the source, at least
    /// 4 KiB (within `max`); it is zeroed before decompression writes into it. Where the
    /// output needs more (no declared size, or several frames), `ENOSPC` tells the exact
    /// size and the source is decoded a second time into that.
    ///
    /// # Errors
    ///
    /// As [`decompress`](Acomp::decompress), where [`Error::NoSpace`] means the output
    /// needs more than `max` bytes (`capacity` is `max`); [`Error::NoMemory`] where the
    /// room cannot be had. `dst` is as it was after any error.
    pub fn decompress_to_vec(
        &self,
        src: &[u8],
        dst: &mut Vec<u8>,
        max: usize,
    ) -> Result<usize, Error> {
        let start = dst.len();
        let declared = self
            .content_size(&[IoSlice::new(src)])
            .ok()
            .flatten()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n <= max);
        let guess = src.len().saturating_mul(4).max(4096);
        let mut room = declared.unwrap_or(guess.min(max));
        let res = loop {
            let res = grow(dst, room).and_then(|out| self.decompress_to_buffer(src, out));
            match res {
                Err(Error::NoSpace {
                    needed: Some(n), ..
                }) if n > room as u64 && n <= max as u64 => {
                    dst.truncate(start);
                    room = n as usize;
                }
                Err(Error::NoSpace { needed, .. }) => {
                    break Err(Error::NoSpace {
                        needed,
                        capacity: max,
                    });
                }
                res => break res,
            }
        };
        dst.truncate(start + *res.as_ref().unwrap_or(&0));
        res
    }
}

/// Extends `v` by `n` zeroed bytes and returns them; `v` is unchanged where the memory
/// cannot be had.
fn grow(v: &mut Vec<u8>, n: usize) -> Result<&mut [u8], Error> {
    v.try_reserve(n).map_err(|_| Error::NoMemory)?;
    let start = v.len();
    v.resize(start + n, 0);
    Ok(&mut v[start..])
}
