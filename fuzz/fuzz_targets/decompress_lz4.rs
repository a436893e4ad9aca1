//! `compression::decompress` for lz4 on arbitrary payloads, with a 1 MiB
//! cap, as a magic 2 batch (header checksum checked) and a magic 0 batch
//! (KAFKA-3160: header checksum ignored): no panics, output never past the
//! cap, the same answer twice, and what comes out compresses and decompresses
//! back to itself. A payload the magic 2 reader accepts, the magic 0 reader
//! accepts with the same bytes. When lz4_flex's frame reader also accepts the
//! payload, both outputs are equal: each reads the first frame only, as
//! Kafka's KafkaLZ4BlockInputStream does (see src/compression/lz4.rs).
#![no_main]

mod checks;

use kafkabatch::compression::Codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|payload: &[u8]| {
    let v2 = checks::check_decompress(Codec::Lz4, payload, 2);
    let v0 = checks::check_decompress(Codec::Lz4, payload, 0);
    if let Some(out) = &v2 {
        assert!(v0.as_ref() == Some(out), "magic 0 reader disagrees with magic 2 reader on a valid frame");
        if let Some(reference) = reference(payload) {
            assert!(*out == reference, "lz4 output differs from lz4_flex's frame reader");
        }
    }
});

/// lz4_flex's frame reader, capped.
fn reference(payload: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut reader = lz4_flex::frame::FrameDecoder::new(payload);
    let mut out = Vec::new();
    reader.by_ref().take(checks::LIMIT as u64 + 1).read_to_end(&mut out).ok()?;
    (out.len() <= checks::LIMIT).then_some(out)
}
