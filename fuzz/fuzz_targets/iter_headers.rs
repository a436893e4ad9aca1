//! The batch iterator's path: `BatchWalker` plus `decode_batch` with no sink
//! (headers only), as `iter_batches` runs it, then with a sink.
//!
//! Input: one selector byte (bit 0 validate CRCs, bit 1 include control),
//! then the buffer. Invariants: no panics; batches tile the input from 0 up to
//! `valid_bytes`; a header-only pass fails exactly when the full decode fails
//! for a reason the header pass can see, and agrees with it otherwise; errors
//! name their batch; a decoded batch holds its declared record count.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|input: &[u8]| checks::iter_headers::check(input));
