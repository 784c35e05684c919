//! A workspace's zstd contexts, each created on first use with the transform's parameters
//! set once and referencing its digested dictionaries (never a copy).

use std::sync::Arc;

use zstd_safe::{CCtx, CParameter, DCtx, DParameter};

use super::{Digested, ZstdParams, zstd_error};
use crate::{Error, sys};

/// A workspace's compression context and the dictionaries it may reference.
pub(super) type ZstdCCtx = sys::WithDicts<CCtx<'static>, Digested>;
/// A workspace's decompression context and the dictionaries it may reference.
pub(super) type ZstdDCtx = sys::WithDicts<DCtx<'static>, Digested>;

/// The context in `slot`, created by `create` where there is none yet.
#[inline(always)]
pub(super) fn get_or_create<C>(
    slot: &mut Option<C>,
    create: impl FnOnce() -> Result<C, Error>,
) -> Result<&mut C, Error> {
    if slot.is_none() {
        *slot = Some(create()?);
    }
    Ok(slot.as_mut().expect("created above"))
}

/// A CCtx with the transform's parameters set once and its CDict referenced
/// (`ZSTD_CCtx_refCDict`: kept through session resets, used for every frame).
#[cold]
pub(super) fn new_cctx(
    params: &ZstdParams,
    dicts: &Option<Arc<Digested>>,
) -> Result<ZstdCCtx, Error> {
    let mut cctx = CCtx::try_create().ok_or(Error::NoMemory)?;
    for param in [
        CParameter::CompressionLevel(params.level),
        CParameter::ChecksumFlag(params.checksum),
        CParameter::ContentSizeFlag(params.content_size),
    ] {
        cctx.set_parameter(param).map_err(|c| zstd_error(c, 0))?;
    }
    if let Some(bytes) = params.block_size_max {
        cctx.set_parameter(CParameter::MaxBlockSize(bytes))
            .map_err(|c| zstd_error(c, 0))?;
    }
    // Never write a frame this transform would refuse to read back: levels from 20 on
    // ask for windows of up to 2^27 bytes on large sources.
    if sys::level_window_log(params.level) > params.window_log_max {
        cctx.set_parameter(CParameter::WindowLog(params.window_log_max))
            .map_err(|c| zstd_error(c, 0))?;
    }
    let mut cctx = sys::WithDicts::new(cctx, dicts.clone());
    cctx.with(|cctx, dicts| match dicts.and_then(Digested::cdict) {
        Some(cdict) => cctx
            .ref_cdict(cdict)
            .map(drop)
            .map_err(|c| zstd_error(c, 0)),
        None => Ok(()),
    })?;
    Ok(cctx)
}

/// A DCtx with the window limit set once. With dictionaries, each frame's DDict is
/// referenced before the frame (`dictionary::select`).
#[cold]
pub(super) fn new_dctx(
    params: &ZstdParams,
    dicts: &Option<Arc<Digested>>,
) -> Result<ZstdDCtx, Error> {
    let mut dctx = DCtx::try_create().ok_or(Error::NoMemory)?;
    dctx.set_parameter(DParameter::WindowLogMax(params.window_log_max))
        .map_err(|c| zstd_error(c, 0))?;
    Ok(sys::WithDicts::new(dctx, dicts.clone()))
}
