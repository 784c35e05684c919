//! [`Path`]: which code path served a request.

/// Which code path served a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Path {
    /// One call on the workspace's persistent context, with no stream set-up: taken when the
    /// source and the destination are each one fragment (the kernel's `zstd_compress_one` /
    /// `zstd_decompress_one`).
    OneShot,
    /// Every other request: fragment by fragment through a stream started on first use
    /// (zstd: the kernel's `zstd_init_cstream` / `zstd_init_dstream`, deferred), or, where
    /// the format cannot stream, linearised through buffers of the workspace (lz4: the
    /// kernel's scomp scratch buffers).
    Stream,
}
