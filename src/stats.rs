//! [`Stats`]: the counters of a transform, and how they print.

use std::fmt;

/// Counters of a transform, from [`Acomp::stats`](crate::Acomp::stats).
///
/// Every request counts once in `compress` or `decompress`, and once more either by the
/// path that served it (`one_shot`, `stream`, `linearised`), as refused by early rejection (`rejected`),
/// or by the kind of its error (`no_space`, `corrupt`, `invalid`, `no_memory`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Compression requests.
    pub compress: u64,
    /// Decompression requests.
    pub decompress: u64,
    /// Successful requests served by the one-shot path.
    pub one_shot: u64,
    /// Successful requests served by the stream path (zstd, [`RequestPath::Stream`](crate::RequestPath::Stream)).
    pub stream: u64,
    /// Successful requests served by linearising their fragments through the workspace
    /// (lz4, [`RequestPath::Linearised`](crate::RequestPath::Linearised)).
    pub linearised: u64,
    /// Failed with `ENOSPC` ([`Error::NoSpace`](crate::Error::NoSpace)): the output did not fit.
    pub no_space: u64,
    /// Compressions refused by early rejection ([`ZstdParams::early_rejection`](crate::ZstdParams::early_rejection)),
    /// without compressing ([`Error::Incompressible`](crate::Error::Incompressible), whose
    /// errno is `ENOSPC` too): a routine outcome for a page store, not counted in
    /// `no_space`.
    pub rejected: u64,
    /// Failed with `EBADMSG`.
    pub corrupt: u64,
    /// Failed with `EINVAL`.
    pub invalid: u64,
    /// Failed with `ENOMEM`.
    pub no_memory: u64,
    /// Range reads ([`Acomp::decompress_range`](crate::Acomp::decompress_range)), also counted in `decompress` and by path
    /// (`stream`) or error.
    pub range: u64,
    /// Requests that found their CPU's workspace busy and took another CPU's.
    pub busy: u64,
    /// Requests whose CPU's workspace could not be filled, served by the first one.
    pub fallback: u64,
    /// Workspace slots: one per configured CPU.
    pub slots: usize,
    /// Slots filled with a workspace.
    pub workspaces: usize,
    /// Bytes the filled workspaces hold: the contexts as zstd counts them
    /// (`ZSTD_sizeof_CCtx` + `ZSTD_sizeof_DCtx`) and the workspaces' own buffers (a
    /// one-page scratch buffer; the one-shot compression's frame buffer).
    ///
    /// It grows with the largest requests a workspace has served, and stays there: zstd
    /// sizes a context's tables and buffers for the largest source and window it has met
    /// and keeps them for the next request (the kernel's workspaces are sized once for the
    /// largest). At level 3 a zstd workspace holds about 0.2 MiB after 4 KiB pages both
    /// ways, about 1 MiB after 128 KiB requests, more once a large frame has been
    /// decompressed on the stream path (its window buffer): that share is bounded by
    /// [`ZstdParams::window_log_max`](crate::ZstdParams::window_log_max).
    pub workspace_bytes: usize,
    /// Bytes of the transform's digested dictionaries (`ZSTD_sizeof_CDict` +
    /// `ZSTD_sizeof_DDict` of each, see [`ZstdParams::dictionary`](crate::ZstdParams::dictionary)):
    /// counted once, whatever the number of workspaces, which reference them and hold no
    /// copy. 0 without dictionaries.
    pub dictionary_bytes: usize,
}

/// Prints the counters in three lines, as the main job's report does:
///
/// ```text
/// requests: compress 856, decompress 1142 (range 0); one-shot 1605, stream 393, linearised 0, rejected early 0
/// errors: no_space 0, corrupt 0, invalid 0, no_memory 0; busy 0, fallback 0
/// workspaces: 2 of 2 slots, 372 KiB
/// ```
///
/// With dictionaries, the last line ends with their memory, counted once:
/// `workspaces: 2 of 2 slots, 372 KiB; dictionaries 380 KiB, shared`.
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "requests: compress {}, decompress {} (range {}); one-shot {}, stream {}, linearised {}, rejected early {}",
            self.compress,
            self.decompress,
            self.range,
            self.one_shot,
            self.stream,
            self.linearised,
            self.rejected
        )?;
        writeln!(
            f,
            "errors: no_space {}, corrupt {}, invalid {}, no_memory {}; busy {}, fallback {}",
            self.no_space, self.corrupt, self.invalid, self.no_memory, self.busy, self.fallback
        )?;
        write!(
            f,
            "workspaces: {} of {} slots, {} KiB",
            self.workspaces,
            self.slots,
            self.workspace_bytes.div_ceil(1024)
        )?;
        if self.dictionary_bytes > 0 {
            write!(
                f,
                "; dictionaries {} KiB, shared",
                self.dictionary_bytes.div_ceil(1024)
            )?;
        }
        Ok(())
    }
}
