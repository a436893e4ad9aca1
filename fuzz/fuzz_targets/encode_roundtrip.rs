//! Arbitrary records through `encode::encode`, every magic x codec it allows,
//! then back through the decoder: the same records come out.
//!
//! Also: the streaming `Encoder` writes the same bytes as `encode`; the
//! decoder's per-batch path (`decode_batch`) and `decode` agree; and every
//! batch has a valid CRC.
#![no_main]

mod checks;

use arbitrary::Arbitrary;
use kafkabatch::batch::{BatchWalker, WalkEnd};
use kafkabatch::compression::{Codec, CompressOptions};
use kafkabatch::decode::decode_batch;
use kafkabatch::encode::{encode, EncodeError, EncodeOptions, Encoder, RecordRef, TimestampType};
use kafkabatch::record::OwnedRecords;
use kafkabatch::{decode, DecodeOptions};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Rec {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    /// Negative means "no timestamp" (-1).
    timestamp: i64,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

#[derive(Debug, Arbitrary)]
struct Input {
    magic: u8,
    codec: u8,
    snappy_xerial: bool,
    base_offset: u32,
    records_per_batch: Option<u8>,
    max_batch_bytes: Option<u16>,
    log_append_time: Option<Option<u32>>,
    producer: Option<(u16, u8, u16, bool)>,
    records: Vec<Rec>,
}

fuzz_target!(|input: Input| {
    let magic = (input.magic % 3) as i8;
    let codec = Codec::from_id(input.codec % 5).expect("0..5 are codecs");
    if codec == Codec::Zstd && magic < 2 {
        return; // zstd needs magic 2 (checked in the encoder's own tests)
    }
    let mut opts = EncodeOptions {
        magic,
        codec,
        compress: CompressOptions {
            level: None,
            snappy_xerial: input.snappy_xerial,
        },
        base_offset: i64::from(input.base_offset),
        records_per_batch: input.records_per_batch.map(|n| usize::from(n.max(1))),
        max_batch_bytes: input.max_batch_bytes.map(usize::from),
        ..Default::default()
    };
    if magic >= 1 {
        if let Some(t) = input.log_append_time {
            opts.timestamp_type = TimestampType::LogAppendTime;
            opts.log_append_time = t.map(i64::from);
        }
    }
    if magic == 2 {
        if let Some((id, epoch, seq, txn)) = input.producer {
            opts.producer_id = i64::from(id);
            opts.producer_epoch = i16::from(epoch);
            opts.base_sequence = i32::from(seq);
            opts.transactional = txn;
        }
    }
    let headers: Vec<Vec<(&str, Option<&[u8]>)>> = input
        .records
        .iter()
        .map(|r| {
            if magic == 2 {
                r.headers.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect()
            } else {
                Vec::new()
            }
        })
        .collect();
    let records: Vec<RecordRef> = input
        .records
        .iter()
        .zip(&headers)
        .map(|(r, h)| RecordRef {
            key: r.key.as_deref(),
            value: r.value.as_deref(),
            timestamp: r.timestamp.max(-1),
            headers: h,
        })
        .collect();

    let mut out = Vec::new();
    let summary = match encode(&records, &opts, &mut out) {
        Ok(s) => s,
        Err(e @ EncodeError::InvalidOption { .. }) | Err(e @ EncodeError::InvalidRecord { .. }) => {
            panic!("valid options and records refused: {e}")
        }
        Err(e) => panic!("encoding failed: {e}"),
    };
    assert_eq!(summary.records, records.len() as u64);
    assert_eq!(summary.bytes, out.len() as u64);
    assert_eq!(summary.next_offset, opts.base_offset + records.len() as i64);

    // The streaming encoder writes the same bytes.
    let mut encoder = Encoder::new(&opts).expect("same options");
    let mut streamed = Vec::new();
    for r in &records {
        encoder.push(r).expect("same records");
        streamed.extend_from_slice(encoder.completed());
        encoder.clear_completed();
    }
    let (rest, streamed_summary) = encoder.finish().expect("finish");
    streamed.extend_from_slice(&rest);
    assert!(streamed == out, "Encoder and encode wrote different bytes");
    assert_eq!(streamed_summary, summary);

    // Decode batch by batch, CRCs checked.
    let options = DecodeOptions {
        validate_crc: true,
        max_decompressed_size: 64 << 20,
        ..Default::default()
    };
    let mut sink = OwnedRecords::default();
    let mut walker = BatchWalker::new(&out);
    let mut batches = 0u64;
    let mut scratch = Vec::new();
    for raw in walker.by_ref() {
        let header = decode_batch(&raw, &options, &mut scratch, Some(&mut sink)).expect("our own batch decodes");
        assert!(header.crc_valid);
        assert_eq!(header.magic, magic);
        assert_eq!(header.codec, codec);
        if magic == 2 {
            assert_eq!(header.producer_id, opts.producer_id);
            assert_eq!(header.is_transactional, opts.transactional);
        }
        batches += 1;
    }
    assert_eq!(walker.end(), Some(&WalkEnd::Clean));
    assert_eq!(batches, summary.batches);
    assert_eq!(sink.records.len(), records.len());
    let append_time = opts.timestamp_type == TimestampType::LogAppendTime;
    for (i, (got, want)) in sink.records.iter().zip(&records).enumerate() {
        assert_eq!(got.offset, opts.base_offset + i as i64, "offset of record {i}");
        assert_eq!(got.key.as_deref(), want.key, "key of record {i}");
        assert_eq!(got.value.as_deref(), want.value, "value of record {i}");
        let got_headers: Vec<(&str, Option<&[u8]>)> =
            got.headers.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect();
        assert_eq!(got_headers, want.headers, "headers of record {i}");
        match (magic, append_time) {
            (0, _) => assert_eq!((got.timestamp, got.timestamp_type), (-1, -1)),
            (_, false) => assert_eq!(
                (got.timestamp, got.timestamp_type),
                (want.timestamp, 0),
                "timestamp of record {i}"
            ),
            (_, true) => {
                assert_eq!(got.timestamp_type, 1);
                if let Some(t) = opts.log_append_time {
                    assert_eq!(got.timestamp, t, "append time of record {i}");
                }
            }
        }
        if magic == 2 && opts.base_sequence >= 0 {
            assert!(got.sequence >= 0);
        }
    }

    // The Arrow path agrees.
    let decoded = decode(&out, None, None, &options).expect("our own output decodes");
    let rows = checks::rows(&decoded);
    assert_eq!(rows.len(), records.len());
    for (row, rec) in rows.iter().zip(&sink.records) {
        assert_eq!(
            (row.offset, row.timestamp_us),
            (rec.offset, rec.timestamp.saturating_mul(1000))
        );
        assert_eq!((&row.key, &row.value), (&rec.key, &rec.value));
    }
});
