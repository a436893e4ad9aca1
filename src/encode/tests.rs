//! Tests of the encoder against hand-assembled bytes from the spec, and of
//! its options, batching and streaming form, compressed output included.

use super::test_reader::{read_batches, read_messages, read_records, reference_crc32, reference_crc32c, Message};
use super::*;

fn be<const N: usize>(bytes: [u8; N]) -> Vec<u8> {
    bytes.to_vec()
}

/// Fill in a hand-assembled v2 batch's CRC (CRC32-C of bytes 21..end).
fn with_crc32c(mut batch: Vec<u8>) -> Vec<u8> {
    let crc = reference_crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch
}

/// Fill in a hand-assembled legacy message's CRC (CRC32 of magic..end).
fn with_crc32(mut message: Vec<u8>) -> Vec<u8> {
    let crc = reference_crc32(&message[16..]);
    message[12..16].copy_from_slice(&crc.to_be_bytes());
    message
}

fn values(n: usize, len: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| vec![b'a' + (i % 26) as u8; len]).collect()
}

fn plain_records(values: &[Vec<u8>], ts0: i64) -> Vec<RecordRef<'_>> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| RecordRef::new(None, Some(v), ts0 + i as i64))
        .collect()
}

fn v2_opts(f: impl FnOnce(&mut EncodeOptions)) -> EncodeOptions {
    let mut o = EncodeOptions::default();
    f(&mut o);
    o
}

fn legacy_opts(magic: i8, f: impl FnOnce(&mut EncodeOptions)) -> EncodeOptions {
    let mut o = EncodeOptions {
        magic,
        ..Default::default()
    };
    f(&mut o);
    o
}

// ---------------------------------------------------------------- v2 layout

#[test]
fn v2_small_batch_is_byte_exact() {
    let headers: [HeaderRef; 1] = [("h", Some(b"x"))];
    let records = [
        RecordRef {
            key: Some(b"k"),
            value: Some(b"v1"),
            timestamp: 1000,
            headers: &headers,
        },
        RecordRef::new(None, None, 1003),
    ];
    let opts = v2_opts(|o| {
        o.base_offset = 5;
        o.partition_leader_epoch = 9;
        o.producer_id = 7;
        o.producer_epoch = 1;
        o.base_sequence = 3;
    });
    let mut out = Vec::new();
    let summary = encode(&records, &opts, &mut out).unwrap();

    let mut expected = Vec::new();
    expected.extend(be(5i64.to_be_bytes())); // 0: baseOffset
    expected.extend(be(70i32.to_be_bytes())); // 8: batchLength = 82 - 12
    expected.extend(be(9i32.to_be_bytes())); // 12: partitionLeaderEpoch
    expected.push(2); // 16: magic
    expected.extend([0; 4]); // 17: crc
    expected.extend(be(0i16.to_be_bytes())); // 21: attributes
    expected.extend(be(1i32.to_be_bytes())); // 23: lastOffsetDelta
    expected.extend(be(1000i64.to_be_bytes())); // 27: baseTimestamp
    expected.extend(be(1003i64.to_be_bytes())); // 35: maxTimestamp
    expected.extend(be(7i64.to_be_bytes())); // 43: producerId
    expected.extend(be(1i16.to_be_bytes())); // 51: producerEpoch
    expected.extend(be(3i32.to_be_bytes())); // 53: baseSequence
    expected.extend(be(2i32.to_be_bytes())); // 57: recordCount
    assert_eq!(expected.len(), 61);
    // Record 0: length 13 (zig-zag 0x1a), attributes, tsDelta 0, offsetDelta 0,
    // key "k" (len 1 → 0x02), value "v1" (len 2 → 0x04), 1 header: "h" → "x".
    expected.extend([
        0x1a, 0x00, 0x00, 0x00, 0x02, b'k', 0x04, b'v', b'1', 0x02, 0x02, b'h', 0x02, b'x',
    ]);
    // Record 1: length 6, attributes, tsDelta 3 (0x06), offsetDelta 1 (0x02), null key, null value, 0 headers.
    expected.extend([0x0c, 0x00, 0x06, 0x02, 0x01, 0x01, 0x00]);
    let expected = with_crc32c(expected);

    assert_eq!(out, expected);
    assert_eq!(out[16], 2, "magic at byte 16");
    assert_eq!(&out[57..61], &2i32.to_be_bytes(), "record count at byte 57");
    assert_eq!(
        summary,
        EncodeSummary {
            records: 2,
            batches: 1,
            bytes: 82,
            next_offset: 7,
            next_sequence: 5
        }
    );
}

#[test]
fn v2_crc_is_crc32c_of_attributes_to_end() {
    let vals = values(20, 33);
    let mut out = Vec::new();
    encode(
        &plain_records(&vals, 1_700_000_000_000),
        &v2_opts(|o| o.records_per_batch = Some(7)),
        &mut out,
    )
    .unwrap();
    let mut pos = 0;
    let mut n = 0;
    while pos < out.len() {
        let end = pos + 12 + i32::from_be_bytes(out[pos + 8..pos + 12].try_into().unwrap()) as usize;
        let stored = u32::from_be_bytes(out[pos + 17..pos + 21].try_into().unwrap());
        assert_eq!(stored, reference_crc32c(&out[pos + 21..end]));
        assert_eq!(stored, crate::crc::crc32c(&out[pos + 21..end]));
        // The partition leader epoch is outside the CRC: changing it keeps the CRC valid.
        let mut copy = out[pos..end].to_vec();
        copy[12..16].copy_from_slice(&77i32.to_be_bytes());
        assert_eq!(reference_crc32c(&copy[21..]), stored);
        pos = end;
        n += 1;
    }
    assert_eq!(n, 3);
}

#[test]
fn v2_varint_edge_cases() {
    // Out-of-order timestamps (negative deltas), -1 timestamps, null header
    // values, and lengths past one varint byte.
    let big = vec![7u8; 200];
    let headers: [HeaderRef; 2] = [("a", None), ("", Some(b""))];
    let records = [
        RecordRef {
            key: Some(b""),
            value: Some(&big),
            timestamp: 1000,
            headers: &headers,
        },
        RecordRef::new(Some(&big[..64]), Some(b"v"), 990),
        RecordRef::new(None, Some(b"w"), -1),
    ];
    let mut out = Vec::new();
    encode(&records, &EncodeOptions::default(), &mut out).unwrap();
    let batches = read_batches(&out);
    assert_eq!(batches.len(), 1);
    let b = &batches[0];
    assert_eq!((b.base_timestamp, b.max_timestamp), (1000, 1000));
    let r = b.records();
    assert_eq!(r[0].key.as_deref(), Some(&b""[..]));
    assert_eq!(r[0].value.as_deref(), Some(&big[..]));
    assert_eq!(
        r[0].headers,
        vec![("a".to_string(), None), (String::new(), Some(vec![]))]
    );
    assert_eq!((r[1].timestamp_delta, r[1].offset_delta), (-10, 1));
    assert_eq!(r[1].key.as_deref(), Some(&big[..64]));
    assert_eq!((r[2].timestamp_delta, r[2].offset_delta), (-1001, 2));
    assert!(r.iter().all(|r| r.attributes == 0));
    // Record 0 by hand: body 212 (zig-zag 424 → 0xa8 0x03), attributes, tsDelta 0,
    // offsetDelta 0, key len 0 → 0x00, value len 200 → zig-zag 400 → 0x90 0x03,
    // 2 headers (0x04): "a" → null (0x01), "" → "".
    let mut e = vec![0xa8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x90, 0x03];
    e.extend(&big);
    e.extend([0x04, 0x02, b'a', 0x01, 0x00, 0x00]);
    assert_eq!(&out[61..61 + e.len()], e.as_slice());
}

#[test]
fn v2_empty_input_writes_nothing() {
    let mut out = b"keep".to_vec();
    let s = encode(&[], &v2_opts(|o| o.base_offset = 42), &mut out).unwrap();
    assert_eq!(out, b"keep");
    assert_eq!(
        s,
        EncodeSummary {
            records: 0,
            batches: 0,
            bytes: 0,
            next_offset: 42,
            next_sequence: -1
        }
    );
}

#[test]
fn v2_appends_after_existing_bytes() {
    let mut out = b"prefix".to_vec();
    encode(
        &[RecordRef::new(None, Some(b"v"), 1)],
        &EncodeOptions::default(),
        &mut out,
    )
    .unwrap();
    assert_eq!(&out[..6], b"prefix");
    assert_eq!(read_batches(&out[6..]).len(), 1);
}

#[test]
fn v2_transactional_and_idempotent_fields() {
    let vals = values(5, 10);
    let opts = v2_opts(|o| {
        o.producer_id = 123_456_789_012;
        o.producer_epoch = 17;
        o.base_sequence = 40;
        o.transactional = true;
        o.records_per_batch = Some(2);
    });
    let mut out = Vec::new();
    let s = encode(&plain_records(&vals, 50), &opts, &mut out).unwrap();
    let batches = read_batches(&out);
    assert_eq!(batches.len(), 3);
    for (b, (offset, seq)) in batches.iter().zip([(0, 40), (2, 42), (4, 44)]) {
        assert_eq!(b.attributes, 0x10, "transactional bit only");
        assert_eq!((b.producer_id, b.producer_epoch), (123_456_789_012, 17));
        assert_eq!((b.base_offset, b.base_sequence), (offset, seq));
    }
    assert_eq!((s.next_offset, s.next_sequence), (5, 45));
}

#[test]
fn v2_sequence_wraps_like_java() {
    assert_eq!(v2::increment_sequence(i32::MAX, 1), 0);
    assert_eq!(v2::increment_sequence(i32::MAX - 1, 2), 0);
    assert_eq!(v2::increment_sequence(i32::MAX - 1, 5), 3);
    assert_eq!(v2::increment_sequence(10, 5), 15);

    let vals = values(5, 1);
    let opts = v2_opts(|o| {
        o.producer_id = 1;
        o.producer_epoch = 0;
        o.base_sequence = i32::MAX - 1;
        o.records_per_batch = Some(2);
    });
    let mut out = Vec::new();
    let s = encode(&plain_records(&vals, 0), &opts, &mut out).unwrap();
    let seqs: Vec<i32> = read_batches(&out).iter().map(|b| b.base_sequence).collect();
    assert_eq!(seqs, [i32::MAX - 1, 0, 2]);
    assert_eq!(s.next_sequence, 3);
}

#[test]
fn v2_non_idempotent_sequence_stays_minus_one() {
    let vals = values(4, 1);
    let mut out = Vec::new();
    let s = encode(
        &plain_records(&vals, 0),
        &v2_opts(|o| o.records_per_batch = Some(1)),
        &mut out,
    )
    .unwrap();
    assert!(read_batches(&out)
        .iter()
        .all(|b| (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)));
    assert_eq!(s.next_sequence, -1);
}

#[test]
fn v2_log_append_time() {
    let records = [
        RecordRef::new(None, Some(b"a"), 1000),
        RecordRef::new(None, Some(b"b"), 900),
        RecordRef::new(None, Some(b"c"), 1100),
    ];
    // Without an explicit append time: the batch's largest timestamp.
    let mut out = Vec::new();
    encode(
        &records,
        &v2_opts(|o| o.timestamp_type = TimestampType::LogAppendTime),
        &mut out,
    )
    .unwrap();
    let b = &read_batches(&out)[0];
    assert_eq!(b.attributes, 0x08);
    assert_eq!((b.base_timestamp, b.max_timestamp), (1000, 1100));
    let deltas: Vec<i64> = b.records().iter().map(|r| r.timestamp_delta).collect();
    assert_eq!(
        deltas,
        [0, -100, 100],
        "records keep their own timestamps, as Java writes them"
    );

    // With one: it is the max timestamp; the record deltas do not change.
    let mut out2 = Vec::new();
    let opts = v2_opts(|o| {
        o.timestamp_type = TimestampType::LogAppendTime;
        o.log_append_time = Some(5000);
    });
    encode(&records, &opts, &mut out2).unwrap();
    let b2 = &read_batches(&out2)[0];
    assert_eq!((b2.attributes, b2.base_timestamp, b2.max_timestamp), (0x08, 1000, 5000));
    assert_eq!(b2.payload, b.payload);

    // CreateTime: max of the records, bit 3 clear.
    let mut out3 = Vec::new();
    encode(&records, &EncodeOptions::default(), &mut out3).unwrap();
    let b3 = &read_batches(&out3)[0];
    assert_eq!((b3.attributes, b3.base_timestamp, b3.max_timestamp), (0, 1000, 1100));
}

#[test]
fn v2_max_timestamp_of_no_timestamps_is_minus_one() {
    let mut out = Vec::new();
    encode(&[RecordRef::new(None, None, -1)], &EncodeOptions::default(), &mut out).unwrap();
    let b = &read_batches(&out)[0];
    assert_eq!((b.base_timestamp, b.max_timestamp), (-1, -1));
}

// ------------------------------------------------------------------ batching

#[test]
fn batching_by_records_per_batch() {
    let vals = values(10, 5);
    let mut out = Vec::new();
    let s = encode(
        &plain_records(&vals, 100),
        &v2_opts(|o| {
            o.base_offset = 1000;
            o.records_per_batch = Some(4);
            o.max_batch_bytes = Some(1); // ignored: records_per_batch wins
        }),
        &mut out,
    )
    .unwrap();
    let batches = read_batches(&out);
    let shape: Vec<(i64, i32, i32, i64, i64)> = batches
        .iter()
        .map(|b| {
            (
                b.base_offset,
                b.record_count,
                b.last_offset_delta,
                b.base_timestamp,
                b.max_timestamp,
            )
        })
        .collect();
    assert_eq!(
        shape,
        [(1000, 4, 3, 100, 103), (1004, 4, 3, 104, 107), (1008, 2, 1, 108, 109)]
    );
    for b in &batches {
        let offset_deltas: Vec<i32> = b.records().iter().map(|r| r.offset_delta).collect();
        assert_eq!(offset_deltas, (0..b.record_count).collect::<Vec<_>>());
        assert!(b
            .records()
            .iter()
            .enumerate()
            .all(|(i, r)| r.timestamp_delta == i as i64));
    }
    assert_eq!(
        s,
        EncodeSummary {
            records: 10,
            batches: 3,
            bytes: out.len() as u64,
            next_offset: 1010,
            next_sequence: -1
        }
    );
}

#[test]
fn batching_by_max_batch_bytes() {
    // Each record: length varint (2) + attributes, tsDelta, offsetDelta, null
    // key, value length (2), 100 bytes, header count = 109 bytes.
    let vals = values(7, 100);
    let records: Vec<RecordRef> = vals.iter().map(|v| RecordRef::new(None, Some(v), 5)).collect();
    let count_shape = |max: Option<usize>| {
        let mut out = Vec::new();
        encode(&records, &v2_opts(|o| o.max_batch_bytes = max), &mut out).unwrap();
        let batches = read_batches(&out);
        for b in &batches {
            assert!(max.is_none_or(|m| b.batch_length as usize + 12 <= m.max(61 + 109)));
        }
        batches
            .iter()
            .map(|b| (b.base_offset, b.record_count))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        count_shape(Some(61 + 3 * 109)),
        [(0, 3), (3, 3), (6, 1)],
        "exactly 3 fit"
    );
    assert_eq!(count_shape(Some(61 + 3 * 109 - 1)), [(0, 2), (2, 2), (4, 2), (6, 1)]);
    assert_eq!(
        count_shape(Some(0)),
        (0..7).map(|i| (i, 1)).collect::<Vec<_>>(),
        "at least one record per batch"
    );
    assert_eq!(count_shape(None), [(0, 7)], "no limit: one batch");
    assert_eq!(count_shape(Some(16384)), [(0, 7)]);
}

#[test]
fn offsets_continue_across_calls() {
    let vals = values(6, 3);
    let recs = plain_records(&vals, 0);
    let mut out = Vec::new();
    let mut opts = v2_opts(|o| {
        o.base_offset = 10;
        o.producer_id = 3;
        o.producer_epoch = 0;
        o.base_sequence = 0;
        o.records_per_batch = Some(2);
    });
    let s1 = encode(&recs[..3], &opts, &mut out).unwrap();
    opts.base_offset = s1.next_offset;
    opts.base_sequence = s1.next_sequence;
    let s2 = encode(&recs[3..], &opts, &mut out).unwrap();
    let shape: Vec<(i64, i32, i32)> = read_batches(&out)
        .iter()
        .map(|b| (b.base_offset, b.record_count, b.base_sequence))
        .collect();
    assert_eq!(shape, [(10, 2, 0), (12, 1, 2), (13, 2, 3), (15, 1, 5)]);
    assert_eq!((s2.next_offset, s2.next_sequence), (16, 6));
}

// --------------------------------------------------------------- streaming

fn stream(opts: &EncodeOptions, records: &[RecordRef], clear_every: usize) -> (Vec<u8>, EncodeSummary) {
    let mut enc = Encoder::new(opts).unwrap();
    let mut sink = Vec::new();
    for (i, r) in records.iter().enumerate() {
        enc.push(r).unwrap();
        if clear_every > 0 && i % clear_every == 0 {
            sink.extend_from_slice(enc.completed());
            enc.clear_completed();
            assert!(enc.completed().is_empty());
        }
    }
    let (rest, summary) = enc.finish().unwrap();
    sink.extend_from_slice(&rest);
    (sink, summary)
}

#[test]
fn encoder_writes_what_encode_writes() {
    let vals = values(50, 17);
    let headers: [HeaderRef; 1] = [("trace", Some(b"abc"))];
    let mut records = plain_records(&vals, 1_000);
    for r in records.iter_mut().step_by(3) {
        r.key = Some(b"key");
    }
    let mut with_headers = records.clone();
    for r in with_headers.iter_mut().step_by(4) {
        r.headers = &headers;
    }
    let cases = [
        (v2_opts(|_| {}), &with_headers),
        (v2_opts(|o| o.records_per_batch = Some(7)), &with_headers),
        (v2_opts(|o| o.max_batch_bytes = Some(300)), &with_headers),
        (legacy_opts(0, |_| {}), &records),
        (
            legacy_opts(1, |o| o.timestamp_type = TimestampType::LogAppendTime),
            &records,
        ),
    ];
    for (opts, recs) in cases {
        let mut expected = Vec::new();
        let expected_summary = encode(recs, &opts, &mut expected).unwrap();
        for clear_every in [0, 1, 5] {
            let (got, summary) = stream(&opts, recs, clear_every);
            assert_eq!(got, expected, "{opts:?}, clearing every {clear_every}");
            assert_eq!(summary, expected_summary);
        }
    }
}

#[test]
fn encoder_state_and_batch_control() {
    let mut enc = Encoder::new(&v2_opts(|o| o.base_offset = 100)).unwrap();
    assert_eq!(enc.next_offset(), 100);
    enc.push(&RecordRef::new(None, Some(b"a"), 1)).unwrap();
    enc.push(&RecordRef::new(None, Some(b"b"), 2)).unwrap();
    assert_eq!((enc.open_records(), enc.next_offset()), (2, 102));
    assert!(enc.completed().is_empty(), "open batch is not completed");
    assert_eq!(enc.summary().next_offset, 100, "summary counts closed batches");
    enc.finish_batch().unwrap();
    enc.finish_batch().unwrap(); // nothing open: no empty batch
    assert_eq!(enc.open_records(), 0);
    let first = enc.completed().to_vec();
    assert_eq!(read_batches(&first).len(), 1);
    enc.clear_completed();
    enc.push(&RecordRef::new(None, Some(b"c"), 3)).unwrap();
    let (rest, s) = enc.finish().unwrap();
    let b = read_batches(&rest);
    assert_eq!((b.len(), b[0].base_offset, b[0].record_count), (1, 102, 1));
    assert_eq!(
        s,
        EncodeSummary {
            records: 3,
            batches: 2,
            bytes: (first.len() + rest.len()) as u64,
            next_offset: 103,
            next_sequence: -1
        }
    );
}

#[test]
fn encoder_rejects_a_bad_record_without_writing() {
    let mut enc = Encoder::new(&legacy_opts(1, |_| {})).unwrap();
    enc.push(&RecordRef::new(None, Some(b"a"), 1)).unwrap();
    let before = enc.completed().to_vec();
    let headers: [HeaderRef; 1] = [("h", None)];
    let err = enc
        .push(&RecordRef {
            key: None,
            value: None,
            timestamp: 1,
            headers: &headers,
        })
        .unwrap_err();
    assert!(
        matches!(
            err,
            EncodeError::InvalidRecord {
                index: 1,
                field: "headers",
                ..
            }
        ),
        "{err:?}"
    );
    let err = enc.push(&RecordRef::new(None, None, -7)).unwrap_err();
    assert!(
        matches!(
            err,
            EncodeError::InvalidRecord {
                index: 1,
                field: "timestamp",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(enc.completed(), &before[..]);
    assert_eq!(enc.next_offset(), 1);
    enc.push(&RecordRef::new(None, Some(b"b"), 2)).unwrap();
    let (out, _) = enc.finish().unwrap();
    let offsets: Vec<i64> = read_messages(&out).iter().map(|m| m.offset).collect();
    assert_eq!(offsets, [0, 1]);
}

#[test]
fn encoder_with_buffer_reuses_and_clears() {
    let buf = Vec::with_capacity(4096);
    let mut enc = Encoder::with_buffer(&EncodeOptions::default(), b"junk".to_vec()).unwrap();
    enc.push(&RecordRef::new(None, None, 0)).unwrap();
    let (out, _) = enc.finish().unwrap();
    assert_eq!(read_batches(&out).len(), 1);
    let enc = Encoder::with_buffer(&EncodeOptions::default(), buf).unwrap();
    let (out, s) = enc.finish().unwrap();
    assert!(out.is_empty() && out.capacity() >= 4096);
    assert_eq!(s.batches, 0);
}

// ------------------------------------------------------------------ legacy

#[test]
fn legacy_v0_message_is_byte_exact() {
    let records = [
        RecordRef::new(Some(b"ab"), Some(b"xyz"), 123),
        RecordRef::new(None, Some(b""), 456),
    ];
    let mut out = Vec::new();
    let s = encode(&records, &legacy_opts(0, |o| o.base_offset = 3), &mut out).unwrap();

    let mut m0 = Vec::new();
    m0.extend(be(3i64.to_be_bytes())); // offset
    m0.extend(be(19i32.to_be_bytes())); // messageSize = crc 4 + magic 1 + attributes 1 + key 4+2 + value 4+3
    m0.extend([0; 4]); // crc
    m0.extend([0, 0]); // magic 0, attributes 0 (no timestamp in v0)
    m0.extend(be(2i32.to_be_bytes()));
    m0.extend(b"ab");
    m0.extend(be(3i32.to_be_bytes()));
    m0.extend(b"xyz");
    let mut m1 = Vec::new();
    m1.extend(be(4i64.to_be_bytes()));
    m1.extend(be(14i32.to_be_bytes()));
    m1.extend([0; 4]);
    m1.extend([0, 0]);
    m1.extend(be((-1i32).to_be_bytes())); // null key
    m1.extend(be(0i32.to_be_bytes())); // empty (not null) value
    let mut expected = with_crc32(m0);
    expected.extend(with_crc32(m1));
    assert_eq!(out, expected);
    assert_eq!(
        u32::from_be_bytes(out[12..16].try_into().unwrap()),
        crate::crc::crc32(&out[16..31]),
        "CRC32 (IEEE) over magic..end"
    );
    assert_eq!(
        s,
        EncodeSummary {
            records: 2,
            batches: 2,
            bytes: 57,
            next_offset: 5,
            next_sequence: -1
        }
    );
}

#[test]
fn legacy_v1_message_is_byte_exact() {
    let mut out = Vec::new();
    encode(
        &[RecordRef::new(None, Some(b"hello"), 1_500_000_000_000)],
        &legacy_opts(1, |o| o.base_offset = 77),
        &mut out,
    )
    .unwrap();
    let mut m = Vec::new();
    m.extend(be(77i64.to_be_bytes()));
    m.extend(be(27i32.to_be_bytes())); // 4 + 1 + 1 + 8 + 4 + 4 + 5
    m.extend([0; 4]);
    m.extend([1, 0]); // magic 1, attributes 0 (CreateTime)
    m.extend(be(1_500_000_000_000i64.to_be_bytes()));
    m.extend(be((-1i32).to_be_bytes()));
    m.extend(be(5i32.to_be_bytes()));
    m.extend(b"hello");
    assert_eq!(out, with_crc32(m));
}

#[test]
fn legacy_uncompressed_offsets_and_log_append_time() {
    let vals = values(5, 4);
    let recs = plain_records(&vals, 1000);
    // records_per_batch changes nothing for uncompressed legacy: every message stands alone.
    for rpb in [None, Some(2)] {
        let mut out = Vec::new();
        encode(
            &recs,
            &legacy_opts(1, |o| {
                o.base_offset = 50;
                o.records_per_batch = rpb;
            }),
            &mut out,
        )
        .unwrap();
        let msgs = read_messages(&out);
        assert_eq!(msgs.iter().map(|m| m.offset).collect::<Vec<_>>(), [50, 51, 52, 53, 54]);
        assert_eq!(
            msgs.iter().map(|m| m.timestamp.unwrap()).collect::<Vec<_>>(),
            [1000, 1001, 1002, 1003, 1004]
        );
        assert!(msgs.iter().all(|m| m.attributes == 0 && m.magic == 1));
    }
    let mut out = Vec::new();
    encode(
        &recs,
        &legacy_opts(1, |o| o.timestamp_type = TimestampType::LogAppendTime),
        &mut out,
    )
    .unwrap();
    let msgs = read_messages(&out);
    assert!(msgs.iter().all(|m| m.attributes == 0x08));
    assert_eq!(
        msgs.iter().map(|m| m.timestamp.unwrap()).collect::<Vec<_>>(),
        [1000, 1001, 1002, 1003, 1004]
    );
    let mut out = Vec::new();
    encode(
        &recs,
        &legacy_opts(1, |o| {
            o.timestamp_type = TimestampType::LogAppendTime;
            o.log_append_time = Some(9999);
        }),
        &mut out,
    )
    .unwrap();
    assert!(read_messages(&out)
        .iter()
        .all(|m| m.attributes == 0x08 && m.timestamp == Some(9999)));
}

#[test]
fn legacy_v0_ignores_timestamps() {
    let mut out = Vec::new();
    encode(&[RecordRef::new(None, None, -12345)], &legacy_opts(0, |_| {}), &mut out).unwrap();
    let m = &read_messages(&out)[0];
    assert_eq!(
        (m.magic, m.timestamp, m.key.clone(), m.value.clone()),
        (0, None, None, None)
    );
}

// ----------------------------------------------------------------- control

fn control_expected(
    kind_id: u8,
    base_offset: i64,
    pid: i64,
    epoch: i16,
    coordinator_epoch: i32,
    ts: i64,
    ple: i32,
) -> Vec<u8> {
    let mut e = Vec::new();
    e.extend(be(base_offset.to_be_bytes()));
    e.extend(be(66i32.to_be_bytes())); // 61 + 17 - 12
    e.extend(be(ple.to_be_bytes()));
    e.push(2);
    e.extend([0; 4]);
    e.extend(be(0x30i16.to_be_bytes())); // control | transactional
    e.extend(be(0i32.to_be_bytes())); // lastOffsetDelta
    e.extend(be(ts.to_be_bytes()));
    e.extend(be(ts.to_be_bytes()));
    e.extend(be(pid.to_be_bytes()));
    e.extend(be(epoch.to_be_bytes()));
    e.extend(be((-1i32).to_be_bytes())); // baseSequence
    e.extend(be(1i32.to_be_bytes()));
    // Record: length 16 (0x20), attributes, tsDelta 0, offsetDelta 0,
    // key len 4 (0x08) = version 0 + type, value len 6 (0x0c) = version 0 + coordinator epoch, no headers.
    e.extend([
        0x20, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, kind_id, 0x0c, 0x00, 0x00,
    ]);
    e.extend(be(coordinator_epoch.to_be_bytes()));
    e.push(0x00);
    with_crc32c(e)
}

#[test]
fn control_batches_are_byte_exact() {
    let mut out = b"x".to_vec();
    control_batch(ControlKind::Commit, 42, 3, 100, 7, 1234, 5, &mut out);
    assert_eq!(&out[1..], control_expected(1, 100, 42, 3, 7, 1234, 5).as_slice());
    assert_eq!(out.len(), 1 + 78);

    let mut out = Vec::new();
    control_batch(
        ControlKind::Abort,
        9_000_000_000,
        0,
        0,
        -1,
        1_700_000_000_000,
        -1,
        &mut out,
    );
    assert_eq!(out, control_expected(0, 0, 9_000_000_000, 0, -1, 1_700_000_000_000, -1));
    let b = &read_batches(&out)[0];
    let r = &b.records()[0];
    assert_eq!(r.key.as_deref(), Some(&[0u8, 0, 0, 0][..]));
    assert_eq!(r.value.as_deref(), Some(&[0u8, 0, 0xff, 0xff, 0xff, 0xff][..]));
    assert_eq!((ControlKind::Abort.id(), ControlKind::Commit.id()), (0, 1));
}

#[test]
fn transaction_then_marker_offsets_line_up() {
    let vals = values(3, 8);
    let opts = v2_opts(|o| {
        o.producer_id = 5;
        o.producer_epoch = 2;
        o.base_sequence = 0;
        o.transactional = true;
    });
    let mut out = Vec::new();
    let s = encode(&plain_records(&vals, 10), &opts, &mut out).unwrap();
    control_batch(ControlKind::Commit, 5, 2, s.next_offset, 0, 20, -1, &mut out);
    let batches = read_batches(&out);
    assert_eq!(
        batches
            .iter()
            .map(|b| (b.base_offset, b.attributes))
            .collect::<Vec<_>>(),
        [(0, 0x10), (3, 0x30)]
    );
}

// -------------------------------------------------------------- validation

#[test]
fn option_errors_name_the_argument_and_write_nothing() {
    use TimestampType::LogAppendTime;
    let rec = [RecordRef::new(None, Some(b"v"), 1)];
    let cases: Vec<(EncodeOptions, &str)> = vec![
        (v2_opts(|o| o.magic = 3), "magic"),
        (v2_opts(|o| o.magic = -1), "magic"),
        (v2_opts(|o| o.records_per_batch = Some(0)), "records_per_batch"),
        (v2_opts(|o| o.records_per_batch = Some(usize::MAX)), "records_per_batch"),
        (legacy_opts(1, |o| o.codec = Codec::Zstd), "codec"),
        (legacy_opts(0, |o| o.codec = Codec::Zstd), "codec"),
        (legacy_opts(1, |o| o.producer_id = 5), "producer_id"),
        (legacy_opts(1, |o| o.producer_epoch = 0), "producer_epoch"),
        (legacy_opts(0, |o| o.base_sequence = 0), "base_sequence"),
        (legacy_opts(1, |o| o.transactional = true), "transactional"),
        (
            legacy_opts(1, |o| o.partition_leader_epoch = 0),
            "partition_leader_epoch",
        ),
        (legacy_opts(0, |o| o.timestamp_type = LogAppendTime), "timestamp_type"),
        (v2_opts(|o| o.log_append_time = Some(5)), "log_append_time"),
        (
            v2_opts(|o| {
                o.timestamp_type = LogAppendTime;
                o.log_append_time = Some(-2);
            }),
            "log_append_time",
        ),
        (v2_opts(|o| o.base_offset = -1), "base_offset"),
        (v2_opts(|o| o.producer_id = -2), "producer_id"),
        (v2_opts(|o| o.producer_epoch = -2), "producer_epoch"),
        (v2_opts(|o| o.base_sequence = -2), "base_sequence"),
        (v2_opts(|o| o.transactional = true), "transactional"),
        (
            v2_opts(|o| {
                o.producer_id = 1;
                o.base_sequence = 0;
            }),
            "producer_epoch",
        ),
        (
            v2_opts(|o| {
                o.producer_id = 1;
                o.producer_epoch = 0;
            }),
            "base_sequence",
        ),
        (v2_opts(|o| o.base_offset = i64::MAX), "base_offset"),
    ];
    for (opts, argument) in cases {
        let mut out = b"keep".to_vec();
        let err = encode(&rec, &opts, &mut out).unwrap_err();
        assert!(matches!(err, EncodeError::InvalidOption { .. }), "{opts:?}: {err:?}");
        assert_eq!(err.argument(), Some(argument), "{opts:?}: {err}");
        assert!(err.to_string().contains(argument), "message names {argument}: {err}");
        assert_eq!(out, b"keep", "{opts:?}");
        if argument != "base_offset" || opts.base_offset < 0 {
            assert_eq!(Encoder::new(&opts).unwrap_err(), err, "Encoder::new checks the same");
        }
    }
}

#[test]
fn record_errors_name_the_record_and_write_nothing() {
    let headers: [HeaderRef; 1] = [("h", Some(b"v"))];
    let good = RecordRef::new(None, Some(b"v"), 1);
    let with_headers = RecordRef {
        headers: &headers,
        ..good
    };
    let cases = [
        (legacy_opts(1, |_| {}), with_headers, "headers"),
        (legacy_opts(0, |_| {}), with_headers, "headers"),
        (v2_opts(|_| {}), RecordRef::new(None, None, -2), "timestamp"),
        (
            legacy_opts(1, |_| {}),
            RecordRef::new(None, None, i64::MIN),
            "timestamp",
        ),
    ];
    for (opts, bad, field) in cases {
        let mut out = b"keep".to_vec();
        let err = encode(&[good, good, bad, good], &opts, &mut out).unwrap_err();
        assert!(matches!(err, EncodeError::InvalidRecord { index: 2, .. }), "{err:?}");
        assert_eq!(err.argument(), Some(field));
        let msg = err.to_string();
        assert!(msg.starts_with("record 2: invalid ") && msg.contains(field), "{msg}");
        assert_eq!(out, b"keep");
    }
    // Limits of the formats that hold for every magic.
    for magic in [0, 1, 2] {
        let mut out = Vec::new();
        encode(
            &[RecordRef::new(None, None, -1), RecordRef::new(None, None, 0)],
            &legacy_opts(magic, |_| {}),
            &mut out,
        )
        .unwrap();
    }
    let mut out = Vec::new();
    encode(&[good], &v2_opts(|o| o.base_offset = i64::MAX - 1), &mut out).unwrap();
    let err = encode(&[good, good], &v2_opts(|o| o.base_offset = i64::MAX - 1), &mut out).unwrap_err();
    assert_eq!(err.argument(), Some("base_offset"));
}

#[test]
fn error_messages_read_well() {
    let err = encode(&[], &legacy_opts(1, |o| o.codec = Codec::Zstd), &mut Vec::new()).unwrap_err();
    assert_eq!(err.to_string(), "invalid codec: zstd needs magic 2 (magic is 1)");
    let err = encode(&[], &v2_opts(|o| o.records_per_batch = Some(0)), &mut Vec::new()).unwrap_err();
    assert_eq!(err.to_string(), "invalid records_per_batch: must be at least 1 (got 0)");
    let headers: [HeaderRef; 1] = [("h", None)];
    let r = RecordRef {
        key: None,
        value: None,
        timestamp: 0,
        headers: &headers,
    };
    let err = encode(&[r], &legacy_opts(0, |_| {}), &mut Vec::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "record 0: invalid headers: 1 header(s), but headers need magic 2 (magic is 0)"
    );
}

// ------------------------------------------------------ compressed (codecs)

/// A codec failure must leave `out` as it was and hand the offsets out again.
/// Holds with the stub codecs (which fail) and with the real ones (which succeed).
#[test]
fn codec_failure_is_all_or_nothing() {
    let vals = values(4, 10);
    let recs = plain_records(&vals, 0);
    for (magic, codec) in [(2, Codec::Gzip), (2, Codec::Zstd), (1, Codec::Snappy), (0, Codec::Lz4)] {
        let opts = legacy_opts(magic, |o| {
            o.codec = codec;
            o.records_per_batch = Some(2);
        });
        let mut out = b"keep".to_vec();
        match encode(&recs, &opts, &mut out) {
            Ok(s) => assert_eq!((s.batches, s.records), (2, 4)),
            Err(EncodeError::Compression { base_offset, .. }) => {
                assert_eq!(base_offset, 0);
                assert_eq!(out, b"keep");
            }
            Err(e) => panic!("{e}"),
        }
        let mut enc = Encoder::new(&opts).unwrap();
        enc.push(&recs[0]).unwrap();
        match enc.push(&recs[1]) {
            Ok(()) => assert_eq!(enc.next_offset(), 2),
            Err(EncodeError::Compression { .. }) => {
                assert_eq!(enc.next_offset(), 0, "the failed batch's offsets are reused");
                assert!(enc.completed().is_empty());
                assert_eq!(enc.open_records(), 0);
            }
            Err(e) => panic!("{e}"),
        }
    }
}

fn decompress(codec: Codec, payload: &[u8], magic: i8) -> Vec<u8> {
    let mut out = Vec::new();
    crate::compression::decompress(codec, payload, magic, 1 << 30, &mut out).unwrap();
    out
}

#[test]
fn v2_compressed_batches_hold_the_uncompressed_records() {
    let vals = values(30, 40);
    let headers: [HeaderRef; 1] = [("h", Some(b"1"))];
    let mut recs = plain_records(&vals, 1_000);
    recs[3].headers = &headers;
    let mut plain = Vec::new();
    encode(&recs, &v2_opts(|o| o.records_per_batch = Some(12)), &mut plain).unwrap();
    let plain = read_batches(&plain);
    for (codec, xerial) in [
        (Codec::Gzip, false),
        (Codec::Snappy, false),
        (Codec::Snappy, true),
        (Codec::Lz4, false),
        (Codec::Zstd, false),
    ] {
        let opts = v2_opts(|o| {
            o.codec = codec;
            o.compress.snappy_xerial = xerial;
            o.records_per_batch = Some(12);
        });
        let mut out = Vec::new();
        let s = encode(&recs, &opts, &mut out).unwrap();
        let batches = read_batches(&out);
        assert_eq!((s.batches, s.records, s.bytes), (3, 30, out.len() as u64));
        assert_eq!(batches.len(), plain.len());
        for (c, p) in batches.iter().zip(&plain) {
            assert_eq!(c.attributes, codec.id() as i16);
            assert_eq!(
                (
                    c.base_offset,
                    c.last_offset_delta,
                    c.base_timestamp,
                    c.max_timestamp,
                    c.record_count
                ),
                (
                    p.base_offset,
                    p.last_offset_delta,
                    p.base_timestamp,
                    p.max_timestamp,
                    p.record_count
                )
            );
            if codec == Codec::Snappy {
                assert_eq!(c.payload.starts_with(b"\x82SNAPPY\x00"), xerial, "snappy framing");
            }
            assert_eq!(decompress(codec, &c.payload, 2), p.payload, "{codec:?}");
        }
        let (streamed, _) = stream(&opts, &recs, 2);
        assert_eq!(streamed, out);
    }
}

/// The inner message set a v0/v1 wrapper holds for `recs` starting at `base_offset`.
fn inner_set(magic: i8, recs: &[RecordRef], base_offset: i64) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        let offset = if magic == 1 { i as i64 } else { base_offset + i as i64 };
        legacy::write_message(&mut out, offset, magic, 0, r.timestamp, r.key, r.value);
    }
    out
}

#[test]
fn legacy_compressed_wrappers() {
    let vals = values(5, 30);
    let mut recs = plain_records(&vals, 1_000);
    recs[1].timestamp = 5_000; // the max is not the last
    recs[2].key = Some(b"key");
    for magic in [0i8, 1] {
        for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4] {
            let opts = legacy_opts(magic, |o| {
                o.codec = codec;
                o.base_offset = 100;
                o.records_per_batch = Some(3);
            });
            let mut out = Vec::new();
            let s = encode(&recs, &opts, &mut out).unwrap();
            let wrappers = read_messages(&out);
            assert_eq!((s.batches, s.records, s.next_offset), (2, 5, 105));
            assert_eq!(wrappers.len(), 2);
            for (w, (chunk, base)) in wrappers.iter().zip([(&recs[..3], 100i64), (&recs[3..], 103)]) {
                assert_eq!(
                    w.offset,
                    base + chunk.len() as i64 - 1,
                    "wrapper offset = last inner offset"
                );
                assert_eq!((w.magic, w.attributes, w.key.clone()), (magic, codec.id() as i8, None));
                let max = chunk.iter().map(|r| r.timestamp).max().unwrap();
                assert_eq!(w.timestamp, (magic == 1).then_some(max));
                let value = w.value.as_ref().unwrap();
                if codec == Codec::Snappy {
                    assert!(value.starts_with(b"\x82SNAPPY\x00"), "legacy snappy is xerial-framed");
                }
                let inner = decompress(codec, value, magic);
                assert_eq!(inner, inner_set(magic, chunk, base), "{magic} {codec:?}");
                let inner: Vec<Message> = read_messages(&inner);
                assert!(inner.iter().all(|m| m.attributes == 0 && m.magic == magic));
            }
            let (streamed, _) = stream(&opts, &recs, 1);
            assert_eq!(streamed, out);
        }
    }
}

#[test]
fn legacy_v1_compressed_log_append_time() {
    let vals = values(3, 10);
    let recs = plain_records(&vals, 1_000);
    for (append, expected) in [(None, 1_002), (Some(7_777), 7_777)] {
        let opts = legacy_opts(1, |o| {
            o.codec = Codec::Gzip;
            o.timestamp_type = TimestampType::LogAppendTime;
            o.log_append_time = append;
        });
        let mut out = Vec::new();
        encode(&recs, &opts, &mut out).unwrap();
        let w = &read_messages(&out)[0];
        assert_eq!(
            (w.attributes, w.timestamp),
            (Codec::Gzip.id() as i8 | 0x08, Some(expected))
        );
        let inner = read_messages(&decompress(Codec::Gzip, w.value.as_ref().unwrap(), 1));
        let inner: Vec<(i8, Option<i64>)> = inner.iter().map(|m| (m.attributes, m.timestamp)).collect();
        assert_eq!(
            inner,
            [(0, Some(1_000)), (0, Some(1_001)), (0, Some(1_002))],
            "inner messages keep their own"
        );
    }
}

#[test]
fn compressed_batching_by_bytes_uses_uncompressed_sizes() {
    // 109-byte records as in batching_by_max_batch_bytes: compression does not change the split.
    let vals = values(7, 100);
    let recs: Vec<RecordRef> = vals.iter().map(|v| RecordRef::new(None, Some(v), 5)).collect();
    let mut out = Vec::new();
    encode(
        &recs,
        &v2_opts(|o| {
            o.codec = Codec::Lz4;
            o.max_batch_bytes = Some(61 + 3 * 109);
        }),
        &mut out,
    )
    .unwrap();
    let counts: Vec<i32> = read_batches(&out).iter().map(|b| b.record_count).collect();
    assert_eq!(counts, [3, 3, 1]);
    // Legacy: wrapper (12 + 22) + messages of 12 + 22 + 100.
    let mut out = Vec::new();
    encode(
        &recs,
        &legacy_opts(1, |o| {
            o.codec = Codec::Gzip;
            o.max_batch_bytes = Some(34 + 2 * 134);
        }),
        &mut out,
    )
    .unwrap();
    let offsets: Vec<i64> = read_messages(&out).iter().map(|m| m.offset).collect();
    assert_eq!(offsets, [1, 3, 5, 6]);
}

#[test]
fn test_reader_reads_records_it_is_given() {
    // Guard against the reader agreeing with the writer by accident: feed it hand bytes.
    let r = read_records(&[0x0c, 0x00, 0x06, 0x02, 0x01, 0x01, 0x00], 1);
    assert_eq!(
        (
            r[0].timestamp_delta,
            r[0].offset_delta,
            r[0].key.clone(),
            r[0].value.clone()
        ),
        (3, 1, None, None)
    );
    assert_eq!(reference_crc32c(b"123456789"), 0xe306_9283);
    assert_eq!(reference_crc32(b"123456789"), 0xcbf4_3926);
}

// -------------------------------------------------------------- throughput

/// Run with `cargo test --release --lib encode::tests::throughput -- --ignored --nocapture`.
#[test]
#[ignore = "timing; run in release with --nocapture"]
fn throughput_uncompressed_v2() {
    use std::time::Instant;
    const N: usize = 1_000_000;
    let value = [b'x'; 100];
    let keys: Vec<[u8; 8]> = (0..N as u64).map(|i| i.to_be_bytes()).collect();
    let recs: Vec<RecordRef> = (0..N)
        .map(|i| RecordRef::new(Some(&keys[i]), Some(&value), 1_700_000_000_000 + i as i64))
        .collect();
    let report = |what: &str, bytes: usize, secs: f64| {
        println!(
            "{what}: {N} records, {:.1} MB in {:.1} ms = {:.0} MB/s, {:.1} M records/s",
            bytes as f64 / 1e6,
            secs * 1e3,
            bytes as f64 / 1e6 / secs,
            N as f64 / 1e6 / secs
        );
    };
    for (name, opts) in [
        ("encode, one batch", EncodeOptions::default()),
        ("encode, 16 KiB batches", v2_opts(|o| o.max_batch_bytes = Some(16384))),
        (
            "encode, 1000-record batches",
            v2_opts(|o| o.records_per_batch = Some(1000)),
        ),
    ] {
        let mut best = f64::MAX;
        let mut len = 0;
        for _ in 0..5 {
            let mut out = Vec::new();
            let t = Instant::now();
            encode(&recs, &opts, &mut out).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
            len = out.len();
        }
        report(name, len, best);
    }
    // Into a reused buffer: without the page faults of a fresh 120 MB allocation.
    let opts = v2_opts(|o| o.max_batch_bytes = Some(16384));
    let mut out = Vec::new();
    let mut best = f64::MAX;
    for _ in 0..5 {
        out.clear();
        let t = Instant::now();
        encode(&recs, &opts, &mut out).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
    }
    report("encode, 16 KiB batches, reused output buffer", out.len(), best);
    // Streaming, draining finished batches every 8 MB as a file writer would.
    let opts = v2_opts(|o| o.max_batch_bytes = Some(16384));
    let mut best = f64::MAX;
    let mut total = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let mut enc = Encoder::with_buffer(&opts, Vec::with_capacity(16 << 20)).unwrap();
        let mut written = 0;
        for r in &recs {
            enc.push(r).unwrap();
            if enc.completed().len() >= 8 << 20 {
                written += std::hint::black_box(enc.completed()).len();
                enc.clear_completed();
            }
        }
        let (rest, _) = enc.finish().unwrap();
        written += rest.len();
        best = best.min(t.elapsed().as_secs_f64());
        total = written;
    }
    report("Encoder::push, 16 KiB batches, drained every 8 MB", total, best);
}
