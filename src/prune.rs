//! Pruning by batch headers: which batches of a buffer could hold a record
//! in given offset and time bounds, decided from their headers alone.
//!
//! CreateTime timestamps are out of order across and within batches when
//! several producers write a partition, so a batch's first timestamp is not
//! its minimum and an upper time bound never stops a walk. Only what a
//! header proves rules a batch out:
//!
//! * offsets: a v2 batch holds `[baseOffset, baseOffset + lastOffsetDelta]`;
//! * a lower time bound: a v2 batch's `maxTimestamp` is the largest of its
//!   timestamps (brokers set it on append), so a batch whose maximum is below
//!   the bound holds no match;
//! * an upper time bound: only LogAppendTime batches, whose records all carry
//!   the header's timestamp.
//!
//! Legacy message sets (magic 0 and 1), one batch per uncompressed message or
//! compressed wrapper as in Kafka's Java client:
//!
//! * a plain (uncompressed) v1 message's timestamp is its record's: exact for
//!   both time bounds;
//! * a v1 wrapper with the LogAppendTime bit gives every inner message its
//!   own timestamp: exact too;
//! * a CreateTime v1 wrapper carries its inner messages' largest timestamp as
//!   a broker writes it (the in-place offset assignment sets the wrapper's
//!   offset to the last inner offset and its timestamp to the inner maximum).
//!   A producer's wrapper does not (kafka-python and aiokafka send offset 0
//!   and timestamp 0), so the lower bound rules a wrapper out only when its
//!   offset is above the previous batch's last offset in the same walk (the
//!   broker's assignment; producer wrappers repeat offset 0, and the first
//!   batch of a walk has nothing to prove it by and is kept);
//! * v0 has no timestamps: always kept.
//!
//! Wrapper offsets are not judged here (a producer's wrapper keeps relative
//! inner offsets): the offset walk of `crate::scan::walk` reads them.
//! Batches whose header doesn't parse, and (with `keep_control`) control
//! batches are always kept: the decoder reports or uses them.

use crate::batch::{
    be_i16, be_i32, be_i64, BatchWalker, RawBatch, CODEC_MASK, CONTROL_BIT, TIMESTAMP_TYPE_BIT, V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE, V2_RECORD_COUNT_OFFSET,
};

/// Half-open bounds a record must fall in: offsets in
/// `[start_offset, end_offset)`, timestamps in microseconds in
/// `[start_ts_us, end_ts_us)`; `None` is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeaderBounds {
    pub start_offset: Option<i64>,
    pub end_offset: Option<i64>,
    pub start_ts_us: Option<i64>,
    pub end_ts_us: Option<i64>,
}

/// What one batch's header says, read from its fixed fields alone (no CRC,
/// no decompression): the facts pruning, windows and the transaction pass
/// judge a batch by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchFacts {
    /// Byte position of the batch in the walked buffer.
    pub position: usize,
    /// Bytes of the batch, offset and size fields included.
    pub size: usize,
    pub magic: i8,
    /// v2: the attributes; legacy: the message's attribute byte.
    pub attributes: i16,
    /// v2: `baseOffset`; legacy: the message's offset field (a wrapper's:
    /// its last inner offset as a broker writes it).
    pub base_offset: i64,
    /// v2: `baseOffset + lastOffsetDelta`; legacy: the offset field.
    pub last_offset: i64,
    /// v2: `maxTimestamp`; v1: the message's (or wrapper's) timestamp; v0: -1.
    pub max_timestamp: i64,
    /// v2: the record count; a plain legacy message: 1; a wrapper: -1
    /// (unknown without decompressing).
    pub record_count: i32,
    /// v2: the producer id and epoch; legacy: -1.
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// v2: the header is whole and sane (known codec, count not negative);
    /// legacy: always.
    pub header_ok: bool,
    /// A legacy wrapper whose offset is above the previous batch's last
    /// offset of the walk: assigned by a broker (see the module notes).
    pub assigned: bool,
}

impl BatchFacts {
    /// The facts of `raw`, the batch after one whose last offset was
    /// `previous_last` (`None`: the first of a walk).
    pub fn read(raw: &RawBatch, previous_last: Option<i64>) -> BatchFacts {
        let b = raw.bytes;
        let magic = raw.magic();
        let offset = be_i64(b, 0);
        let mut facts = BatchFacts {
            position: raw.position,
            size: b.len(),
            magic,
            attributes: 0,
            base_offset: offset,
            last_offset: offset,
            max_timestamp: -1,
            record_count: 1,
            producer_id: -1,
            producer_epoch: -1,
            header_ok: true,
            assigned: false,
        };
        if magic == 2 {
            if b.len() < V2_HEADER_SIZE {
                facts.header_ok = false;
                return facts;
            }
            let attributes = be_i16(b, V2_ATTRIBUTES_OFFSET);
            facts.attributes = attributes;
            facts.last_offset = offset.wrapping_add(be_i32(b, 23) as i64);
            facts.max_timestamp = be_i64(b, 35);
            facts.producer_id = be_i64(b, 43);
            facts.producer_epoch = be_i16(b, 51);
            facts.record_count = be_i32(b, V2_RECORD_COUNT_OFFSET);
            // what `parse_v2_header` refuses: an unknown codec, a negative count
            facts.header_ok = attributes & CODEC_MASK <= 4 && facts.record_count >= 0;
            return facts;
        }
        // Legacy: the walk saw at least the magic byte; a message has its
        // attribute byte and (v1) timestamp right after (MIN_SIZE covers them).
        facts.attributes = b.get(17).copied().unwrap_or(0) as i16;
        if magic == 1 && b.len() >= 26 {
            facts.max_timestamp = be_i64(b, 18);
        }
        if facts.attributes & CODEC_MASK != 0 {
            facts.record_count = -1;
            facts.assigned = previous_last.is_some_and(|p| offset > p);
        }
        facts
    }

    pub fn is_control(&self) -> bool {
        self.magic == 2 && self.attributes & CONTROL_BIT != 0
    }

    pub fn is_log_append_time(&self) -> bool {
        self.magic > 0 && self.attributes & TIMESTAMP_TYPE_BIT != 0
    }

    /// Whether this batch could hold a record in `bounds`, judged by its
    /// header (see the module notes); `keep_control` keeps control batches.
    pub fn could_match(&self, bounds: &HeaderBounds, keep_control: bool) -> bool {
        let max_ts = self.max_timestamp.saturating_mul(1000);
        let below = |s: i64| max_ts < s;
        match self.magic {
            2 => {
                if !self.header_ok || (keep_control && self.is_control()) {
                    return true;
                }
                if bounds.start_offset.is_some_and(|s| self.last_offset < s)
                    || bounds.end_offset.is_some_and(|e| self.base_offset >= e)
                    || bounds.start_ts_us.is_some_and(below)
                {
                    return false;
                }
                let log_append = self.attributes & TIMESTAMP_TYPE_BIT != 0;
                !bounds.end_ts_us.is_some_and(|e| log_append && max_ts >= e)
            }
            1 => {
                // the timestamp every record of this batch reports, when one does
                let exact = self.attributes & CODEC_MASK == 0 || self.is_log_append_time();
                if bounds.start_ts_us.is_some_and(below) && (exact || self.assigned) {
                    return false;
                }
                !(exact && bounds.end_ts_us.is_some_and(|e| max_ts >= e))
            }
            _ => true,
        }
    }
}

/// The facts of every complete batch of `data` from byte `start`, and where
/// the complete batches end (see [`BatchWalker`]).
pub fn batch_facts(data: &[u8], start: usize) -> (Vec<BatchFacts>, BatchWalker<'_>) {
    let mut walker = BatchWalker::starting_at(data, start);
    let mut facts: Vec<BatchFacts> = Vec::new();
    let mut previous = None;
    for raw in walker.by_ref() {
        let f = BatchFacts::read(&raw, previous);
        previous = Some(f.last_offset);
        facts.push(f);
    }
    (facts, walker)
}

/// The byte ranges of `data` whose batches could hold a record in `bounds`,
/// adjacent ones merged, and the number of bytes left out. Bytes after the
/// last complete batch (an incomplete tail, or framing the walk can't
/// follow) stay in the last range, for the decoder to report.
///
/// ```
/// use kafkabatch::prune::{kept_ranges, HeaderBounds};
/// // No batches at all: the 3 bytes are left to the decoder.
/// assert_eq!(kept_ranges(&[0, 0, 0], &HeaderBounds::default(), false), (vec![(0, 3)], 0));
/// ```
pub fn kept_ranges(data: &[u8], bounds: &HeaderBounds, keep_control: bool) -> (Vec<(usize, usize)>, usize) {
    let (facts, _) = batch_facts(data, 0);
    judge(&facts, 0, data.len(), bounds, keep_control)
}

/// [`kept_ranges`] of the bytes `[start, end)` whose batches, walked from
/// `start`, are `facts` (in order, adjacent): the bytes after the last one
/// are kept as the tail.
pub fn judge(
    facts: &[BatchFacts],
    start: usize,
    end: usize,
    bounds: &HeaderBounds,
    keep_control: bool,
) -> (Vec<(usize, usize)>, usize) {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut skipped = 0usize;
    let mut walked = start;
    for f in facts {
        let (a, b) = (f.position, f.position + f.size);
        walked = b;
        if f.could_match(bounds, keep_control) {
            push(&mut ranges, a, b);
        } else {
            skipped += b - a;
        }
    }
    if walked < end {
        push(&mut ranges, walked, end);
    }
    (ranges, skipped)
}

fn push(ranges: &mut Vec<(usize, usize)>, a: usize, b: usize) {
    match ranges.last_mut() {
        Some(last) if last.1 == a => last.1 = b,
        _ => ranges.push((a, b)),
    }
}

/// Which of `n` records are in `bounds`, from their offsets and timestamps
/// (microseconds) as little-endian `i64` buffers (Arrow's `int64` and
/// `timestamp[us]` value buffers): an Arrow validity-style bitmap (bit `i`
/// of byte `i / 8`, least significant first) and how many are. `None` when
/// a buffer holds fewer than `n` values.
///
/// ```
/// use kafkabatch::prune::{row_mask, HeaderBounds};
/// let offsets: Vec<u8> = [5i64, 6, 7].iter().flat_map(|v| v.to_le_bytes()).collect();
/// let times: Vec<u8> = [10i64, 30, 20].iter().flat_map(|v| v.to_le_bytes()).collect();
/// let bounds = HeaderBounds { start_ts_us: Some(20), ..Default::default() };
/// assert_eq!(row_mask(&offsets, &times, 3, &bounds), Some((vec![0b110], 2)));
/// ```
pub fn row_mask(offsets: &[u8], timestamps: &[u8], n: usize, bounds: &HeaderBounds) -> Option<(Vec<u8>, usize)> {
    let need = n.checked_mul(8)?;
    let (offsets, timestamps) = (offsets.get(..need)?, timestamps.get(..need)?);
    let mut bits = vec![0u8; n.div_ceil(8)];
    let mut kept = 0;
    let value = |b: &[u8], i: usize| i64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    for i in 0..n {
        let (o, t) = (value(offsets, i), value(timestamps, i));
        let keep = bounds.start_offset.is_none_or(|s| o >= s)
            && bounds.end_offset.is_none_or(|e| o < e)
            && bounds.start_ts_us.is_none_or(|s| t >= s)
            && bounds.end_ts_us.is_none_or(|e| t < e);
        if keep {
            bits[i / 8] |= 1 << (i % 8);
            kept += 1;
        }
    }
    Some((bits, kept))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::{encode, EncodeOptions, RecordRef, TimestampType};

    fn batch(base_offset: i64, timestamps: &[i64], log_append: Option<i64>) -> Vec<u8> {
        let mut out = Vec::new();
        encode_into(
            2,
            crate::compression::Codec::None,
            base_offset,
            timestamps,
            log_append,
            &mut out,
        );
        out
    }

    /// Records with `timestamps` from `base_offset`, appended to `out` (one
    /// batch, or legacy messages / one wrapper of `magic`).
    fn encode_into(
        magic: i8,
        codec: crate::compression::Codec,
        base_offset: i64,
        timestamps: &[i64],
        log_append: Option<i64>,
        out: &mut Vec<u8>,
    ) {
        let records: Vec<RecordRef> = timestamps
            .iter()
            .map(|&t| RecordRef::new(None, Some(b"v"), t))
            .collect();
        let options = EncodeOptions {
            magic,
            codec,
            base_offset,
            timestamp_type: if log_append.is_some() {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            },
            log_append_time: log_append,
            ..Default::default()
        };
        encode(&records, &options, out).unwrap();
    }

    #[test]
    fn out_of_order_times_are_judged_by_the_maximum() {
        // max 5_000 (first record), then max 1_500, then max 9_000.
        let a = batch(0, &[5_000, 1_000], None);
        let b = batch(2, &[1_000, 1_500], None);
        let c = batch(4, &[2_000, 9_000], None);
        let data = [a.clone(), b.clone(), c.clone()].concat();
        let (la, lb) = (a.len(), b.len());
        let after = |ms: i64| HeaderBounds {
            start_ts_us: Some(ms * 1000),
            ..Default::default()
        };
        // >= 4 s: the middle batch (max 1.5 s) goes, the first stays for its 5 s record.
        assert_eq!(
            kept_ranges(&data, &after(4_000), false),
            (vec![(0, la), (la + lb, data.len())], lb)
        );
        // an upper bound never drops a CreateTime batch
        let before = HeaderBounds {
            end_ts_us: Some(1_000),
            ..Default::default()
        };
        assert_eq!(kept_ranges(&data, &before, false), (vec![(0, data.len())], 0));
    }

    #[test]
    fn offsets_and_log_append_time() {
        let a = batch(0, &[1, 2, 3], Some(7_000));
        let b = batch(3, &[1, 2], Some(8_000));
        let data = [a.clone(), b.clone()].concat();
        let from = |o: i64| HeaderBounds {
            start_offset: Some(o),
            ..Default::default()
        };
        assert_eq!(
            kept_ranges(&data, &from(3), false),
            (vec![(a.len(), data.len())], a.len())
        );
        assert_eq!(kept_ranges(&data, &from(2), false), (vec![(0, data.len())], 0));
        let until = HeaderBounds {
            end_offset: Some(3),
            end_ts_us: Some(8_000_000),
            ..Default::default()
        };
        // LogAppendTime: every record of the second batch carries 8 s, at the bound
        assert_eq!(kept_ranges(&data, &until, false), (vec![(0, a.len())], b.len()));
    }

    #[test]
    fn broken_and_legacy_bytes_are_kept() {
        let a = batch(0, &[1_000], None);
        let mut data = a.clone();
        data.extend_from_slice(&[0xff; 20]); // an incomplete tail
        let bounds = HeaderBounds {
            start_ts_us: Some(10_000_000),
            ..Default::default()
        };
        assert_eq!(
            kept_ranges(&data, &bounds, false),
            (vec![(a.len(), data.len())], a.len())
        );
        // a header that doesn't parse (corrupted magic) is kept for the decoder
        let mut bad = a.clone();
        bad[16] = 7;
        assert_eq!(kept_ranges(&bad, &bounds, false), (vec![(0, bad.len())], 0));
    }

    /// Legacy message sets of `magic` from `groups` of record timestamps
    /// (one wrapper each when `codec` compresses), from offset 0.
    fn legacy(magic: i8, codec: crate::compression::Codec, groups: &[&[i64]], log_append: Option<i64>) -> Vec<u8> {
        let mut out = Vec::new();
        let mut base = 0;
        for group in groups {
            encode_into(magic, codec, base, group, log_append, &mut out);
            base += group.len() as i64;
        }
        out
    }

    fn from_ms(ms: i64) -> HeaderBounds {
        HeaderBounds {
            start_ts_us: Some(ms * 1000),
            ..Default::default()
        }
    }

    fn kept_positions(data: &[u8], bounds: &HeaderBounds) -> Vec<usize> {
        let (facts, _) = batch_facts(data, 0);
        facts
            .iter()
            .filter(|f| f.could_match(bounds, false))
            .map(|f| f.position)
            .collect()
    }

    #[test]
    fn broker_written_v1_wrappers_prune_by_their_maximum() {
        use crate::compression::Codec;
        // wrappers of maxima 5 s, 1.5 s, 9 s, 1 s: the encoder writes them as a broker does
        let data = legacy(
            1,
            Codec::Gzip,
            &[&[5_000, 1_000], &[1_000, 1_500], &[2_000, 9_000], &[1_000]],
            None,
        );
        let (facts, _) = batch_facts(&data, 0);
        assert_eq!(
            facts
                .iter()
                .map(|f| (f.last_offset, f.max_timestamp))
                .collect::<Vec<_>>(),
            [(1, 5_000), (3, 1_500), (5, 9_000), (6, 1_000)]
        );
        // the first has nothing before it to show a broker assigned it: kept
        let at: Vec<usize> = facts.iter().map(|f| f.position).collect();
        assert_eq!(kept_positions(&data, &from_ms(4_000)), [at[0], at[2]]);
        assert_eq!(kept_positions(&data, &from_ms(10_000)), [at[0]]);
        // an upper bound never drops a CreateTime wrapper
        let before = HeaderBounds {
            end_ts_us: Some(1),
            ..Default::default()
        };
        assert_eq!(kept_positions(&data, &before), at);
    }

    #[test]
    fn producer_written_v1_wrappers_are_kept() {
        use crate::compression::Codec;
        // as kafka-python and aiokafka send them: wrapper offset 0, timestamp 0
        let mut data = legacy(1, Codec::Gzip, &[&[5_000, 1_000], &[7_000], &[9_000, 8_000]], None);
        let positions: Vec<usize> = batch_facts(&data, 0).0.iter().map(|f| f.position).collect();
        for &p in &positions {
            data[p..p + 8].copy_from_slice(&0i64.to_be_bytes());
            data[p + 18..p + 26].copy_from_slice(&0i64.to_be_bytes());
        }
        assert_eq!(kept_positions(&data, &from_ms(6_000)), positions);
        assert_eq!(kept_ranges(&data, &from_ms(6_000), false), (vec![(0, data.len())], 0));
    }

    #[test]
    fn plain_v1_log_append_v1_and_v0() {
        use crate::compression::Codec;
        // plain v1 messages: each one's timestamp is exact, for both bounds
        let data = legacy(1, Codec::None, &[&[5_000, 1_000, 9_000]], None);
        let at: Vec<usize> = batch_facts(&data, 0).0.iter().map(|f| f.position).collect();
        assert_eq!(at.len(), 3);
        assert_eq!(kept_positions(&data, &from_ms(4_000)), [at[0], at[2]]);
        let until = HeaderBounds {
            end_ts_us: Some(5_000_000),
            ..Default::default()
        };
        assert_eq!(kept_positions(&data, &until), [at[1]]);
        // LogAppendTime wrappers: every inner record reports the wrapper's time
        let data = legacy(1, Codec::Gzip, &[&[1, 2]], Some(7_000));
        assert!(kept_positions(&data, &from_ms(7_001)).is_empty());
        let until = HeaderBounds {
            end_ts_us: Some(7_000_000),
            ..Default::default()
        };
        assert!(kept_positions(&data, &until).is_empty());
        assert_eq!(kept_positions(&data, &from_ms(7_000)), [0]);
        // v0: no time at all
        let data = legacy(0, Codec::Gzip, &[&[1], &[2]], None);
        assert_eq!(kept_positions(&data, &from_ms(1_000_000)).len(), 2);
    }

    #[test]
    fn row_mask_by_offsets_and_times() {
        let le = |v: &[i64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let offsets = le(&(0..10).collect::<Vec<_>>());
        let times = le(&[5, 1, 9, 3, 7, 2, 8, 4, 6, 0]);
        let bounds = HeaderBounds {
            start_offset: Some(1),
            end_offset: Some(9),
            start_ts_us: Some(3),
            end_ts_us: Some(8),
        };
        // rows 3 (t 3), 4 (t 7), 7 (t 4) and 8 (t 6); 6 (t 8) is at the end bound
        assert_eq!(
            row_mask(&offsets, &times, 10, &bounds),
            Some((vec![0b1001_1000, 0b1], 4))
        );
        assert_eq!(row_mask(&offsets, &times[..72], 10, &bounds), None);
        assert_eq!(row_mask(&[], &[], 0, &bounds), Some((vec![], 0)));
    }
}
