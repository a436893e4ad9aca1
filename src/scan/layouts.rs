//! The three layouts: a broker's log dir, Aiven's tiered bucket, LocalTieredStorage.
