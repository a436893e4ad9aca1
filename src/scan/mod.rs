//! Planning a read: which files hold which partitions' segments (names and the
//! three layouts: a broker's log dir, Aiven's tiered-storage bucket, Kafka's
//! LocalTieredStorage), the overlap rule that reads every offset once, index
//! seeks checked against batch headers, and one walk over each file's batch
//! headers that pruning, cuts and the transaction pass share.
//!
//! Everything here reads through [`crate::storage::Storage`], so every front
//! end (Python, the CLI, Spark, a JVM) plans the same way.
//!
//! [`Scan`] ties it together: roots and options → [`Plan`] (per partition,
//! [`Split`]s of segments with the bounds their records must meet) →
//! [`ScanReader`], Arrow record batches of [`crate::arrow_out::schema`] in
//! topic, partition, offset order.

pub mod aggregate;
pub mod index;
pub mod layouts;
pub mod legacy_tallies;
pub mod listing;
pub mod naming;
pub mod options;
pub mod overlap;
pub mod plan;
pub mod pushdown;
pub mod read;
pub mod seek;
pub mod stream;
pub mod tasks;
pub mod typed;
pub mod walk;

pub use aggregate::{
    aggregate_work, split_aggregates, Aggregate, AggregateRow, GroupBy, Unanswerable, DRIVER_LEGACY_BYTES,
};
pub use options::{Mode, OffsetsSpec, OptionError, ScanOptions};
pub use plan::{OffsetBound, PartitionPlan, Plan, Resolver, Scan, ScanError, ScanIsolation, Split, Transaction};
pub use pushdown::{filter_of, translate, Literal, NotPushable, Op, Predicate, RecordFilter};
pub use read::{ReadContext, ReadStats, ScanReader, SplitReport};
pub use typed::{BadValue, TypedColumn};
