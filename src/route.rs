//! The one place a request's shape is decided: one fragment each side or any other cut,
//! decided once ([`route`]), and given to the algorithm as [`Fragments`]. Which kind of
//! request it is and which workspace serves it: `transform.rs` and `pool.rs`.

use std::io::{IoSlice, IoSliceMut};

use crate::{Error, RequestPath, Walk};

/// A request's source and destination as an algorithm is given them: one fragment each
/// side (the one-shot case, with no walk set up), or a walk over any other cut.
#[derive(Debug)]
pub enum Fragments<'r, 'w, 'a> {
    /// One fragment each side (fragments of length 0 left out), as two slices.
    One {
        /// The source.
        src: &'r [u8],
        /// The destination.
        dst: &'r mut [u8],
    },
    /// Any other cut: a walk over the fragments, at its start.
    Many(&'r mut Walk<'w, 'a>),
}

impl Fragments<'_, '_, '_> {
    /// The source's length in bytes (`slen`).
    #[inline(always)]
    pub fn slen(&self) -> usize {
        match self {
            Fragments::One { src, .. } => src.len(),
            Fragments::Many(walk) => walk.slen(),
        }
    }

    /// Runs `op` on a walk over the fragments (for [`One`](Fragments::One), a walk over the
    /// two slices); returns the bytes it produced and its path: for an algorithm's paths
    /// that need a walk whatever the shape.
    ///
    /// # Errors
    ///
    /// `op`'s.
    #[inline]
    pub fn walk(
        self,
        op: impl FnOnce(&mut Walk<'_, '_>) -> Result<RequestPath, Error>,
    ) -> Result<(usize, RequestPath), Error> {
        match self {
            Fragments::One { src, dst } => {
                let src = [IoSlice::new(src)];
                let mut dst = [IoSliceMut::new(dst)];
                let mut walk = Walk::new(&src, &mut dst);
                let path = op(&mut walk)?;
                Ok((walk.produced(), path))
            }
            Fragments::Many(walk) => {
                let path = op(walk)?;
                Ok((walk.produced(), path))
            }
        }
    }
}

/// Gives `serve` the request's shape: [`Fragments::One`] where each side is one fragment
/// (fragments of length 0 aside), else a walk over the fragments.
#[inline(always)]
pub(crate) fn route<R>(
    src: &[IoSlice<'_>],
    dst: &mut [IoSliceMut<'_>],
    serve: impl FnOnce(Fragments<'_, '_, '_>) -> R,
) -> R {
    if let ([s], [d]) = (src, &mut *dst) {
        return serve(Fragments::One { src: s, dst: d });
    }
    let mut walk = Walk::new(src, dst);
    if walk.is_one_shot() {
        let (src, dst) = walk.one_shot().expect("checked above");
        return serve(Fragments::One { src, dst });
    }
    serve(Fragments::Many(&mut walk))
}
