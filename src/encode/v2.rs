//! Magic v2 record batches (spec "Record Batch", "Record", "Record Header").
//!
//! ```text
//! 0  baseOffset int64         27 baseTimestamp int64
//! 8  batchLength int32        35 maxTimestamp int64
//! 12 partitionLeaderEpoch     43 producerId int64
//! 16 magic int8 (2)           51 producerEpoch int16
//! 17 crc uint32 (CRC32-C of   53 baseSequence int32
//!    bytes 21..end)           57 recordCount int32
//! 21 attributes int16         61 records (compressed as one payload)
//! 23 lastOffsetDelta int32
//! ```

use crate::varint::{varint_size, varlong_size, write_varint, write_varlong};

use super::{HeaderRef, RecordRef};

/// Bytes before the first record.
pub(super) const HEADER_SIZE: usize = 61;
/// Largest whole batch: its batchLength (bytes after offset and length) is an int32.
pub(super) const MAX_BATCH: usize = 12 + i32::MAX as usize;
/// Largest single record (length varint included), so that it fits an empty batch.
pub(super) const MAX_RECORD: usize = MAX_BATCH - HEADER_SIZE;

pub(super) const TIMESTAMP_TYPE_BIT: i16 = 0x08;
pub(super) const TRANSACTIONAL_BIT: i16 = 0x10;
pub(super) const CONTROL_BIT: i16 = 0x20;

/// The header fields of a v2 batch (length and CRC are computed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchHeader {
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

/// Fill in the header of `batch` (the whole batch: a [`HEADER_SIZE`]
/// placeholder followed by its records), including batchLength and the CRC.
pub(super) fn patch_header(batch: &mut [u8], h: &BatchHeader) {
    debug_assert!(batch.len() >= HEADER_SIZE && batch.len() <= MAX_BATCH);
    let length = (batch.len() - 12) as i32;
    let header = &mut batch[..HEADER_SIZE];
    header[0..8].copy_from_slice(&h.base_offset.to_be_bytes());
    header[8..12].copy_from_slice(&length.to_be_bytes());
    header[12..16].copy_from_slice(&h.partition_leader_epoch.to_be_bytes());
    header[16] = 2;
    header[21..23].copy_from_slice(&h.attributes.to_be_bytes());
    header[23..27].copy_from_slice(&h.last_offset_delta.to_be_bytes());
    header[27..35].copy_from_slice(&h.base_timestamp.to_be_bytes());
    header[35..43].copy_from_slice(&h.max_timestamp.to_be_bytes());
    header[43..51].copy_from_slice(&h.producer_id.to_be_bytes());
    header[51..53].copy_from_slice(&h.producer_epoch.to_be_bytes());
    header[53..57].copy_from_slice(&h.base_sequence.to_be_bytes());
    header[57..61].copy_from_slice(&h.record_count.to_be_bytes());
    let crc = crate::crc::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// Java's `DefaultRecordBatch.incrementSequence`: past `i32::MAX` wrap to 0.
pub(super) fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

/// Encoded size of a nullable byte field: varint length (-1 for null) and bytes.
#[inline(always)]
fn bytes_size(b: Option<&[u8]>) -> usize {
    match b {
        None => 1,
        Some(b) => varint_size(b.len() as i32) + b.len(),
    }
}

#[inline(always)]
fn write_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => write_varint(out, -1),
        Some(b) => {
            write_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

/// Encoded size of one header.
#[inline]
pub(super) fn header_size(key: &str, value: Option<&[u8]>) -> usize {
    varint_size(key.len() as i32) + key.len() + bytes_size(value)
}

/// Encoded size of a record's headers (not their count).
pub(super) fn headers_size(headers: &[HeaderRef<'_>]) -> usize {
    headers.iter().map(|(k, v)| header_size(k, *v)).sum()
}

/// Size of a record's body: attributes through the last header.
#[inline(always)]
fn body_size(r: &RecordRef<'_>, offset_delta: i32, timestamp_delta: i64, headers_size: usize) -> usize {
    1 + varlong_size(timestamp_delta)
        + varint_size(offset_delta)
        + bytes_size(r.key)
        + bytes_size(r.value)
        + varint_size(r.headers.len() as i32)
        + headers_size
}

/// Whole encoded size of a record (length varint included).
#[inline]
pub(super) fn record_size(r: &RecordRef<'_>, offset_delta: i32, timestamp_delta: i64, headers_size: usize) -> usize {
    let body = body_size(r, offset_delta, timestamp_delta, headers_size);
    varint_size(body as i32) + body
}

/// Append one record; returns the bytes written. `headers_size` is
/// [`headers_size`] of its headers; the record passed `check_record`.
#[inline]
pub(super) fn write_record(
    out: &mut Vec<u8>,
    r: &RecordRef<'_>,
    offset_delta: i32,
    timestamp_delta: i64,
    headers_size: usize,
) -> usize {
    let body = body_size(r, offset_delta, timestamp_delta, headers_size);
    let total = varint_size(body as i32) + body;
    out.reserve(total);
    let start = out.len();
    write_varint(out, body as i32);
    out.push(0); // attributes: unused
    write_varlong(out, timestamp_delta);
    write_varint(out, offset_delta);
    write_bytes(out, r.key);
    write_bytes(out, r.value);
    write_varint(out, r.headers.len() as i32);
    for (key, value) in r.headers {
        write_varint(out, key.len() as i32);
        out.extend_from_slice(key.as_bytes());
        write_bytes(out, *value);
    }
    debug_assert_eq!(out.len() - start, total);
    total
}
