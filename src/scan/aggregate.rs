//! Aggregates answered from batch headers alone: `COUNT(*)`, `MIN`/`MAX` of
//! `offset` and of `timestamp`, per topic-partition, per topic or over all,
//! without decompressing a record (each batch's CRC is still checked), so a
//! `count()` costs a read of the bytes, not a decode.
//!
//! An answer is given only where the headers make it exact; otherwise
//! [`Plan::header_aggregates`] says why not ([`Unanswerable`]) and the caller
//! aggregates rows instead:
//!
//! - v2 data batches only: control batches hold no rows; under
//!   `read_committed` batches of aborted (or still open) transactions are left
//!   out with the plan's transactions; a legacy message set (magic 0/1) can't
//!   be counted without decompressing its wrappers;
//! - `COUNT(*)` is the sum of the header counts;
//! - `MAX(timestamp)` is the largest `maxTimestamp`; `MIN(timestamp)` only
//!   where every batch counted is `LogAppendTime` (each record then carries
//!   `maxTimestamp`; a `CreateTime` batch's smallest timestamp is unknown);
//! - `MIN`/`MAX(offset)` only where the batch they come from has no gap
//!   (`count == lastOffsetDelta + 1`: a compacted batch keeps its first and
//!   last offsets but maybe not the records at them);
//! - bounds (offsets, times) only where every batch lies wholly inside or
//!   wholly outside them (times: `LogAppendTime` batches, or `CreateTime`
//!   ones whose `maxTimestamp` is below both bounds or the start bound is unset);
//! - a batch whose CRC does not match, a corrupt header, bytes that can't be
//!   framed, or `includeControl`: no answer (a read reports or skips them).
//!
//! Where the headers don't answer a whole query, [`split_aggregates`] gives
//! each task's partial aggregates of its splits, which an engine adds up: a
//! split from its headers where they answer every aggregate exactly, else
//! from the rows a read of it returns (the read's rules), with only the
//! offset and timestamp columns asked for built (none for a count).

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType};

use super::legacy_tallies::{legacy_tallies, legacy_tally, tallied_kind};
use super::plan::{Plan, Scan, ScanError, Split, Transaction};
use super::read::ScanReader;
use crate::arrow_out::Columns;
use crate::batch::{parse_v2_header, BatchWalker, WalkEnd, CREATE_TIME, LOG_APPEND_TIME};
use crate::prune::HeaderBounds;

/// An aggregate of the rows a scan returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregate {
    /// `COUNT(*)`.
    Count,
    MinOffset,
    MaxOffset,
    /// In microseconds, as the `timestamp` column.
    MinTimestamp,
    MaxTimestamp,
}

/// How rows are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    /// One group for all rows (always one, even of no rows).
    All,
    /// A group per topic that has rows.
    Topic,
    /// A group per topic-partition that has rows.
    TopicPartition,
}

/// One group's values, in the order the aggregates were asked for;
/// `None` is SQL's NULL (the MIN or MAX of no rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregateRow {
    /// `None` when grouped over all topics.
    pub topic: Option<String>,
    /// `None` unless grouped by topic-partition.
    pub partition: Option<i64>,
    pub values: Vec<Option<i64>>,
}

/// Why the headers can't answer: aggregate rows instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unanswerable {
    /// A legacy (magic 0 or 1) message set: counting its records needs decompression.
    LegacyMessageSet { path: String, position: u64 },
    /// A batch whose header or CRC is bad, or bytes that can't be framed:
    /// a read fails or skips them.
    Corrupt { path: String, position: u64 },
    /// `includeControl`: control records are rows, counted only by decoding them.
    ControlRecords,
    /// An offset or time bound falls inside a batch.
    BoundInsideBatch { path: String, position: u64 },
    /// `MIN(timestamp)` over a `CreateTime` batch (its smallest timestamp is not in the header).
    CreateTimeMinimum { path: String, position: u64 },
    /// `MIN`/`MAX(offset)` from a batch with gaps (compacted).
    OffsetGap { path: String, position: u64 },
    /// Bytes that could not be read (a damaged tiered chunk, an object gone):
    /// a read fails, skips them or reads a twin, as its options say.
    Unreadable { path: String, reason: String },
}

impl std::fmt::Display for Unanswerable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unanswerable::LegacyMessageSet { path, position } => {
                write!(f, "{path}: a legacy message set at byte {position}")
            }
            Unanswerable::Corrupt { path, position } => write!(f, "{path}: a corrupt batch at byte {position}"),
            Unanswerable::ControlRecords => f.write_str("control records are returned as rows"),
            Unanswerable::BoundInsideBatch { path, position } => {
                write!(f, "{path}: a bound falls inside the batch at byte {position}")
            }
            Unanswerable::CreateTimeMinimum { path, position } => {
                write!(f, "{path}: the batch at byte {position} has CreateTime timestamps")
            }
            Unanswerable::OffsetGap { path, position } => {
                write!(f, "{path}: the batch at byte {position} has offset gaps")
            }
            Unanswerable::Unreadable { path, reason } => write!(f, "{path}: not readable ({reason})"),
        }
    }
}

/// What the headers of one topic-partition's batches add up to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Tally {
    count: u64,
    /// `(offset, batch without gaps, path, position)` of the smallest and largest.
    min_offset: Option<(i64, bool, String, u64)>,
    max_offset: Option<(i64, bool, String, u64)>,
    max_ts_us: Option<i64>,
    min_ts_us: Option<i64>,
    /// The first `CreateTime` batch counted, if any.
    create_time: Option<(String, u64)>,
}

impl Tally {
    /// The tally of `rows` rows whose `values` are, in this order, their
    /// count, smallest and largest offset, smallest and largest timestamp
    /// (exact, as a read returns them), found in `path` from byte `position`.
    pub(super) fn of_rows(rows: u64, values: &[Option<i64>], path: &str, position: u64) -> Tally {
        let at = |v: Option<i64>| v.map(|o| (o, true, path.to_string(), position));
        let value = |i: usize| values.get(i).copied().flatten();
        Tally {
            count: rows,
            min_offset: at(value(1)),
            max_offset: at(value(2)),
            min_ts_us: value(3),
            max_ts_us: value(4),
            create_time: None,
        }
    }

    pub(super) fn merge(&mut self, other: Tally) {
        self.count += other.count;
        if let Some(m) = other.min_offset {
            if self.min_offset.as_ref().is_none_or(|s| m.0 < s.0) {
                self.min_offset = Some(m);
            }
        }
        if let Some(m) = other.max_offset {
            if self.max_offset.as_ref().is_none_or(|s| m.0 > s.0) {
                self.max_offset = Some(m);
            }
        }
        self.max_ts_us = self.max_ts_us.max(other.max_ts_us);
        self.min_ts_us = match (self.min_ts_us, other.min_ts_us) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if self.create_time.is_none() {
            self.create_time = other.create_time;
        }
    }

    fn value(&self, aggregate: Aggregate) -> Result<Option<i64>, Unanswerable> {
        let offset = |m: &Option<(i64, bool, String, u64)>| match m {
            None => Ok(None),
            Some((o, true, _, _)) => Ok(Some(*o)),
            Some((_, false, path, position)) => Err(Unanswerable::OffsetGap {
                path: path.clone(),
                position: *position,
            }),
        };
        match aggregate {
            Aggregate::Count => Ok(Some(i64::try_from(self.count).unwrap_or(i64::MAX))),
            Aggregate::MinOffset => offset(&self.min_offset),
            Aggregate::MaxOffset => offset(&self.max_offset),
            Aggregate::MaxTimestamp => Ok(self.max_ts_us),
            Aggregate::MinTimestamp => match &self.create_time {
                Some((path, position)) => Err(Unanswerable::CreateTimeMinimum {
                    path: path.clone(),
                    position: *position,
                }),
                None => Ok(self.min_ts_us),
            },
        }
    }
}

/// Whether read_committed hides a batch of `producer_id` at `base_offset`: it
/// lies in an aborted transaction (before its ABORT marker) or an open one.
fn hidden(transactions: &[Transaction], producer_id: i64, base_offset: i64) -> bool {
    transactions.iter().any(|t| {
        t.producer_id == producer_id
            && t.first_offset <= base_offset
            && t.last_offset.is_none_or(|last| base_offset < last)
    })
}

/// Where a batch of records `[first, last]` (offsets) stands against `[start, end)`.
enum Side {
    Inside,
    Outside,
    Across,
}

fn side(first: i64, last: i64, start: Option<i64>, end: Option<i64>) -> Side {
    let (lo, hi) = (start.unwrap_or(i64::MIN), end.unwrap_or(i64::MAX));
    if last < lo || first >= hi {
        Side::Outside
    } else if first >= lo && last < hi {
        Side::Inside
    } else {
        Side::Across
    }
}

/// The tally of one split's v2 batches, and where its first legacy message
/// set is, if any: with `skip_legacy` the legacy ones are passed over (to be
/// tallied by [`legacy_tally`]), else the first is the answer's refusal.
fn tally_split(
    split: &Split,
    context: &super::ReadContext,
    skip_legacy: bool,
) -> Result<Result<(Tally, Option<u64>), Unanswerable>, ScanError> {
    let bounds: HeaderBounds = split.bounds();
    let path = &split.path;
    let unreadable = |e: ScanError| Unanswerable::Unreadable {
        path: path.clone(),
        reason: e.to_string(),
    };
    let mut source = match context.open(path, split.layout(), split.manifest.as_deref()) {
        Ok(source) => source,
        Err(e) => return Ok(Err(unreadable(e))),
    };
    let end = split.end.min(source.size());
    let mut pos = split.start;
    let mut tally = Tally::default();
    let mut legacy_at = None;
    while pos < end {
        let piece = match source.piece(pos, end, context.max_chunk_bytes) {
            Ok(piece) => piece,
            Err(e) => return Ok(Err(unreadable(e))),
        };
        let data = &piece.data[..piece.to];
        let mut walker = BatchWalker::starting_at(data, piece.from);
        for raw in walker.by_ref() {
            let at = piece.base + raw.position as u64;
            if raw.magic() < 2 && skip_legacy {
                legacy_at.get_or_insert(at);
                continue;
            }
            if raw.magic() < 2 {
                return Ok(Err(Unanswerable::LegacyMessageSet {
                    path: path.clone(),
                    position: at,
                }));
            }
            let corrupt = || Unanswerable::Corrupt {
                path: path.clone(),
                position: at,
            };
            let Ok(header) = parse_v2_header(&raw) else {
                return Ok(Err(corrupt()));
            };
            if !header.crc_valid && context.options.validate_crc {
                return Ok(Err(corrupt()));
            }
            if header.is_control {
                if context.options.include_control {
                    return Ok(Err(Unanswerable::ControlRecords));
                }
                continue;
            }
            // the plan's transactions are there under read_committed only
            if header.is_transactional
                && split
                    .transactions
                    .as_deref()
                    .is_some_and(|t| hidden(t, header.producer_id, header.base_offset))
            {
                continue;
            }
            let across = || Unanswerable::BoundInsideBatch {
                path: path.clone(),
                position: at,
            };
            match side(
                header.base_offset,
                header.last_offset,
                bounds.start_offset,
                bounds.end_offset,
            ) {
                Side::Outside => continue,
                Side::Across => return Ok(Err(across())),
                Side::Inside => {}
            }
            let max_us = header.max_timestamp.saturating_mul(1000);
            let timed = bounds.start_ts_us.is_some() || bounds.end_ts_us.is_some();
            if timed {
                let in_time =
                    |t: i64| bounds.start_ts_us.is_none_or(|s| t >= s) && bounds.end_ts_us.is_none_or(|e| t < e);
                match header.timestamp_type {
                    LOG_APPEND_TIME if !in_time(max_us) => continue,
                    LOG_APPEND_TIME => {}
                    // every record is at or before maxTimestamp
                    _ if bounds.start_ts_us.is_some_and(|s| max_us < s) => continue,
                    _ if bounds.start_ts_us.is_none() && in_time(max_us) => {}
                    _ => return Ok(Err(across())),
                }
            }
            if header.record_count == 0 {
                continue;
            }
            tally.count += header.record_count as u64;
            let whole = i64::from(header.record_count) == header.last_offset.wrapping_sub(header.base_offset) + 1;
            if tally.min_offset.as_ref().is_none_or(|m| header.base_offset < m.0) {
                tally.min_offset = Some((header.base_offset, whole, path.clone(), at));
            }
            if tally.max_offset.as_ref().is_none_or(|m| header.last_offset > m.0) {
                tally.max_offset = Some((header.last_offset, whole, path.clone(), at));
            }
            tally.max_ts_us = tally.max_ts_us.max(Some(max_us));
            if header.timestamp_type == CREATE_TIME {
                tally.create_time.get_or_insert((path.clone(), at));
            } else {
                tally.min_ts_us = Some(tally.min_ts_us.map_or(max_us, |m| m.min(max_us)));
            }
        }
        if let Some(WalkEnd::Broken(_)) = walker.end() {
            return Ok(Err(Unanswerable::Corrupt {
                path: path.clone(),
                position: piece.base + walker.position() as u64,
            }));
        }
        let next = piece.base + walker.position() as u64;
        if next <= pos || piece.base + piece.to as u64 >= end {
            // an incomplete batch at the end: a read leaves it too
            break;
        }
        pos = next;
    }
    Ok(Ok((tally, legacy_at)))
}

impl Plan {
    /// `aggregates` of the rows `scan` (the scan this plan is of) returns,
    /// grouped by `group_by`, from batch headers alone (see the module
    /// notes); `Ok(Err(why))` when the headers can't answer exactly, and
    /// rows must be aggregated instead. Groups come in topic (and partition) order.
    ///
    /// Legacy message sets of local segments read whole and without bounds
    /// are answered from their files' remembered tallies
    /// ([`super::legacy_tallies`]); those not remembered yet are read here,
    /// on as many threads as there are cores, when they total at most
    /// [`DRIVER_LEGACY_BYTES`], else the answer is refused (tasks aggregate
    /// them, and remember them where they share this process).
    pub fn header_aggregates(
        &self,
        scan: &Scan,
        aggregates: &[Aggregate],
        group_by: GroupBy,
    ) -> Result<Result<Vec<AggregateRow>, Unanswerable>, ScanError> {
        self.header_aggregates_within(scan, aggregates, group_by, DRIVER_LEGACY_BYTES)
    }

    /// [`Plan::header_aggregates`] reading at most `budget` bytes of legacy
    /// segments not remembered yet.
    fn header_aggregates_within(
        &self,
        scan: &Scan,
        aggregates: &[Aggregate],
        group_by: GroupBy,
        budget: u64,
    ) -> Result<Result<Vec<AggregateRow>, Unanswerable>, ScanError> {
        let context = scan.context()?;
        let mut tallies = Vec::with_capacity(self.partitions.len());
        // (partition index, split, position of its first legacy message set)
        let mut unread: Vec<(usize, &Split, u64)> = Vec::new();
        for (i, partition) in self.partitions.iter().enumerate() {
            let mut tally = Tally::default();
            for split in &partition.splits {
                let (t, legacy_at) = match tally_split(split, &context, tallied_kind(split))? {
                    Ok(found) => found,
                    Err(why) => return Ok(Err(why)),
                };
                tally.merge(t);
                if let Some(at) = legacy_at {
                    match legacy_tally(split, &context, false, 0) {
                        Some(t) => tally.merge(t),
                        None => unread.push((i, split, at)),
                    }
                }
            }
            tallies.push(tally);
        }
        if let Some(&(_, split, at)) = unread.first() {
            let legacy = || Unanswerable::LegacyMessageSet {
                path: split.path.clone(),
                position: at,
            };
            let bytes: u64 = unread.iter().map(|(_, s, _)| s.end).sum();
            if bytes > budget {
                return Ok(Err(legacy()));
            }
            let splits: Vec<&Split> = unread.iter().map(|(_, s, _)| *s).collect();
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            for ((i, split, at), tally) in unread.iter().zip(legacy_tallies(&splits, &context, threads)) {
                let Some(tally) = tally else {
                    return Ok(Err(Unanswerable::LegacyMessageSet {
                        path: split.path.clone(),
                        position: *at,
                    }));
                };
                tallies[*i].merge(tally);
            }
        }
        let mut groups: BTreeMap<(Option<String>, Option<i64>), Tally> = BTreeMap::new();
        if group_by == GroupBy::All {
            groups.insert((None, None), Tally::default());
        }
        for (partition, tally) in self.partitions.iter().zip(tallies) {
            if tally.count == 0 && group_by != GroupBy::All {
                continue;
            }
            let key = match group_by {
                GroupBy::All => (None, None),
                GroupBy::Topic => (Some(partition.topic.clone()), None),
                GroupBy::TopicPartition => (Some(partition.topic.clone()), Some(partition.partition)),
            };
            groups.entry(key).or_default().merge(tally);
        }
        let mut rows = Vec::with_capacity(groups.len());
        for ((topic, partition), tally) in groups {
            let mut values = Vec::with_capacity(aggregates.len());
            for aggregate in aggregates {
                match tally.value(*aggregate) {
                    Ok(v) => values.push(v),
                    Err(why) => return Ok(Err(why)),
                }
            }
            rows.push(AggregateRow {
                topic,
                partition,
                values,
            });
        }
        Ok(Ok(rows))
    }
}

/// How many bytes of local legacy segments not remembered yet
/// [`Plan::header_aggregates`] reads itself (on the driver, for Spark) rather
/// than leaving them to tasks: 256 MiB of wrappers, about a second of
/// inflating gzip on two cores.
pub const DRIVER_LEGACY_BYTES: u64 = 256 << 20;

/// Folds one partial value of `aggregate` into `into` (NULL: no value yet):
/// counts add up, minimums and maximums keep the smaller or larger.
fn fold(aggregate: Aggregate, into: &mut Option<i64>, value: Option<i64>) {
    *into = match (*into, value) {
        (a, None) => a,
        (None, b) => b,
        (Some(a), Some(b)) => Some(match aggregate {
            Aggregate::Count => a.saturating_add(b),
            Aggregate::MinOffset | Aggregate::MinTimestamp => a.min(b),
            Aggregate::MaxOffset | Aggregate::MaxTimestamp => a.max(b),
        }),
    };
}

/// The smallest and largest of some values (none: no value).
type Extremes = (Option<i64>, Option<i64>);

/// A group: its topic (none when grouped over all) and partition (none unless grouped by topic-partition).
type GroupKey = (Option<String>, Option<i64>);

/// One split's rows and its values of the aggregates asked for.
pub(super) struct SplitPartial {
    pub(super) rows: u64,
    pub(super) values: Vec<Option<i64>>,
}

/// A split's aggregates from its batch headers, where they answer every one exactly.
fn header_partial(
    split: &Split,
    context: &super::ReadContext,
    aggregates: &[Aggregate],
) -> Result<Option<SplitPartial>, ScanError> {
    let Ok((mut tally, legacy_at)) = tally_split(split, context, tallied_kind(split))? else {
        return Ok(None);
    };
    if legacy_at.is_some() {
        // read (or remembered) whole, and remembered for the driver's next question
        let Some(legacy) = legacy_tally(split, context, true, context.options.threads) else {
            return Ok(None);
        };
        tally.merge(legacy);
    }
    let mut values = Vec::with_capacity(aggregates.len());
    for aggregate in aggregates {
        match tally.value(*aggregate) {
            Ok(v) => values.push(v),
            Err(_) => return Ok(None),
        }
    }
    Ok(Some(SplitPartial {
        rows: tally.count,
        values,
    }))
}

/// A split's aggregates from the rows a read of it returns (the same read
/// rules: bounds, isolation, control batches, corrupt batches), with only the
/// offset and timestamp columns the aggregates need built: no value, key or
/// header is, and a count builds no column at all.
pub(super) fn row_partial(
    split: &Split,
    context: &super::ReadContext,
    aggregates: &[Aggregate],
) -> Result<SplitPartial, ScanError> {
    let mut columns = Columns::NONE;
    for aggregate in aggregates {
        columns = match aggregate {
            Aggregate::Count => columns,
            Aggregate::MinOffset | Aggregate::MaxOffset => columns.union(Columns::OFFSET),
            Aggregate::MinTimestamp | Aggregate::MaxTimestamp => columns.union(Columns::TIMESTAMP),
        };
    }
    let mut context = context.clone();
    context.columns = columns;
    context.limit = None;
    let mut rows = 0u64;
    let (mut offsets, mut stamps): (Extremes, Extremes) = ((None, None), (None, None));
    let range = |values: &[i64], (lo, hi): &mut Extremes| {
        if let (Some(min), Some(max)) = (values.iter().min(), values.iter().max()) {
            *lo = Some(lo.map_or(*min, |l| l.min(*min)));
            *hi = Some(hi.map_or(*max, |h| h.max(*max)));
        }
    };
    for batch in ScanReader::new(vec![split.clone()], context) {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        if let Some(i) = columns.position(Columns::OFFSET) {
            range(batch.column(i).as_primitive::<Int64Type>().values(), &mut offsets);
        }
        if let Some(i) = columns.position(Columns::TIMESTAMP) {
            range(
                batch.column(i).as_primitive::<TimestampMicrosecondType>().values(),
                &mut stamps,
            );
        }
    }
    let values = aggregates
        .iter()
        .map(|aggregate| match aggregate {
            Aggregate::Count => Some(i64::try_from(rows).unwrap_or(i64::MAX)),
            Aggregate::MinOffset => offsets.0,
            Aggregate::MaxOffset => offsets.1,
            Aggregate::MinTimestamp => stamps.0,
            Aggregate::MaxTimestamp => stamps.1,
        })
        .collect();
    Ok(SplitPartial { rows, values })
}

/// How much more a legacy message set's byte costs [`split_aggregates`]
/// than a v2 batch's: decompressed and walked record by record, against a
/// header walk and a checksum.
const LEGACY_WORK: u64 = 16;

/// What a split costs [`split_aggregates`], as [`super::tasks::pack`] takes
/// work: a v2 split its bytes (headers walked, CRCs checked), a legacy one
/// 16 times (`LEGACY_WORK`) its bytes (its wrappers decompressed), judged by
/// the split's first batch; a remote or tiered split its bytes (a read per
/// split would cost a request each).
pub fn aggregate_work(split: &Split) -> u64 {
    use std::io::{Read, Seek, SeekFrom};
    let wire = split.end.saturating_sub(split.start);
    if super::naming::is_remote(&split.path) || split.layout() == super::layouts::Layout::Aiven {
        return wire;
    }
    // the magic byte: after the offset (8), length (4) and leader epoch or CRC (4)
    let mut magic = [0u8; 1];
    let read = std::fs::File::open(&split.path).and_then(|mut f| {
        f.seek(SeekFrom::Start(split.start + 16))?;
        f.read_exact(&mut magic)
    });
    match read {
        Ok(()) if magic[0] < 2 => wire.saturating_mul(LEGACY_WORK),
        _ => wire,
    }
}

/// Partial `aggregates` of the rows `splits` (one task's, from a plan of a
/// scan with `context`) return, grouped by `group_by`: one row per group of
/// these splits (one group of all, even of no rows), which an engine's final
/// aggregation combines with other tasks' (counts summed, minimums and
/// maximums of the partials). Each split is answered from its batch headers
/// where they answer every aggregate exactly (see the module notes), else
/// from the rows a read of it returns, building no column the aggregates
/// don't need: a legacy message set's wrappers are decompressed and their
/// records counted, never inferred from offsets.
pub fn split_aggregates(
    splits: &[Split],
    context: &super::ReadContext,
    aggregates: &[Aggregate],
    group_by: GroupBy,
) -> Result<Vec<AggregateRow>, ScanError> {
    let empty = || -> Vec<Option<i64>> {
        aggregates
            .iter()
            .map(|a| (*a == Aggregate::Count).then_some(0))
            .collect()
    };
    let mut groups: BTreeMap<GroupKey, Vec<Option<i64>>> = BTreeMap::new();
    if group_by == GroupBy::All {
        groups.insert((None, None), empty());
    }
    for split in splits {
        let partial = match header_partial(split, context, aggregates)? {
            Some(p) => p,
            None => row_partial(split, context, aggregates)?,
        };
        if partial.rows == 0 && group_by != GroupBy::All {
            continue;
        }
        let key = match group_by {
            GroupBy::All => (None, None),
            GroupBy::Topic => (Some(split.topic.clone()), None),
            GroupBy::TopicPartition => (Some(split.topic.clone()), Some(split.partition)),
        };
        let into = groups.entry(key).or_insert_with(empty);
        for ((aggregate, slot), value) in aggregates.iter().zip(into.iter_mut()).zip(partial.values) {
            fold(*aggregate, slot, value);
        }
    }
    Ok(groups
        .into_iter()
        .map(|((topic, partition), values)| AggregateRow {
            topic,
            partition,
            values,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};

    use super::*;
    use crate::compression::Codec;
    use crate::generate::{Kind, PartitionConfig, PartitionGenerator};
    use crate::scan::ScanIsolation;

    /// Per (topic, partition): count, min/max offset, max timestamp of what the reader returns
    /// (those of [`all_from_rows`]).
    fn from_rows(scan: &Scan) -> Vec<AggregateRow> {
        all_from_rows(scan)
            .into_iter()
            .map(|row| AggregateRow {
                values: [0, 1, 2, 4].iter().map(|&i| row.values[i]).collect(),
                ..row
            })
            .collect()
    }

    #[test]
    fn headers_answer_what_a_full_read_returns_or_say_why_not() {
        let dir = std::env::temp_dir().join(format!("kb-aggregate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut orders = PartitionConfig::new(dir.join("orders-0"), "orders", 0, Kind::Orders);
        orders.target_bytes = 300 << 10;
        orders.segment_bytes = 64 << 10;
        orders.transactional_producers = 3;
        orders.codec = Codec::Zstd;
        let mut clicks = PartitionConfig::new(dir.join("clicks-2"), "clicks", 2, Kind::Clicks);
        clicks.target_bytes = 100 << 10;
        let mut audit = PartitionConfig::new(dir.join("audit-1"), "audit", 1, Kind::Audit);
        audit.magic = 1;
        audit.target_bytes = 50 << 10;
        for cfg in [orders, clicks, audit] {
            let mut g = PartitionGenerator::new(cfg).unwrap();
            g.step(u64::MAX).unwrap();
            g.finish().unwrap();
        }
        let root = dir.to_str().unwrap();
        let asked = [
            Aggregate::Count,
            Aggregate::MinOffset,
            Aggregate::MaxOffset,
            Aggregate::MaxTimestamp,
        ];
        let mut counts = Vec::new();
        for isolation in [ScanIsolation::ReadUncommitted, ScanIsolation::ReadCommitted] {
            let scan = Scan::new([root]).isolation(isolation).topics(["orders", "clicks"]);
            let answer = scan
                .plan()
                .unwrap()
                .header_aggregates(&scan, &asked, GroupBy::TopicPartition)
                .unwrap()
                .unwrap();
            assert_eq!(answer, from_rows(&scan), "{isolation:?}");
            counts.push(answer[1].values[0]);
            // one group over all, and CreateTime's minimum declined
            let all = scan
                .plan()
                .unwrap()
                .header_aggregates(&scan, &[Aggregate::Count], GroupBy::All)
                .unwrap()
                .unwrap();
            assert_eq!(
                all[0].values[0],
                Some(answer.iter().map(|r| r.values[0].unwrap()).sum())
            );
            let why = scan
                .plan()
                .unwrap()
                .header_aggregates(&scan, &[Aggregate::MinTimestamp], GroupBy::All)
                .unwrap()
                .unwrap_err();
            assert!(matches!(why, Unanswerable::CreateTimeMinimum { .. }), "{why}");
        }
        assert!(counts[1] < counts[0], "aborted transactions are left out: {counts:?}");
        // an offset bound inside a batch: no answer; on a boundary: the read's
        let mid = Scan::new([root]).topics(["orders"]).start_offset(Some(101));
        let plan = mid.plan().unwrap();
        match plan
            .header_aggregates(&mid, &[Aggregate::Count], GroupBy::Topic)
            .unwrap()
        {
            Ok(rows) => assert_eq!(rows[0].values[0], from_rows(&mid)[0].values[0]),
            Err(why) => assert!(matches!(why, Unanswerable::BoundInsideBatch { .. }), "{why}"),
        }
        // a legacy message set: read on the driver within the budget, else declined
        let legacy = Scan::new([root]).topics(["audit"]);
        let plan = legacy.plan().unwrap();
        let why = plan
            .header_aggregates_within(&legacy, &[Aggregate::Count], GroupBy::All, 0)
            .unwrap()
            .unwrap_err();
        assert!(matches!(why, Unanswerable::LegacyMessageSet { .. }), "{why}");
        let read = plan
            .header_aggregates(&legacy, &asked, GroupBy::TopicPartition)
            .unwrap()
            .unwrap();
        assert_eq!(read, from_rows(&legacy));
        // a bound that cuts it: declined as before
        let cut = Scan::new([root]).topics(["audit"]).start_offset(Some(7));
        let why = cut
            .plan()
            .unwrap()
            .header_aggregates(&cut, &[Aggregate::Count], GroupBy::All)
            .unwrap()
            .unwrap_err();
        assert!(matches!(why, Unanswerable::LegacyMessageSet { .. }), "{why}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every aggregate per (topic, partition) of the rows the reader returns.
    fn all_from_rows(scan: &Scan) -> Vec<AggregateRow> {
        let mut groups: BTreeMap<(String, i64), Vec<i64>> = BTreeMap::new();
        for batch in scan.reader().unwrap() {
            let b = batch.unwrap();
            let (t, p) = (b.column(2).as_string::<i32>(), b.column(3).as_primitive::<Int32Type>());
            let o = b.column(4).as_primitive::<Int64Type>();
            let ts = b.column(5).as_primitive::<TimestampMicrosecondType>();
            for i in 0..b.num_rows() {
                let g = groups
                    .entry((t.value(i).to_string(), i64::from(p.value(i))))
                    .or_insert_with(|| vec![0, i64::MAX, i64::MIN, i64::MAX, i64::MIN]);
                g[0] += 1;
                g[1] = g[1].min(o.value(i));
                g[2] = g[2].max(o.value(i));
                g[3] = g[3].min(ts.value(i));
                g[4] = g[4].max(ts.value(i));
            }
        }
        groups
            .into_iter()
            .map(|((t, p), v)| AggregateRow {
                topic: Some(t),
                partition: Some(p),
                values: v.into_iter().map(Some).collect(),
            })
            .collect()
    }

    const ALL: [Aggregate; 5] = [
        Aggregate::Count,
        Aggregate::MinOffset,
        Aggregate::MaxOffset,
        Aggregate::MinTimestamp,
        Aggregate::MaxTimestamp,
    ];

    /// Sets a file's modification time `ago` in the past (settled: its tally may be remembered).
    fn age(path: &std::path::Path, ago: std::time::Duration) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(std::time::SystemTime::now() - ago).unwrap();
    }

    fn logs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        out.sort();
        out
    }

    /// The answer with nothing read on the driver: only remembered tallies.
    fn remembered_answer(scan: &Scan) -> Result<Vec<AggregateRow>, Unanswerable> {
        let plan = scan.plan().unwrap();
        plan.header_aggregates_within(scan, &ALL, GroupBy::TopicPartition, 0)
            .unwrap()
    }

    #[test]
    fn legacy_tallies_are_remembered_while_their_files_are_unchanged() {
        let dir = std::env::temp_dir().join(format!("kb-aggregate-legacy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut partitions = Vec::new();
        for (n, (magic, codec)) in [
            (0, Codec::Gzip),
            (1, Codec::Gzip),
            (0, Codec::Snappy),
            (1, Codec::Snappy),
            (0, Codec::Lz4),
            (1, Codec::Lz4),
            (1, Codec::None),
        ]
        .into_iter()
        .enumerate()
        {
            let mut cfg = PartitionConfig::new(dir.join(format!("audit-{n}")), "audit", n as i32, Kind::Audit);
            cfg.magic = magic;
            cfg.codec = codec;
            cfg.target_bytes = 40 << 10;
            cfg.segment_bytes = 16 << 10;
            let mut g = PartitionGenerator::new(cfg).unwrap();
            g.step(u64::MAX).unwrap();
            g.finish().unwrap();
            partitions.push(dir.join(format!("audit-{n}")));
        }
        // v2 batches in the same partition as legacy ones
        let mut orders = PartitionConfig::new(dir.join("orders-0"), "orders", 0, Kind::Orders);
        orders.target_bytes = 30 << 10;
        orders.transactional_producers = 1;
        let mut g = PartitionGenerator::new(orders).unwrap();
        g.step(u64::MAX).unwrap();
        g.finish().unwrap();
        let hour = std::time::Duration::from_secs(3600);
        for p in &partitions {
            for log in logs(p) {
                age(&log, hour);
            }
        }
        let root = dir.to_str().unwrap();
        let scan = Scan::new([root]).topics(["audit"]);
        let why = remembered_answer(&scan).unwrap_err();
        assert!(matches!(why, Unanswerable::LegacyMessageSet { .. }), "{why}");
        // tasks' partials remember what they read: then the driver answers alone
        let plan = scan.plan().unwrap();
        let splits: Vec<Split> = plan.splits().cloned().collect();
        let context = scan.context().unwrap();
        split_aggregates(&splits, &context, &ALL, GroupBy::TopicPartition).unwrap();
        let want = all_from_rows(&scan);
        assert_eq!(want.len(), 7);
        assert_eq!(remembered_answer(&scan).unwrap(), want);
        for group_by in [GroupBy::All, GroupBy::Topic] {
            let answer = plan
                .header_aggregates_within(&scan, &[Aggregate::Count], group_by, 0)
                .unwrap()
                .unwrap();
            let total: i64 = want.iter().map(|r| r.values[0].unwrap()).sum();
            assert_eq!(answer.iter().map(|r| r.values[0].unwrap()).sum::<i64>(), total);
        }
        // with a v2 topic (CreateTime: no minimum timestamp), read_committed too: the legacy
        // sets are the same, the v2 topic's aborted batches left out
        let asked = [
            Aggregate::Count,
            Aggregate::MinOffset,
            Aggregate::MaxOffset,
            Aggregate::MaxTimestamp,
        ];
        for isolation in [ScanIsolation::ReadUncommitted, ScanIsolation::ReadCommitted] {
            let both = Scan::new([root]).isolation(isolation);
            let answer = both
                .plan()
                .unwrap()
                .header_aggregates_within(&both, &asked, GroupBy::TopicPartition, 0)
                .unwrap()
                .unwrap();
            let want: Vec<AggregateRow> = all_from_rows(&both)
                .into_iter()
                .map(|mut r| {
                    r.values.remove(3);
                    r
                })
                .collect();
            assert_eq!(answer, want, "{isolation:?}");
        }

        // an append (a copy of the segment's first wrapper): not remembered any more
        let appended = logs(&partitions[1]).pop().unwrap();
        let bytes = std::fs::read(&appended).unwrap();
        let first = BatchWalker::new(&bytes).next().unwrap().bytes.to_vec();
        std::fs::write(&appended, [bytes.as_slice(), &first].concat()).unwrap();
        age(&appended, hour / 2);
        assert!(remembered_answer(&scan).is_err());
        let again = scan
            .plan()
            .unwrap()
            .header_aggregates(&scan, &ALL, GroupBy::TopicPartition)
            .unwrap()
            .unwrap();
        let want = all_from_rows(&scan);
        assert_eq!(again, want);
        assert_eq!(remembered_answer(&scan).unwrap(), want);

        // a rewrite of the same length and times: every message's offset moved (the offset is
        // outside the CRC), renamed over the file (a new inode), then written in place (a new change time)
        let plain = logs(&partitions[6]).pop().unwrap();
        let modified = std::fs::metadata(&plain).unwrap().modified().unwrap();
        let mut moved = std::fs::read(&plain).unwrap();
        let positions: Vec<usize> = BatchWalker::new(&moved).map(|raw| raw.position).collect();
        for at in positions {
            let offset = i64::from_be_bytes(moved[at..at + 8].try_into().unwrap()) + 1_000_000;
            moved[at..at + 8].copy_from_slice(&offset.to_be_bytes());
        }
        let renamed = plain.with_extension("tmp");
        std::fs::write(&renamed, &moved).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&renamed)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        std::fs::rename(&renamed, &plain).unwrap();
        assert!(remembered_answer(&scan).is_err(), "a new inode");
        let want = all_from_rows(&scan);
        let moved_group = want.iter().find(|r| r.partition == Some(6)).unwrap();
        assert!(moved_group.values[2].unwrap() >= 1_000_000);
        let answer = scan
            .plan()
            .unwrap()
            .header_aggregates(&scan, &ALL, GroupBy::TopicPartition)
            .unwrap()
            .unwrap();
        assert_eq!(answer, want);
        // back to the old offsets, in place
        let original: Vec<u8> = {
            let mut b = moved.clone();
            let positions: Vec<usize> = BatchWalker::new(&b).map(|raw| raw.position).collect();
            for at in positions {
                let offset = i64::from_be_bytes(b[at..at + 8].try_into().unwrap()) - 1_000_000;
                b[at..at + 8].copy_from_slice(&offset.to_be_bytes());
            }
            b
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&plain, &original).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&plain)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert!(remembered_answer(&scan).is_err(), "a new change time");
        let answer = scan
            .plan()
            .unwrap()
            .header_aggregates(&scan, &ALL, GroupBy::TopicPartition)
            .unwrap()
            .unwrap();
        assert_eq!(answer, all_from_rows(&scan));
        assert!(answer.iter().find(|r| r.partition == Some(6)).unwrap().values[2].unwrap() < 1_000_000);

        // a file written just now is read, but not remembered (its times may not show a rewrite yet)
        let fresh = logs(&partitions[3]).remove(0);
        let bytes = std::fs::read(&fresh).unwrap();
        std::fs::remove_file(&fresh).unwrap();
        std::fs::write(&fresh, &bytes).unwrap();
        let answer = scan
            .plan()
            .unwrap()
            .header_aggregates(&scan, &ALL, GroupBy::TopicPartition)
            .unwrap()
            .unwrap();
        assert_eq!(answer, all_from_rows(&scan));
        assert!(remembered_answer(&scan).is_err(), "written just now");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tasks_partials_add_up_to_what_a_full_read_returns() {
        let dir = std::env::temp_dir().join(format!("kb-aggregate-partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut orders = PartitionConfig::new(dir.join("orders-0"), "orders", 0, Kind::Orders);
        orders.target_bytes = 200 << 10;
        orders.segment_bytes = 64 << 10;
        orders.transactional_producers = 2;
        // gzip wrappers: their records are counted only by decompressing them
        let mut audit = PartitionConfig::new(dir.join("audit-1"), "audit", 1, Kind::Audit);
        audit.magic = 1;
        audit.codec = Codec::Gzip;
        audit.target_bytes = 80 << 10;
        audit.segment_bytes = 32 << 10;
        let mut old = PartitionConfig::new(dir.join("audit-3"), "audit", 3, Kind::Audit);
        old.magic = 0;
        old.target_bytes = 20 << 10;
        for cfg in [orders, audit, old] {
            let mut g = PartitionGenerator::new(cfg).unwrap();
            g.step(u64::MAX).unwrap();
            g.finish().unwrap();
        }
        let root = dir.to_str().unwrap();
        let all = [
            Aggregate::Count,
            Aggregate::MinOffset,
            Aggregate::MaxOffset,
            Aggregate::MinTimestamp,
            Aggregate::MaxTimestamp,
        ];
        let scans = [
            Scan::new([root]),
            Scan::new([root]).isolation(ScanIsolation::ReadCommitted),
            // bounds inside batches, legacy ones included
            Scan::new([root]).start_offset(Some(101)).end_offset(Some(1_000)),
        ];
        for (n, scan) in scans.into_iter().enumerate() {
            // per (topic, partition): count, min/max offset, min/max timestamp of the rows read
            let expected: BTreeMap<(String, i64), Vec<Option<i64>>> = all_from_rows(&scan)
                .into_iter()
                .map(|r| ((r.topic.unwrap(), r.partition.unwrap()), r.values))
                .collect();
            assert!(expected.keys().any(|k| k.0 == "audit"), "scan {n}");
            let plan = scan.plan().unwrap();
            let context = scan.context().unwrap();
            let splits: Vec<Split> = plan.splits().cloned().collect();
            // two tasks' partials, folded as an engine's final aggregation does
            let (a, b) = splits.split_at(splits.len() / 2);
            let mut folded: BTreeMap<(String, i64), Vec<Option<i64>>> = BTreeMap::new();
            for task in [a, b] {
                for row in split_aggregates(task, &context, &all, GroupBy::TopicPartition).unwrap() {
                    let key = (row.topic.unwrap(), row.partition.unwrap());
                    let into = folded.entry(key).or_insert_with(|| vec![None; all.len()]);
                    for ((aggregate, slot), v) in all.iter().zip(into.iter_mut()).zip(row.values) {
                        fold(*aggregate, slot, v);
                    }
                }
            }
            assert_eq!(folded, expected, "scan {n}");
            // one group of all, even from no splits
            let total = split_aggregates(&splits, &context, &[Aggregate::Count], GroupBy::All).unwrap();
            assert_eq!(total[0].values[0], Some(folded.values().map(|v| v[0].unwrap()).sum()));
            let none = split_aggregates(&[], &context, &all, GroupBy::All).unwrap();
            assert_eq!(none[0].values, vec![Some(0), None, None, None, None]);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
