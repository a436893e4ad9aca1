//! v2 records (spec "Record"), read straight out of the batch (or the
//! decompressed payload) without copying:
//!
//! ```text
//! length: varint            attributes: int8
//! timestampDelta: varlong   offsetDelta: varint
//! keyLength: varint         key: byte[]      (-1 = null)
//! valueLen: varint          value: byte[]    (-1 = null)
//! headers count: varint     [headerKeyLength varint, key utf8, headerValueLength varint, value]
//! ```
//! Rules follow Kafka's `DefaultRecord.readFrom`: a record must use exactly
//! its declared length, header key lengths must not be negative, and the batch
//! must hold exactly `record count` records.

use crate::error::LocalError;
use crate::varint::{read_varint, read_varlong, read_zigzag, unzigzag32};

/// Receives decoded records. For each record, `header` is called once per
/// header (in order), then `record` once. Header keys are the raw bytes: a
/// sink turns them into text (Kafka's Java client decodes them as UTF-8 with
/// replacement characters); the Arrow sink validates a whole column at once.
pub trait RecordSink {
    fn header(&mut self, key: &[u8], value: Option<&[u8]>);
    fn record(&mut self, record: &RecordFields);
}

/// Everything about one record but its headers.
#[derive(Debug, Clone, Copy)]
pub struct RecordFields<'a> {
    pub offset: i64,
    /// Milliseconds since the epoch; -1 when none (v0).
    pub timestamp: i64,
    pub timestamp_type: i8,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// The producer sequence of this record, -1 when the batch has none.
    pub sequence: i32,
    pub header_count: usize,
}

/// Batch-level context a record needs.
#[derive(Debug, Clone, Copy)]
pub struct RecordContext {
    pub base_offset: i64,
    pub base_timestamp: i64,
    /// `Some(max_timestamp)` for LogAppendTime batches: every record gets it.
    pub log_append_time: Option<i64>,
    pub timestamp_type: i8,
    pub base_sequence: i32,
}

/// How far into the next batch `read_records` prefetches, relative to its
/// position in this one.
const READ_AHEAD_BYTES: usize = 2048;

/// Read exactly `count` records from `buf` into `sink`. Errors carry the byte
/// position within `buf`.
pub fn read_records<S: RecordSink>(
    buf: &[u8],
    count: usize,
    ctx: &RecordContext,
    sink: &mut S,
) -> Result<(), LocalError> {
    let mut pos = 0usize;
    for index in 0..count {
        if pos >= buf.len() {
            return Err(LocalError::corrupt(
                pos,
                format!("batch declares {count} records but its data ends after {index}"),
            ));
        }
        // The bytes after `buf` are the next batch when `buf` is an
        // uncompressed batch's records: start loading them, so its CRC pass
        // finds them cached (see `memory::prefetch`; harmless otherwise).
        crate::memory::prefetch(buf.as_ptr().wrapping_add(buf.len() + pos + READ_AHEAD_BYTES));
        crate::memory::prefetch(buf.as_ptr().wrapping_add(buf.len() + pos + READ_AHEAD_BYTES + 64));
        pos = read_record(buf, pos, index, ctx, sink)?;
    }
    if pos != buf.len() {
        return Err(LocalError::corrupt(
            pos,
            format!(
                "incorrect declared batch size: {} bytes remain after the {count} declared records",
                buf.len() - pos
            ),
        ));
    }
    Ok(())
}

/// Read the record starting at `start`; return where the next one starts.
///
/// Positions are passed by value and errors built in `#[cold]` functions:
/// this is the innermost loop, and a position whose address a closure
/// captures lives on the stack instead of in a register.
#[inline(always)]
fn read_record<S: RecordSink>(
    buf: &[u8],
    start: usize,
    index: usize,
    ctx: &RecordContext,
    sink: &mut S,
) -> Result<usize, LocalError> {
    let Some((zigzag, body_start)) = zigzag_at(buf, start) else {
        return Err(bad_varint(start, index, "length"));
    };
    // Odd: a negative length. A length fits 31 bits.
    let length = (zigzag >> 1) as usize;
    if zigzag & 1 == 1 || length > buf.len() - body_start {
        return Err(bad_length(start, index, unzigzag32(zigzag), buf.len() - body_start));
    }
    // Everything below reads from `body` only, so a field can never run into
    // the next record.
    let body_end = body_start + length;
    let body = &buf[..body_end];
    let pos = body_start + 1; // attributes: unused since v2 (spec "Record")
    if pos > body_end {
        return Err(short(start, index, "attributes"));
    }
    let Some((timestamp_delta, pos)) = varlong(body, pos) else {
        return Err(bad_varint(pos, index, "timestampDelta"));
    };
    let Some((offset_delta, pos)) = varint(body, pos) else {
        return Err(bad_varint(pos, index, "offsetDelta"));
    };
    let (key, pos) = read_bytes(body, pos, index, "key")?;
    let (value, header_count_at) = read_bytes(body, pos, index, "value")?;
    let Some((header_count, mut pos)) = varint(body, header_count_at) else {
        return Err(bad_varint(header_count_at, index, "header count"));
    };
    // Each header takes at least 2 bytes; a count beyond that is corrupt, and
    // checking it first keeps a hostile count from driving a long loop.
    if header_count < 0 || header_count as usize > (body_end - pos) / 2 {
        return Err(bad_header_count(header_count_at, index, header_count, body_end - pos));
    }
    for _ in 0..header_count {
        let key_at = pos;
        let Some((zigzag, at)) = zigzag_at(body, pos) else {
            return Err(bad_varint(key_at, index, "header key length"));
        };
        // Odd: negative (the key is a string: never null).
        if zigzag & 1 == 1 {
            return Err(negative_header_key(key_at, index, unzigzag32(zigzag)));
        }
        let key_len = zigzag >> 1;
        let Some(key_bytes) = body.get(at..at + key_len as usize) else {
            return Err(short(key_at, index, "header key"));
        };
        let (header_value, next) = read_bytes(body, at + key_len as usize, index, "header value")?;
        pos = next;
        sink.header(key_bytes, header_value);
    }
    if pos != body_end {
        return Err(LocalError::corrupt(
            start,
            format!(
                "invalid record size: record {index} declares {length} bytes but its fields use {}",
                pos - body_start
            ),
        ));
    }
    let timestamp = match ctx.log_append_time {
        Some(t) => t,
        None => ctx.base_timestamp.wrapping_add(timestamp_delta),
    };
    let sequence = if ctx.base_sequence >= 0 {
        crate::batch::increment_sequence(ctx.base_sequence, offset_delta)
    } else {
        -1
    };
    sink.record(&RecordFields {
        offset: ctx.base_offset.wrapping_add(offset_delta as i64),
        timestamp,
        timestamp_type: ctx.timestamp_type,
        key,
        value,
        sequence,
        header_count: header_count as usize,
    });
    Ok(body_end)
}

#[inline(always)]
fn varint(buf: &[u8], mut pos: usize) -> Option<(i32, usize)> {
    read_varint(buf, &mut pos).map(|v| (v, pos))
}

#[inline(always)]
fn zigzag_at(buf: &[u8], mut pos: usize) -> Option<(u32, usize)> {
    read_zigzag(buf, &mut pos).map(|v| (v, pos))
}

#[inline(always)]
fn varlong(buf: &[u8], mut pos: usize) -> Option<(i64, usize)> {
    read_varlong(buf, &mut pos).map(|v| (v, pos))
}

/// A varint length then that many bytes (a negative length is null), and
/// the position after them.
#[inline(always)]
fn read_bytes<'a>(
    buf: &'a [u8],
    at: usize,
    index: usize,
    field: &'static str,
) -> Result<(Option<&'a [u8]>, usize), LocalError> {
    let Some((zigzag, pos)) = zigzag_at(buf, at) else {
        return Err(bad_varint(at, index, field));
    };
    // Odd: negative, which Kafka reads as null (DefaultRecord.readFrom).
    if zigzag & 1 == 1 {
        return Ok((None, pos));
    }
    let len = (zigzag >> 1) as usize;
    match buf.get(pos..pos + len) {
        Some(bytes) => Ok((Some(bytes), pos + len)),
        None => Err(past_end(at, index, field, len)),
    }
}

#[cold]
fn negative_header_key(at: usize, index: usize, length: i32) -> LocalError {
    LocalError::corrupt(at, format!("record {index} has a negative header key length {length}"))
}

#[cold]
fn bad_length(at: usize, index: usize, length: i32, remaining: usize) -> LocalError {
    LocalError::corrupt(
        at,
        format!("record {index} declares length {length} but only {remaining} bytes remain"),
    )
}

#[cold]
fn bad_header_count(at: usize, index: usize, count: i32, remaining: usize) -> LocalError {
    LocalError::corrupt(
        at,
        format!("record {index} declares {count} headers but only {remaining} bytes remain"),
    )
}

#[cold]
fn past_end(at: usize, index: usize, field: &str, len: usize) -> LocalError {
    LocalError::corrupt(
        at,
        format!("record {index}: {field} length {len} runs past the record's end"),
    )
}

#[cold]
fn bad_varint(at: usize, index: usize, field: &str) -> LocalError {
    LocalError::corrupt(
        at,
        format!("record {index}: {field} is not a valid varint or runs past the record's end"),
    )
}

#[cold]
fn short(at: usize, index: usize, field: &str) -> LocalError {
    LocalError::corrupt(at, format!("record {index}: {field} runs past the record's end"))
}

/// A sink that keeps owned records, for the convenience API and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OwnedRecord {
    pub offset: i64,
    pub timestamp: i64,
    pub timestamp_type: i8,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub sequence: i32,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

#[derive(Debug, Default)]
pub struct OwnedRecords {
    pub records: Vec<OwnedRecord>,
    pending_headers: Vec<(String, Option<Vec<u8>>)>,
}

impl RecordSink for OwnedRecords {
    fn header(&mut self, key: &[u8], value: Option<&[u8]>) {
        // As Kafka's Java client: invalid UTF-8 becomes replacement characters.
        self.pending_headers
            .push((String::from_utf8_lossy(key).into_owned(), value.map(<[u8]>::to_vec)));
    }

    fn record(&mut self, r: &RecordFields) {
        self.records.push(OwnedRecord {
            offset: r.offset,
            timestamp: r.timestamp,
            timestamp_type: r.timestamp_type,
            key: r.key.map(<[u8]>::to_vec),
            value: r.value.map(<[u8]>::to_vec),
            sequence: r.sequence,
            headers: std::mem::take(&mut self.pending_headers),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::record;

    const CTX: RecordContext = RecordContext {
        base_offset: 100,
        base_timestamp: 1_000,
        log_append_time: None,
        timestamp_type: 0,
        base_sequence: -1,
    };

    fn read(buf: &[u8], count: usize, ctx: &RecordContext) -> Result<Vec<OwnedRecord>, LocalError> {
        let mut sink = OwnedRecords::default();
        read_records(buf, count, ctx, &mut sink).map(|_| sink.records)
    }

    #[test]
    fn reads_fields_nulls_and_headers_in_order() {
        let mut buf = record(0, 0, None, Some(b""), &[]);
        buf.extend(record(
            7,
            1,
            Some(b"k"),
            None,
            &[("h", Some(b"1")), ("h", None), ("\u{e9}", Some(b""))],
        ));
        let got = read(&buf, 2, &CTX).expect("valid records");
        assert_eq!(got[0].key, None);
        assert_eq!(got[0].value, Some(vec![]));
        assert_eq!((got[0].offset, got[0].timestamp), (100, 1_000));
        assert_eq!((got[1].offset, got[1].timestamp), (101, 1_007));
        assert_eq!(got[1].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(
            got[1].headers,
            vec![
                ("h".into(), Some(b"1".to_vec())),
                ("h".into(), None),
                ("\u{e9}".into(), Some(vec![]))
            ]
        );
    }

    #[test]
    fn log_append_time_and_sequences() {
        let buf = [record(5, 0, None, None, &[]), record(9, 2, None, None, &[])].concat();
        let ctx = RecordContext {
            log_append_time: Some(77),
            timestamp_type: 1,
            base_sequence: i32::MAX - 1,
            ..CTX
        };
        let got = read(&buf, 2, &ctx).expect("valid records");
        assert!(got.iter().all(|r| r.timestamp == 77 && r.timestamp_type == 1));
        assert_eq!((got[0].sequence, got[1].sequence), (i32::MAX - 1, 0));
    }

    #[test]
    fn count_and_length_mismatches_are_corrupt() {
        let buf = [record(0, 0, None, Some(b"a"), &[]), record(0, 1, None, Some(b"b"), &[])].concat();
        assert!(read(&buf, 3, &CTX).unwrap_err().reason.contains("declares 3 records"));
        assert!(read(&buf, 1, &CTX).unwrap_err().reason.contains("remain after"));
        // Declared length one byte longer than the fields: Kafka rejects it.
        let mut long = record(0, 0, None, Some(b"a"), &[]);
        long[0] += 2;
        long.push(0);
        assert!(read(&long, 1, &CTX).unwrap_err().reason.contains("invalid record size"));
        // Header count far beyond the bytes.
        let mut many = record(0, 0, None, None, &[]);
        let last = many.len() - 1;
        many[last] = 0x7e; // 63 headers
        assert!(read(&many, 1, &CTX).unwrap_err().reason.contains("63 headers"));
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let buf = record(3, 0, Some(b"key"), Some(b"value"), &[("a", Some(b"b"))]);
        for cut in 0..buf.len() {
            assert!(read(&buf[..cut], 1, &CTX).is_err(), "cut at {cut}");
        }
        assert!(read(&buf, 1, &CTX).is_ok());
    }
}
