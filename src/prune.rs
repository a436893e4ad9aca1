//! Pruning by batch headers: which batches of a buffer could hold a record
//! in given offset and time bounds, decided from their headers alone.
//!
//! CreateTime timestamps are out of order across and within batches when
//! several producers write a partition, so a batch's first timestamp is not
//! its minimum and an upper time bound never stops a walk. Only what a v2
//! header proves rules a batch out:
//!
//! * offsets: a v2 batch holds `[baseOffset, baseOffset + lastOffsetDelta]`;
//! * a lower time bound: `maxTimestamp` is the largest of the batch's
//!   timestamps (brokers set it on append), so a batch whose maximum is below
//!   the bound holds no match;
//! * an upper time bound: only LogAppendTime batches, whose records all carry
//!   the header's timestamp.
//!
//! Legacy message sets (whose wrapper offsets and timestamps are not their
//! records'), batches whose header doesn't parse, and (with `keep_control`)
//! control batches are always kept: the decoder reports or uses them.

use crate::batch::{parse_v2_header, BatchWalker, LOG_APPEND_TIME};

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
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut skipped = 0usize;
    let mut end = 0usize;
    for raw in BatchWalker::new(data) {
        let (a, b) = (raw.position, raw.position + raw.bytes.len());
        end = b;
        if could_match(raw, bounds, keep_control) {
            push(&mut ranges, a, b);
        } else {
            skipped += b - a;
        }
    }
    if end < data.len() {
        push(&mut ranges, end, data.len());
    }
    (ranges, skipped)
}

fn push(ranges: &mut Vec<(usize, usize)>, a: usize, b: usize) {
    match ranges.last_mut() {
        Some(last) if last.1 == a => last.1 = b,
        _ => ranges.push((a, b)),
    }
}

/// Whether one batch could hold a record in `bounds`, judged by its header.
fn could_match(raw: crate::batch::RawBatch, bounds: &HeaderBounds, keep_control: bool) -> bool {
    if raw.magic() != 2 {
        return true;
    }
    let Ok(header) = parse_v2_header(&raw) else {
        return true;
    };
    if keep_control && header.is_control {
        return true;
    }
    if bounds.start_offset.is_some_and(|s| header.last_offset < s) {
        return false;
    }
    if bounds.end_offset.is_some_and(|e| header.base_offset >= e) {
        return false;
    }
    let max_ts = header.max_timestamp.saturating_mul(1000);
    if bounds.start_ts_us.is_some_and(|s| max_ts < s) {
        return false;
    }
    !bounds
        .end_ts_us
        .is_some_and(|e| header.timestamp_type == LOG_APPEND_TIME && max_ts >= e)
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
        let records: Vec<RecordRef> = timestamps
            .iter()
            .map(|&t| RecordRef::new(None, Some(b"v"), t))
            .collect();
        let options = EncodeOptions {
            base_offset,
            timestamp_type: if log_append.is_some() {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            },
            log_append_time: log_append,
            ..Default::default()
        };
        let mut out = Vec::new();
        encode(&records, &options, &mut out).unwrap();
        out
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
