//! `compression::decompress` for snappy on arbitrary payloads, with a 1 MiB
//! cap: no panics, output never past the cap, the same answer twice, and what
//! comes out compresses and decompresses back to itself. When the reference
//! decoder also accepts the payload, both give the same bytes.
#![no_main]

mod checks;

use kafkabatch::compression::Codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|payload: &[u8]| {
    if let Some(out) = checks::check_decompress(Codec::Snappy, payload, 2) {
        if let Some(reference) = reference(payload) {
            assert!(reference == out, "snappy output differs from the reference decoder's");
        }
    }
});

/// snap's raw-block decoder (xerial framing has no reference here).
fn reference(payload: &[u8]) -> Option<Vec<u8>> {
    if payload.starts_with(b"\x82SNAPPY\x00") {
        return None;
    }
    snap::raw::Decoder::new().decompress_vec(payload).ok()
}
