//! `compression::decompress` for lz4 on arbitrary payloads, with a 1 MiB
//! cap, as a magic 2 batch (header checksum checked) and a magic 0 batch
//! (KAFKA-3160: header checksum ignored): no panics, output never past the
//! cap, the same answer twice, and what comes out compresses and decompresses
//! back to itself. A payload the magic 2 reader accepts, the magic 0 reader
//! accepts with the same bytes. When lz4_flex's frame reader also accepts the
//! bytes of that first frame, both outputs are equal. (We read the first
//! frame only, as Kafka's KafkaLZ4BlockInputStream does; lz4_flex reads
//! frames back to back and trips a debug assertion when their block sizes
//! differ, so it gets just the frame ours read.)
#![no_main]

mod checks;

use kafkabatch::compression::Codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|payload: &[u8]| {
    let v2 = checks::check_decompress(Codec::Lz4, payload, 2);
    let v0 = checks::check_decompress(Codec::Lz4, payload, 0);
    if let Some(out) = &v2 {
        assert!(
            v0.as_ref() == Some(out),
            "magic 0 reader disagrees with magic 2 reader on a valid frame"
        );
        let mut again = Vec::new();
        let frame_len = kafkabatch::compression::lz4::decompress_first_frame(payload, false, checks::LIMIT, &mut again)
            .expect("accepted above");
        assert!(again == *out, "decompress and decompress_first_frame disagree");
        if let Some(reference) = reference(&payload[..frame_len]) {
            assert!(reference == *out, "lz4 output differs from lz4_flex's frame reader");
        }
    }
});

/// lz4_flex's frame reader, capped. Its `read` returns `Ok(0)` for a block
/// that decompresses to nothing (so `read_to_end` would stop there); only
/// as many zero reads in a row as the payload could hold blocks mean the end.
fn reference(payload: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut reader = lz4_flex::frame::FrameDecoder::new(payload);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut zero_reads = 0;
    while zero_reads <= payload.len() / 4 {
        match reader.read(&mut buf).ok()? {
            0 => zero_reads += 1,
            n => {
                zero_reads = 0;
                out.extend_from_slice(&buf[..n]);
                if out.len() > checks::LIMIT {
                    return None;
                }
            }
        }
    }
    Some(out)
}
