//! liblz4's extState functions (`lz4.h`, stable API since 1.7), built and linked by
//! lz4-sys, which does not declare them; `src/sys.rs` wraps them. (The lz4 benches and the
//! main job's `lz4dict.rs`, crates of their own, declare what they call themselves.)

unsafe extern "C" {
    /// `sizeof(LZ4_stream_t)`: the bytes of state `LZ4_compress_fast_extState` needs.
    pub(super) fn LZ4_sizeofState() -> libc::c_int;
    /// Compresses `src_size` bytes of `src` into at most `dst_capacity` bytes of `dst`,
    /// with `state` (8-byte aligned, `LZ4_sizeofState()` bytes, reset first) as the hash
    /// table; returns the block's size, or 0 where it does not fit.
    pub(super) fn LZ4_compress_fast_extState(
        state: *mut libc::c_void,
        src: *const libc::c_char,
        dst: *mut libc::c_char,
        src_size: libc::c_int,
        dst_capacity: libc::c_int,
        acceleration: libc::c_int,
    ) -> libc::c_int;
}
