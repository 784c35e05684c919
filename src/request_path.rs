//! [`RequestPath`]: which code path served a request.

/// Which code path served a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RequestPath {
    /// One call on the workspace's persistent context, with no stream set-up: taken when the
    /// source and the destination are each one fragment (the kernel's `zstd_compress_one` /
    /// `zstd_decompress_one`).
    OneShot,
    /// zstd's path for every other request: fragment by fragment through a stream started
    /// on first use (the kernel's `zstd_init_cstream` / `zstd_init_dstream`, deferred).
    Stream,
    /// lz4's path for every other request: the block format cannot stream, so the fragments
    /// are linearised through buffers of the workspace (the kernel's scomp scratch buffers)
    /// and the block is compressed or decoded there in one call.
    Linearised,
}
