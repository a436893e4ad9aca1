//! Packing a plan's splits into an engine's tasks: consecutive splits of
//! about the same estimated work per task, so a task reads a partition's
//! segments in offset order and tasks take about the same time.
//!
//! The rule of Spark's file sources, adjusted for logs: each split costs
//! [`OPEN_COST_BYTES`] beyond its bytes, the number of tasks is
//! `min_partitions` or, when tasks would read more than `max_bytes` each,
//! the next multiple of `min_partitions` that doesn't (so the last wave of
//! tasks keeps every core busy), and the work of a split follows its
//! compression and records per byte ([`estimate_work`]), not its wire size.
//!
//! ```
//! use kafkabatch::scan::tasks::{pack, OPEN_COST_BYTES};
//! // four splits of 64 MiB for 2 cores: two tasks of two splits each
//! let sizes = [64 << 20; 4];
//! let groups = pack(&sizes, &sizes, 128 << 20, 2);
//! assert_eq!(groups, vec![0..2, 2..4]);
//! # let _ = OPEN_COST_BYTES;
//! ```

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;

use super::index::offset_index_entries;
use super::layouts::{remote_name, sibling, Layout};
use super::naming::{basename, is_remote, segment_base_offset, text, without_query};
use super::options::ScanOptions;
use super::plan::{Plan, Split};
use super::read::{ReadContext, Source};
use super::walk::walk;
use crate::batch::LOG_OVERHEAD;
use crate::storage::{LocalStorage, Location, Storage, StorageError};
use crate::tiered::IndexKind;

/// Spark's `spark.sql.files.openCostInBytes`: what a split costs beyond its bytes when packing tasks.
pub const OPEN_COST_BYTES: u64 = 4 << 20;

/// A compressed batch counts this many times its wire size (lz4/zstd/snappy
/// batches of JSON-like values decode to 3.2-4x their wire size).
const COMPRESSED_WORK: u64 = 3;

/// What each record costs the engine beyond its bytes (about 2 ms of JVM
/// CPU per 1,000 rows against 5.8 ms per MB of Arrow).
const RECORD_WORK: u64 = 350;

/// A v2 batch header, through its records count.
const V2_HEADER: usize = 61;

/// Batch headers sampled per split.
const SAMPLE_BATCHES: usize = 16;

/// What decoding bytes `[start, end)` of a segment costs the engine
/// downstream, in bytes, judged by its first data batches (up to 16;
/// control batches skipped): their compression and records per byte.
/// `header(pos)` gives the 61 header bytes at `pos` (fewer at the end,
/// `None` when they can't be read). Legacy message sets, or headers that
/// don't look like batches, leave the estimate at the wire size.
pub fn estimate_work<F>(mut header: F, start: u64, end: u64) -> u64
where
    F: FnMut(u64) -> Option<Vec<u8>>,
{
    let size = end.saturating_sub(start);
    let (mut pos, mut sampled, mut compressed, mut records) = (start, 0u64, 0u64, 0u64);
    for _ in 0..SAMPLE_BATCHES {
        if end.saturating_sub(pos) < V2_HEADER as u64 {
            break;
        }
        let Some(h) = header(pos).filter(|h| h.len() >= V2_HEADER) else {
            break;
        };
        let length = i32::from_be_bytes([h[8], h[9], h[10], h[11]]);
        // the batch's bytes: offset and length fields, then `length`
        let Some(length) = u64::try_from(length).ok().map(|l| l + 12) else {
            break;
        };
        if h[16] != 2 || length <= V2_HEADER as u64 || pos + length > end {
            break; // legacy message sets don't count records in a header; or the end
        }
        let attributes = u16::from_be_bytes([h[21], h[22]]);
        let count = i32::from_be_bytes([h[57], h[58], h[59], h[60]]);
        if count <= 0 || count as u64 > length {
            break; // not a plausible header
        }
        if attributes & 0x20 == 0 {
            // control batches (transaction markers) say nothing of the data
            sampled += length;
            records += count as u64;
            if attributes & 0x07 != 0 {
                compressed += length;
            }
        }
        pos += length;
    }
    if sampled == 0 {
        return size;
    }
    let size_f = size as f64;
    let factor = 1.0 + (COMPRESSED_WORK - 1) as f64 * compressed as f64 / sampled as f64;
    (size_f * factor + size_f * (records * RECORD_WORK) as f64 / sampled as f64) as u64
}

/// [`estimate_work`] of a split: a local segment's headers are read from the
/// file; a remote or tiered one counts its wire bytes (a read per split
/// would cost a request each).
pub fn split_work(split: &Split) -> u64 {
    let wire = split.end.saturating_sub(split.start);
    if !local(split) {
        return wire;
    }
    let Ok(mut file) = std::fs::File::open(&split.path) else {
        return wire;
    };
    let header = |pos: u64| -> Option<Vec<u8>> {
        file.seek(SeekFrom::Start(pos)).ok()?;
        let mut h = Vec::with_capacity(V2_HEADER);
        (&mut file).take(V2_HEADER as u64).read_to_end(&mut h).ok()?;
        Some(h)
    };
    estimate_work(header, split.start, split.end)
}

/// Whether a split's bytes are a local file's (a remote or tiered segment is
/// read by requests: cut and sampled only where its own indexes say so).
fn local(split: &Split) -> bool {
    let remote = is_remote(&split.path);
    !remote && split.layout() != Layout::Aiven
}

/// `split` cut at batch boundaries into pieces of at most `max_bytes` (a
/// batch larger than that gets a piece of its own; bytes the header walk
/// can't follow stay in the last piece, where reading reports them), so
/// several tasks can read one segment. Splits of `max_bytes` or less (or 0:
/// no limit), remote or tiered ones, and those with other copies of their
/// offsets (twins), come back whole.
pub fn cut_split(split: &Split, max_bytes: u64) -> Vec<Split> {
    let whole = || vec![split.clone()];
    // a split with other copies is read whole: a damaged piece is read from a copy instead
    if max_bytes == 0 || split.end.saturating_sub(split.start) <= max_bytes || !local(split) || !split.twins.is_empty()
    {
        return whole();
    }
    let Ok(Some(data)) = LocalStorage.map(&Location::new(&split.path)) else {
        return whole();
    };
    let (Ok(start), Ok(end), Ok(chunk)) = (
        usize::try_from(split.start),
        usize::try_from(split.end.min(data.len() as u64)),
        usize::try_from(max_bytes),
    ) else {
        return whole();
    };
    let Some(windows) = walk(&data, start).windows(&data, start, end, chunk, None, None) else {
        return whole();
    };
    let mut pieces: Vec<Split> = windows
        .into_iter()
        .map(|(a, b, _)| Split {
            start: a as u64,
            end: b as u64,
            ..split.clone()
        })
        .collect();
    match pieces.last_mut() {
        // whatever follows the last window (bytes past the walk) is read with it
        Some(last) => last.end = split.end,
        None => return whole(),
    }
    pieces
}

/// Consecutive splits packed into balanced tasks: the ranges of split
/// indices each task reads, in order. `wire[i]` is split `i`'s bytes and
/// `work[i]` its estimated work ([`estimate_work`]).
///
/// The number of tasks is `min_partitions`, or, when that would make tasks
/// read more than `max_bytes` of segments (0: no limit), the next multiple
/// of `min_partitions` that doesn't. Each split also costs
/// [`OPEN_COST_BYTES`] when placing cuts and in the smallest task allowed,
/// but not against `max_bytes` (a split is a mapped byte range: counting
/// 4 MiB for each small segment would make waves of tasks that each cost
/// the engine a fixed overhead). Never more tasks than splits. Cuts go
/// where the running work is nearest a multiple of `total / tasks`.
pub fn pack(wire: &[u64], work: &[u64], max_bytes: u64, min_partitions: u64) -> Vec<Range<usize>> {
    let n = wire.len().min(work.len());
    if n == 0 {
        return Vec::new();
    }
    let splits = n as u64;
    let total: u64 = wire[..n].iter().map(|w| w + OPEN_COST_BYTES).sum();
    let bytes: u64 = wire[..n].iter().sum();
    let minimum = min_partitions.max(1);
    let mut count = minimum;
    if max_bytes > 0 && bytes > count.saturating_mul(max_bytes) {
        count = bytes.div_ceil(max_bytes).div_ceil(minimum).saturating_mul(minimum);
    }
    let count = count.min(splits).min(total / OPEN_COST_BYTES).max(1);
    if count == splits {
        return (0..n).map(|i| i..i + 1).collect();
    }
    let costs: Vec<u128> = work[..n].iter().map(|w| u128::from(w + OPEN_COST_BYTES)).collect();
    let total: u128 = costs.iter().sum();
    let count = u128::from(count);
    let mut groups: Vec<Range<usize>> = Vec::new();
    let mut last = None;
    let mut done: u128 = 0;
    for (i, cost) in costs.iter().enumerate() {
        // the task where the split's middle falls
        let task = (count - 1).min((2 * done + cost) * count / (2 * total));
        done += cost;
        match groups.last_mut() {
            Some(group) if last == Some(task) => group.end = i + 1,
            _ => {
                groups.push(i..i + 1);
                last = Some(task);
            }
        }
    }
    groups
}

/// A remote broker segment's `split` cut at entries of its `.index` (a
/// sibling object, parsed as the seeks parse it), so several tasks can read
/// one object without walking its headers (which would read all of it):
/// cuts at least `max_bytes` apart, each checked to be the header of a batch
/// holding its entry's offset. A missing index gives no cuts; one that can't
/// be read or parsed, or whose entry is not a batch there (a stale index),
/// gives none either, and the returned warning says why. Local, tiered
/// (Aiven), small splits and those with twins come back whole.
pub fn cut_remote_split(split: &Split, max_bytes: u64, storage: &dyn Storage) -> (Vec<Split>, Option<String>) {
    let whole = || (vec![split.clone()], None);
    if max_bytes == 0
        || split.end.saturating_sub(split.start) <= max_bytes
        || local(split)
        || split.layout() != Layout::Broker
        || !split.twins.is_empty()
    {
        return whole();
    }
    let base = without_query(&split.path);
    let (true, Some(base_offset)) = (base.ends_with(".log"), segment_base_offset(basename(base))) else {
        return whole();
    };
    let index_path = sibling(&split.path, ".index");
    let index = Location::new(&index_path);
    let data = match storage.size(&index) {
        Ok(None) | Err(StorageError::NotFound(_)) => return whole(),
        Ok(Some(size)) => storage.read_range(&index, 0..size),
        Err(e) => Err(e),
    };
    let said = |text: String| (vec![split.clone()], Some(text));
    let entries = match data {
        Err(StorageError::NotFound(_)) => return whole(),
        Err(e) => return said(format!("{index_path}: {e}; reading {} in one task", split.path)),
        Ok(data) => offset_index_entries(&data, base_offset),
    };
    let (offsets, positions) = match entries {
        Ok(entries) => entries,
        Err(e) => return said(format!("{index_path}: {e}; reading {} in one task", split.path)),
    };
    let mut cuts: Vec<(i64, u64)> = Vec::new();
    let mut last = split.start;
    for (offset, position) in offsets.into_iter().zip(positions) {
        let position = u64::try_from(position).unwrap_or(u64::MAX);
        if position >= split.end {
            break;
        }
        if position > last && position - last >= max_bytes {
            cuts.push((offset, position));
            last = position;
        }
    }
    if cuts.is_empty() {
        return whole();
    }
    let log = Location::new(&split.path);
    for &(offset, position) in &cuts {
        let header = storage.read_range(&log, position..(position + V2_HEADER as u64).min(split.size));
        let batch = header.ok().filter(|h| h.len() >= 17).and_then(|h| {
            let length = i32::from_be_bytes([h[8], h[9], h[10], h[11]]);
            let first = i64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
            let length = u64::try_from(length).ok()? + LOG_OVERHEAD as u64;
            (position + length <= split.size && h[16] <= 2 && first <= offset).then_some(())
        });
        if batch.is_none() {
            return said(format!(
                "{index_path}: entry {offset} -> byte {position} is not a batch of that offset in {} \
                 (a stale index?); reading the segment in one task",
                split.path
            ));
        }
    }
    let mut edges = vec![split.start];
    edges.extend(cuts.iter().map(|&(_, position)| position));
    edges.push(split.end);
    (pieces_between(split, &edges), None)
}

/// `split` cut at `edges` (its start, the cuts in order, its end): a piece
/// between each two.
fn pieces_between(split: &Split, edges: &[u64]) -> Vec<Split> {
    edges
        .windows(2)
        .map(|w| Split {
            start: w[0],
            end: w[1],
            ..split.clone()
        })
        .collect()
}

/// An Aiven segment's `split` cut for tasks of about `max_bytes`: at the
/// first indexed batch of a chunk (from the offset index of its `.indexes`
/// object, the only slice fetched), so a task fetches its own chunks and at
/// most the one its last batch ends in. An index that can't be parsed gives
/// no cuts, and the returned warning says why; a segment that can't be
/// opened, or with other copies of its offsets (twins), comes back whole.
pub fn cut_tiered_split(split: &Split, max_bytes: u64, context: &ReadContext) -> (Vec<Split>, Option<String>) {
    let whole = || (vec![split.clone()], None);
    if max_bytes == 0
        || split.end.saturating_sub(split.start) <= max_bytes
        || split.layout() != Layout::Aiven
        || !split.twins.is_empty()
    {
        // a split with other copies is read whole: a damaged piece is read from a copy instead
        return whole();
    }
    let Some(base_offset) = remote_name(&split.path).map(|n| n.base_offset) else {
        return whole();
    };
    let Ok(Source::Tiered(mut source)) = context.open(&split.path, Layout::Aiven, split.manifest.as_deref()) else {
        return whole();
    };
    let indexes = Location::new(sibling(&split.path, text::INDEXES));
    let Ok(Some(raw)) = source.index(IndexKind::Offset, &indexes) else {
        return whole();
    };
    let positions = match offset_index_entries(&raw, base_offset) {
        Ok((_, positions)) => positions,
        Err(e) => {
            let text = format!("{}: {e}; reading {} in one task", indexes.as_str(), split.path);
            return (vec![split.clone()], Some(text));
        }
    };
    let chunk = source.manifest().chunk_index.original_chunk_size().max(1);
    let mut edges = vec![split.start];
    let mut last = split.start;
    for position in positions {
        let position = u64::try_from(position).unwrap_or(u64::MAX);
        if position >= split.end.min(source.size()) {
            break;
        }
        // the first indexed batch at or after the chunk boundary past last + max_bytes
        if position < (last + max_bytes).div_ceil(chunk) * chunk {
            continue;
        }
        edges.push(position);
        last = position;
    }
    edges.push(split.end);
    (pieces_between(split, &edges), None)
}

/// `split` cut for tasks of at most about `max_bytes` (0: no limit), as its
/// storage allows: a local file at batch boundaries ([`cut_split`]), an Aiven
/// segment at chunks ([`cut_tiered_split`]), another remote object at its
/// `.index` entries ([`cut_remote_split`]); with a warning when an index
/// could not be trusted (the split then stays whole).
pub fn cut_split_in(split: &Split, max_bytes: u64, context: &ReadContext) -> (Vec<Split>, Option<String>) {
    if local(split) {
        return (cut_split(split, max_bytes), None);
    }
    if split.layout() == Layout::Aiven {
        return cut_tiered_split(split, max_bytes, context);
    }
    match context.storage_for(&split.path) {
        Ok(storage) => cut_remote_split(split, max_bytes, storage.as_ref()),
        Err(_) => (vec![split.clone()], None), // the read says why
    }
}

/// An engine's tasks of a read ([`tasks_of_plan`], [`tasks_of`]): each task
/// the splits it reads, in order.
#[derive(Debug, Clone, Default)]
pub struct Tasks {
    /// Each task's splits, in the order it reads them; tasks in topic,
    /// partition, offset order.
    pub tasks: Vec<Vec<Split>>,
    /// Index files that could not be trusted, naming them (each such
    /// segment is read from its start, or whole): the plan's, then the cuts'.
    pub index_warnings: Vec<String>,
    /// `(path, start)` of the pieces of remote or tiered segments that start
    /// at an index entry (a cut, not the segment's start).
    from_index: HashSet<(String, u64)>,
}

impl Tasks {
    /// Whether `split` starts where a remote or tiered segment was cut at an
    /// entry of its index (checked to be a batch of that offset when planned).
    pub fn starts_at_index(&self, split: &Split) -> bool {
        split.start > 0 && self.from_index.contains(&(split.path.clone(), split.start))
    }
}

/// A planned read's tasks: its splits cut and packed as [`tasks_of`] does,
/// after the plan's own index warnings. What both engines' drivers run on a
/// plan.
pub fn tasks_of_plan(
    plan: &Plan,
    options: &ScanOptions,
    default_min_partitions: i64,
    work: fn(&Split) -> u64,
    context: &ReadContext,
) -> Tasks {
    let mut tasks = tasks_of(plan.splits(), options, default_min_partitions, work, context);
    tasks.index_warnings.splice(0..0, plan.index_warnings.iter().cloned());
    tasks
}

/// `splits` cut at `max_bytes_per_partition` as their storage allows
/// ([`cut_split_in`], through `context`: a local file at batch boundaries,
/// an Aiven segment at chunks, another remote object at its `.index`) and
/// packed into tasks ([`pack`]: `min_partitions`, else
/// `default_min_partitions`) balanced by `work` (a split's estimated cost,
/// [`split_work`]): an engine's tasks. A batch read's and a micro-batch's.
pub fn tasks_of<'a>(
    splits: impl IntoIterator<Item = &'a Split>,
    options: &ScanOptions,
    default_min_partitions: i64,
    work: fn(&Split) -> u64,
    context: &ReadContext,
) -> Tasks {
    let max_bytes = options.max_bytes_per_partition;
    let mut index_warnings = Vec::new();
    let mut from_index = HashSet::new();
    let mut pieces: Vec<Split> = Vec::new();
    for split in splits {
        let (cut, warning) = cut_split_in(split, max_bytes, context);
        index_warnings.extend(warning);
        if cut.len() > 1 && !local(split) {
            from_index.extend(cut.iter().map(|p| (p.path.clone(), p.start)));
        }
        pieces.extend(cut);
    }
    let wire: Vec<u64> = pieces.iter().map(|s| s.end.saturating_sub(s.start)).collect();
    let work: Vec<u64> = pieces.iter().map(work).collect();
    let min_partitions = options.min_partitions.unwrap_or(default_min_partitions).max(1);
    let groups = pack(&wire, &work, max_bytes, u64::try_from(min_partitions).unwrap_or(1));
    Tasks {
        tasks: groups.into_iter().map(|g| pieces[g].to_vec()).collect(),
        index_warnings,
        from_index,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Python planner's `pack` (kafkabatch/spark/planning.py), written
    /// out independently: which split indices each task reads.
    fn python_pack(wire: &[u64], work: &[u64], max_bytes: u64, min_partitions: u64) -> Vec<Vec<usize>> {
        let total: u64 = wire.iter().map(|w| w + OPEN_COST_BYTES).sum();
        let bytes: u64 = wire.iter().sum();
        let minimum = min_partitions.max(1);
        let mut count = minimum;
        if max_bytes > 0 && bytes > count * max_bytes {
            count = bytes.div_ceil(max_bytes);
            count = count.div_ceil(minimum) * minimum;
        }
        count = 1.max(count.min(wire.len() as u64).min(total / OPEN_COST_BYTES));
        if count == wire.len() as u64 {
            return (0..wire.len()).map(|i| vec![i]).collect();
        }
        let costs: Vec<u64> = work.iter().map(|w| w + OPEN_COST_BYTES).collect();
        let total: u64 = costs.iter().sum();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut last = u64::MAX;
        let mut done = 0;
        for (i, cost) in costs.iter().enumerate() {
            let task = (count - 1).min((2 * done + cost) * count / (2 * total));
            done += cost;
            if task != last {
                groups.push(Vec::new());
                last = task;
            }
            groups.last_mut().unwrap().push(i);
        }
        groups
    }

    #[test]
    fn packs_as_the_python_planner_does() {
        let mb = 1u64 << 20;
        // 201 MB in 35 segments on 2 cores: 2 tasks, not 3 (Spark's greedy packing)
        let mut wire: Vec<u64> = vec![6 * mb; 33];
        wire.extend([2 * mb, mb]);
        let groups = pack(&wire, &wire, 128 * mb, 2);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].start, 0);
        assert_eq!(groups[1].end, 35);
        assert_eq!(groups[0].end, groups[1].start);
        // larger than 2 x max_bytes: the next multiple of min_partitions
        let big = vec![100 * mb; 6];
        assert_eq!(pack(&big, &big, 128 * mb, 2).len(), 6);
        let many = vec![40 * mb; 20];
        assert_eq!(pack(&many, &many, 128 * mb, 2).len(), 8);
        // never more tasks than splits; each split costs OPEN_COST_BYTES
        assert_eq!(pack(&[mb], &[mb], 128 * mb, 4), vec![0..1]);
        assert_eq!(pack(&[10, 20, 30], &[10, 20, 30], 128 * mb, 2), vec![0..2, 2..3]);
        assert_eq!(pack(&[10, 20, 30, 40], &[10, 20, 30, 40], 128 * mb, 1), vec![0..4]);
        assert!(pack(&[], &[], 128 * mb, 2).is_empty());
        // work moves the cut: the heavy first split gets a task alone
        let wire = vec![32 * mb; 4];
        let work = vec![200 * mb, 32 * mb, 32 * mb, 32 * mb];
        assert_eq!(pack(&wire, &work, 0, 2), vec![0..1, 1..4]);
        // against the transcription, over a spread of shapes
        let mut seed = 38u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        for _ in 0..500 {
            let n = (next() % 40) as usize + 1;
            let wire: Vec<u64> = (0..n).map(|_| next() % (300 * mb)).collect();
            let work: Vec<u64> = wire.iter().map(|w| w * (1 + next() % 4)).collect();
            let (max_bytes, min_partitions) = (next() % (256 * mb), next() % 9);
            let want: Vec<Vec<usize>> = python_pack(&wire, &work, max_bytes, min_partitions);
            let got: Vec<Vec<usize>> = pack(&wire, &work, max_bytes, min_partitions)
                .into_iter()
                .map(|r| r.collect())
                .collect();
            assert_eq!(got, want, "{wire:?} {work:?} {max_bytes} {min_partitions}");
        }
    }

    #[test]
    fn work_follows_compression_and_records() {
        use crate::compression::Codec;
        use crate::generate::{Kind, PartitionConfig, PartitionGenerator};

        let dir = std::env::temp_dir().join(format!("kb-tasks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut works = Vec::new();
        for (name, codec) in [("plain", Codec::None), ("zstd", Codec::Zstd)] {
            let mut cfg = PartitionConfig::new(dir.join(format!("{name}-0")), name, 0, Kind::Orders);
            cfg.target_bytes = 200 << 10;
            cfg.codec = codec;
            let mut g = PartitionGenerator::new(cfg).unwrap();
            g.step(u64::MAX).unwrap();
            g.finish().unwrap();
            let scan = crate::scan::Scan::new([dir.join(format!("{name}-0")).to_str().unwrap()]);
            let split = scan.plan().unwrap().splits().next().unwrap().clone();
            let wire = split.end - split.start;
            let work = split_work(&split);
            assert!(
                work > wire,
                "{name}: records cost beyond their bytes ({work} vs {wire})"
            );
            works.push(work as f64 / wire as f64);
        }
        assert!(works[1] > works[0] + 1.0, "zstd counts more per wire byte: {works:?}");

        // cuts: adjacent pieces at batch starts, each within the limit, reading the same rows
        let scan = crate::scan::Scan::new([dir.join("plain-0").to_str().unwrap()]);
        let split = scan.plan().unwrap().splits().next().unwrap().clone();
        let pieces = cut_split(&split, 10 << 10);
        assert!(pieces.len() > 5, "{}", pieces.len());
        assert_eq!((pieces[0].start, pieces.last().unwrap().end), (split.start, split.end));
        let data = std::fs::read(&split.path).unwrap();
        for w in pieces.windows(2) {
            assert_eq!(w[0].end, w[1].start);
            let (a, b) = (w[0].start as usize, w[0].end as usize);
            let batches = walk(&data[..b], a).batches.len();
            assert!(b - a <= 10 << 10 || batches == 1, "{a}..{b}: {batches} batches");
        }
        let rows = |splits: Vec<Split>| -> usize {
            crate::scan::ScanReader::new(splits, scan.context().unwrap())
                .map(|b| b.unwrap().num_rows())
                .sum()
        };
        assert_eq!(rows(pieces), rows(vec![split.clone()]));
        assert_eq!(cut_split(&split, 0), vec![split.clone()]);
        assert_eq!(cut_split(&split, u64::MAX), vec![split]);
        // bytes that are not batches: the wire size
        assert_eq!(estimate_work(|_| Some(vec![0xff; V2_HEADER]), 0, 1000), 1000);
        assert_eq!(estimate_work(|_| None, 5, 1000), 995);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Remote segments (an in-memory bucket) planned into tasks as both
    /// engines' drivers plan them: cut at their `.index` entries, each piece
    /// starting at a batch, the same rows as the whole segments; an index
    /// entry that is not a batch start leaves its segment whole, said once.
    #[cfg(feature = "remote")]
    #[test]
    fn tasks_of_a_plan_cut_remote_segments_at_their_index() {
        use std::sync::Arc;

        use object_store::memory::InMemory;
        use object_store::path::Path as ObjectPath;
        use object_store::{ObjectStoreExt, PutPayload};

        use crate::generate::{Kind, PartitionConfig, PartitionGenerator};
        use crate::storage::object::{runtime, ObjectStorage};

        let dir = std::env::temp_dir().join(format!("kb-remote-tasks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut cfg = PartitionConfig::new(dir.join("orders-0"), "orders", 0, Kind::Orders);
        (cfg.target_bytes, cfg.segment_bytes) = (300 << 10, 100 << 10);
        let mut g = PartitionGenerator::new(cfg).unwrap();
        g.step(u64::MAX).unwrap();
        g.finish().unwrap();
        let store = Arc::new(InMemory::new());
        let put = |name: &str, bytes: Vec<u8>| {
            let key = ObjectPath::from(format!("p/orders-0/{name}"));
            runtime()
                .unwrap()
                .block_on(store.put(&key, PutPayload::from(bytes)))
                .unwrap();
        };
        let mut files: Vec<_> = std::fs::read_dir(dir.join("orders-0"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in &files {
            put(
                file.file_name().unwrap().to_str().unwrap(),
                std::fs::read(file).unwrap(),
            );
        }
        let storage: Arc<dyn Storage> = Arc::new(ObjectStorage::new(store.clone(), "s3", "bucket"));
        let scan = crate::scan::Scan::new(["s3://bucket/p/"]).resolver(Arc::new(move |_: &str| Ok(storage.clone())));
        let options = [
            ("path", "s3://bucket/p/"),
            ("maxBytesPerPartition", "20000"),
            ("minPartitions", "1"),
        ];
        let options = ScanOptions::parse(options.map(|(k, v)| (k, v.to_string()))).unwrap();
        let context = scan.context().unwrap();
        let rows = |splits: Vec<Split>| -> usize {
            crate::scan::ScanReader::new(splits, context.clone())
                .map(|b| b.unwrap().num_rows())
                .sum()
        };

        let plan = scan.plan_with(&context).unwrap();
        let segments: Vec<Split> = plan.splits().cloned().collect();
        assert_eq!(
            segments.len(),
            files
                .iter()
                .filter(|f| f.extension().is_some_and(|e| e == "log"))
                .count()
        );
        assert!(segments.len() >= 3);
        let tasks = tasks_of_plan(&plan, &options, 2, split_work, &context);
        assert!(tasks.index_warnings.is_empty(), "{:?}", tasks.index_warnings);
        let pieces: Vec<Split> = tasks.tasks.concat();
        assert!(tasks.tasks.len() > segments.len(), "{} tasks", tasks.tasks.len());
        for segment in &segments {
            let name = segment.path.rsplit('/').next().unwrap();
            let data = std::fs::read(dir.join("orders-0").join(name)).unwrap();
            let starts: Vec<u64> = walk(&data, 0).batches.iter().map(|b| b.position as u64).collect();
            let mine: Vec<&Split> = pieces.iter().filter(|p| p.path == segment.path).collect();
            assert!(mine.len() > 1, "{name}: {} pieces", mine.len());
            assert_eq!((mine[0].start, mine.last().unwrap().end), (segment.start, segment.end));
            for w in mine.windows(2) {
                assert_eq!(w[0].end, w[1].start);
                assert!(
                    starts.contains(&w[1].start) && tasks.starts_at_index(w[1]),
                    "{name}: {}",
                    w[1].start
                );
            }
            assert!(!tasks.starts_at_index(mine[0]));
        }
        assert_eq!(rows(pieces), rows(segments.clone()));

        // a stale index: an entry 3 bytes into a batch
        let first = &segments[0];
        let name = first.path.rsplit('/').next().unwrap();
        let data = std::fs::read(dir.join("orders-0").join(name)).unwrap();
        let batch = walk(&data, 0).batches.into_iter().find(|b| b.position > 20000).unwrap();
        let relative = (batch.base_offset - segment_base_offset(name).unwrap()) as i32;
        let entry = [relative.to_be_bytes(), (batch.position as i32 + 3).to_be_bytes()].concat();
        put(&name.replace(".log", ".index"), entry);
        let tasks = tasks_of_plan(&plan, &options, 2, split_work, &context);
        assert_eq!(tasks.index_warnings.len(), 1, "{:?}", tasks.index_warnings);
        assert!(tasks.index_warnings[0].contains("stale"), "{}", tasks.index_warnings[0]);
        let whole: Vec<&Split> = tasks.tasks.iter().flatten().filter(|p| p.path == first.path).collect();
        assert_eq!(whole, vec![first]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
