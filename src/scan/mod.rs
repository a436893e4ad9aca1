//! Planning a read: which files hold which partitions' segments (names and the
//! three layouts: a broker's log dir, Aiven's tiered-storage bucket, Kafka's
//! LocalTieredStorage), the overlap rule that reads every offset once, index
//! seeks checked against batch headers, and one walk over each file's batch
//! headers that pruning, cuts and the transaction pass share.
//!
//! Everything here reads through [`crate::storage::Storage`], so every front
//! end (Python, the CLI, Spark, a JVM) plans the same way.

pub mod index;
pub mod layouts;
pub mod listing;
pub mod naming;
pub mod overlap;
pub mod seek;
pub mod walk;
