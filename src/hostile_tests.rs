//! Hostile-input catalogue: real-shaped batches from
//! [`crate::encode`], every magic x codec, damaged in every way the format
//! allows, through [`crate::decode`]. Every case must end in either
//!
//! - an `Err(DecodeError)` naming the damaged batch (its `batch_position` is
//!   where that batch starts, and the message says so), or
//! - a reported truncated tail (`WalkEnd::Truncated` at that batch) with the
//!   rows of the batches before it,
//!
//! never a panic, a hang, or rows that are not in the bytes. Each damaged
//! batch sits between two good ones, so positions are never 0 by accident and
//! skip mode can be checked to keep both neighbours.
//!
//! Also here: decompression bombs (each codec, the default cap) and the
//! "nothing lost" property of skip mode.

use std::time::{Duration, Instant};

use arrow_array::{
    Array, BinaryArray, Int32Array, Int64Array, ListArray, StringArray, StructArray, TimestampMicrosecondArray,
};

use crate::batch::{BatchWalker, WalkEnd};
use crate::compression::{self, Codec, CompressOptions};
use crate::crc;
use crate::decode::{decode, DecodeOptions, Decoded, Isolation, OnError, DEFAULT_MAX_DECOMPRESSED_SIZE};
use crate::encode::{control_batch, encode, ControlKind, EncodeOptions, HeaderRef, RecordRef};
use crate::error::{DecodeError, ErrorKind};
use crate::varint::{read_varint, read_varlong, write_varint};

// ------------------------------------------------------------------ helpers

/// One output row (all columns but topic and partition).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    offset: i64,
    timestamp_us: i64,
    timestamp_type: i32,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn rows(decoded: &Decoded) -> Vec<Row> {
    fn col<T: 'static>(b: &arrow_array::RecordBatch, i: usize) -> &T {
        b.column(i).as_any().downcast_ref::<T>().expect("schema type")
    }
    fn bin(a: &BinaryArray, i: usize) -> Option<Vec<u8>> {
        a.is_valid(i).then(|| a.value(i).to_vec())
    }
    let mut out = Vec::new();
    for b in &decoded.chunks {
        let (key, value) = (col::<BinaryArray>(b, 0), col::<BinaryArray>(b, 1));
        let offset = col::<Int64Array>(b, 4);
        let ts = col::<TimestampMicrosecondArray>(b, 5);
        let ts_type = col::<Int32Array>(b, 6);
        let headers = col::<ListArray>(b, 7);
        for i in 0..b.num_rows() {
            let list = headers.value(i);
            let list = list.as_any().downcast_ref::<StructArray>().expect("struct");
            let hk = list.column(0).as_any().downcast_ref::<StringArray>().expect("utf8");
            let hv = list.column(1).as_any().downcast_ref::<BinaryArray>().expect("binary");
            out.push(Row {
                key: bin(key, i),
                value: bin(value, i),
                offset: offset.value(i),
                timestamp_us: ts.value(i),
                timestamp_type: ts_type.value(i),
                headers: (0..list.len()).map(|j| (hk.value(j).to_owned(), bin(hv, j))).collect(),
            });
        }
    }
    assert_eq!(out.len(), decoded.records);
    out
}

fn raise(crc: bool) -> DecodeOptions {
    DecodeOptions {
        validate_crc: crc,
        threads: 1,
        ..Default::default()
    }
}

fn skip(crc: bool) -> DecodeOptions {
    DecodeOptions {
        on_error: OnError::Skip,
        ..raise(crc)
    }
}

fn rows_of(data: &[u8]) -> Vec<Row> {
    rows(&decode(data, None, None, &raise(true)).expect("a good batch decodes"))
}

fn is_subsequence<T: PartialEq>(small: &[T], big: &[T]) -> bool {
    let mut it = big.iter();
    small.iter().all(|x| it.any(|y| y == x))
}

/// Every (magic, codec) the format has: 4 + 4 + 5 = 13 cells.
fn cells() -> Vec<(i8, Codec)> {
    let mut out = Vec::new();
    for magic in 0..=2i8 {
        for codec in [Codec::None, Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
            if codec != Codec::Zstd || magic == 2 {
                out.push((magic, codec));
            }
        }
    }
    out
}

const TS: i64 = 1_700_000_000_000;
const HEADERS: [HeaderRef<'static>; 2] = [("trace", Some(b"abc")), ("", None)];
const ONE_HEADER: [HeaderRef<'static>; 1] = [("h", Some(b""))];

/// Records with null, empty and non-empty keys and values (and, for v2, headers).
fn sample(magic: i8) -> Vec<RecordRef<'static>> {
    let (h2, h1): (&'static [HeaderRef<'static>], &'static [HeaderRef<'static>]) = if magic == 2 {
        (&HEADERS, &ONE_HEADER)
    } else {
        (&[], &[])
    };
    vec![
        RecordRef {
            key: Some(b"key-0"),
            value: Some(b"value-0"),
            timestamp: TS,
            headers: h2,
        },
        RecordRef {
            key: None,
            value: Some(b"payload payload payload payload payload"),
            timestamp: TS + 5,
            headers: &[],
        },
        RecordRef {
            key: Some(b""),
            value: None,
            timestamp: TS + 9,
            headers: h1,
        },
    ]
}

/// One batch of `cell` at `base_offset`. Uncompressed legacy messages are
/// each a batch of their own, so those get one record.
fn one_batch(magic: i8, codec: Codec, base_offset: i64) -> Vec<u8> {
    let records = sample(magic);
    let records = if magic < 2 && codec == Codec::None {
        &records[..1]
    } else {
        &records[..]
    };
    let mut out = Vec::new();
    encode(
        records,
        &EncodeOptions {
            magic,
            codec,
            base_offset,
            ..Default::default()
        },
        &mut out,
    )
    .expect("encode");
    assert_eq!(BatchWalker::new(&out).count(), 1);
    out
}

/// The good neighbours of a damaged batch.
fn neighbours() -> (Vec<u8>, Vec<u8>) {
    (one_batch(2, Codec::None, 0), one_batch(1, Codec::None, 1000))
}

/// Byte where the CRC-covered region starts (v2: the CRC field then
/// attributes..end; legacy: the CRC field then magic..end).
fn crc_field(magic: i8) -> usize {
    if magic == 2 {
        17
    } else {
        12
    }
}

/// Recompute the CRC of the batch at the start of `b` (its magic decides which).
fn fix_crc(b: &mut [u8]) {
    if b[16] == 2 {
        let c = crc::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&c.to_be_bytes());
    } else {
        let c = crc::crc32(&b[16..]);
        b[12..16].copy_from_slice(&c.to_be_bytes());
    }
}

fn set_i32(b: &mut [u8], at: usize, v: i32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// A v2 batch opened up: header, codec, uncompressed records.
struct OpenV2 {
    header: Vec<u8>,
    codec: Codec,
    records: Vec<u8>,
}

fn open_v2(batch: &[u8]) -> OpenV2 {
    let codec = Codec::from_id(batch[22] & 7).expect("codec");
    let mut records = Vec::new();
    compression::decompress(codec, &batch[61..], 2, 1 << 30, &mut records).expect("decompress");
    OpenV2 {
        header: batch[..61].to_vec(),
        codec,
        records,
    }
}

/// Compress the records again, patch the length, fix the CRC.
fn close_v2(v: &OpenV2) -> Vec<u8> {
    let mut b = v.header.clone();
    compression::compress(v.codec, &v.records, 2, CompressOptions::default(), &mut b).expect("compress");
    let len = (b.len() - 12) as i32;
    set_i32(&mut b, 8, len);
    fix_crc(&mut b);
    b
}

/// A legacy wrapper opened up: everything before the value, inner message set.
struct OpenWrapper {
    head: Vec<u8>,
    codec: Codec,
    inner: Vec<u8>,
}

fn value_at(b: &[u8]) -> usize {
    let key_at = if b[16] == 1 { 26 } else { 18 };
    let key_len = i32::from_be_bytes(b[key_at..key_at + 4].try_into().expect("4")).max(0) as usize;
    key_at + 4 + key_len
}

fn open_wrapper(batch: &[u8]) -> OpenWrapper {
    let codec = Codec::from_id(batch[17] & 7).expect("codec");
    let at = value_at(batch);
    let mut inner = Vec::new();
    compression::decompress(codec, &batch[at + 4..], batch[16] as i8, 1 << 30, &mut inner).expect("decompress");
    OpenWrapper {
        head: batch[..at].to_vec(),
        codec,
        inner,
    }
}

fn close_wrapper(w: &OpenWrapper) -> Vec<u8> {
    let mut b = w.head.clone();
    let mut value = Vec::new();
    let opts = CompressOptions {
        level: None,
        snappy_xerial: true,
    };
    compression::compress(w.codec, &w.inner, b[16] as i8, opts, &mut value).expect("compress");
    b.extend_from_slice(&(value.len() as i32).to_be_bytes());
    b.extend_from_slice(&value);
    let size = (b.len() - 12) as i32;
    set_i32(&mut b, 8, size);
    fix_crc(&mut b);
    b
}

/// A varint field of a v2 record: where it is and how long its encoding is.
#[derive(Debug, Clone, Copy)]
struct Field {
    name: &'static str,
    at: usize,
    len: usize,
    long: bool,
}

/// The varint fields of the records in `buf` (uncompressed v2 records).
fn v2_fields(buf: &[u8]) -> Vec<Field> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut field = |name, long: bool, pos: &mut usize| -> i64 {
        let at = *pos;
        let v = if long {
            read_varlong(buf, pos).expect("varlong")
        } else {
            i64::from(read_varint(buf, pos).expect("varint"))
        };
        out.push(Field {
            name,
            at,
            len: *pos - at,
            long,
        });
        v
    };
    while pos < buf.len() {
        field("record length", false, &mut pos);
        pos += 1; // attributes
        field("timestamp delta", true, &mut pos);
        field("offset delta", false, &mut pos);
        let k = field("key length", false, &mut pos);
        pos += k.max(0) as usize;
        let v = field("value length", false, &mut pos);
        pos += v.max(0) as usize;
        let n = field("header count", false, &mut pos);
        for _ in 0..n {
            let k = field("header key length", false, &mut pos);
            pos += k.max(0) as usize;
            let v = field("header value length", false, &mut pos);
            pos += v.max(0) as usize;
        }
    }
    out
}

fn replace(buf: &[u8], at: usize, len: usize, with: &[u8]) -> Vec<u8> {
    [&buf[..at], with, &buf[at + len..]].concat()
}

fn varint_bytes(v: i64, long: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if long {
        crate::varint::write_varlong(&mut out, v);
    } else {
        write_varint(&mut out, v as i32);
    }
    out
}

/// The outcome rule. `log` is `before ++ damaged ++ after`; the damaged batch
/// starts at `at`; `kept` are the rows of `before`. Raise mode: an error at
/// `at`, or a truncated tail at `at` with exactly `kept`. Skip mode: never an
/// error, the rows of `before` first, nothing but the neighbours' rows, the
/// first skipped batch at `at`. Returns whether raise mode failed.
///
/// `lenient` (only without CRC checks) is the rows of the undamaged log: a
/// batch whose length field was changed may then still decode to its own
/// records (gzip and lz4 ignore bytes after their last frame, as Kafka's
/// readers do), and the walk goes on from the wrong place. Then the rows
/// must still be ones the bytes hold, in order, and an error or truncated
/// tail may name a later (misaligned) position; never an earlier one.
fn judge(
    what: &str,
    log: &[u8],
    at: usize,
    kept: &[Row],
    neighbour_rows: &[Row],
    crc: bool,
    lenient: Option<&[Row]>,
) -> bool {
    let lenient = if crc { None } else { lenient };
    let failed = match decode(log, Some("t"), Some(0), &raise(crc)) {
        Err(e) if lenient.is_some() && e.batch_position > at => {
            assert_located(what, &e, e.batch_position);
            false
        }
        Err(e) => {
            assert_located(what, &e, at);
            true
        }
        Ok(out) => {
            let got = rows(&out);
            match (lenient, &out.end) {
                (
                    Some(all),
                    WalkEnd::Truncated { position, .. }
                    | WalkEnd::Broken(DecodeError {
                        batch_position: position,
                        ..
                    }),
                ) if *position > at => {
                    assert!(
                        got.starts_with(kept) && is_subsequence(&got, all),
                        "{what}: rows not in the bytes"
                    );
                }
                _ => {
                    assert!(
                        matches!(out.end, WalkEnd::Truncated { position, .. } if position == at),
                        "{what}: accepted (crc {crc}), walk end {:?}",
                        out.end
                    );
                    assert!(got == kept, "{what}: rows from before the damage differ");
                }
            }
            false
        }
    };
    let out = decode(log, None, None, &skip(crc)).unwrap_or_else(|e| panic!("{what}: skip mode failed: {e}"));
    let got = rows(&out);
    assert!(
        got.starts_with(kept),
        "{what}: skip mode lost the rows before the damage"
    );
    assert!(
        is_subsequence(&got, lenient.unwrap_or(neighbour_rows)),
        "{what}: skip mode returned rows from the damaged batch"
    );
    if let (Some(first), None) = (out.skipped.first(), lenient) {
        assert_located(what, first, at);
    }
    failed
}

fn assert_located(what: &str, e: &DecodeError, at: usize) {
    assert_eq!(e.batch_position, at, "{what}: error names the wrong batch: {e}");
    let text = e.to_string();
    assert!(
        text.contains(&format!("at byte {at}")),
        "{what}: message lacks the batch position: {text}"
    );
}

/// Place `damaged` between the good neighbours and judge it; `original` is
/// the undamaged batch (for the lenient rule without CRC checks).
fn judge_between(what: &str, damaged: &[u8], crc: bool, original: Option<&[u8]>) -> bool {
    let (before, after) = neighbours();
    let log = [&before[..], damaged, &after[..]].concat();
    let kept = rows_of(&before);
    let all = [kept.clone(), rows_of(&after)].concat();
    let lenient = original.map(|o| [kept.clone(), rows_of(o), rows_of(&after)].concat());
    judge(what, &log, before.len(), &kept, &all, crc, lenient.as_deref())
}

/// Judge a damaged length field: refused with CRCs checked; without, refused
/// or (see `judge`) decoded to the batch's own rows with the walk misaligned.
fn must_refuse(what: &str, damaged: &[u8], original: &[u8]) {
    assert!(
        judge_between(what, damaged, true, None) || truncated_here(damaged),
        "{what}: not refused with CRCs checked"
    );
    judge_between(what, damaged, false, Some(original));
}

/// Whether the damaged batch's length field runs past the neighbour after it
/// (then the walk reports a truncated tail, which `judge` has checked).
fn truncated_here(damaged: &[u8]) -> bool {
    let (_, after) = neighbours();
    let size = i32::from_be_bytes(damaged[8..12].try_into().expect("4"));
    size >= 0 && 12 + size as usize > damaged.len() + after.len()
}

// ---------------------------------------------------------- the catalogue

#[test]
fn empty_and_tiny_inputs() {
    let out = decode(&[], None, None, &raise(true)).expect("empty");
    assert_eq!((out.records, out.end.clone(), out.chunks.len()), (0, WalkEnd::Clean, 1));
    for len in 1..=16 {
        let out = decode(&vec![0xffu8; len], None, None, &raise(true)).expect("too short for a size field");
        assert_eq!(out.end, WalkEnd::Truncated { position: 0, len });
    }
}

#[test]
fn truncation_at_every_byte() {
    let mut cases = 0;
    for (magic, codec) in cells() {
        let (before, _) = neighbours();
        let batch = one_batch(magic, codec, 10);
        let kept = rows_of(&before);
        let whole = [&before[..], &batch[..]].concat();
        let all = rows_of(&whole);
        for cut in before.len()..whole.len() {
            let part = &whole[..cut];
            for options in [raise(true), raise(false), skip(true)] {
                let out = decode(part, None, None, &options)
                    .unwrap_or_else(|e| panic!("v{magic} {codec:?} cut at {cut}: {e}"));
                let want = if cut == before.len() {
                    WalkEnd::Clean
                } else {
                    WalkEnd::Truncated {
                        position: before.len(),
                        len: cut - before.len(),
                    }
                };
                assert_eq!(out.end, want, "v{magic} {codec:?} cut at {cut}");
                assert!(rows(&out) == kept, "v{magic} {codec:?} cut at {cut}: rows");
                cases += 1;
            }
        }
        assert!(rows(&decode(&whole, None, None, &raise(true)).expect("whole")) == all);
    }
    eprintln!("truncation_at_every_byte: {cases} cases");
}

/// A bit flip at every byte of every cell's batch. With CRCs checked, a flip
/// from the CRC field on is refused; a flip in the base offset (which Kafka
/// leaves outside the CRC, brokers rewrite it) moves offsets and nothing
/// else; a flip in the leader epoch changes nothing; a flip in the length is
/// refused or a truncated tail. Without CRC checks nothing panics and errors
/// are still located.
#[test]
fn bit_flip_at_every_byte() {
    let (before, after) = neighbours();
    let kept = rows_of(&before);
    let after_rows = rows_of(&after);
    let mut cases = 0;
    for (magic, codec) in cells() {
        let batch = one_batch(magic, codec, 10);
        let good = rows_of(&batch);
        let all = [kept.clone(), good.clone(), after_rows.clone()].concat();
        let neighbour_rows = [kept.clone(), after_rows.clone()].concat();
        for byte in 0..batch.len() {
            for bit in [0u8, 3, 7] {
                let mut bad = batch.clone();
                bad[byte] ^= 1 << bit;
                let log = [&before[..], &bad[..], &after[..]].concat();
                let what = format!("v{magic} {codec:?} flip {byte}:{bit}");
                cases += 1;
                if byte < 8 {
                    // Base offset: outside the CRC by design.
                    let out = decode(&log, None, None, &raise(true)).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let got = rows(&out);
                    assert_eq!(got.len(), all.len(), "{what}");
                    for (g, w) in got.iter().zip(&all) {
                        assert_eq!(
                            (&g.key, &g.value, g.timestamp_us, &g.headers),
                            (&w.key, &w.value, w.timestamp_us, &w.headers),
                            "{what}"
                        );
                    }
                } else if (12..16).contains(&byte) && magic == 2 {
                    // Partition leader epoch: outside the CRC, not in the rows.
                    let out = decode(&log, None, None, &raise(true)).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(rows(&out) == all, "{what}");
                } else {
                    // Length field, magic, CRC-covered bytes: refused.
                    judge(&what, &log, before.len(), &kept, &neighbour_rows, true, None);
                    // Without CRC checks: no panic, located errors, no rows
                    // before the damage lost.
                    let out = decode(&log, None, None, &skip(false)).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(rows(&out).starts_with(&kept), "{what}: lost rows before the damage");
                    if let Some(e) = out.skipped.first() {
                        assert_located(&what, e, before.len());
                    }
                }
            }
        }
    }
    eprintln!("bit_flip_at_every_byte: {cases} cases");
}

/// The batch length (size) field: -1, 0, below the minimum, off by one, huge.
#[test]
fn batch_length_field() {
    let mut cases = 0;
    for (magic, codec) in cells() {
        let batch = one_batch(magic, codec, 10);
        let len = (batch.len() - 12) as i32;
        for v in [
            -1,
            i32::MIN,
            0,
            1,
            13,
            14,
            21,
            48,
            49,
            len - 1,
            len + 1,
            len + 100,
            i32::MAX,
        ] {
            let mut bad = batch.clone();
            set_i32(&mut bad, 8, v);
            let what = format!("v{magic} {codec:?} batch length {v}");
            // With the CRC left alone and with it recomputed over the new extent
            // (where that extent exists): refused either way.
            must_refuse(&what, &bad, &batch);
            cases += 1;
        }
    }
    eprintln!("batch_length_field: {cases} cases");
}

/// Record count off by one, negative, zero and 2^31-1 (v2), CRC fixed so the
/// structure is what refuses.
#[test]
fn record_count_field() {
    let mut cases = 0;
    for codec in [Codec::None, Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
        let batch = one_batch(2, codec, 10);
        for v in [2, 4, 0, -1, i32::MIN, i32::MAX] {
            let mut bad = batch.clone();
            set_i32(&mut bad, 57, v);
            fix_crc(&mut bad);
            let what = format!("v2 {codec:?} record count {v}");
            assert!(judge_between(&what, &bad, true, None), "{what}: accepted");
            assert!(
                judge_between(&what, &bad, false, None),
                "{what}: accepted without CRC checks"
            );
            cases += 1;
        }
    }
    eprintln!("record_count_field: {cases} cases");
}

/// Every varint field of every v2 record set to -1, 0, 1, a little past the
/// record, i32::MAX and i32::MIN, inside compressed payloads too (recompressed,
/// CRC fixed): refused, unless the value is one the record can hold.
#[test]
fn v2_record_varint_fields() {
    let mut cases = 0;
    let mut refused = 0;
    for codec in [Codec::None, Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
        let batch = one_batch(2, codec, 10);
        let open = open_v2(&batch);
        for field in v2_fields(&open.records) {
            let mut pos = field.at;
            let original = if field.long {
                read_varlong(&open.records, &mut pos)
            } else {
                read_varint(&open.records, &mut pos).map(i64::from)
            };
            let original = original.expect("field");
            for v in [-1i64, 0, 1, 200, i64::from(i32::MAX), i64::from(i32::MIN), -2] {
                if v == original {
                    continue;
                }
                let records = replace(&open.records, field.at, field.len, &varint_bytes(v, field.long));
                let bad = close_v2(&OpenV2 {
                    records,
                    header: open.header.clone(),
                    codec,
                });
                let what = format!("v2 {codec:?} {} at {} = {v}", field.name, field.at);
                cases += 1;
                // Deltas are data: any value spelled in as many bytes decodes
                // (to what the bytes say).
                if matches!(field.name, "timestamp delta" | "offset delta")
                    && varint_bytes(v, field.long).len() == field.len
                {
                    let out = decode(&bad, None, None, &raise(true)).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(out.records, 3, "{what}");
                    continue;
                }
                // Null (any negative length) for empty (0), or the other way
                // round, or another negative, in a key, value or header value,
                // spelled in as many bytes, is the only change that still adds
                // up: it decodes, with that field null or empty.
                let legal = v <= 0
                    && original <= 0
                    && varint_bytes(v, false).len() == field.len
                    && matches!(field.name, "key length" | "value length" | "header value length");
                if legal {
                    let out = decode(&bad, None, None, &raise(true)).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(out.records, 3, "{what}");
                    continue;
                }
                assert!(judge_between(&what, &bad, true, None), "{what}: accepted");
                refused += 1;
            }
        }
    }
    assert!(refused > 100);
    eprintln!("v2_record_varint_fields: {cases} cases, {refused} refused");
}

/// Varints longer than Kafka allows (5 bytes for varint, 10 for varlong):
/// refused even when the value they spell is fine.
#[test]
fn overlong_varints() {
    let mut cases = 0;
    for codec in [Codec::None, Codec::Gzip, Codec::Zstd] {
        let batch = one_batch(2, codec, 10);
        let open = open_v2(&batch);
        for field in v2_fields(&open.records) {
            let mut pos = field.at;
            let mut spelled = Vec::new();
            // The same value padded with continuation bytes to 6 (varint) or 11 (varlong) bytes.
            let v = if field.long {
                read_varlong(&open.records, &mut pos).expect("v")
            } else {
                i64::from(read_varint(&open.records, &mut pos).expect("v"))
            };
            let mut z = if field.long {
                ((v << 1) ^ (v >> 63)) as u64
            } else {
                ((v as i32) << 1 ^ ((v as i32) >> 31)) as u32 as u64
            };
            let width = if field.long { 11 } else { 6 };
            for i in 0..width {
                let last = i == width - 1;
                spelled.push((z & 0x7f) as u8 | if last { 0 } else { 0x80 });
                z >>= 7;
            }
            let records = replace(&open.records, field.at, field.len, &spelled);
            let bad = close_v2(&OpenV2 {
                records,
                header: open.header.clone(),
                codec,
            });
            let what = format!("v2 {codec:?} overlong {}", field.name);
            assert!(judge_between(&what, &bad, true, None), "{what}: accepted");
            cases += 1;
        }
    }
    eprintln!("overlong_varints: {cases} cases");
}

/// A header count beyond what the record's remaining bytes can hold.
#[test]
fn header_count_beyond_remaining_bytes() {
    for codec in [Codec::None, Codec::Snappy, Codec::Lz4] {
        let batch = one_batch(2, codec, 10);
        let open = open_v2(&batch);
        for field in v2_fields(&open.records)
            .into_iter()
            .filter(|f| f.name == "header count")
        {
            for v in [3, 64, 1 << 20, i32::MAX] {
                let records = replace(&open.records, field.at, field.len, &varint_bytes(i64::from(v), false));
                let bad = close_v2(&OpenV2 {
                    records,
                    header: open.header.clone(),
                    codec,
                });
                let what = format!("v2 {codec:?} header count {v} at {}", field.at);
                let started = Instant::now();
                assert!(judge_between(&what, &bad, true, None), "{what}: accepted");
                assert!(started.elapsed() < Duration::from_secs(5), "{what}: slow");
            }
        }
    }
}

/// Legacy key and value int32 lengths: -1, 0, 1, past the end, i32::MAX,
/// i32::MIN; in plain messages and in the inner messages of wrappers
/// (recompressed, CRCs fixed).
#[test]
fn legacy_length_fields() {
    let mut cases = 0;
    for magic in [0i8, 1] {
        let plain = one_batch(magic, Codec::None, 10);
        let key_at = if magic == 1 { 26 } else { 18 };
        let value_len_at = value_at(&plain);
        for (name, at) in [("key length", key_at), ("value length", value_len_at)] {
            let original = i32::from_be_bytes(plain[at..at + 4].try_into().expect("4"));
            for v in [-1, 0, 1, original + 1, original - 1, 1000, i32::MAX, i32::MIN] {
                if v == original {
                    continue;
                }
                let mut bad = plain.clone();
                set_i32(&mut bad, at, v);
                fix_crc(&mut bad);
                let what = format!("v{magic} plain {name} {v}");
                assert!(judge_between(&what, &bad, true, None), "{what}: accepted");
                cases += 1;
            }
        }
        for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4] {
            let wrapper = one_batch(magic, codec, 10);
            let open = open_wrapper(&wrapper);
            // Inner messages: size field and key/value lengths of the first.
            let inner_key_at = if magic == 1 { 26 } else { 18 };
            let inner_size = i32::from_be_bytes(open.inner[8..12].try_into().expect("4"));
            let inner_value_at = value_at(&open.inner);
            for (name, at, original) in [
                ("inner size", 8, inner_size),
                (
                    "inner key length",
                    inner_key_at,
                    i32::from_be_bytes(open.inner[inner_key_at..inner_key_at + 4].try_into().expect("4")),
                ),
                (
                    "inner value length",
                    inner_value_at,
                    i32::from_be_bytes(open.inner[inner_value_at..inner_value_at + 4].try_into().expect("4")),
                ),
            ] {
                for v in [-1, 0, 1, 13, original + 1, original - 1, i32::MAX, i32::MIN] {
                    if v == original {
                        continue;
                    }
                    let mut inner = open.inner.clone();
                    set_i32(&mut inner, at, v);
                    let end = 12 + inner_size as usize;
                    let first_crc = crc::crc32(&inner[16..end]);
                    inner[12..16].copy_from_slice(&first_crc.to_be_bytes());
                    let bad = close_wrapper(&OpenWrapper {
                        head: open.head.clone(),
                        codec,
                        inner,
                    });
                    let what = format!("v{magic} {codec:?} {name} {v}");
                    assert!(judge_between(&what, &bad, true, None), "{what}: accepted");
                    cases += 1;
                }
            }
            // The wrapper's own value length.
            let at = value_at(&wrapper);
            let original = i32::from_be_bytes(wrapper[at..at + 4].try_into().expect("4"));
            for v in [-1, 0, 1, original - 1, original + 1, i32::MAX, i32::MIN] {
                let mut bad = wrapper.clone();
                set_i32(&mut bad, at, v);
                fix_crc(&mut bad);
                let what = format!("v{magic} {codec:?} wrapper value length {v}");
                assert!(judge_between(&what, &bad, true, None), "{what}: accepted");
                cases += 1;
            }
        }
    }
    eprintln!("legacy_length_fields: {cases} cases");
}

/// Unknown magic bytes and codec ids, CRC fixed where the format has one.
#[test]
fn unknown_magic_and_codec() {
    for (magic, codec) in cells() {
        let batch = one_batch(magic, codec, 10);
        for m in [3u8, 4, 0x7f, 0x80, 0xff] {
            let mut bad = batch.clone();
            bad[16] = m;
            let what = format!("v{magic} {codec:?} magic {m}");
            assert!(judge_between(&what, &bad, true, None));
            match decode(&bad, None, None, &raise(false)) {
                Err(e) => assert_eq!(e.kind, ErrorKind::Unsupported, "{what}"),
                Ok(out) => panic!("{what}: {:?}", out.end),
            }
        }
        let attributes_at = if magic == 2 { 22 } else { 17 };
        for id in 5..=7u8 {
            let mut bad = batch.clone();
            bad[attributes_at] = (bad[attributes_at] & !7) | id;
            fix_crc(&mut bad);
            let what = format!("v{magic} {codec:?} codec id {id}");
            assert!(judge_between(&what, &bad, true, None));
            let e = decode(&bad, None, None, &raise(true)).expect_err("unknown codec");
            assert_eq!(e.kind, ErrorKind::Unsupported, "{what}");
        }
    }
}

/// A legacy wrapper whose inner message is itself a compressed wrapper:
/// Kafka forbids nesting, so it is refused, not recursed into.
#[test]
fn nested_compression_in_legacy_wrappers() {
    for magic in [0i8, 1] {
        for outer in [Codec::Gzip, Codec::Snappy, Codec::Lz4] {
            for inner_codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4] {
                let inner = one_batch(magic, inner_codec, 0);
                let mut open = open_wrapper(&one_batch(magic, outer, 10));
                open.inner = inner;
                let bad = close_wrapper(&open);
                let what = format!("v{magic} {outer:?} around {inner_codec:?}");
                assert!(judge_between(&what, &bad, true, None), "{what}: accepted");
                let e = decode(&bad, None, None, &raise(true)).expect_err("nested");
                assert_eq!(e.kind, ErrorKind::Unsupported, "{what}: {e}");
            }
        }
    }
}

/// Control batches whose key is too short (or null) for a control record:
/// decoded as rows with include_control, hidden under read_committed, and
/// never mistaken for a COMMIT or ABORT.
#[test]
fn control_records_with_short_keys() {
    let txn = {
        let mut out = Vec::new();
        let opts = EncodeOptions {
            producer_id: 7,
            producer_epoch: 0,
            base_sequence: 0,
            transactional: true,
            ..Default::default()
        };
        encode(&sample(2)[..1], &opts, &mut out).expect("txn batch");
        out
    };
    for key in [None, Some(&b""[..]), Some(&b"\x00"[..]), Some(&b"\x00\x00\x00"[..])] {
        let mut ctl = Vec::new();
        control_batch(ControlKind::Abort, 7, 0, 1, 0, TS, 0, &mut ctl);
        let mut open = open_v2(&ctl);
        let field = v2_fields(&open.records)
            .into_iter()
            .find(|f| f.name == "key length")
            .expect("key length");
        // Replace key length + key (4 bytes) with the short key, fix the record length.
        let mut body = open.records[1..].to_vec(); // after the 1-byte record length
        let rel = field.at - 1;
        let mut new_key = varint_bytes(key.map_or(-1, |k| k.len() as i64), false);
        new_key.extend_from_slice(key.unwrap_or_default());
        body = replace(&body, rel, field.len + 4, &new_key);
        let mut records = varint_bytes(body.len() as i64, false);
        records.extend_from_slice(&body);
        open.records = records;
        let bad = close_v2(&open);
        let log = [&txn[..], &bad[..]].concat();
        // Read uncommitted: the transactional record shows; the control record only with include_control.
        assert_eq!(decode(&log, None, None, &raise(true)).expect("valid").records, 1);
        let with_control = DecodeOptions {
            include_control: true,
            ..raise(true)
        };
        assert_eq!(decode(&log, None, None, &with_control).expect("valid").records, 2);
        // Read committed: the short marker is no ABORT; the transaction stays open.
        let committed = |hide_open| DecodeOptions {
            isolation: Isolation::ReadCommitted {
                aborted: None,
                hide_open,
            },
            ..raise(true)
        };
        let out = decode(&log, None, None, &committed(false)).expect("valid");
        assert_eq!((out.records, out.hidden_batches), (1, 1), "key {key:?}");
        let out = decode(&log, None, None, &committed(true)).expect("valid");
        assert_eq!((out.records, out.hidden_batches), (0, 2), "key {key:?}");
    }
}

// -------------------------------------------------------------- bombs

/// A zstd frame of `blocks` RLE blocks of 128 KiB of zeros each, no content
/// size (as Java's ZstdOutputStream writes), or declaring it.
fn zstd_rle_bomb(blocks: usize, declare_size: bool) -> Vec<u8> {
    let mut f = vec![0x28, 0xB5, 0x2F, 0xFD];
    if declare_size {
        f.push(0xC0); // FCS 8 bytes, not single segment
        f.push((17 - 10) << 3); // window 128 KiB
        f.extend_from_slice(&((blocks as u64) << 17).to_le_bytes());
    } else {
        f.push(0x00);
        f.push((17 - 10) << 3);
    }
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = (128 * 1024) << 3 | 1 << 1 | last; // RLE block of 128 KiB
        f.extend_from_slice(&header.to_le_bytes()[..3]);
        f.push(0);
    }
    f
}

/// A gzip stream of `members` members, each 1 MiB of zeros.
fn gzip_bomb(members: usize) -> Vec<u8> {
    let mut one = Vec::new();
    compression::compress(
        Codec::Gzip,
        &vec![0u8; 1 << 20],
        2,
        CompressOptions::default(),
        &mut one,
    )
    .expect("gzip");
    one.repeat(members)
}

/// One lz4 frame (Kafka's layout, 64 KiB independent blocks) whose blocks
/// of 64 KiB of zeros repeat `blocks` times.
fn lz4_bomb(blocks: usize) -> Vec<u8> {
    let mut frame = Vec::new();
    compression::compress(
        Codec::Lz4,
        &vec![0u8; 64 * 1024],
        2,
        CompressOptions::default(),
        &mut frame,
    )
    .expect("lz4");
    // magic 4, FLG, BD, HC = 7 bytes; then one block; then the EndMark.
    let (head, rest) = frame.split_at(7);
    let block = &rest[..rest.len() - 4];
    let mut out = head.to_vec();
    for _ in 0..blocks {
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&[0; 4]);
    out
}

/// A raw snappy block claiming `claim` bytes, with a body of one literal.
fn snappy_claim(claim: u64) -> Vec<u8> {
    let mut b = Vec::new();
    let mut v = claim;
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
    b.extend_from_slice(&[0x00, 0x00]); // literal of length 1: 0
    b
}

/// A xerial snappy stream of `blocks` blocks of 1 MiB of zeros each (the
/// densest snappy there is, ~21:1).
fn snappy_xerial_bomb(blocks: usize) -> Vec<u8> {
    let mut one = Vec::new();
    compression::compress(
        Codec::Snappy,
        &vec![0u8; 1 << 20],
        2,
        CompressOptions::default(),
        &mut one,
    )
    .expect("snappy");
    let mut out = b"\x82SNAPPY\x00".to_vec();
    out.extend_from_slice(&1u32.to_be_bytes());
    out.extend_from_slice(&1u32.to_be_bytes());
    for _ in 0..blocks {
        out.extend_from_slice(&(one.len() as u32).to_be_bytes());
        out.extend_from_slice(&one);
    }
    out
}

/// A v2 batch (one claimed record) whose payload is `payload` under `codec`.
fn v2_with_payload(codec: Codec, payload: &[u8]) -> Vec<u8> {
    let mut b = one_batch(2, Codec::None, 0)[..61].to_vec();
    b[21..23].copy_from_slice(&i16::from(codec.id()).to_be_bytes());
    set_i32(&mut b, 57, 1);
    b.extend_from_slice(payload);
    let len = (b.len() - 12) as i32;
    set_i32(&mut b, 8, len);
    fix_crc(&mut b);
    b
}

/// Each bomb, as a payload and as a batch with the default cap: a
/// `Decompression` error naming the batch, in bounded time, with the output
/// buffer never past the cap.
#[test]
fn decompression_bombs_are_refused() {
    let gib = 1u64 << 30;
    let bombs: Vec<(&str, Codec, Vec<u8>, u64)> = vec![
        (
            "zstd, RLE blocks, no content size",
            Codec::Zstd,
            zstd_rle_bomb(8192, false),
            gib,
        ),
        (
            "zstd, RLE blocks, content size declared",
            Codec::Zstd,
            zstd_rle_bomb(8192, true),
            gib,
        ),
        ("gzip, 1024 members of 1 MiB", Codec::Gzip, gzip_bomb(1024), gib),
        ("lz4, one frame of 16384 blocks", Codec::Lz4, lz4_bomb(16384), gib),
        (
            "snappy raw block claiming 4 GiB",
            Codec::Snappy,
            snappy_claim((4 << 30) - 1),
            (4 << 30) - 1,
        ),
        (
            "snappy raw block claiming 300 MiB",
            Codec::Snappy,
            snappy_claim(300 << 20),
            300 << 20,
        ),
        (
            "snappy xerial, 300 blocks of 1 MiB",
            Codec::Snappy,
            snappy_xerial_bomb(300),
            300 << 20,
        ),
    ];
    assert_eq!(
        DecodeOptions::default().max_decompressed_size,
        DEFAULT_MAX_DECOMPRESSED_SIZE
    );
    for (what, codec, payload, inflates_to) in &bombs {
        assert!(
            payload.len() < 16 << 20,
            "{what}: the bomb itself is {} bytes",
            payload.len()
        );
        // The output buffer never grows past the cap (checked at 1 MiB, which
        // is quick unoptimised; the default cap runs through the batch below).
        let mut out = Vec::new();
        let r = compression::decompress(*codec, payload, 2, 1 << 20, &mut out);
        assert!(
            matches!(r, Err(compression::CodecError::TooLarge { .. })),
            "{what}: {r:?}"
        );
        assert!(
            out.capacity() <= (1 << 20) + 1,
            "{what}: buffer grew to {}",
            out.capacity()
        );
        let batch = v2_with_payload(*codec, payload);
        let log = [&one_batch(2, Codec::None, 0)[..], &batch[..]].concat();
        let started = Instant::now();
        let e = decode(&log, None, None, &DecodeOptions::default()).expect_err("bomb");
        let batch_time = started.elapsed();
        assert_eq!(e.kind, ErrorKind::Decompression, "{what}: {e}");
        assert_located(what, &e, log.len() - batch.len());
        // Generous: unoptimised, gzip takes ~30 s to inflate the 256 MiB cap
        // here; the release-build timings (and peak RSS) are tests/test_bombs.py's.
        assert!(batch_time < Duration::from_secs(120), "{what}: {batch_time:?}");
        eprintln!(
            "bomb {what}: {} payload bytes claiming {} MiB; refused in {batch_time:?}: {e}",
            payload.len(),
            inflates_to >> 20
        );
    }
    // The bombs are real: a cap above their size lets the zstd one through.
    let mut sink = std::io::sink();
    let n = std::io::copy(
        &mut zstd::stream::read::Decoder::new(&zstd_rle_bomb(64, false)[..]).expect("zstd"),
        &mut sink,
    )
    .expect("inflate");
    assert_eq!(n, 64 << 17);
}

// ------------------------------------------------------- nothing lost

mod nothing_lost {
    use super::*;
    use proptest::prelude::*;

    /// One record: optional key and value, timestamp, up to two headers.
    #[derive(Debug, Clone)]
    struct Rec {
        key: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
        timestamp: i64,
        headers: Vec<(String, Option<Vec<u8>>)>,
    }

    fn rec() -> impl Strategy<Value = Rec> {
        (
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..80)),
            0i64..4_000_000_000_000,
            proptest::collection::vec(
                (
                    "[a-z]{0,4}",
                    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..6)),
                ),
                0..3,
            ),
        )
            .prop_map(|(key, value, timestamp, headers)| Rec {
                key,
                value,
                timestamp,
                headers,
            })
    }

    fn cell() -> impl Strategy<Value = (i8, Codec)> {
        proptest::sample::select(cells())
    }

    /// Encode each group as its own batch(es), offsets running on.
    fn build(groups: &[((i8, Codec), Vec<Rec>)]) -> Vec<u8> {
        let mut log = Vec::new();
        let mut next = 0i64;
        for ((magic, codec), recs) in groups {
            let headers: Vec<Vec<HeaderRef>> = recs
                .iter()
                .map(|r| {
                    if *magic == 2 {
                        r.headers.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect()
                    } else {
                        Vec::new()
                    }
                })
                .collect();
            let refs: Vec<RecordRef> = recs
                .iter()
                .zip(&headers)
                .map(|(r, h)| RecordRef {
                    key: r.key.as_deref(),
                    value: r.value.as_deref(),
                    timestamp: r.timestamp,
                    headers: h,
                })
                .collect();
            let opts = EncodeOptions {
                magic: *magic,
                codec: *codec,
                base_offset: next,
                ..Default::default()
            };
            next = encode(&refs, &opts, &mut log).expect("encode").next_offset;
        }
        log
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// A multi-batch log with one batch damaged inside its CRC-covered
        /// region: skip mode returns exactly the records of every other
        /// batch and reports the damaged one at its position.
        #[test]
        fn skip_mode_loses_nothing_but_the_damaged_batch(
            groups in proptest::collection::vec((cell(), proptest::collection::vec(rec(), 1..5)), 2..7),
            victim in any::<prop::sample::Index>(),
            spot in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let log = build(&groups);
            let spans: Vec<(usize, usize)> = BatchWalker::new(&log).map(|b| (b.position, b.position + b.bytes.len())).collect();
            let (start, end) = spans[victim.index(spans.len())];
            let first = start + crc_field(log[start + 16] as i8);
            let at = first + spot.index(end - first);
            let mut bad = log.clone();
            bad[at] ^= flip;

            let mut want = Vec::new();
            for &(s, e) in &spans {
                if s != start {
                    want.extend(rows_of(&log[s..e]));
                }
            }
            let out = decode(&bad, None, None, &skip(true)).expect("skip mode never fails");
            prop_assert_eq!(&out.end, &WalkEnd::Clean);
            prop_assert_eq!(out.skipped.len(), 1);
            prop_assert_eq!(out.skipped[0].batch_position, start);
            prop_assert_eq!(out.skipped_bytes, end - start);
            prop_assert!(rows(&out) == want, "rows of the undamaged batches differ");
            // Raise mode stops at the damaged batch, naming it.
            let e = decode(&bad, None, None, &raise(true)).expect_err("damaged");
            assert_located("raise", &e, start);
        }
    }
}
