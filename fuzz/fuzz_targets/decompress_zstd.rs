//! `compression::decompress` for zstd on arbitrary payloads, with a 1 MiB
//! cap: no panics, output never past the cap, the same answer twice, and what
//! comes out compresses and decompresses back to itself. When the reference
//! decoder also accepts the payload, both give the same bytes.
#![no_main]

mod checks;

use kafkabatch::compression::Codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|payload: &[u8]| {
    if let Some(out) = checks::check_decompress(Codec::Zstd, payload, 2) {
        if let Some(reference) = reference(payload) {
            assert!(reference == out, "zstd output differs from the reference decoder's");
        }
    }
});

/// zstd's streaming reader over every frame, capped.
fn reference(payload: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    zstd::stream::read::Decoder::new(payload)
        .ok()?
        .take(checks::LIMIT as u64 + 1)
        .read_to_end(&mut out)
        .ok()?;
    (out.len() <= checks::LIMIT).then_some(out)
}
