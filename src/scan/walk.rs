//! One walk over a file's batch headers: every batch's facts (position,
//! size, offsets, largest timestamp, magic, attributes, record count,
//! producer) and where the complete batches end, read once from the fixed
//! header fields (no CRC, no decompression). The byte windows a read decodes,
//! the ranges pruning keeps and the read_committed transaction pass all come
//! from it, instead of a walk each.
//!
//! ```
//! use kafkabatch::encode::{encode, EncodeOptions, RecordRef};
//! use kafkabatch::prune::HeaderBounds;
//! use kafkabatch::scan::walk::walk;
//!
//! let mut log = Vec::new();
//! for (base, ts) in [(0, 1_000), (1, 5_000)] {
//!     let options = EncodeOptions { base_offset: base, ..Default::default() };
//!     encode(&[RecordRef::new(None, Some(b"v"), ts)], &options, &mut log).unwrap();
//! }
//! let w = walk(&log, 0);
//! assert_eq!((w.batches.len(), w.valid_end), (2, log.len()));
//! // from 2 s on, only the second batch can hold a record
//! let from_2s = HeaderBounds { start_ts_us: Some(2_000_000), ..Default::default() };
//! let (kept, pruned) = w.kept_ranges(0, log.len(), &from_2s, false).unwrap();
//! assert_eq!((kept, pruned), (vec![(w.batches[1].position, log.len())], w.batches[0].size));
//! ```

use std::collections::BTreeMap;
use std::ops::Range;

use crate::batch::{RawBatch, WalkEnd};
use crate::decode::{decode_batch, DecodeOptions};
use crate::prune::{batch_facts, judge, BatchFacts, HeaderBounds};
use crate::record::OwnedRecords;
use crate::txn::{self, EndedTxn};

/// The batches of a buffer from `start`, and where the complete ones end.
#[derive(Debug, Clone)]
pub struct Walk {
    /// Where the walk began (a batch boundary).
    pub start: usize,
    /// Every complete batch from `start`, in order, adjacent.
    pub batches: Vec<BatchFacts>,
    /// The end of the last complete batch (Kafka's `validBytes`, from `start`).
    pub valid_end: usize,
    /// How the walk ended: clean, an incomplete tail, or broken framing.
    pub end: WalkEnd,
}

/// Walk the batch headers of `data` from byte `start` (a batch boundary).
pub fn walk(data: &[u8], start: usize) -> Walk {
    let (batches, walker) = batch_facts(data, start);
    Walk {
        start: start.min(data.len()),
        valid_end: walker.position(),
        end: walker.end().cloned().unwrap_or(WalkEnd::Clean),
        batches,
    }
}

/// [`walk`] of a segment that continues a partition's log after a batch whose
/// last offset was `previous_last` (the last batch of the segment before):
/// its first batch is judged as one after that batch, so a legacy wrapper a
/// broker assigned offsets to is known as such at the start of a segment too
/// (see [`crate::prune::BatchFacts::assigned`]).
pub fn walk_after(data: &[u8], start: usize, previous_last: Option<i64>) -> Walk {
    let mut w = walk(data, start);
    if let (Some(previous), Some(first)) = (previous_last, w.batches.first_mut()) {
        if let Some(raw) = crate::batch::BatchWalker::starting_at(data, first.position).next() {
            *first = BatchFacts::read(&raw, Some(previous));
        }
    }
    w
}

impl Walk {
    /// The last offset of the file's last batch, when the walk reached the end
    /// of `len` bytes cleanly (what the segment after it continues from).
    pub fn last_offset_at_end(&self, len: usize) -> Option<i64> {
        if self.valid_end != len || !matches!(self.end, WalkEnd::Clean) {
            return None;
        }
        self.batches.last().map(|f| f.last_offset)
    }
}

/// Byte window `(start, end, last)` of complete batches to decode at once;
/// `last`: the offset walk stopped after it (`end_offset` reached) or it
/// holds the bytes the walk can't follow.
pub type Window = (usize, usize, bool);

/// How a batch reads under the offset walk: whether its header (or, for a
/// legacy wrapper, its inner messages) read cleanly, and its offsets.
struct OffsetFacts {
    good: bool,
    base_offset: i64,
    last_offset: i64,
    record_count: i64,
    magic: i8,
}

impl Walk {
    /// Index of the batch starting at `position`: `Some(len)` at or past the
    /// end of the complete batches, `None` when `position` is inside a batch
    /// or before the walk's start.
    fn index_at(&self, position: usize) -> Option<usize> {
        if position < self.start {
            return None;
        }
        if position >= self.valid_end {
            return Some(self.batches.len());
        }
        let i = self.batches.partition_point(|f| f.position < position);
        (self.batches.get(i).map(|f| f.position) == Some(position)).then_some(i)
    }

    /// The batches wholly inside `[a, b)` (from a batch boundary `a`).
    fn inside(&self, a: usize, b: usize) -> Option<&[BatchFacts]> {
        let i = self.index_at(a)?;
        let n = self.batches[i..].partition_point(|f| f.position + f.size <= b);
        Some(&self.batches[i..i + n])
    }

    /// [`crate::prune::kept_ranges`] of the bytes `[a, b)`, judged from this
    /// walk; `None` when `a` is not a batch boundary of it.
    pub fn kept_ranges(
        &self,
        a: usize,
        b: usize,
        bounds: &HeaderBounds,
        keep_control: bool,
    ) -> Option<(Vec<(usize, usize)>, usize)> {
        let b = b.max(a);
        Some(judge(self.inside(a, b)?, a, b, bounds, keep_control))
    }

    /// `[a, b)` without its leading and trailing batches that can't hold a
    /// record in `bounds`; `(b, b)` when none can. `None` when `a` is not a
    /// batch boundary of this walk.
    pub fn narrow(&self, a: usize, b: usize, bounds: &HeaderBounds, keep_control: bool) -> Option<(usize, usize)> {
        let (ranges, _) = self.kept_ranges(a, b, bounds, keep_control)?;
        Some(match (ranges.first(), ranges.last()) {
            (Some(first), Some(last)) => (first.0, last.1),
            _ => (b.max(a), b.max(a)),
        })
    }

    /// The byte windows of `[a, b)` a read decodes, each at most `chunk`
    /// bytes of complete batches (or one larger batch). Leading batches wholly
    /// below `start_offset` are left out and the windows stop after the batch
    /// reaching `end_offset`; bytes the walk can't follow (an incomplete
    /// tail, broken framing) end up in a final window for the decoder to
    /// report. Judging a legacy wrapper against an offset bound reads its
    /// inner offsets from `data` (a producer's wrapper keeps relative ones,
    /// past its own offset: never skipped by offset). `None` when `a` is not
    /// a batch boundary of this walk.
    pub fn windows(
        &self,
        data: &[u8],
        a: usize,
        b: usize,
        chunk: usize,
        start_offset: Option<i64>,
        end_offset: Option<i64>,
    ) -> Option<Vec<Window>> {
        let b = b.min(data.len());
        let chunk = chunk.max(1);
        let mut i = self.index_at(a)?;
        let mut out = Vec::new();
        let mut pos = a;
        let mut started = start_offset.is_none();
        let offsets = start_offset.is_some() || end_offset.is_some();
        let mut scratch = Vec::new();
        while pos < b {
            let n = chunk.min(b - pos);
            let fits = self.batches[i..].partition_point(|f| f.position + f.size <= pos + n);
            let take = if fits > 0 {
                fits
            } else if self.batches.get(i).is_some_and(|f| f.position + f.size <= b) {
                1 // one batch larger than the window
            } else {
                out.push((pos, b, true));
                return Some(out);
            };
            let batches = &self.batches[i..i + take];
            let valid = batches[take - 1].position + batches[take - 1].size;
            if !offsets || (started && end_offset.is_none()) {
                out.push((pos, valid, false));
            } else {
                let mut first = pos;
                let mut end = pos;
                let mut stop = false;
                for f in batches {
                    let batch_end = f.position + f.size;
                    let o = offset_facts(data, f, &mut scratch);
                    if !started && o.good && start_offset.is_some_and(|s| ends_before(&o, s)) {
                        first = batch_end;
                        end = batch_end;
                        continue;
                    }
                    started = true;
                    end = batch_end;
                    if o.good && end_offset.is_some_and(|e| o.last_offset >= e - 1) {
                        stop = true;
                        break;
                    }
                }
                if first < end {
                    out.push((first, end, stop));
                }
                if stop {
                    return Some(out);
                }
            }
            i += take;
            pos = valid;
        }
        Some(out)
    }

    /// One step of the read_committed pre-pass over the batches in `range`
    /// (see [`crate::txn::transaction_pass`]): `open` (producer id → first
    /// offset) updated, the transactions an ABORT marker ends returned.
    /// Control batches' first records are read from `data` under `options`'
    /// size cap. `None` when `a` is not a batch boundary of this walk.
    pub fn transaction_pass(
        &self,
        data: &[u8],
        range: Range<usize>,
        open: &mut BTreeMap<i64, i64>,
        start_offset: Option<i64>,
        end_offset: Option<i64>,
        options: &DecodeOptions,
    ) -> Option<Vec<EndedTxn>> {
        let batches = self.inside(range.start, range.end.min(data.len()))?;
        let options = DecodeOptions {
            include_control: true,
            validate_crc: false,
            ..options.clone()
        };
        let raw = batches.iter().map(|f| {
            let raw = RawBatch {
                position: f.position,
                bytes: &data[f.position..f.position + f.size],
            };
            (*f, raw)
        });
        Some(txn::transaction_pass_over(raw, open, start_offset, end_offset, |raw| {
            let mut sink = OwnedRecords::default();
            decode_batch(raw, &options, &mut Vec::new(), Some(&mut sink)).ok()?;
            sink.records.into_iter().next()
        }))
    }
}

/// The offsets of one batch for the offset walk: a v2 header as it stands;
/// a legacy message read as the decoder reads it (a wrapper's inner
/// messages decompressed), its CRC unchecked.
fn offset_facts(data: &[u8], f: &BatchFacts, scratch: &mut Vec<u8>) -> OffsetFacts {
    if f.magic == 2 {
        return OffsetFacts {
            good: f.header_ok,
            base_offset: f.base_offset,
            last_offset: f.last_offset,
            record_count: f.record_count as i64,
            magic: 2,
        };
    }
    let raw = RawBatch {
        position: f.position,
        bytes: &data[f.position..f.position + f.size],
    };
    let options = DecodeOptions {
        validate_crc: false,
        ..Default::default()
    };
    match decode_batch::<OwnedRecords>(&raw, &options, scratch, None) {
        Ok(h) => OffsetFacts {
            good: true,
            base_offset: h.base_offset,
            last_offset: h.last_offset,
            record_count: h.record_count as i64,
            magic: h.magic,
        },
        Err(_) => OffsetFacts {
            good: false,
            base_offset: f.base_offset,
            last_offset: f.last_offset,
            record_count: 0,
            magic: f.magic,
        },
    }
}

/// Every record of the batch lies before `offset`, judged by its header. A
/// legacy wrapper as a producer writes it (its offset never assigned by a
/// broker) keeps its inner offsets, which run past `last_offset` (the
/// wrapper's own offset, as in Kafka's Java client): never judged by header.
fn ends_before(o: &OffsetFacts, offset: i64) -> bool {
    if o.magic < 2 && o.last_offset < o.base_offset.saturating_add(o.record_count) - 1 {
        return false;
    }
    o.last_offset < offset
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::{control_batch, encode, ControlKind, EncodeOptions, RecordRef};
    use crate::prune::kept_ranges;

    fn batch(base: i64, timestamps: &[i64], txn_pid: Option<i64>) -> Vec<u8> {
        let records: Vec<RecordRef> = timestamps
            .iter()
            .map(|&t| RecordRef::new(None, Some(b"v"), t))
            .collect();
        let options = EncodeOptions {
            base_offset: base,
            producer_id: txn_pid.unwrap_or(-1),
            producer_epoch: if txn_pid.is_some() { 0 } else { -1 },
            base_sequence: if txn_pid.is_some() { 0 } else { -1 },
            transactional: txn_pid.is_some(),
            ..Default::default()
        };
        let mut out = Vec::new();
        encode(&records, &options, &mut out).unwrap();
        out
    }

    /// Windows by the old walk: `valid_bytes` of each window, one big batch alone.
    fn windows_by_slices(data: &[u8], a: usize, b: usize, chunk: usize) -> Vec<Window> {
        let mut out = Vec::new();
        let mut pos = a;
        while pos < b {
            let n = chunk.min(b - pos);
            let mut valid = crate::batch::valid_bytes(&data[pos..pos + n]);
            if valid == 0 {
                let size = walk(&data[pos..b], 0).batches.first().map(|f| f.size);
                match size {
                    Some(size) => valid = size,
                    None => {
                        out.push((pos, b, true));
                        break;
                    }
                }
            }
            out.push((pos, pos + valid, false));
            pos += valid;
        }
        out
    }

    #[test]
    fn windows_match_a_walk_per_window_and_keep_the_tail() {
        let mut log = Vec::new();
        for i in 0..20 {
            log.extend(batch(i * 3, &[1_000, 10, 20], None));
        }
        let size = log.len() / 20;
        log.extend(batch(60, &vec![5; 200], None)); // larger than a window
        let whole = log.len();
        log.extend_from_slice(&log.clone()[..30]); // an incomplete tail
        let w = walk(&log, 0);
        assert_eq!((w.batches.len(), w.valid_end), (21, whole));
        assert!(matches!(w.end, WalkEnd::Truncated { .. }));
        for chunk in [1, size, size + 1, 3 * size + 7, 1 << 20] {
            let ours = w.windows(&log, 0, log.len(), chunk, None, None).unwrap();
            assert_eq!(ours, windows_by_slices(&log, 0, log.len(), chunk), "chunk {chunk}");
            assert_eq!(ours.last().unwrap(), &(whole, log.len(), true));
        }
        // an end inside a batch: that batch is the final window
        let at: Vec<usize> = w.batches.iter().map(|f| f.position).collect();
        let cut = at[5] + 3;
        assert_eq!(
            w.windows(&log, at[1], cut, at[3] - at[1], None, None).unwrap(),
            vec![(at[1], at[3], false), (at[3], at[5], false), (at[5], cut, true)]
        );
        assert_eq!(w.windows(&log, 3, log.len(), size, None, None), None);
    }

    #[test]
    fn offset_windows_skip_and_stop() {
        let log: Vec<u8> = (0..10).flat_map(|i| batch(i * 2, &[1, 2], None)).collect();
        let w = walk(&log, 0);
        let size = w.batches[0].size;
        // offsets [5, 9): batches 2 (4-5) to 4 (8-9), the last one reaching 8
        let got = w.windows(&log, 0, log.len(), 4 * size, Some(5), Some(9)).unwrap();
        assert_eq!(got, vec![(2 * size, 4 * size, false), (4 * size, 5 * size, true)]);
        // kept ranges by offsets agree with the buffer's own
        let bounds = HeaderBounds {
            start_offset: Some(5),
            end_offset: Some(9),
            ..Default::default()
        };
        assert_eq!(
            w.kept_ranges(0, log.len(), &bounds, false).unwrap(),
            kept_ranges(&log, &bounds, false)
        );
        assert_eq!(w.narrow(0, log.len(), &bounds, false), Some((2 * size, 5 * size)));
    }

    #[test]
    fn transaction_pass_from_the_walk_equals_the_buffer_walk() {
        let mut log = [batch(0, &[1, 1], Some(7)), batch(2, &[1], Some(8))].concat();
        control_batch(ControlKind::Commit, 8, 0, 3, 0, 1_000, 0, &mut log);
        log.extend(batch(4, &[1], Some(7)));
        control_batch(ControlKind::Abort, 7, 0, 5, 0, 1_000, 0, &mut log);
        log.extend(batch(6, &[1], Some(9)));
        let options = DecodeOptions::default();
        let w = walk(&log, 0);
        for (start, end) in [(None, None), (Some(3), None), (None, Some(5))] {
            let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
            let ours = w
                .transaction_pass(&log, 0..log.len(), &mut a, start, end, &options)
                .unwrap();
            let theirs = crate::decode::transaction_pass(&log, &mut b, start, end, &options);
            assert_eq!((ours, a), (theirs, b));
        }
    }
}
