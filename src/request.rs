//! [`Request`]: one compression or decompression request, the kernel's `struct acomp_req`,
//! for the batch calls.

use std::io::{IoSlice, IoSliceMut};

use crate::Error;
use crate::RequestPath;

/// One request of a batch ([`Acomp::compress_batch`](crate::Acomp::compress_batch),
/// [`Acomp::decompress_batch`](crate::Acomp::decompress_batch)): the counterpart of the
/// kernel's `struct acomp_req`, holding its source and destination fragments and, once
/// served, its outcome (`dlen`, or the error) and the path that served it.
///
/// `'r` is the request's borrow of the two fragment lists; `'a`, the destination buffers'
/// own.
///
/// ```
/// use std::io::{IoSlice, IoSliceMut};
/// use acomp::{Acomp, Request};
///
/// let tfm = Acomp::new("zstd")?;
/// let pages = [[1u8; 4096], [2u8; 4096]];
/// let mut frames = [[0u8; 4096], [0u8; 4096]];
/// let srcs = pages.each_ref().map(|p| [IoSlice::new(p)]);
/// let mut dsts = frames.each_mut().map(|f| [IoSliceMut::new(f)]);
/// let mut reqs: Vec<Request<'_, '_>> = srcs
///     .iter()
///     .zip(dsts.iter_mut())
///     .map(|(s, d)| Request::new(s, d))
///     .collect();
/// tfm.compress_batch(&mut reqs);
/// for r in &reqs {
///     assert!(matches!(r.outcome(), Some(Ok(n)) if *n < 100));
///     assert_eq!(r.path(), Some(acomp::RequestPath::OneShot));
/// }
/// # Ok::<(), acomp::Error>(())
/// ```
#[derive(Debug)]
pub struct Request<'r, 'a> {
    pub(crate) src: &'r [IoSlice<'r>],
    pub(crate) dst: &'r mut [IoSliceMut<'a>],
    outcome: Option<Result<usize, Error>>,
    path: Option<RequestPath>,
}

impl<'r, 'a> Request<'r, 'a> {
    /// A request from `src` (the kernel's `src` scatterlist, `slen` bytes in all) into `dst`
    /// (`dlen` bytes), not yet served.
    pub fn new(src: &'r [IoSlice<'r>], dst: &'r mut [IoSliceMut<'a>]) -> Self {
        Request {
            src,
            dst,
            outcome: None,
            path: None,
        }
    }

    /// `None` until the request is served; then what the single call ([`Acomp::compress`]
    /// or [`Acomp::decompress`]) would have returned: the bytes written at the front of
    /// the destination, or the error.
    ///
    /// [`Acomp::compress`]: crate::Acomp::compress
    /// [`Acomp::decompress`]: crate::Acomp::decompress
    pub fn outcome(&self) -> Option<&Result<usize, Error>> {
        self.outcome.as_ref()
    }

    /// The path that served a successful request; `None` before it is served or where it
    /// failed.
    pub fn path(&self) -> Option<RequestPath> {
        self.path
    }

    /// The destination fragments, to read the output from.
    pub fn dst(&self) -> &[IoSliceMut<'a>] {
        self.dst
    }

    pub(crate) fn finish(&mut self, outcome: Result<(usize, RequestPath), Error>) {
        self.path = outcome.as_ref().ok().map(|&(_, p)| p);
        self.outcome = Some(outcome.map(|(n, _)| n));
    }
}
