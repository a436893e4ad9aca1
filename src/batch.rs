//! Framing and batch headers, for every magic.
//!
//! Every Kafka batch — v2 record batch or v0/v1 legacy message — starts with
//! `offset: int64, size: int32` and has its magic byte at position 16
//! (spec "Record Batch" and "Message Set"). The walk reads the magic of each
//! batch, so buffers that mix formats (a topic upgraded in place) decode.
//! This module mirrors Kafka's `ByteBufferLogInputStream.nextBatch` and
//! `DefaultRecordBatch` header accessors.

use crate::compression::Codec;
use crate::crc;
use crate::error::{DecodeError, ErrorKind};

/// `offset` + `size` (Kafka's `LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// Position of the magic byte in every batch.
pub const MAGIC_OFFSET: usize = 16;
/// Smallest legal `size` of any batch (a v0 message: crc, magic, attributes,
/// key length, value length: Kafka's `LegacyRecord.RECORD_OVERHEAD_V0`).
pub const MIN_SIZE: usize = 14;
/// Size of a v2 batch header; records start here (`RECORD_BATCH_OVERHEAD`).
pub const V2_HEADER_SIZE: usize = 61;
/// v2 header field positions (spec "Record Batch").
pub const V2_CRC_OFFSET: usize = 17;
pub const V2_ATTRIBUTES_OFFSET: usize = 21;
pub const V2_RECORD_COUNT_OFFSET: usize = 57;

/// Attribute bits (v2: int16; legacy: int8 with the same low bits).
pub const CODEC_MASK: i16 = 0x07;
pub const TIMESTAMP_TYPE_BIT: i16 = 0x08;
pub const TRANSACTIONAL_BIT: i16 = 0x10;
pub const CONTROL_BIT: i16 = 0x20;
pub const DELETE_HORIZON_BIT: i16 = 0x40;

/// Kafka's timestamp types, as Spark's `timestampType` column gives them.
pub const NO_TIMESTAMP_TYPE: i8 = -1;
pub const CREATE_TIME: i8 = 0;
pub const LOG_APPEND_TIME: i8 = 1;

/// One complete batch found by the walk: where it is and its bytes
/// (`LOG_OVERHEAD + size` of them, offset and size fields included).
#[derive(Debug, Clone, Copy)]
pub struct RawBatch<'a> {
    pub position: usize,
    pub bytes: &'a [u8],
}

impl RawBatch<'_> {
    pub fn magic(&self) -> i8 {
        self.bytes[MAGIC_OFFSET] as i8
    }

    pub fn first_offset_field(&self) -> i64 {
        be_i64(self.bytes, 0)
    }

    /// A v2 batch with a whole header whose attributes name a codec (read
    /// from the header alone, before any check of the batch).
    pub fn is_compressed_v2(&self) -> bool {
        self.magic() == 2
            && self.bytes.len() >= V2_HEADER_SIZE
            && be_i16(self.bytes, V2_ATTRIBUTES_OFFSET) & CODEC_MASK != 0
    }
}

/// How the walk ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkEnd {
    /// Every byte belonged to a complete batch.
    Clean,
    /// The last `len` bytes at `position` are an incomplete batch (normal at
    /// the end of a fetch response or of a segment being written).
    Truncated { position: usize, len: usize },
    /// The framing at `position` cannot be trusted (a size below the minimum);
    /// nothing after it can be located.
    Broken(DecodeError),
}

/// Walks the batches of a buffer by their `size` fields alone.
pub struct BatchWalker<'a> {
    data: &'a [u8],
    pos: usize,
    end: Option<WalkEnd>,
}

impl<'a> BatchWalker<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        BatchWalker {
            data,
            pos: 0,
            end: None,
        }
    }

    /// Start the walk at `position` (a batch boundary, e.g. from an index).
    pub fn starting_at(data: &'a [u8], position: usize) -> Self {
        BatchWalker {
            data,
            pos: position.min(data.len()),
            end: None,
        }
    }

    /// How the walk ended; `None` while batches remain.
    pub fn end(&self) -> Option<&WalkEnd> {
        self.end.as_ref()
    }

    /// Position of the next batch (or of the end).
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for BatchWalker<'a> {
    type Item = RawBatch<'a>;

    fn next(&mut self) -> Option<RawBatch<'a>> {
        if self.end.is_some() {
            return None;
        }
        let remaining = self.data.len() - self.pos;
        if remaining == 0 {
            self.end = Some(WalkEnd::Clean);
            return None;
        }
        // Too short to hold the offset, size and magic: an incomplete batch.
        if remaining < MAGIC_OFFSET + 1 {
            self.end = Some(WalkEnd::Truncated {
                position: self.pos,
                len: remaining,
            });
            return None;
        }
        let size = be_i32(self.data, self.pos + 8);
        if size < MIN_SIZE as i32 {
            let offset = be_i64(self.data, self.pos);
            self.end = Some(WalkEnd::Broken(DecodeError::corrupt(
                self.pos,
                Some(offset),
                self.pos + 8,
                format!("batch size {size} is less than the minimum record overhead ({MIN_SIZE})"),
            )));
            return None;
        }
        let total = LOG_OVERHEAD + size as usize;
        if total > remaining {
            self.end = Some(WalkEnd::Truncated {
                position: self.pos,
                len: remaining,
            });
            return None;
        }
        let batch = RawBatch {
            position: self.pos,
            bytes: &self.data[self.pos..self.pos + total],
        };
        self.pos += total;
        Some(batch)
    }
}

/// Bytes of the leading complete batches (Kafka's `MemoryRecords.validBytes`):
/// the walk stops at an incomplete batch or at framing that cannot be trusted.
pub fn valid_bytes(data: &[u8]) -> usize {
    let mut walker = BatchWalker::new(data);
    for _ in walker.by_ref() {}
    walker.position()
}

/// Every header field of a batch, for all magics (legacy messages fill what
/// they have: no leader epoch, no producer fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchHeader {
    pub position: usize,
    pub size_in_bytes: usize,
    pub magic: i8,
    pub base_offset: i64,
    pub last_offset: i64,
    pub partition_leader_epoch: Option<i32>,
    /// The CRC stored in the batch.
    pub crc: u32,
    /// Whether the stored CRC matches the bytes.
    pub crc_valid: bool,
    pub attributes: i16,
    pub codec: Codec,
    pub timestamp_type: i8,
    pub is_transactional: bool,
    pub is_control: bool,
    /// v2 attribute bit 6: the base timestamp is the delete horizon (KIP-534).
    pub delete_horizon_ms: Option<i64>,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    /// Records in the batch (the v2 header count; 1 for an uncompressed
    /// legacy message; the inner message count of a legacy wrapper).
    pub record_count: i32,
}

impl BatchHeader {
    pub fn error(&self, kind: ErrorKind, byte_position: usize, reason: impl Into<String>) -> DecodeError {
        DecodeError::new(kind, self.position, Some(self.base_offset), byte_position, reason)
    }

    /// Kafka's `DefaultRecordBatch.lastSequence`: the sequence of the last record.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence < 0 {
            return -1;
        }
        // last_offset is base_offset.wrapping_add(lastOffsetDelta), so this is
        // the header's lastOffsetDelta again, whatever the base offset.
        increment_sequence(
            self.base_sequence,
            self.last_offset.wrapping_sub(self.base_offset) as i32,
        )
    }
}

/// Kafka's `DefaultRecordBatch.incrementSequence`: sequences wrap at i32::MAX.
///
/// The increment comes off the wire (a record's offset delta, the header's
/// lastOffsetDelta) and may be anything, negative included. Java's int
/// arithmetic wraps; so does this (found by fuzzing: a negative delta
/// overflowed `i32::MAX - increment`, a panic in debug builds).
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX.wrapping_sub(increment) {
        increment.wrapping_sub(i32::MAX.wrapping_sub(sequence)).wrapping_sub(1)
    } else {
        sequence.wrapping_add(increment)
    }
}

/// Parse and check a v2 batch header (spec "Record Batch"):
/// baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
/// crc uint32 (CRC32-C of attributes..end), attributes int16,
/// lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64,
/// producerId int64, producerEpoch int16, baseSequence int32, records int32.
pub fn parse_v2_header(raw: &RawBatch) -> Result<BatchHeader, DecodeError> {
    let b = raw.bytes;
    let base_offset = be_i64(b, 0);
    if b.len() < V2_HEADER_SIZE {
        return Err(DecodeError::corrupt(
            raw.position,
            Some(base_offset),
            raw.position + 8,
            format!(
                "record batch size {} is smaller than the minimum v2 batch overhead ({V2_HEADER_SIZE})",
                b.len()
            ),
        ));
    }
    let attributes = be_i16(b, V2_ATTRIBUTES_OFFSET);
    let codec = Codec::from_id((attributes & CODEC_MASK) as u8).map_err(|id| {
        DecodeError::new(
            ErrorKind::Unsupported,
            raw.position,
            Some(base_offset),
            raw.position + V2_ATTRIBUTES_OFFSET,
            format!("unknown compression codec id {id} in attributes {attributes:#06x}"),
        )
    })?;
    let last_offset_delta = be_i32(b, 23);
    let base_timestamp = be_i64(b, 27);
    let record_count = be_i32(b, V2_RECORD_COUNT_OFFSET);
    let crc = be_u32(b, V2_CRC_OFFSET);
    let header = BatchHeader {
        position: raw.position,
        size_in_bytes: b.len(),
        magic: 2,
        base_offset,
        last_offset: base_offset.wrapping_add(last_offset_delta as i64),
        partition_leader_epoch: Some(be_i32(b, 12)),
        crc,
        crc_valid: crc::crc32c(&b[V2_ATTRIBUTES_OFFSET..]) == crc,
        attributes,
        codec,
        timestamp_type: if attributes & TIMESTAMP_TYPE_BIT != 0 {
            LOG_APPEND_TIME
        } else {
            CREATE_TIME
        },
        is_transactional: attributes & TRANSACTIONAL_BIT != 0,
        is_control: attributes & CONTROL_BIT != 0,
        delete_horizon_ms: (attributes & DELETE_HORIZON_BIT != 0).then_some(base_timestamp),
        base_timestamp,
        max_timestamp: be_i64(b, 35),
        producer_id: be_i64(b, 43),
        producer_epoch: be_i16(b, 51),
        base_sequence: be_i32(b, 53),
        record_count,
    };
    if record_count < 0 {
        return Err(header.error(
            ErrorKind::Corrupt,
            raw.position + V2_RECORD_COUNT_OFFSET,
            format!("invalid record count {record_count} in magic v2 batch"),
        ));
    }
    Ok(header)
}

/// The CRC-mismatch error for a header whose `crc_valid` is false.
pub fn crc_error(header: &BatchHeader, computed: u32) -> DecodeError {
    header.error(
        ErrorKind::CrcMismatch,
        header.position + if header.magic >= 2 { V2_CRC_OFFSET } else { LOG_OVERHEAD },
        format!(
            "stored CRC {:#010x} does not match computed {computed:#010x}",
            header.crc
        ),
    )
}

#[inline(always)]
pub fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

#[inline(always)]
pub fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

#[inline(always)]
pub fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

#[inline(always)]
pub fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(b[at..at + 2].try_into().unwrap_or([0; 2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v2 batch header with no records, laid out by hand from the spec.
    fn empty_v2_batch(base_offset: i64, attributes: i16) -> Vec<u8> {
        let header = crate::test_support::V2Header {
            base_offset,
            partition_leader_epoch: 7,
            attributes,
            last_offset_delta: 3,
            base_timestamp: 1_000,
            max_timestamp: 2_000,
            producer_id: 42,
            producer_epoch: 5,
            base_sequence: 9,
            record_count: 0,
        };
        crate::test_support::write_v2(&header, &[])
    }

    #[test]
    fn parses_every_v2_header_field() {
        let bytes = empty_v2_batch(100, 0x0004 | 0x0008 | 0x0010 | 0x0040);
        let mut walker = BatchWalker::new(&bytes);
        let raw = walker.next().expect("one batch");
        assert_eq!(walker.next().map(|r| r.position), None);
        assert_eq!(walker.end(), Some(&WalkEnd::Clean));
        let h = parse_v2_header(&raw).expect("valid header");
        assert_eq!(h.base_offset, 100);
        assert_eq!(h.last_offset, 103);
        assert_eq!(h.partition_leader_epoch, Some(7));
        assert!(h.crc_valid);
        assert_eq!(h.codec, Codec::Zstd);
        assert_eq!(h.timestamp_type, LOG_APPEND_TIME);
        assert!(h.is_transactional && !h.is_control);
        assert_eq!(h.delete_horizon_ms, Some(1_000));
        assert_eq!((h.base_timestamp, h.max_timestamp), (1_000, 2_000));
        assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence), (42, 5, 9));
        assert_eq!(h.last_sequence(), 12);
        assert_eq!(h.size_in_bytes, 61);
    }

    #[test]
    fn truncated_tail_ends_the_walk_quietly() {
        let mut bytes = empty_v2_batch(0, 0);
        bytes.extend_from_slice(&empty_v2_batch(4, 0)[..30]);
        let mut walker = BatchWalker::new(&bytes);
        assert!(walker.next().is_some());
        assert!(walker.next().is_none());
        assert_eq!(walker.end(), Some(&WalkEnd::Truncated { position: 61, len: 30 }));
        assert_eq!(valid_bytes(&bytes), 61);
        assert_eq!(valid_bytes(&bytes[..5]), 0);
    }

    #[test]
    fn size_below_minimum_breaks_framing() {
        let mut bytes = empty_v2_batch(0, 0);
        bytes[8..12].copy_from_slice(&3i32.to_be_bytes());
        let mut walker = BatchWalker::new(&bytes);
        assert!(walker.next().is_none());
        assert!(matches!(walker.end(), Some(WalkEnd::Broken(e)) if e.byte_position == 8));
        assert_eq!(valid_bytes(&bytes), 0);
    }

    #[test]
    fn unknown_codec_and_negative_count_are_errors() {
        let bytes = empty_v2_batch(0, 5);
        let raw = BatchWalker::new(&bytes).next().expect("framed");
        assert_eq!(parse_v2_header(&raw).map_err(|e| e.kind), Err(ErrorKind::Unsupported));
        let mut bytes = empty_v2_batch(0, 0);
        bytes[57..61].copy_from_slice(&(-1i32).to_be_bytes());
        let raw = BatchWalker::new(&bytes).next().expect("framed");
        assert_eq!(parse_v2_header(&raw).map_err(|e| e.kind), Err(ErrorKind::Corrupt));
    }

    #[test]
    fn sequence_wraps_like_kafka() {
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
        assert_eq!(increment_sequence(5, 3), 8);
        // Hostile increments wrap as Java's int arithmetic does, never panic.
        assert_eq!(increment_sequence(5, -1), -2_147_483_644); // -1 - (MAX - 5) - 1 in Java ints
        assert_eq!(increment_sequence(0, i32::MIN), 0);
        assert_eq!(increment_sequence(i32::MAX, i32::MAX), i32::MAX - 1);
        let mut b = empty_v2_batch(i64::MAX, 0);
        b[23..27].copy_from_slice(&i32::MIN.to_be_bytes()); // lastOffsetDelta
        let crc = crc::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        let h = parse_v2_header(&BatchWalker::new(&b).next().expect("framed")).expect("header");
        assert_eq!(h.last_sequence(), increment_sequence(9, i32::MIN));
    }
}
