//! zstd: the first algorithm, after the kernel's `crypto/zstd.c`.
//!
//! One concept per file: [`ZstdParams`] (`params.rs`), the workspace's lazy contexts
//! (`context.rs`), zstd's errors in acomp's words (`errors.rs`), the frame format as acomp
//! reads it (`frame.rs`, and the stream loop's cursor in a frame, `frame/cursor.rs`),
//! compression (`compress.rs`), decompression: one-shot (`one_shot.rs`, `one_sequence.rs`),
//! the stream loop for whole requests and range reads (`decompress.rs`), what it checks
//! before it opens a frame (`open.rs`), where its output goes (`sink.rs`); dictionaries
//! (`dictionary.rs`); zstd's seekable format (`seekable/`: the seek table, and range reads
//! that decode only the frames they touch). This file holds the [`Algorithm`] impl and the workspace.
//!
//! libzstd's one-shot and streaming calls, and its streaming decoder fed whole or in pieces,
//! do not always agree; acomp makes every path and every cut give the same outcome. The
//! table of each case, what acomp does and where, has one home: ARCHITECTURE.md, "Where
//! libzstd's paths disagree".

mod compress;
mod context;
mod decompress;
pub(crate) mod dictionary;
mod errors;
mod frame;
mod one_sequence;
mod one_shot;
mod open;
pub(crate) mod params;
pub(crate) mod seekable;
mod sink;

use std::io::IoSlice;
use std::sync::Arc;

use zstd_safe::ResetDirective;

pub(crate) use self::dictionary::Digested;
pub(crate) use self::errors::zstd_error;
use self::params::ZstdParams;
use super::{Algorithm, Fragments, grow_buffer};
use crate::Dictionary;
use crate::RequestPath;
use crate::{Error, SeekTable, Segment, Walk, probe};

/// Size of a workspace's scratch buffer: one page.
const SCRATCH_BYTES: usize = 4096;

/// The zstd algorithm with fixed parameters.
#[derive(Debug, Clone)]
pub struct Zstd {
    params: ZstdParams,
    /// The dictionaries, digested once; every workspace's contexts reference them.
    dicts: Option<Arc<Digested>>,
}

impl Zstd {
    /// zstd with these parameters.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] where a parameter is out of range or two different
    /// dictionaries have the same ID; [`Error::NoMemory`] where a dictionary cannot be
    /// digested.
    pub fn new(params: ZstdParams) -> Result<Self, Error> {
        params.validate()?;
        let dicts = Digested::new(&params)?;
        Ok(Zstd { params, dicts })
    }

    /// The parameters.
    #[cfg_attr(not(feature = "unstable-algorithm"), allow(dead_code))] // for algorithm writers
    pub fn params(&self) -> &ZstdParams {
        &self.params
    }

    /// Early rejection, where it is on: [`Error::Incompressible`] for a source the probe
    /// finds incompressible, into a destination no larger than it.
    #[inline]
    fn reject(&self, req: &Fragments<'_, '_, '_>) -> Result<(), Error> {
        if !self.params.early_rejection {
            return Ok(());
        }
        let one;
        let (src, slen, dlen) = match req {
            Fragments::One { src, dst } => {
                one = [IoSlice::new(src)];
                (&one[..], src.len(), dst.len())
            }
            Fragments::Many(walk) => (walk.src_fragments(), walk.slen(), walk.dlen()),
        };
        if dlen <= slen && probe::incompressible(src, slen) {
            return Err(Error::Incompressible { capacity: dlen });
        }
        Ok(())
    }
}

/// A zstd workspace: a persistent CCtx and DCtx, each created on first use with the
/// transform's parameters set once (and referencing the transform's digested dictionaries,
/// never a copy), a one-page scratch buffer, and the frame buffer of the one-shot
/// compression.
pub struct ZstdWorkspace {
    cctx: Option<context::ZstdCCtx>,
    dctx: Option<context::ZstdDCtx>,
    /// Where output goes that has no destination: the part of a range read before or
    /// between segments, and output past a full destination while the rest is checked.
    scratch: Box<[u8]>,
    /// Where a one-shot compression into a destination smaller than `ZSTD_compressBound`
    /// writes its frame; grown on first need, up to the bound of one block.
    frame: Vec<u8>,
}

impl std::fmt::Debug for ZstdWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZstdWorkspace")
            .field("cctx", &self.cctx.is_some())
            .field("dctx", &self.dctx.is_some())
            .finish()
    }
}

impl Algorithm for Zstd {
    type Workspace = ZstdWorkspace;

    fn name(&self) -> &'static str {
        "zstd"
    }

    fn new_workspace(&self) -> Result<ZstdWorkspace, Error> {
        let mut scratch = Vec::new();
        grow_buffer(&mut scratch, SCRATCH_BYTES)?;
        Ok(ZstdWorkspace {
            cctx: None,
            dctx: None,
            scratch: scratch.into_boxed_slice(),
            frame: Vec::new(),
        })
    }

    fn compress(
        &self,
        ws: &mut ZstdWorkspace,
        req: Fragments<'_, '_, '_>,
    ) -> Result<(usize, RequestPath), Error> {
        self.reject(&req)?;
        let cctx = context::get_or_create(&mut ws.cctx, || {
            context::new_cctx(&self.params, &self.dicts)
        })?;
        let (frame, scratch) = (&mut ws.frame, &mut ws.scratch);
        let one_shot_max = compress::one_shot_compress_max(&self.params);
        cctx.with(|cctx, _| match req {
            Fragments::One { src, dst } if src.len() <= one_shot_max => Ok((
                compress::compress_one_shot(cctx, frame, src, dst)?,
                RequestPath::OneShot,
            )),
            req => req.walk(|walk| {
                compress::compress_stream(cctx, scratch, walk)?;
                Ok(RequestPath::Stream)
            }),
        })
    }

    fn decompress(
        &self,
        ws: &mut ZstdWorkspace,
        mut req: Fragments<'_, '_, '_>,
    ) -> Result<(usize, RequestPath), Error> {
        let dctx = context::get_or_create(&mut ws.dctx, || {
            context::new_dctx(&self.params, &self.dicts)
        })?;
        let scratch = &mut ws.scratch;
        dctx.with(|dctx, dicts| {
            if let Fragments::One { src, dst } = &mut req {
                if let Some(n) = self.decompress_one_shot(dctx, dicts, src, dst) {
                    return Ok((n, RequestPath::OneShot));
                }
            }
            req.walk(|walk| {
                self.decompress_stream(dctx, dicts, scratch, walk)?;
                Ok(RequestPath::Stream)
            })
        })
    }

    fn decompress_range(
        &self,
        ws: &mut ZstdWorkspace,
        walk: &mut Walk<'_, '_>,
        segments: &mut [Segment<'_>],
    ) -> Result<u64, Error> {
        let dctx = context::get_or_create(&mut ws.dctx, || {
            context::new_dctx(&self.params, &self.dicts)
        })?;
        let scratch = &mut ws.scratch;
        dctx.with(|dctx, dicts| {
            // A source that ends with a seek table: only the frames the segments touch.
            if let Some(table) = seekable::TableFrame::find(walk)? {
                return self.seekable_range(dctx, dicts, scratch, walk, &table, segments);
            }
            Zstd::decompress_range(self, dctx, dicts, scratch, walk, segments, None)
        })
    }

    fn decompress_seekable(
        &self,
        ws: &mut ZstdWorkspace,
        walk: &mut Walk<'_, '_>,
        table: &SeekTable,
        segments: &mut [Segment<'_>],
        verify: bool,
    ) -> Result<u64, Error> {
        let dctx = context::get_or_create(&mut ws.dctx, || {
            context::new_dctx(&self.params, &self.dicts)
        })?;
        let scratch = &mut ws.scratch;
        dctx.with(|dctx, dicts| {
            let mut decoder = seekable::Decoder {
                zstd: self,
                dctx,
                dicts,
                scratch,
            };
            decoder.kept(walk, table, segments, verify)
        })
    }

    fn compress_bound(&self, slen: usize) -> usize {
        zstd_safe::compress_bound(slen)
    }

    fn content_size(&self, walk: &mut Walk<'_, '_>) -> Result<Option<u64>, Error> {
        // A source that ends with a seek table: the content of all its frames.
        if let Some(table) = seekable::TableFrame::find(walk)? {
            return table.content_size(walk).map(Some);
        }
        frame::content_size(walk)
    }

    fn reset(&self, ws: &mut ZstdWorkspace) {
        // A session reset cannot fail; a failure here would surface on the next request.
        // It keeps referenced dictionaries (a parameter reset would drop them).
        if let Some(c) = ws.cctx.as_mut() {
            c.with(|c, _| {
                let _ = c.reset(ResetDirective::SessionOnly);
            });
        }
        if let Some(d) = ws.dctx.as_mut() {
            d.with(|d, _| {
                let _ = d.reset(ResetDirective::SessionOnly);
                // A seekable read that failed between setting and clearing it.
                let _ = d.set_parameter(zstd_safe::DParameter::ForceIgnoreChecksum(false));
            });
        }
    }

    fn workspace_bytes(&self, ws: &ZstdWorkspace) -> usize {
        ws.cctx.as_ref().map_or(0, |c| c.ctx().sizeof())
            + ws.dctx.as_ref().map_or(0, |d| d.ctx().sizeof())
            + ws.scratch.len()
            + ws.frame.capacity()
    }

    fn dictionary_bytes(&self) -> usize {
        self.dicts.as_ref().map_or(0, |d| d.bytes())
    }
}
