//! `kafkabatch::decode` on arbitrary buffers, in raise and skip modes and
//! under read_committed.
//!
//! Input: one selector byte, then the buffer. Selector bits: 0 validate CRCs
//! (off by default so mutations get past the checksum into the records),
//! 1 include control records, 2 a 1 MiB instead of a 64 KiB decompression
//! cap, 3 read_committed with hide_open, 4 read_committed with an explicit
//! aborted list derived from the input.
//!
//! Invariants, against a reference built by decoding each framed batch on
//! its own:
//! - nothing panics;
//! - raise mode gives exactly the rows of every batch when all decode, else
//!   the first failing batch's error, located at that batch;
//! - skip mode gives exactly the rows of the batches that decode on their
//!   own, one skipped entry per other batch, and the same walk end;
//! - read_committed rows are a subsequence of read_uncommitted rows.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|input: &[u8]| checks::decode::check(input));
