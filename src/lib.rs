//! kafkabatch: decode (and encode) Apache Kafka record batches — magic v2
//! record batches and v0/v1 legacy message sets, every codec — into Arrow
//! columns. The core is pure Rust with no Python types; the PyO3 bindings are
//! a crate of their own beside it (`bindings/python`).

pub mod arrow_out;
pub mod batch;
pub mod compression;
pub mod control;
pub mod crc;
pub mod decode;
pub mod encode;
pub mod error;
pub mod generate;
pub mod kmsg;
pub mod legacy;
pub mod memory;
mod parallel;
pub mod prune;
pub mod record;
pub mod scan;
pub mod storage;
pub mod tiered;
pub mod txn;
pub mod values;
pub mod varint;
pub mod vocabulary;

pub use compression::Codec;
pub use decode::{decode, DecodeOptions, Decoded, Isolation, OnError};
pub use error::{DecodeError, ErrorKind};
pub use scan::{Plan, Scan, ScanReader, Split};

// Test-only: the fuzz targets' checks (fuzz/fuzz_targets/checks) name the
// crate `kafkabatch`; this lets the regression replay include them as they are.
#[cfg(test)]
extern crate self as kafkabatch;
#[cfg(test)]
mod fuzz_regressions;
#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod test_support;
