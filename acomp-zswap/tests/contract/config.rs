//! Configurations the builder refuses, and the types' thread safety.

use super::*;

#[test]
fn bad_configurations_are_refused() {
    assert_eq!(
        Zswap::builder(lz4())
            .max_pool_bytes(4095)
            .build()
            .unwrap_err(),
        BuildError::BudgetTooSmall(4095)
    );
    assert_eq!(
        Zswap::builder(lz4())
            .accept_threshold_percent(101)
            .build()
            .unwrap_err(),
        BuildError::BadThreshold(101)
    );
    let z = Zswap::builder(lz4()).build().unwrap();
    assert_eq!(
        std::io::Error::from(z.writeback(1).unwrap_err()).kind(),
        std::io::ErrorKind::Unsupported
    );
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Zswap>();
    send_sync::<SwapFile>();
}
