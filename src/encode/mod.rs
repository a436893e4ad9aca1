//! Encoding Kafka record batches: magic v2 record batches (spec "Record
//! Batch"), v0/v1 legacy message sets (spec "Message Set") and v2 control
//! batches (spec "Control Batches"), every codec. Pure Rust, borrow-based:
//! records are [`RecordRef`]s pointing into the caller's buffers.
//!
//! Two entry points write the same bytes:
//!
//! * [`encode`]: a slice of records into the caller's `Vec<u8>`, all or
//!   nothing (every option and record is checked before a byte is written; a
//!   codec failure truncates `out` back to where it was).
//! * [`Encoder`]: streaming, for outputs too large to hold as one slice of
//!   records. `push` records, take finished batches with
//!   [`Encoder::completed`] / [`Encoder::clear_completed`], `finish` at the end.
//!
//! Batching: with `records_per_batch = Some(n)` a batch closes after `n`
//! records. Otherwise, with `max_batch_bytes = Some(b)`, a record starts a new
//! batch when it would take the batch past `b` bytes (batch header plus
//! *uncompressed* records, as the Java producer's `batch.size` with its
//! initial compression estimate of 1.0); a batch always takes at least one
//! record, so `Some(0)` means one record per batch. With neither, all
//! records go in one batch. In every case a batch also closes before it
//! would pass the format's limit (a 2^31-1 byte length field).
//!
//! Offsets are consecutive from `base_offset`; each batch continues from the
//! previous one. For magic 2 `base_sequence` (when >= 0) advances by each
//! batch's record count, wrapping past `i32::MAX` to 0 as Java's
//! `DefaultRecordBatch.incrementSequence` does.
//!
//! Timestamps with `TimestampType::LogAppendTime` (what a broker writes for a
//! topic with `message.timestamp.type=LogAppendTime`; the "append time" is
//! `log_append_time`, or when that is `None` the batch's largest record
//! timestamp):
//!
//! * v2: attribute bit 3 set, `maxTimestamp` = the append time. The records
//!   keep their own timestamps as deltas from `baseTimestamp` (the first
//!   record's), exactly as Java's `MemoryRecordsBuilder` and the broker's
//!   in-place validation write them; readers report `maxTimestamp` for every
//!   record of such a batch.
//! * v1 compressed: the wrapper gets bit 3 and timestamp = the append time;
//!   the inner messages keep their own timestamps and CreateTime attributes
//!   (the broker's in-place path only rewrites the wrapper).
//! * v1 uncompressed: each message is its own batch: bit 3 set, timestamp =
//!   `log_append_time`, or its own timestamp when that is `None`.
//! * v0 has no timestamps; LogAppendTime is rejected.
//!
//! Legacy snappy (magic 0/1) is always written with xerial framing, as the
//! Java client (xerial `SnappyOutputStream`) and kafka-python
//! (`snappy_encode(xerial_compatible=True)`) wrote it; for magic 2
//! `CompressOptions::snappy_xerial` chooses (default: a raw block, as
//! librdkafka writes).

pub mod control;
mod legacy;
pub(crate) mod v2;

#[cfg(test)]
mod test_reader;
#[cfg(test)]
mod tests;

use crate::compression::{Codec, CodecError, CompressOptions};

pub use control::{control_batch, ControlKind};

/// A record header: key (UTF-8) and value (`None` is null).
pub type HeaderRef<'a> = (&'a str, Option<&'a [u8]>);

/// One record to encode, borrowing its bytes. `None` key or value is null.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// Milliseconds since the epoch; -1 means "no timestamp". Not written by magic 0.
    pub timestamp: i64,
    /// Headers (magic 2 only).
    pub headers: &'a [HeaderRef<'a>],
}

impl<'a> RecordRef<'a> {
    /// A record without headers.
    pub const fn new(key: Option<&'a [u8]>, value: Option<&'a [u8]>, timestamp: i64) -> Self {
        RecordRef {
            key,
            value,
            timestamp,
            headers: &[],
        }
    }
}

/// Attribute bit 3 of a v2 batch or v1 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampType {
    /// Timestamps set by the producer (bit 3 clear).
    #[default]
    CreateTime,
    /// Timestamps set by the broker on append (bit 3 set); see the module docs.
    LogAppendTime,
}

/// How to encode. `EncodeOptions::default()` is a plain (non-idempotent) v2
/// producer: no compression, offsets from 0, one batch, CreateTime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeOptions {
    /// Message format: 0, 1 or 2.
    pub magic: i8,
    pub codec: Codec,
    /// Codec level and (magic 2 only) snappy framing.
    pub compress: CompressOptions,
    /// Offset of the first record (>= 0).
    pub base_offset: i64,
    /// Records per batch (>= 1); takes precedence over `max_batch_bytes`.
    pub records_per_batch: Option<usize>,
    /// Close a batch before it would pass this many (uncompressed) bytes, like
    /// the producer's `batch.size`. Used when `records_per_batch` is `None`.
    pub max_batch_bytes: Option<usize>,
    /// -1, or the producer id of an idempotent/transactional producer (magic 2).
    pub producer_id: i64,
    /// -1, or >= 0 with a producer id (magic 2).
    pub producer_epoch: i16,
    /// Sequence of the first record: -1, or >= 0 with a producer id (magic 2).
    pub base_sequence: i32,
    /// Set the transactional bit (magic 2, needs a producer id).
    pub transactional: bool,
    /// -1, or the leader epoch a broker stamps on the batch (magic 2).
    pub partition_leader_epoch: i32,
    /// CreateTime, or LogAppendTime (magic >= 1).
    pub timestamp_type: TimestampType,
    /// The broker's append time for LogAppendTime; `None` uses each batch's
    /// largest record timestamp. Must be `None` with CreateTime.
    pub log_append_time: Option<i64>,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        EncodeOptions {
            magic: 2,
            codec: Codec::None,
            compress: CompressOptions::default(),
            base_offset: 0,
            records_per_batch: None,
            max_batch_bytes: None,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
            partition_leader_epoch: -1,
            timestamp_type: TimestampType::CreateTime,
            log_append_time: None,
        }
    }
}

/// What an [`encode`] call (or an [`Encoder`]) wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EncodeSummary {
    /// Records written.
    pub records: u64,
    /// Top-level entries written: v2 batches, legacy wrapper messages, or (v0/v1
    /// uncompressed) messages, each of which is its own batch.
    pub batches: u64,
    /// Bytes written.
    pub bytes: u64,
    /// The offset after the last record: `base_offset` for a following call.
    pub next_offset: i64,
    /// `base_sequence` for a following call (-1 stays -1).
    pub next_sequence: i32,
}

/// Why records could not be encoded. Option and record errors are found
/// before anything is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// An option is out of range or does not go with the others.
    #[error("invalid {argument}: {reason}")]
    InvalidOption { argument: &'static str, reason: String },
    /// A record cannot be written with these options. `index` counts records
    /// from 0 (in the slice for `encode`, since creation for an `Encoder`).
    #[error("record {index}: invalid {field}: {reason}")]
    InvalidRecord {
        index: u64,
        field: &'static str,
        reason: String,
    },
    /// The codec failed; the batch was not written.
    #[error("cannot compress the batch at base offset {base_offset}: {source}")]
    Compression {
        base_offset: i64,
        #[source]
        source: CodecError,
    },
    /// A finished batch is larger than its length field can say (compressed
    /// output past 2^31-1 bytes); the batch was not written.
    #[error("the batch at base offset {base_offset} is {size} bytes, past the format's limit of {limit}")]
    BatchTooLarge { base_offset: i64, size: u64, limit: u64 },
}

impl EncodeError {
    /// The option or record field the error is about (`None` for codec and size errors).
    pub fn argument(&self) -> Option<&'static str> {
        match self {
            EncodeError::InvalidOption { argument, .. } => Some(argument),
            EncodeError::InvalidRecord { field, .. } => Some(field),
            _ => None,
        }
    }
}

fn invalid_option(argument: &'static str, reason: impl Into<String>) -> EncodeError {
    EncodeError::InvalidOption {
        argument,
        reason: reason.into(),
    }
}

fn invalid_record(index: u64, field: &'static str, reason: impl Into<String>) -> EncodeError {
    EncodeError::InvalidRecord {
        index,
        field,
        reason: reason.into(),
    }
}

/// The largest value of a Kafka int32 length field.
const MAX_LEN: usize = i32::MAX as usize;

/// Check options on their own and together.
fn check_options(o: &EncodeOptions) -> Result<(), EncodeError> {
    if !(0..=2).contains(&o.magic) {
        return Err(invalid_option(
            "magic",
            format!("{} is not a Kafka message format; use 0, 1 or 2", o.magic),
        ));
    }
    if o.base_offset < 0 {
        return Err(invalid_option(
            "base_offset",
            format!("{} is negative; offsets start at 0", o.base_offset),
        ));
    }
    match o.records_per_batch {
        Some(0) => return Err(invalid_option("records_per_batch", "must be at least 1 (got 0)")),
        Some(n) if n > MAX_LEN => {
            return Err(invalid_option(
                "records_per_batch",
                format!("{n} is more than a batch can count ({MAX_LEN})"),
            ));
        }
        _ => {}
    }
    if o.codec == Codec::Zstd && o.magic < 2 {
        return Err(invalid_option(
            "codec",
            format!("zstd needs magic 2 (magic is {})", o.magic),
        ));
    }
    if o.magic < 2 {
        let legacy = |argument: &'static str, value: String| {
            invalid_option(
                argument,
                format!(
                    "{value} needs magic 2 (magic is {}); v0/v1 messages carry no producer state",
                    o.magic
                ),
            )
        };
        if o.producer_id != -1 {
            return Err(legacy("producer_id", format!("producer_id {}", o.producer_id)));
        }
        if o.producer_epoch != -1 {
            return Err(legacy("producer_epoch", format!("producer_epoch {}", o.producer_epoch)));
        }
        if o.base_sequence != -1 {
            return Err(legacy("base_sequence", format!("base_sequence {}", o.base_sequence)));
        }
        if o.transactional {
            return Err(legacy("transactional", "transactional=true".into()));
        }
        if o.partition_leader_epoch != -1 {
            return Err(legacy(
                "partition_leader_epoch",
                format!("partition_leader_epoch {}", o.partition_leader_epoch),
            ));
        }
    }
    if o.magic == 0 && o.timestamp_type == TimestampType::LogAppendTime {
        return Err(invalid_option(
            "timestamp_type",
            "LogAppendTime needs magic 1 or 2; magic 0 has no timestamps",
        ));
    }
    if let Some(t) = o.log_append_time {
        if o.timestamp_type != TimestampType::LogAppendTime {
            return Err(invalid_option(
                "log_append_time",
                "is only used with timestamp_type LogAppendTime",
            ));
        }
        if t < -1 {
            return Err(invalid_option(
                "log_append_time",
                format!("{t} is negative (use -1 for none, or >= 0)"),
            ));
        }
    }
    if o.producer_id < -1 {
        return Err(invalid_option(
            "producer_id",
            format!("{} must be -1 (none) or >= 0", o.producer_id),
        ));
    }
    if o.producer_epoch < -1 {
        return Err(invalid_option(
            "producer_epoch",
            format!("{} must be -1 (none) or >= 0", o.producer_epoch),
        ));
    }
    if o.base_sequence < -1 {
        return Err(invalid_option(
            "base_sequence",
            format!("{} must be -1 (none) or >= 0", o.base_sequence),
        ));
    }
    if o.transactional && o.producer_id < 0 {
        return Err(invalid_option(
            "transactional",
            "transactional batches need a producer_id >= 0",
        ));
    }
    if o.producer_id >= 0 {
        // As Java's MemoryRecordsBuilder.validateProducerState.
        if o.producer_epoch < 0 {
            return Err(invalid_option(
                "producer_epoch",
                format!("producer_id {} needs a producer_epoch >= 0", o.producer_id),
            ));
        }
        if o.base_sequence < 0 {
            return Err(invalid_option(
                "base_sequence",
                format!("producer_id {} needs a base_sequence >= 0", o.producer_id),
            ));
        }
    }
    Ok(())
}

/// Check one record against the options. Returns the encoded size of its
/// headers (v2), which the writer needs.
#[inline]
fn check_record(o: &EncodeOptions, index: u64, r: &RecordRef<'_>) -> Result<usize, EncodeError> {
    if o.magic >= 1 && r.timestamp < -1 {
        return Err(invalid_record(
            index,
            "timestamp",
            format!(
                "{} is out of range for magic {} (must be -1, meaning none, or >= 0)",
                r.timestamp, o.magic
            ),
        ));
    }
    let key_len = r.key.map_or(0, <[u8]>::len);
    let value_len = r.value.map_or(0, <[u8]>::len);
    if key_len > MAX_LEN {
        return Err(invalid_record(
            index,
            "key",
            format!("{key_len} bytes; at most {MAX_LEN}"),
        ));
    }
    if value_len > MAX_LEN {
        return Err(invalid_record(
            index,
            "value",
            format!("{value_len} bytes; at most {MAX_LEN}"),
        ));
    }
    if o.magic < 2 {
        if !r.headers.is_empty() {
            return Err(invalid_record(
                index,
                "headers",
                format!(
                    "{} header(s), but headers need magic 2 (magic is {})",
                    r.headers.len(),
                    o.magic
                ),
            ));
        }
        let size = legacy::message_size(o.magic, key_len, value_len);
        if size > legacy::MAX_MESSAGE {
            return Err(invalid_record(
                index,
                "size",
                format!("the message would be {size} bytes; at most {}", legacy::MAX_MESSAGE),
            ));
        }
        return Ok(0);
    }
    if r.headers.len() > MAX_LEN {
        return Err(invalid_record(
            index,
            "headers",
            format!("{} headers; at most {MAX_LEN}", r.headers.len()),
        ));
    }
    let mut headers_size = 0usize;
    for (k, v) in r.headers {
        let v_len = v.map_or(0, <[u8]>::len);
        if k.len() > MAX_LEN || v_len > MAX_LEN {
            return Err(invalid_record(
                index,
                "headers",
                format!("header {k:?} is longer than {MAX_LEN} bytes"),
            ));
        }
        headers_size = headers_size.saturating_add(v2::header_size(k, *v));
    }
    // Upper bound of the record with the widest varints, so that any record
    // that passes fits in an empty batch.
    let bound = (40usize)
        .saturating_add(key_len)
        .saturating_add(value_len)
        .saturating_add(headers_size);
    if bound > v2::MAX_RECORD {
        return Err(invalid_record(
            index,
            "size",
            format!("the record would be up to {bound} bytes; at most {}", v2::MAX_RECORD),
        ));
    }
    Ok(headers_size)
}

/// The batch being filled.
#[derive(Debug, Clone, Copy)]
struct Open {
    /// Position in the output of the batch's first byte.
    start: usize,
    base_offset: i64,
    base_sequence: i32,
    count: usize,
    first_timestamp: i64,
    max_timestamp: i64,
    /// Header (or wrapper) bytes plus uncompressed record bytes so far.
    size: usize,
}

/// The encoding state, writing into a buffer it is handed on every call.
/// While a batch is open, the buffer must be the same and unchanged past `start`.
#[derive(Debug)]
struct Core {
    o: EncodeOptions,
    /// Codec options as applied (legacy snappy forced to xerial).
    copts: CompressOptions,
    /// Records per batch (always set: the format's count limit at most).
    max_records: usize,
    /// Soft byte limit per batch.
    max_bytes: usize,
    next_offset: i64,
    next_sequence: i32,
    /// Records pushed so far (for error indices).
    pushed: u64,
    open: Option<Open>,
    /// Uncompressed records of a compressed batch.
    scratch: Vec<u8>,
    summary: EncodeSummary,
}

impl Core {
    fn new(o: &EncodeOptions) -> Result<Core, EncodeError> {
        check_options(o)?;
        let mut copts = o.compress;
        if o.magic < 2 {
            copts.snappy_xerial = true;
        }
        let hard = if o.magic == 2 {
            v2::MAX_BATCH
        } else {
            legacy::MAX_WRAPPER_CONTENT
        };
        let (max_records, max_bytes) = match o.records_per_batch {
            Some(n) => (n, hard),
            None => (MAX_LEN, o.max_batch_bytes.map_or(hard, |b| b.min(hard))),
        };
        Ok(Core {
            o: *o,
            copts,
            max_records,
            max_bytes,
            next_offset: o.base_offset,
            next_sequence: o.base_sequence,
            pushed: 0,
            open: None,
            scratch: Vec::new(),
            summary: EncodeSummary {
                next_offset: o.base_offset,
                next_sequence: o.base_sequence,
                ..Default::default()
            },
        })
    }

    /// Check and write one record.
    #[inline]
    fn push(&mut self, out: &mut Vec<u8>, r: &RecordRef<'_>) -> Result<(), EncodeError> {
        let headers_size = check_record(&self.o, self.pushed, r)?;
        self.push_checked(out, r, headers_size)
    }

    /// Write one record that passed `check_record`.
    #[inline]
    fn push_checked(&mut self, out: &mut Vec<u8>, r: &RecordRef<'_>, headers_size: usize) -> Result<(), EncodeError> {
        if self.next_offset == i64::MAX {
            return Err(invalid_record(
                self.pushed,
                "offset",
                "the next offset would pass i64::MAX",
            ));
        }
        if self.o.magic == 2 {
            self.push_v2(out, r, headers_size)?;
        } else if self.o.codec == Codec::None {
            self.push_legacy_plain(out, r);
        } else {
            self.push_legacy_wrapped(out, r)?;
        }
        self.pushed += 1;
        Ok(())
    }

    #[inline]
    fn push_v2(&mut self, out: &mut Vec<u8>, r: &RecordRef<'_>, headers_size: usize) -> Result<(), EncodeError> {
        if let Some(open) = &self.open {
            let size = v2::record_size(
                r,
                open.count as i32,
                r.timestamp.wrapping_sub(open.first_timestamp),
                headers_size,
            );
            if open.size + size > self.max_bytes {
                self.close(out)?;
            }
        }
        if self.open.is_none() {
            let start = out.len();
            if self.o.codec == Codec::None {
                // Header placeholder; records follow it directly.
                out.extend_from_slice(&[0u8; v2::HEADER_SIZE]);
            }
            self.open = Some(Open {
                start,
                base_offset: self.next_offset,
                base_sequence: self.next_sequence,
                count: 0,
                first_timestamp: r.timestamp,
                max_timestamp: -1,
                size: v2::HEADER_SIZE,
            });
        }
        let Some(open) = &mut self.open else { unreachable!() };
        let offset_delta = open.count as i32;
        let timestamp_delta = r.timestamp.wrapping_sub(open.first_timestamp);
        let target = if self.o.codec == Codec::None {
            &mut *out
        } else {
            &mut self.scratch
        };
        open.size += v2::write_record(target, r, offset_delta, timestamp_delta, headers_size);
        open.count += 1;
        open.max_timestamp = open.max_timestamp.max(r.timestamp);
        self.next_offset += 1;
        if open.count >= self.max_records {
            self.close(out)?;
        }
        Ok(())
    }

    fn push_legacy_plain(&mut self, out: &mut Vec<u8>, r: &RecordRef<'_>) {
        let (attributes, timestamp) = match self.o.timestamp_type {
            TimestampType::CreateTime => (0, r.timestamp),
            TimestampType::LogAppendTime => (
                legacy::TIMESTAMP_TYPE_BIT,
                self.o.log_append_time.unwrap_or(r.timestamp),
            ),
        };
        let n = legacy::write_message(
            out,
            self.next_offset,
            self.o.magic,
            attributes,
            timestamp,
            r.key,
            r.value,
        );
        self.next_offset += 1;
        self.summary.records += 1;
        self.summary.batches += 1;
        self.summary.bytes += n as u64;
    }

    fn push_legacy_wrapped(&mut self, out: &mut Vec<u8>, r: &RecordRef<'_>) -> Result<(), EncodeError> {
        let magic = self.o.magic;
        let key_len = r.key.map_or(0, <[u8]>::len);
        let value_len = r.value.map_or(0, <[u8]>::len);
        let size = legacy::LOG_OVERHEAD + legacy::message_size(magic, key_len, value_len);
        if let Some(open) = &self.open {
            if open.size + size > self.max_bytes {
                self.close(out)?;
            }
        }
        let next_offset = self.next_offset;
        let open = self.open.get_or_insert(Open {
            start: out.len(),
            base_offset: next_offset,
            base_sequence: -1,
            count: 0,
            first_timestamp: r.timestamp,
            max_timestamp: -1,
            size: legacy::LOG_OVERHEAD + legacy::message_size(magic, 0, 0),
        });
        // v1 inner offsets are relative (0..n-1), v0 absolute (spec "Compression").
        let inner_offset = if magic == 1 { open.count as i64 } else { next_offset };
        legacy::write_message(&mut self.scratch, inner_offset, magic, 0, r.timestamp, r.key, r.value);
        open.size += size;
        open.count += 1;
        open.max_timestamp = open.max_timestamp.max(r.timestamp);
        self.next_offset += 1;
        if open.count >= self.max_records {
            self.close(out)?;
        }
        Ok(())
    }

    /// Close the open batch, if any: compress, write the header, patch lengths
    /// and CRC. On failure the batch is dropped: `out` is truncated to its
    /// start and its offsets and sequences are handed out again.
    fn close(&mut self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let Some(open) = self.open.take() else { return Ok(()) };
        let result = if self.o.magic == 2 {
            self.finish_v2(out, &open)
        } else {
            self.finish_wrapper(out, &open)
        };
        self.scratch.clear();
        match result {
            Ok(()) => {
                self.summary.records += open.count as u64;
                self.summary.batches += 1;
                self.summary.bytes += (out.len() - open.start) as u64;
                if open.base_sequence >= 0 {
                    self.next_sequence = v2::increment_sequence(open.base_sequence, open.count as i32);
                }
                Ok(())
            }
            Err(e) => {
                out.truncate(open.start);
                self.next_offset = open.base_offset;
                self.next_sequence = open.base_sequence;
                Err(e)
            }
        }
    }

    fn compress_into(&self, out: &mut Vec<u8>, base_offset: i64) -> Result<(), EncodeError> {
        crate::compression::compress(self.o.codec, &self.scratch, self.o.magic, self.copts, out)
            .map_err(|source| EncodeError::Compression { base_offset, source })
    }

    fn append_time(&self, open: &Open) -> i64 {
        self.o.log_append_time.unwrap_or(open.max_timestamp)
    }

    fn finish_v2(&self, out: &mut Vec<u8>, open: &Open) -> Result<(), EncodeError> {
        if self.o.codec != Codec::None {
            out.extend_from_slice(&[0u8; v2::HEADER_SIZE]);
            self.compress_into(out, open.base_offset)?;
        }
        let size = out.len() - open.start;
        if size > v2::MAX_BATCH {
            return Err(EncodeError::BatchTooLarge {
                base_offset: open.base_offset,
                size: size as u64,
                limit: v2::MAX_BATCH as u64,
            });
        }
        let mut attributes = self.o.codec.id() as i16;
        let max_timestamp = match self.o.timestamp_type {
            TimestampType::CreateTime => open.max_timestamp,
            TimestampType::LogAppendTime => {
                attributes |= v2::TIMESTAMP_TYPE_BIT;
                self.append_time(open)
            }
        };
        if self.o.transactional {
            attributes |= v2::TRANSACTIONAL_BIT;
        }
        v2::patch_header(
            &mut out[open.start..],
            &v2::BatchHeader {
                base_offset: open.base_offset,
                partition_leader_epoch: self.o.partition_leader_epoch,
                attributes,
                last_offset_delta: open.count as i32 - 1,
                base_timestamp: open.first_timestamp,
                max_timestamp,
                producer_id: self.o.producer_id,
                producer_epoch: self.o.producer_epoch,
                base_sequence: open.base_sequence,
                record_count: open.count as i32,
            },
        );
        Ok(())
    }

    fn finish_wrapper(&self, out: &mut Vec<u8>, open: &Open) -> Result<(), EncodeError> {
        let magic = self.o.magic;
        let (attributes, timestamp) = match self.o.timestamp_type {
            TimestampType::CreateTime => (0, open.max_timestamp),
            TimestampType::LogAppendTime => (legacy::TIMESTAMP_TYPE_BIT, self.append_time(open)),
        };
        // The wrapper's offset is its last inner message's (absolute) offset.
        let last_offset = open.base_offset + open.count as i64 - 1;
        let value_start =
            legacy::begin_wrapper(out, last_offset, magic, self.o.codec.id() as i8 | attributes, timestamp);
        self.compress_into(out, open.base_offset)?;
        legacy::end_wrapper(out, open.start, value_start).map_err(|size| EncodeError::BatchTooLarge {
            base_offset: open.base_offset,
            size,
            limit: legacy::MAX_WRAPPER_CONTENT as u64,
        })
    }

    /// Totals of the closed batches; `next_offset`/`next_sequence` are where
    /// the open batch (if any) starts.
    fn summary(&self) -> EncodeSummary {
        let (next_offset, next_sequence) = match &self.open {
            Some(open) => (open.base_offset, open.base_sequence),
            None => (self.next_offset, self.next_sequence),
        };
        EncodeSummary {
            next_offset,
            next_sequence,
            ..self.summary
        }
    }
}

/// Encode `records` into `out` (appended) as `opts` says. All or nothing:
/// options and records are checked before anything is written, and on a codec
/// failure `out` is truncated back to its length on entry.
pub fn encode(
    records: &[RecordRef<'_>],
    opts: &EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<EncodeSummary, EncodeError> {
    let mut core = Core::new(opts)?;
    let mut payload = 0usize;
    for (i, r) in records.iter().enumerate() {
        let headers_size = check_record(opts, i as u64, r)?;
        payload = payload
            .saturating_add(r.key.map_or(0, <[u8]>::len))
            .saturating_add(r.value.map_or(0, <[u8]>::len))
            .saturating_add(headers_size);
    }
    if (records.len() as u64) > (i64::MAX - opts.base_offset) as u64 {
        return Err(invalid_option(
            "base_offset",
            format!(
                "{} + {} records passes the largest offset",
                opts.base_offset,
                records.len()
            ),
        ));
    }
    if opts.codec == Codec::None {
        // Exact for v2 records whose varints take one byte, and for legacy
        // messages; a batch header per batch on top.
        let per_record = if opts.magic == 2 {
            11
        } else {
            legacy::LOG_OVERHEAD + legacy::message_size(opts.magic, 0, 0)
        };
        let batches = match opts.records_per_batch {
            Some(n) if opts.magic == 2 => records.len().div_ceil(n),
            _ => 1,
        };
        out.reserve(
            payload
                .saturating_add(per_record * records.len())
                .saturating_add(v2::HEADER_SIZE * batches),
        );
    }
    let start = out.len();
    let result = (|| {
        for r in records {
            let headers_size = if r.headers.is_empty() {
                0
            } else {
                v2::headers_size(r.headers)
            };
            core.push_checked(out, r, headers_size)?;
        }
        core.close(out)
    })();
    match result {
        Ok(()) => Ok(core.summary()),
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// Streaming encoder for outputs too large to hold as one slice of records.
/// It owns its output buffer: batches appear in [`completed`](Self::completed)
/// as they close; write them away and [`clear_completed`](Self::clear_completed)
/// to keep memory flat.
///
/// ```
/// use kafkabatch::encode::{Encoder, EncodeOptions, RecordRef};
/// let opts = EncodeOptions { records_per_batch: Some(2), ..Default::default() };
/// let mut enc = Encoder::new(&opts).unwrap();
/// let mut file = Vec::new(); // any std::io::Write
/// for i in 0..5u8 {
///     enc.push(&RecordRef::new(None, Some(&[i]), 1_700_000_000_000)).unwrap();
///     file.extend_from_slice(enc.completed());
///     enc.clear_completed();
/// }
/// let (rest, summary) = enc.finish().unwrap();
/// file.extend_from_slice(&rest);
/// assert_eq!((summary.records, summary.batches, summary.next_offset), (5, 3, 5));
/// ```
#[derive(Debug)]
pub struct Encoder {
    core: Core,
    buf: Vec<u8>,
}

impl Encoder {
    /// Check the options and start encoding.
    pub fn new(opts: &EncodeOptions) -> Result<Encoder, EncodeError> {
        Self::with_buffer(opts, Vec::new())
    }

    /// As [`new`](Self::new), reusing `buf`'s allocation (it is cleared).
    pub fn with_buffer(opts: &EncodeOptions, mut buf: Vec<u8>) -> Result<Encoder, EncodeError> {
        buf.clear();
        Ok(Encoder {
            core: Core::new(opts)?,
            buf,
        })
    }

    /// Add a record at the next offset. It goes into the open batch (closing
    /// that batch first if the record would not fit, or afterwards if it is
    /// full). An invalid record is an error and writes nothing. A codec error
    /// while closing a batch drops that batch; its offsets are handed out again.
    #[inline]
    pub fn push(&mut self, record: &RecordRef<'_>) -> Result<(), EncodeError> {
        self.core.push(&mut self.buf, record)
    }

    /// Close the open batch now (nothing if none is open).
    pub fn finish_batch(&mut self) -> Result<(), EncodeError> {
        self.core.close(&mut self.buf)
    }

    /// Bytes of the batches closed so far and not yet cleared.
    pub fn completed(&self) -> &[u8] {
        &self.buf[..self.completed_len()]
    }

    /// Forget the completed bytes (after writing them away); keeps the open batch.
    pub fn clear_completed(&mut self) {
        let n = self.completed_len();
        self.buf.drain(..n);
        if let Some(open) = &mut self.core.open {
            open.start -= n;
        }
    }

    /// Records in the open batch.
    pub fn open_records(&self) -> usize {
        self.core.open.map_or(0, |o| o.count)
    }

    /// The offset the next pushed record gets.
    pub fn next_offset(&self) -> i64 {
        self.core.next_offset
    }

    /// Totals of the batches closed so far (cleared ones included).
    pub fn summary(&self) -> EncodeSummary {
        self.core.summary()
    }

    /// Close the open batch and return the bytes not yet cleared, with the totals.
    pub fn finish(mut self) -> Result<(Vec<u8>, EncodeSummary), EncodeError> {
        self.core.close(&mut self.buf)?;
        Ok((self.buf, self.core.summary()))
    }

    fn completed_len(&self) -> usize {
        self.core.open.map_or(self.buf.len(), |o| o.start)
    }
}
