//! The ranges and defaults of [`ZstdParams`](crate::ZstdParams), as constants.
//!
//! ```
//! use acomp::{Acomp, ZstdParams, zstd};
//!
//! assert_eq!((zstd::MIN_LEVEL, zstd::DEFAULT_LEVEL, zstd::MAX_LEVEL), (-131_072, 3, 22));
//! let fastest = Acomp::with_zstd(ZstdParams::default().level(zstd::MIN_LEVEL))?;
//! # let _ = fastest;
//! # Ok::<(), acomp::Error>(())
//! ```

pub use crate::alg::zstd::params::{
    DEFAULT_LEVEL, DEFAULT_WINDOW_LOG_MAX, MAX_LEVEL, MIN_LEVEL, WINDOW_LOG_MAX_MAX,
    WINDOW_LOG_MAX_MIN,
};
