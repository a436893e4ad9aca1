//! Seeking in a segment with its index files, as Kafka's
//! `LogSegment.translateOffset` and `findOffsetByTimestamp` do, and never
//! trusting them blindly: every position taken from an index is checked
//! against the log (a batch must start there, with a valid CRC and offsets
//! that agree with the entry), and a time index's claim is checked against
//! the headers it skips. A missing, stale, truncated or garbage index gives
//! the reason ([`BadIndex`]); callers then read the whole segment, so a bad
//! index can cost time but never rows.

use crate::batch::{BatchWalker, WalkEnd};
use crate::decode::{decode_batch, DecodeOptions};
use crate::prune::{batch_facts, BatchFacts};
use crate::record::OwnedRecords;
use crate::scan::index::{offset_index_entries, time_index_entries};
use crate::storage::{Location, StorageError};
use crate::tiered::source::{SourceError, TieredSource};
use crate::tiered::IndexKind;

/// Why an index can't be used for a seek (the text names the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadIndex(pub String);

impl std::fmt::Display for BadIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadIndex {}

/// One index file beside a segment: its name (for messages) and its bytes,
/// `None` when there is no such file.
#[derive(Debug, Clone, Copy)]
pub struct IndexFile<'a> {
    pub name: &'a str,
    pub data: Option<&'a [u8]>,
}

/// The bounds a seek is for: offsets `[start_offset, end_offset)`,
/// timestamps from `start_timestamp_ms`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SeekBounds {
    pub start_offset: Option<i64>,
    pub end_offset: Option<i64>,
    pub start_timestamp_ms: Option<i64>,
}

/// The byte range `(start, end)` of `log` (a segment's bytes, base offset
/// `base_offset`) holding every record with offset in the bounds and
/// timestamp at least `start_timestamp_ms`; `end` `None` is the end of the
/// log. Positions come from `index` (`.index`) and `time_index`
/// (`.timeindex`), checked against `log`.
pub fn seek_range(
    log: &[u8],
    base_offset: i64,
    index: IndexFile,
    time_index: IndexFile,
    bounds: SeekBounds,
) -> Result<(usize, Option<usize>), BadIndex> {
    if bounds.start_offset.is_none() && bounds.end_offset.is_none() && bounds.start_timestamp_ms.is_none() {
        return Ok((0, None));
    }
    let data = index
        .data
        .ok_or_else(|| BadIndex(format!("no offset index {}", index.name)))?;
    let (offsets, positions) =
        offset_index_entries(data, base_offset).map_err(|e| BadIndex(format!("{}: {e}", index.name)))?;
    if positions.first().is_some_and(|&p| p < 0) || positions.last().is_some_and(|&p| p >= log.len().max(1) as i64) {
        return Err(BadIndex(format!(
            "{} points past the end of the log ({} bytes)",
            index.name,
            log.len()
        )));
    }
    let entries = Entries {
        log,
        offsets: &offsets,
        positions: &positions,
    };
    let mut start = 0;
    if let Some(target) = bounds.start_offset {
        start = entries.position_for_offset(target)?;
    }
    if let Some(target) = bounds.start_timestamp_ms {
        start = start.max(entries.position_for_timestamp(time_index, base_offset, target)?);
    }
    let end = match bounds.end_offset {
        Some(end) => entries.position_after_offset(end)?.map(|e| e.max(start)),
        None => None,
    };
    Ok((start, end))
}

/// [`seek_range`] of a local segment file (`path`, its bytes `log`) with
/// the `.index` beside it and, for a start timestamp, the `.timeindex`: an
/// index file that is missing, can't be read or can't be trusted is the
/// reason ([`BadIndex`], naming the index file) the caller reads the whole
/// segment instead.
pub fn seek_file(log: &[u8], path: &str, bounds: SeekBounds) -> Result<(usize, Option<usize>), BadIndex> {
    if bounds.start_offset.is_none() && bounds.end_offset.is_none() && bounds.start_timestamp_ms.is_none() {
        return Ok((0, None));
    }
    let log_path = std::path::Path::new(path);
    let read = |suffix: &str| -> Result<(String, Option<Vec<u8>>), BadIndex> {
        let at = log_path.with_extension(suffix);
        let name = at.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        match std::fs::read(&at) {
            Ok(data) => Ok((name, Some(data))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || at.is_dir() => Ok((name, None)),
            Err(e) => Err(BadIndex(format!("{name}: can't read it: {e}"))),
        }
    };
    let (index_name, index) = read("index")?;
    let base = match &index {
        None => 0,
        Some(_) => log_path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(super::naming::segment_base_offset)
            .ok_or_else(|| BadIndex(format!("{index_name}: the segment's name holds no base offset")))?,
    };
    let (time_name, time_index) = match (&index, bounds.start_timestamp_ms) {
        (Some(_), Some(_)) => read("timeindex")?,
        _ => (String::new(), None),
    };
    seek_range(
        log,
        base,
        IndexFile {
            name: &index_name,
            data: index.as_deref(),
        },
        IndexFile {
            name: &time_name,
            data: time_index.as_deref(),
        },
        bounds,
    )
}

/// [`seek_range`] of a remote (Aiven) segment: the byte range `(start, end)`
/// of `source` holding every record in `bounds`, from the offset and time
/// indexes of its `.indexes` object (`indexes`; only their slices are
/// fetched), each entry used checked against the batch header it points at.
/// `Ok(Err(_))`: an index that can't be used (missing, garbage, disagreeing
/// with the log; the caller reads the whole segment); `Err(_)`: the
/// `.indexes` object is damaged (a truncated slice, a transform that fails).
pub fn seek_tiered(
    source: &mut TieredSource,
    indexes: &Location,
    base_offset: i64,
    bounds: SeekBounds,
) -> Result<Result<(u64, Option<u64>), BadIndex>, SourceError> {
    if bounds.start_offset.is_none() && bounds.end_offset.is_none() && bounds.start_timestamp_ms.is_none() {
        return Ok(Ok((0, None)));
    }
    let index = |source: &mut TieredSource, kind| match source.index(kind, indexes) {
        Err(SourceError::Storage(StorageError::NotFound(_))) => {
            Ok(Err(BadIndex("the .indexes object is missing".into())))
        }
        Err(SourceError::Storage(e)) => Ok(Err(BadIndex(format!("can't read it: {e}")))),
        Err(e) => Err(e),
        Ok(found) => Ok(Ok(found)),
    };
    let raw = match index(source, IndexKind::Offset)? {
        Ok(Some(raw)) => raw,
        Ok(None) => return Ok(Err(BadIndex("the segment has no offset index".into()))),
        Err(bad) => return Ok(Err(bad)),
    };
    let (offsets, positions) = match offset_index_entries(&raw, base_offset) {
        Ok(found) => found,
        Err(e) => return Ok(Err(BadIndex(e.to_string()))),
    };
    let position_for = |source: &mut TieredSource, offset: i64| -> Result<u64, BadIndex> {
        let Some(i) = offsets.partition_point(|&o| o <= offset).checked_sub(1) else {
            return Ok(0);
        };
        let position = u64::try_from(positions[i]).unwrap_or(u64::MAX);
        match source.header_at(position) {
            Some((base, _)) if base <= offsets[i] => Ok(position),
            _ => Err(BadIndex(format!(
                "entry {} -> {position} is not a batch of that offset",
                offsets[i]
            ))),
        }
    };
    let mut seek = || -> Result<Result<(u64, Option<u64>), BadIndex>, SourceError> {
        let mut start = match bounds.start_offset.map(|o| position_for(source, o)) {
            Some(Err(bad)) => return Ok(Err(bad)),
            Some(Ok(p)) => p,
            None => 0,
        };
        if let Some(target) = bounds.start_timestamp_ms {
            let raw_time = match index(source, IndexKind::Timestamp)? {
                Ok(found) => found,
                Err(bad) => return Ok(Err(bad)),
            };
            if let Some(raw_time) = raw_time {
                if raw_time.len() % 12 != 0 {
                    let n = raw_time.len();
                    return Ok(Err(BadIndex(format!(
                        "{n} bytes is not a multiple of the 12-byte time index entry"
                    ))));
                }
                let (stamps, stamp_offsets) = time_index_entries(&raw_time, base_offset);
                if let Some(i) =
                    (1..stamps.len()).find(|&i| stamps[i] < stamps[i - 1] || stamp_offsets[i] < stamp_offsets[i - 1])
                {
                    return Ok(Err(BadIndex(format!(
                        "time index entries are out of order at entry {i}"
                    ))));
                }
                if let Some(i) = stamps.partition_point(|&t| t < target).checked_sub(1) {
                    match position_for(source, stamp_offsets[i]) {
                        Ok(p) => start = start.max(p),
                        Err(bad) => return Ok(Err(bad)),
                    }
                }
            }
        }
        let mut end = None;
        if let Some(end_offset) = bounds.end_offset {
            let j = offsets.partition_point(|&o| o < end_offset);
            if j + 1 < offsets.len() {
                let position = u64::try_from(positions[j + 1]).unwrap_or(u64::MAX);
                match source.header_at(position) {
                    Some((base, _)) if base >= end_offset => end = Some(position.max(start)),
                    _ => {
                        return Ok(Err(BadIndex(format!(
                            "entry {} -> {position} disagrees with the log",
                            offsets[j + 1]
                        ))))
                    }
                }
            }
        }
        Ok(Ok((start, end)))
    };
    seek()
}

/// A segment's bytes and its checked `.index` entries.
struct Entries<'a> {
    log: &'a [u8],
    offsets: &'a [i64],
    positions: &'a [i64],
}

impl Entries<'_> {
    /// The base offset of the batch starting at `position`, CRC checked.
    fn first_batch(&self, position: usize) -> Result<i64, BadIndex> {
        let invalid = |reason: String| BadIndex(format!("no valid batch at position {position}: {reason}"));
        if position > self.log.len() {
            return Err(invalid(format!(
                "start {position} is past the end of the data ({} bytes)",
                self.log.len()
            )));
        }
        let mut walker = BatchWalker::starting_at(self.log, position);
        let Some(raw) = walker.next() else {
            return Err(match walker.end() {
                Some(WalkEnd::Broken(e)) => invalid(e.to_string()),
                _ => BadIndex(format!("no complete batch at position {position}")),
            });
        };
        decode_batch::<OwnedRecords>(&raw, &DecodeOptions::default(), &mut Vec::new(), None)
            .map(|header| header.base_offset)
            .map_err(|e| invalid(e.to_string()))
    }

    /// A batch position at or before the first batch holding `target` or
    /// later. An entry names a batch position and an offset of that batch
    /// (its first offset up to Kafka 0.10, its last since 0.11), so the batch
    /// there starts at or below the entry's offset.
    fn position_for_offset(&self, target: i64) -> Result<usize, BadIndex> {
        let i = self.offsets.partition_point(|&o| o <= target);
        let Some(i) = i.checked_sub(1) else { return Ok(0) };
        let position = self.positions[i] as usize;
        let base = self.first_batch(position)?;
        if base > self.offsets[i] {
            return Err(BadIndex(format!(
                "index entry {} -> {position} disagrees with the log: the batch there starts at offset {base}",
                self.offsets[i]
            )));
        }
        Ok(position)
    }

    /// A batch position before which every record's timestamp is below
    /// `target_ms`. A `.timeindex` entry `(T, O)` says the largest timestamp
    /// appended up to offset O's batch is T; with T < target, the records
    /// before O's batch are all older. The claim is checked: every batch
    /// skipped has a largest timestamp below the target (headers only).
    fn position_for_timestamp(&self, file: IndexFile, base_offset: i64, target_ms: i64) -> Result<usize, BadIndex> {
        let data = file
            .data
            .ok_or_else(|| BadIndex(format!("no time index {}", file.name)))?;
        let (stamps, entry_offsets) = time_index_entries(data, base_offset);
        for i in 1..stamps.len() {
            if stamps[i] < stamps[i - 1] || entry_offsets[i] < entry_offsets[i - 1] {
                return Err(BadIndex(format!("{} entries are out of order at entry {i}", file.name)));
            }
        }
        let i = stamps.partition_point(|&t| t < target_ms);
        let Some(i) = i.checked_sub(1) else { return Ok(0) };
        let wanted = entry_offsets[i];
        // the batch holding offset O: the last indexed batch at or before it, then on by headers
        let from = self.position_for_offset(wanted)?;
        let position = BatchWalker::starting_at(self.log, from)
            .map(|raw| BatchFacts::read(&raw, None))
            .find(|f| f.last_offset >= wanted)
            .map(|f| f.position)
            .ok_or_else(|| {
                BadIndex(format!(
                    "{} names offset {wanted}, which the log does not hold",
                    file.name
                ))
            })?;
        let (before, _) = batch_facts(&self.log[..position], 0);
        if let Some(f) = before.iter().find(|f| f.max_timestamp >= target_ms) {
            return Err(BadIndex(format!(
                "{} disagrees with the log: the batch at {} has timestamp {}, not below {target_ms}",
                file.name, f.position, f.max_timestamp
            )));
        }
        Ok(position)
    }

    /// A batch position from which every offset is at least `end`, or None.
    fn position_after_offset(&self, end: i64) -> Result<Option<usize>, BadIndex> {
        let j = self.offsets.partition_point(|&o| o < end);
        let Some(&position) = self.positions.get(j + 1) else {
            return Ok(None);
        };
        let position = position as usize;
        if self.first_batch(position)? < end {
            return Err(BadIndex(format!(
                "index entry {} -> {position} disagrees with the log",
                self.offsets[j + 1]
            )));
        }
        Ok(Some(position))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::{encode, EncodeOptions, RecordRef};

    /// Ten one-record batches, offsets 100.. and timestamps 1000 + 10 i, and
    /// a Kafka 0.11+ `.index` entry (last offset, position) every other batch.
    fn segment() -> (Vec<u8>, Vec<u8>, Vec<usize>) {
        let mut log = Vec::new();
        let mut at = Vec::new();
        for i in 0..10i64 {
            at.push(log.len());
            let options = EncodeOptions {
                base_offset: 100 + i,
                ..Default::default()
            };
            encode(&[RecordRef::new(None, Some(b"v"), 1_000 + 10 * i)], &options, &mut log).unwrap();
        }
        let index = (0..10)
            .step_by(2)
            .flat_map(|i| [(i as i32).to_be_bytes(), (at[i] as i32).to_be_bytes()].concat())
            .collect();
        (log, index, at)
    }

    fn file<'a>(name: &'a str, data: &'a [u8]) -> IndexFile<'a> {
        IndexFile { name, data: Some(data) }
    }

    const NONE: IndexFile = IndexFile {
        name: "x.timeindex",
        data: None,
    };

    #[test]
    fn offsets_seek_and_check() {
        let (log, index, at) = segment();
        let bounds = SeekBounds {
            start_offset: Some(105),
            end_offset: Some(105),
            ..Default::default()
        };
        assert_eq!(
            seek_range(&log, 100, file("x.index", &index), NONE, bounds),
            Ok((at[4], Some(at[8])))
        );
        // a stale entry (shifted position) is refused with the reason
        let mut stale = index.clone();
        stale[23] += 1;
        let err = seek_range(&log, 100, file("x.index", &stale), NONE, bounds).unwrap_err();
        assert!(
            err.0.starts_with("no valid batch at position") || err.0.contains("disagrees"),
            "{err}"
        );
        assert_eq!(
            seek_range(
                &log,
                100,
                IndexFile {
                    name: "x.index",
                    data: None
                },
                NONE,
                bounds
            ),
            Err(BadIndex("no offset index x.index".into()))
        );
    }

    #[test]
    fn time_index_claims_are_checked() {
        let (log, index, at) = segment();
        let entry = |t: i64, r: i32| [t.to_be_bytes().to_vec(), r.to_be_bytes().to_vec()].concat();
        let bounds = SeekBounds {
            start_timestamp_ms: Some(1_055),
            ..Default::default()
        };
        let honest = [entry(1_020, 2), entry(1_040, 4)].concat();
        assert_eq!(
            seek_range(&log, 100, file("x.index", &index), file("x.timeindex", &honest), bounds),
            Ok((at[4], None))
        );
        // "everything up to offset 109 is older than 1.02 s": the headers say otherwise
        let lying = entry(1_020, 9);
        let err = seek_range(&log, 100, file("x.index", &index), file("x.timeindex", &lying), bounds).unwrap_err();
        assert!(err.0.contains("disagrees with the log"), "{err}");
        let past = entry(1_020, 50);
        let err = seek_range(&log, 100, file("x.index", &index), file("x.timeindex", &past), bounds).unwrap_err();
        assert_eq!(err.0, "x.timeindex names offset 150, which the log does not hold");
    }
}
