//! Legacy message sets, magic v0 and v1 (spec "Message Set", old format):
//!
//! ```text
//! offset: int64  size: int32  crc: uint32 (CRC32 of magic..end)
//! magic: int8  attributes: int8  [v1: timestamp int64]
//! key: int32 length + bytes (-1 = null)  value: int32 length + bytes (-1 = null)
//! ```
//! A compressed message is a *wrapper*: its value is a compressed inner
//! message set. As in Kafka's Java client, each uncompressed message and each
//! wrapper is one batch. Inner offsets (Kafka's `AbstractLegacyRecordBatch`):
//! v1 wrappers hold relative inner offsets and the absolute offset of the
//! last inner message, so absolute = wrapper offset − last relative + relative;
//! v0 inner offsets are absolute. A v1 LogAppendTime wrapper gives every inner
//! message its own timestamp.

use crate::batch::{
    be_i32, be_i64, be_u32, BatchHeader, RawBatch, CODEC_MASK, CREATE_TIME, LOG_APPEND_TIME, LOG_OVERHEAD, MIN_SIZE,
    NO_TIMESTAMP_TYPE, TIMESTAMP_TYPE_BIT,
};
use crate::compression::{self, Codec};
use crate::crc;
use crate::error::{DecodeError, ErrorKind, LocalError};
use crate::record::{RecordFields, RecordSink};

/// Bytes a v1 message needs beyond v0's: the timestamp.
const V1_EXTRA: usize = 8;

/// One legacy message, its fields borrowed from the buffer.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    pub offset: i64,
    pub crc: u32,
    pub crc_valid: bool,
    pub magic: i8,
    pub attributes: i8,
    /// -1 for v0.
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

impl Message<'_> {
    pub fn codec_id(&self) -> u8 {
        (self.attributes as i16 & CODEC_MASK) as u8
    }

    pub fn timestamp_type(&self) -> i8 {
        if self.magic == 0 {
            NO_TIMESTAMP_TYPE
        } else if self.attributes as i16 & TIMESTAMP_TYPE_BIT != 0 {
            LOG_APPEND_TIME
        } else {
            CREATE_TIME
        }
    }
}

/// Parse one framed message (`offset`, `size` and body: exactly `bytes`).
/// With `validate_crc`, the CRC is checked before any field is read, as
/// Kafka's `LegacyRecord.ensureValid` does, so damage shows as a CRC mismatch.
/// Errors carry positions relative to `bytes`.
pub fn parse_message(bytes: &[u8], validate_crc: bool) -> Result<Message<'_>, LocalError> {
    if bytes.len() < LOG_OVERHEAD + MIN_SIZE {
        return Err(LocalError::corrupt(
            8,
            format!(
                "message size {} is below the v0 minimum ({MIN_SIZE})",
                bytes.len().saturating_sub(LOG_OVERHEAD)
            ),
        ));
    }
    let offset = be_i64(bytes, 0);
    let crc = be_u32(bytes, 12);
    let computed = crc::crc32(&bytes[16..]);
    if validate_crc && computed != crc {
        return Err(LocalError {
            kind: ErrorKind::CrcMismatch,
            at: 12,
            reason: format!("stored CRC {crc:#010x} does not match computed {computed:#010x}"),
        });
    }
    let magic = bytes[16] as i8;
    if !(0..=1).contains(&magic) {
        return Err(LocalError {
            kind: ErrorKind::Unsupported,
            at: 16,
            reason: format!("unknown magic {magic} in a legacy message"),
        });
    }
    let attributes = bytes[17] as i8;
    let mut pos = 18;
    let timestamp = if magic == 1 {
        if bytes.len() < LOG_OVERHEAD + MIN_SIZE + V1_EXTRA {
            return Err(LocalError::corrupt(8, "message size is below the v1 minimum (22)"));
        }
        pos += 8;
        be_i64(bytes, 18)
    } else {
        -1
    };
    let key = sized_bytes(bytes, &mut pos, "key")?;
    let value = sized_bytes(bytes, &mut pos, "value")?;
    if pos != bytes.len() {
        return Err(LocalError::corrupt(
            pos,
            format!("{} bytes remain after the message's value", bytes.len() - pos),
        ));
    }
    Ok(Message {
        offset,
        crc,
        crc_valid: computed == crc,
        magic,
        attributes,
        timestamp,
        key,
        value,
    })
}

/// An int32 length then that many bytes; -1 (any negative) is null.
fn sized_bytes<'a>(bytes: &'a [u8], pos: &mut usize, field: &str) -> Result<Option<&'a [u8]>, LocalError> {
    let at = *pos;
    if bytes.len() < at + 4 {
        return Err(LocalError::corrupt(
            at,
            format!("{field} length runs past the message's end"),
        ));
    }
    let len = be_i32(bytes, at);
    *pos += 4;
    if len < 0 {
        return Ok(None);
    }
    let end = *pos + len as usize;
    if end > bytes.len() {
        return Err(LocalError::corrupt(
            at,
            format!(
                "{field} length {len} runs past the message's end ({} bytes left)",
                bytes.len() - *pos
            ),
        ));
    }
    let slice = &bytes[*pos..end];
    *pos = end;
    Ok(Some(slice))
}

/// Decode one legacy batch (a message or a compressed wrapper) into `sink`
/// (when given) and return its header. `scratch` receives the decompressed
/// inner message set.
pub fn decode_legacy<S: RecordSink>(
    raw: &RawBatch,
    validate_crc: bool,
    max_decompressed_size: usize,
    scratch: &mut Vec<u8>,
    sink: Option<&mut S>,
) -> Result<BatchHeader, DecodeError> {
    let outer_offset = raw.first_offset_field();
    let at = |e: LocalError| e.locate(raw.position, Some(outer_offset), raw.position, false);
    let msg = parse_message(raw.bytes, validate_crc).map_err(at)?;
    let codec = Codec::from_id(msg.codec_id()).map_err(|id| {
        DecodeError::new(
            ErrorKind::Unsupported,
            raw.position,
            Some(msg.offset),
            raw.position + 17,
            format!("unknown compression codec id {id} in a v{} message", msg.magic),
        )
    })?;
    let mut header = BatchHeader {
        position: raw.position,
        size_in_bytes: raw.bytes.len(),
        magic: msg.magic,
        base_offset: msg.offset,
        last_offset: msg.offset,
        partition_leader_epoch: None,
        crc: msg.crc,
        crc_valid: msg.crc_valid,
        attributes: msg.attributes as u8 as i16,
        codec,
        timestamp_type: msg.timestamp_type(),
        is_transactional: false,
        is_control: false,
        delete_horizon_ms: None,
        base_timestamp: msg.timestamp,
        max_timestamp: msg.timestamp,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        record_count: 1,
    };
    if codec == Codec::None {
        if let Some(sink) = sink {
            sink.record(&fields(&msg, msg.offset, msg.timestamp, msg.timestamp_type()));
        }
        return Ok(header);
    }

    // A compressed wrapper.
    let payload = msg.value.ok_or_else(|| {
        header.error(
            ErrorKind::Corrupt,
            raw.position,
            format!("compressed v{} message has a null value", msg.magic),
        )
    })?;
    compression::decompress(codec, payload, msg.magic, max_decompressed_size, scratch)
        .map_err(|e| header.error(ErrorKind::Decompression, raw.position, e.to_string()))?;
    let inner = read_inner(scratch, validate_crc).map_err(|e| e.locate(raw.position, Some(msg.offset), 0, true))?;
    let (first, last) = match (inner.first(), inner.last()) {
        (Some(f), Some(l)) => (f, l),
        _ => {
            return Err(header.error(
                ErrorKind::Corrupt,
                raw.position,
                "compressed message set has no inner messages",
            ))
        }
    };
    // v1: inner offsets are relative and the wrapper holds the absolute offset
    // of the last one, once a broker has assigned it. A producer's wrapper
    // (offset 0, inner 0..n-1) gives a negative base: Kafka's deep iterator
    // (`AbstractLegacyRecordBatch`, `absoluteBaseOffset >= 0`) and kafka-python
    // then keep the inner offsets as they are, and so do we.
    let offset_base = if msg.magic >= 1 {
        absolute_base_offset(msg.offset, last.offset)
    } else {
        0
    };
    header.base_offset = offset_base.wrapping_add(first.offset);
    header.record_count = inner.len() as i32;
    if let Some(sink) = sink {
        let log_append_time = msg.magic >= 1 && msg.timestamp_type() == LOG_APPEND_TIME;
        for m in &inner {
            let (timestamp, timestamp_type) = if log_append_time {
                (msg.timestamp, LOG_APPEND_TIME)
            } else if msg.magic == 0 {
                (-1, NO_TIMESTAMP_TYPE)
            } else {
                (m.timestamp, m.timestamp_type())
            };
            sink.record(&fields(
                m,
                offset_base.wrapping_add(m.offset),
                timestamp,
                timestamp_type,
            ));
        }
    }
    Ok(header)
}

/// What a v1 wrapper's inner relative offsets are shifted by: the wrapper's
/// offset minus the last inner offset when that is >= 0, else 0 (the
/// wrapper's offset was never assigned by a broker).
fn absolute_base_offset(wrapper_offset: i64, last_inner_offset: i64) -> i64 {
    let base = wrapper_offset.wrapping_sub(last_inner_offset);
    if base >= 0 {
        base
    } else {
        0
    }
}

fn fields<'a>(m: &Message<'a>, offset: i64, timestamp: i64, timestamp_type: i8) -> RecordFields<'a> {
    RecordFields {
        offset,
        timestamp,
        timestamp_type,
        key: m.key,
        value: m.value,
        sequence: -1,
        header_count: 0,
    }
}

/// The inner messages of a decompressed wrapper; inner messages must be
/// complete, uncompressed and (when asked) have valid CRCs.
fn read_inner(set: &[u8], validate_crc: bool) -> Result<Vec<Message<'_>>, LocalError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < set.len() {
        if set.len() - pos < LOG_OVERHEAD {
            return Err(LocalError::corrupt(
                pos,
                "the inner message set ends inside a message header",
            ));
        }
        let size = be_i32(set, pos + 8);
        if size < MIN_SIZE as i32 || size as usize > set.len() - pos - LOG_OVERHEAD {
            return Err(LocalError::corrupt(
                pos + 8,
                format!(
                    "inner message size {size} does not fit the {} remaining bytes",
                    set.len() - pos - LOG_OVERHEAD
                ),
            ));
        }
        let end = pos + LOG_OVERHEAD + size as usize;
        let m = parse_message(&set[pos..end], validate_crc).map_err(|e| LocalError {
            at: pos + e.at,
            reason: format!("inner message: {}", e.reason),
            ..e
        })?;
        if m.codec_id() != 0 {
            return Err(LocalError {
                kind: ErrorKind::Unsupported,
                at: pos + 17,
                reason: "inner messages of a compressed message set must not be compressed".into(),
            });
        }
        out.push(m);
        pos = end;
    }
    Ok(out)
}

/// Lay out one legacy message (for tests here and in other modules).
#[cfg(test)]
pub(crate) fn message(
    offset: i64,
    magic: i8,
    attributes: i8,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut body = vec![magic as u8, attributes as u8];
    if magic == 1 {
        body.extend_from_slice(&timestamp.to_be_bytes());
    }
    for field in [key, value] {
        match field {
            Some(b) => {
                body.extend_from_slice(&(b.len() as i32).to_be_bytes());
                body.extend_from_slice(b);
            }
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(&crc::crc32(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::BatchWalker;
    use crate::record::OwnedRecords;

    fn decode_all(data: &[u8]) -> Result<(Vec<BatchHeader>, OwnedRecords), DecodeError> {
        let mut sink = OwnedRecords::default();
        let mut scratch = Vec::new();
        let mut headers = Vec::new();
        for raw in BatchWalker::new(data) {
            headers.push(decode_legacy(&raw, true, 1 << 20, &mut scratch, Some(&mut sink))?);
        }
        Ok((headers, sink))
    }

    #[test]
    fn uncompressed_v0_and_v1_messages() {
        let data = [
            message(10, 0, 0, -1, None, Some(b"a")),
            message(11, 1, 0, 1_234, Some(b"k"), Some(b"")),
            message(12, 1, 0x08, 5_678, Some(b""), None),
        ]
        .concat();
        let (headers, sink) = decode_all(&data).expect("valid");
        assert_eq!(headers.len(), 3);
        let r = &sink.records;
        assert_eq!((r[0].offset, r[0].timestamp, r[0].timestamp_type), (10, -1, -1));
        assert_eq!((r[1].offset, r[1].timestamp, r[1].timestamp_type), (11, 1_234, 0));
        assert_eq!((r[2].offset, r[2].timestamp, r[2].timestamp_type), (12, 5_678, 1));
        assert_eq!((r[0].key.as_deref(), r[0].value.as_deref()), (None, Some(&b"a"[..])));
        assert_eq!((r[2].key.as_deref(), r[2].value.as_deref()), (Some(&b""[..]), None));
        assert_eq!(headers[0].partition_leader_epoch, None);
    }

    /// A gzip wrapper (attributes 1) around `inner`, at `offset`.
    fn gzip_wrapper(offset: i64, magic: i8, inner: &[Vec<u8>]) -> Vec<u8> {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&inner.concat()).expect("in memory");
        let payload = gz.finish().expect("in memory");
        message(offset, magic, 1, 1_000, None, Some(&payload))
    }

    fn offsets_of(data: &[u8]) -> (Vec<i64>, Vec<(i64, i64)>) {
        let (headers, sink) = decode_all(data).expect("valid");
        let offsets = sink.records.iter().map(|r| r.offset).collect();
        (
            offsets,
            headers.iter().map(|h| (h.base_offset, h.last_offset)).collect(),
        )
    }

    #[test]
    fn producer_v1_wrapper_keeps_inner_offsets() {
        // As kafka-python, aiokafka and librdkafka write a Produce request:
        // wrapper offset 0, inner relative offsets 0..8.
        let inner: Vec<_> = (0..9).map(|i| message(i, 1, 0, 1_000 + i, None, Some(b"v"))).collect();
        let (offsets, batches) = offsets_of(&gzip_wrapper(0, 1, &inner));
        assert_eq!(offsets, (0..9).collect::<Vec<_>>());
        // Java: baseOffset is the first deep record's offset, lastOffset the wrapper's.
        assert_eq!(batches, vec![(0, 0)]);
    }

    #[test]
    fn broker_v1_wrapper_gives_absolute_offsets() {
        // The broker sets the wrapper's offset to the last inner absolute offset.
        let inner: Vec<_> = (0..9).map(|i| message(i, 1, 0, 1_000 + i, None, Some(b"v"))).collect();
        let (offsets, batches) = offsets_of(&gzip_wrapper(108, 1, &inner));
        assert_eq!(offsets, (100..109).collect::<Vec<_>>());
        assert_eq!(batches, vec![(100, 108)]);
        // A wrapper whose base works out to exactly 0 is absolute too.
        let (offsets, _) = offsets_of(&gzip_wrapper(8, 1, &inner));
        assert_eq!(offsets, (0..9).collect::<Vec<_>>());
    }

    #[test]
    fn v0_wrapper_inner_offsets_are_absolute() {
        let inner: Vec<_> = (0..3).map(|i| message(50 + i, 0, 0, -1, None, Some(b"v"))).collect();
        let (offsets, batches) = offsets_of(&gzip_wrapper(52, 0, &inner));
        assert_eq!(offsets, vec![50, 51, 52]);
        assert_eq!(batches, vec![(50, 52)]);
        let (offsets, _) = offsets_of(&gzip_wrapper(0, 0, &inner));
        assert_eq!(offsets, vec![50, 51, 52]);
    }

    #[test]
    fn absolute_base_offset_follows_java() {
        assert_eq!(absolute_base_offset(0, 8), 0);
        assert_eq!(absolute_base_offset(108, 8), 100);
        assert_eq!(absolute_base_offset(8, 8), 0);
        assert_eq!(absolute_base_offset(i64::MIN, 1), i64::MAX); // Java's long arithmetic wraps
        assert_eq!(absolute_base_offset(i64::MAX, -1), 0);
    }

    #[test]
    fn bad_crc_is_reported_with_position() {
        let mut data = message(0, 1, 0, 0, None, Some(b"x"));
        let last = data.len() - 1;
        data[last] ^= 1;
        let err = decode_all(&data).unwrap_err();
        assert_eq!(err.kind, ErrorKind::CrcMismatch);
        assert_eq!(err.batch_position, 0);
    }

    #[test]
    fn key_length_past_the_end_is_corrupt() {
        let mut data = message(0, 0, 0, 0, Some(b"abc"), None);
        data[18..22].copy_from_slice(&100i32.to_be_bytes());
        let err = parse_message(&data, false).unwrap_err();
        assert_eq!(err.at, 18);
    }
}
