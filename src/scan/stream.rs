//! Structured Streaming over growing log folders: what a stream's driver
//! keeps between triggers, shared by every front end (the Python source's
//! `spark.readStream.format("kafka-log")`, the JVM source's `MicroBatchStream`).
//!
//! Offsets are those of Spark's Kafka source, JSON `{"orders":{"0":1200,"1":877}}`:
//! per topic-partition the next offset to read ([`offsets_to_json`],
//! [`offsets_from_json`]). A micro-batch from `start` to `end` reads the
//! records of offsets `[start, end)` ([`StreamState::micro_batch`]), so a
//! micro-batch replayed after a restart reads the same records.
//!
//! Per topic-partition ([`PartitionLog`]): the segment listing, and one walk
//! of the batch headers of the complete batches seen (where each segment's
//! walk stopped, the next offset, the transactions still open or aborted, and
//! the byte position of each batch end for `maxBytesPerTrigger`). A trigger
//! lists the folders again (names and sizes) and walks only the bytes added
//! since; a half-written batch at the tail of the active segment stops the
//! walk and is walked again, complete, on a later trigger. After a restart
//! the walk starts at the batch holding the checkpoint's offset (found with
//! the segment's `.index`), not at the start of the log.
//!
//! With `read_committed` the end of a micro-batch never passes a partition's
//! last stable offset: the first offset of its earliest open transaction.
//!
//! ```
//! use kafkabatch::encode::{encode, EncodeOptions, RecordRef};
//! use kafkabatch::scan::stream::{offsets_from_json, StreamState};
//! use kafkabatch::scan::{OffsetsSpec, ScanOptions};
//!
//! let dir = std::env::temp_dir().join(format!("kb-stream-doc-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("t-0"))?;
//! let mut log = Vec::new();
//! for base in [0, 3] {
//!     let records = [RecordRef::new(None, Some(b"v"), 1_000); 3];
//!     encode(&records, &EncodeOptions { base_offset: base, ..Default::default() }, &mut log)?;
//! }
//! std::fs::write(dir.join("t-0/00000000000000000000.log"), &log)?;
//! let options = ScanOptions::parse([("path", dir.to_str().unwrap())])?;
//!
//! let mut state = StreamState::of_options(&options, None)?;
//! let listed = state.list(&options)?;
//! state.refresh(listed, &Default::default())?;
//! let start = state.initial_offsets(&OffsetsSpec::Earliest, &options.paths)?;
//! let end = state.latest_offset(&start, Some(4), None)?;
//! assert_eq!(end, offsets_from_json(r#"{"t":{"0":4}}"#)?);
//! let splits = state.micro_batch(&start, &end)?;
//! assert_eq!((splits.len(), splits[0].end_offset), (1, Some(4)));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::listing::{list_segments, segment_bounds, sort_key, ListOptions, Segment};
use super::naming::{basename, is_remote, without_query};
use super::options::{Mode, OffsetsSpec, ScanOptions};
use super::plan::{
    object_store_resolver, plan_segments, Resolver, ScanError, ScanIsolation, SegmentPlan, Split, Transaction,
    SPLIT_VERSION,
};
use super::read::{HeldByBytes, ReadContext};
use crate::batch::RawBatch;
use crate::decode::{decode_batch, DecodeOptions};
use crate::prune::HeaderBounds;
use crate::record::OwnedRecords;
use crate::storage::glob::Pattern;
use crate::storage::{LocalStorage, Storage};
use crate::txn::transaction_pass_over;

/// A topic and partition.
pub type TopicPartition = (String, i64);

/// Offsets by topic-partition.
pub type Offsets = BTreeMap<TopicPartition, i64>;

/// Bytes of segment read at once while walking batch headers (remote segments; local ones are mapped).
const WALK_CHUNK: usize = 8 << 20;

/// Why a stream can't go on, in the source's words.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// Records the stream was due to read are gone, with `failOnDataLoss=true`.
    #[error("{0}")]
    DataLoss(String),
    /// Bytes that will never be complete batches, with `mode=FAILFAST`.
    #[error("{0}")]
    Corrupt(String),
    /// An offsets JSON or an option that does not fit the log.
    #[error("{0}")]
    Offsets(String),
    #[error(transparent)]
    Scan(#[from] ScanError),
}

/// The text of the error a data loss raises (`failOnDataLoss=true`).
pub fn data_loss_error(message: &str) -> String {
    format!("kafka-log stream: {message}. Set option failOnDataLoss=false to go on with a warning instead")
}

/// The text of the warning a data loss gives (`failOnDataLoss=false`).
pub fn data_loss_warning(message: &str) -> String {
    format!("kafka-log stream: {message}")
}

/// What a micro-batch's reader says of a segment deleted (retention) after
/// the micro-batch was planned and before it was read: the error
/// (`failOnDataLoss=true`) or the warning (`false`: the segment is skipped),
/// in the Python source's words.
pub fn deleted_before_read(path: &str, why: &str, fail_on_data_loss: bool) -> String {
    let message =
        format!("kafka-log stream: segment {path} was deleted (retention?) before this micro-batch read it ({why})");
    if fail_on_data_loss {
        format!("{message}. Set option failOnDataLoss=false to skip it with a warning")
    } else {
        format!("{message}; skipped (failOnDataLoss=false)")
    }
}

// --------------------------------------------------------------------------
// one topic-partition
// --------------------------------------------------------------------------

/// One topic-partition's segments and a walk of their complete batches from
/// offset [`PartitionLog::origin`] on.
#[derive(Debug, Clone)]
pub struct PartitionLog {
    pub topic: String,
    pub partition: i64,
    segments: Vec<Segment>,
    /// Segment path → the end of its complete batches walked.
    walked: HashMap<String, u64>,
    /// Segment path → bytes walked (over all segments) at its byte 0.
    seg_base: HashMap<String, i64>,
    /// The segment being walked (an index in `segments`).
    cursor: usize,
    origin: i64,
    next_offset: i64,
    /// Producer id → first offset of its open transaction.
    open_txns: BTreeMap<i64, i64>,
    aborted: Vec<Transaction>,
    /// After each walked batch: the next offset, and the bytes walked up to its end.
    ends: Vec<i64>,
    bytes_at: Vec<i64>,
    total_bytes: i64,
}

impl PartitionLog {
    /// The log of `segments` (one partition's, in offset order), walked from
    /// the batch holding `origin` (the segment's `.index` finds it), else from
    /// the first segment's start.
    pub fn new(
        topic: &str,
        partition: i64,
        segments: Vec<Segment>,
        origin: Option<i64>,
        context: &ReadContext,
    ) -> Result<PartitionLog, ScanError> {
        let mut first = 0;
        if let Some(origin) = origin {
            for (i, seg) in segments.iter().enumerate() {
                if seg.base_offset.is_some_and(|b| b <= origin) {
                    first = i;
                }
            }
        }
        let seg = segments.get(first);
        let base = seg.and_then(|s| s.base_offset).unwrap_or(0);
        let mut start_byte = 0;
        let mut next_offset = base;
        if let (Some(seg), Some(origin)) = (seg, origin) {
            if seg.base_offset.is_some_and(|b| origin > b) {
                let bounds = HeaderBounds {
                    start_offset: Some(origin),
                    ..Default::default()
                };
                let mut warnings = Vec::new();
                if let [SegmentPlan::Bytes { start, .. }] =
                    plan_segments(std::slice::from_ref(seg), &bounds, true, true, &mut warnings)[..]
                {
                    start_byte = start;
                }
            }
            if start_byte > 0 {
                // After the last complete batch walked, from the headers only, so
                // that an origin past the end of the log shows (a checkpoint ahead of it).
                let mut source = context.open(&seg.path, seg.layout, seg.manifest.as_deref())?;
                let piece = source.piece(start_byte, start_byte + 8, 8)?;
                if let Some(header) = piece.data.get(piece.from..piece.from + 8) {
                    let at = i64::from_be_bytes(header.try_into().unwrap_or([0; 8]));
                    next_offset = next_offset.max(at);
                }
            }
        }
        let mut walked = HashMap::new();
        if let Some(seg) = seg {
            walked.insert(seg.path.clone(), start_byte);
        }
        Ok(PartitionLog {
            topic: topic.to_string(),
            partition,
            segments,
            walked,
            seg_base: HashMap::new(),
            cursor: first,
            origin: origin.map_or(base, |o| o.max(base)),
            next_offset,
            open_txns: BTreeMap::new(),
            aborted: Vec::new(),
            ends: Vec::new(),
            bytes_at: Vec::new(),
            total_bytes: 0,
        })
    }

    /// The segments listed last.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The first offset the walk covers.
    pub fn origin(&self) -> i64 {
        self.origin
    }

    /// The offset after the last complete batch walked.
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// The first offset still in the log, by the first segment's file name.
    pub fn earliest(&self) -> i64 {
        self.segments.iter().find_map(|s| s.base_offset).unwrap_or(0)
    }

    /// How far `path`'s complete batches were walked (`None`: not walked).
    pub fn walked(&self, path: &str) -> Option<u64> {
        self.walked.get(path).copied()
    }

    fn cursor_path(&self) -> Option<&str> {
        self.segments.get(self.cursor).map(|s| s.path.as_str())
    }

    /// Whether a new listing invalidates the walk (a walked segment gone or
    /// shrunk: compaction swapped it, or the folder was recreated).
    pub fn stale(&self, segments: &[Segment]) -> bool {
        let sizes: HashMap<&str, u64> = segments.iter().map(|s| (s.path.as_str(), s.size)).collect();
        let cursor = self.cursor_path();
        self.walked
            .iter()
            .any(|(path, &walked)| match sizes.get(path.as_str()) {
                // retention deleting an old, fully walked segment does not matter
                None => cursor == Some(path.as_str()),
                Some(&size) => size < walked,
            })
    }

    /// Forget the segments: the partition's folder went away.
    pub fn clear_segments(&mut self) {
        self.segments.clear();
    }

    /// Take a new listing and walk the bytes added since the last one; the
    /// texts of what `mode` skipped (bytes that will never be complete batches).
    pub fn update(
        &mut self,
        segments: Vec<Segment>,
        mode: Mode,
        context: &ReadContext,
    ) -> Result<Vec<String>, StreamError> {
        let current = self.cursor_path().map(str::to_string);
        self.segments = segments;
        match current {
            Some(current) => {
                if let Some(i) = self.segments.iter().position(|s| s.path == current) {
                    self.cursor = i;
                }
            }
            None if !self.walked.is_empty() => {
                // every walked segment was the last: continue after the last one walked
                self.cursor = self
                    .segments
                    .iter()
                    .position(|s| !self.walked.contains_key(&s.path))
                    .unwrap_or(self.segments.len());
            }
            None => {}
        }
        self.walk(mode, context)
    }

    fn walk(&mut self, mode: Mode, context: &ReadContext) -> Result<Vec<String>, StreamError> {
        let mut skipped = Vec::new();
        while self.cursor < self.segments.len() {
            let seg = self.segments[self.cursor].clone();
            let mut pos = *self.walked.entry(seg.path.clone()).or_insert(0);
            let total = self.total_bytes;
            self.seg_base.entry(seg.path.clone()).or_insert(total - pos as i64);
            if pos == 0 && seg.base_offset.is_some_and(|b| b > self.next_offset) {
                self.next_offset = seg.base_offset.unwrap_or(0); // offsets between segments are a gap
            }
            if seg.size > pos {
                pos = self.walk_segment(&seg, pos, context)?;
                self.walked.insert(seg.path.clone(), pos);
            }
            if self.cursor + 1 >= self.segments.len() {
                break; // the active segment: a partial batch at its tail waits for the next trigger
            }
            if pos < seg.size {
                let message = format!(
                    "{}: bytes {pos}-{} are not complete Kafka batches, and the partition has later segments, \
                     so they will never complete",
                    seg.path, seg.size
                );
                if mode == Mode::FailFast {
                    return Err(StreamError::Corrupt(format!(
                        "{message} (option mode=DROPMALFORMED skips them)"
                    )));
                }
                skipped.push(format!("kafka-log stream: {message}; skipped"));
            }
            self.cursor += 1;
        }
        Ok(skipped)
    }

    /// Walk `seg` from byte `pos` (a batch boundary) to the end of its
    /// complete batches (as the file is now), returning that end.
    fn walk_segment(&mut self, seg: &Segment, mut pos: u64, context: &ReadContext) -> Result<u64, ScanError> {
        let mut source = context.open(&seg.path, seg.layout, seg.manifest.as_deref())?;
        let end = source.size();
        let options = DecodeOptions {
            include_control: true,
            validate_crc: false,
            ..context.options.clone()
        };
        while pos < end {
            let piece = source.piece(pos, end, WALK_CHUNK)?;
            let w = &piece.walk;
            let data: &[u8] = &piece.data;
            let mut raws = Vec::with_capacity(w.batches.len());
            for f in &w.batches {
                if f.position < piece.from || f.position + f.size > piece.to {
                    continue;
                }
                self.total_bytes += f.size as i64;
                if f.header_ok && f.last_offset + 1 > self.next_offset {
                    self.next_offset = f.last_offset + 1;
                }
                self.ends.push(self.next_offset);
                self.bytes_at.push(self.total_bytes);
                let raw = RawBatch {
                    position: f.position,
                    bytes: &data[f.position..f.position + f.size],
                };
                raws.push((*f, raw));
            }
            let ended = transaction_pass_over(raws, &mut self.open_txns, None, None, |raw| {
                let mut sink = OwnedRecords::default();
                decode_batch(raw, &options, &mut Vec::new(), Some(&mut sink)).ok()?;
                sink.records.into_iter().next()
            });
            self.aborted.extend(ended.into_iter().map(|t| Transaction {
                producer_id: t.producer_id,
                first_offset: t.first_offset,
                last_offset: Some(t.marker_offset),
            }));
            let next = piece.base + w.valid_end as u64;
            if next <= pos {
                break; // an incomplete batch at the tail (or bytes that aren't one)
            }
            pos = next;
            if w.valid_end < piece.to {
                break;
            }
        }
        Ok(pos)
    }

    /// The first offset of the earliest open transaction, else the next offset.
    pub fn last_stable(&self) -> i64 {
        self.open_txns.values().copied().fold(self.next_offset, i64::min)
    }

    /// Aborted and open transactions walked, sorted by first offset and producer.
    pub fn transactions(&self) -> Vec<Transaction> {
        let mut out = self.aborted.clone();
        out.extend(self.open_txns.iter().map(|(&producer_id, &first_offset)| Transaction {
            producer_id,
            first_offset,
            last_offset: None,
        }));
        out.sort_by_key(|t| (t.first_offset, t.producer_id));
        out
    }

    /// Bytes walked of the batches wholly before `offset`.
    pub fn bytes_before(&self, offset: i64) -> i64 {
        let i = self.ends.partition_point(|&e| e <= offset);
        if i == 0 {
            0
        } else {
            self.bytes_at[i - 1]
        }
    }

    /// The furthest batch end after `begin` (at most `limit`) whose bytes
    /// from `begin` fit in `budget`; at least one batch.
    pub fn offset_within(&self, begin: i64, budget: i64, limit: i64) -> i64 {
        let base = self.bytes_before(begin);
        let first = self.ends.partition_point(|&e| e <= begin);
        if first >= self.ends.len() {
            return begin;
        }
        let fit = first + self.bytes_at[first..].partition_point(|&b| b <= base + budget);
        let last = fit.saturating_sub(1).max(first);
        self.ends[last].min(limit)
    }

    /// Where to start reading `path` (a segment of this log) for records from
    /// `start_offset`: the batch holding it, from the walk (no index file
    /// needed); `None` for a segment not walked.
    pub fn seek(&self, path: &str, start_offset: Option<i64>) -> Option<u64> {
        let base = *self.seg_base.get(path)?;
        let Some(start) = start_offset else {
            return Some(0);
        };
        let position = self.bytes_before(start) - base;
        let walked = self.walked(path).unwrap_or(0) as i64;
        // before this segment's first batch walked (or the byte index was trimmed): its start
        Some(if (0..=walked).contains(&position) {
            position as u64
        } else {
            0
        })
    }

    /// Drop the byte index below a committed offset (keeping the batch before
    /// it, which says where `offset`'s batch starts).
    pub fn forget_before(&mut self, offset: i64) {
        let i = self.ends.partition_point(|&e| e < offset);
        if i > 1 {
            self.ends.drain(..i - 1);
            self.bytes_at.drain(..i - 1);
        }
        // aborted transactions whose marker is below it matter to no later read
        self.aborted.retain(|t| t.last_offset.is_none_or(|l| l >= offset));
    }
}

// --------------------------------------------------------------------------
// offsets
// --------------------------------------------------------------------------

/// Offsets as Spark's Kafka source writes them: `{"topic":{"0":123}}`, topics
/// sorted, partitions in numeric order (Spark compares offsets as JSON text).
pub fn offsets_to_json(offsets: &Offsets) -> String {
    let mut out = String::from("{");
    let mut topic: Option<&str> = None;
    for ((t, partition), offset) in offsets {
        if topic != Some(t.as_str()) {
            if topic.is_some() {
                out.push_str("},");
            }
            out.push_str(&serde_json::Value::from(t.as_str()).to_string());
            out.push_str(":{");
            topic = Some(t.as_str());
        } else {
            out.push(',');
        }
        out.push_str(&format!("\"{partition}\":{offset}"));
    }
    if topic.is_some() {
        out.push('}');
    }
    out.push('}');
    out
}

/// Offsets from [`offsets_to_json`]'s JSON (Spark's Kafka source's).
pub fn offsets_from_json(text: &str) -> Result<Offsets, StreamError> {
    let bad = |what: String| StreamError::Offsets(format!("kafka-log stream offset: {what}"));
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("{text:?} is not JSON ({e})")))?;
    let mut out = Offsets::new();
    let serde_json::Value::Object(topics) = value else {
        if value.is_null() {
            return Ok(out);
        }
        return Err(bad(format!("{text:?} must map topics to partitions")));
    };
    for (topic, partitions) in topics {
        let serde_json::Value::Object(partitions) = partitions else {
            return Err(bad(format!(
                "topic {topic:?} must map partitions to offsets, not {partitions}"
            )));
        };
        for (partition, offset) in partitions {
            let p: i64 = partition
                .trim()
                .parse()
                .map_err(|_| bad(format!("topic {topic:?}: partition {partition:?} is not a number")))?;
            let o = offset.as_i64().ok_or_else(|| {
                bad(format!(
                    "topic {topic:?} partition {p}: offset {offset} is not an integer"
                ))
            })?;
            out.insert((topic.clone(), p), o);
        }
    }
    Ok(out)
}

/// Spark's Kafka source's `rateLimit`: `limit` shared between partitions in
/// proportion to `sizes` (what each has available), rounding down, except
/// that a partition with less than one unit due gets one.
pub fn rate_limit(begin: &Offsets, until: &Offsets, limit: i64, sizes: &Offsets) -> Offsets {
    let total: i64 = sizes.values().filter(|&&s| s > 0).sum();
    let mut out = until.clone();
    if total <= limit {
        return out;
    }
    for (tp, &size) in sizes {
        if size <= 0 {
            continue;
        }
        let prorate = limit as f64 * (size as f64 / total as f64);
        let share = if prorate < 1.0 { prorate.ceil() } else { prorate.floor() } as i64;
        let (Some(&u), Some(&b)) = (until.get(tp), begin.get(tp)) else {
            continue;
        };
        out.insert(tp.clone(), u.min(b + share));
    }
    out
}

// --------------------------------------------------------------------------
// the stream
// --------------------------------------------------------------------------

/// The options a stream's state follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamSettings {
    pub isolation: ScanIsolation,
    pub mode: Mode,
    pub fail_on_data_loss: bool,
    pub max_offsets_per_trigger: Option<i64>,
    pub max_bytes_per_trigger: Option<u64>,
}

impl Default for StreamSettings {
    fn default() -> Self {
        StreamSettings {
            isolation: ScanIsolation::ReadUncommitted,
            mode: Mode::FailFast,
            fail_on_data_loss: true,
            max_offsets_per_trigger: None,
            max_bytes_per_trigger: None,
        }
    }
}

impl From<&ScanOptions> for StreamSettings {
    fn from(o: &ScanOptions) -> Self {
        StreamSettings {
            isolation: o.isolation,
            mode: o.mode,
            fail_on_data_loss: o.fail_on_data_loss,
            max_offsets_per_trigger: o.max_offsets_per_trigger,
            max_bytes_per_trigger: o.max_bytes_per_trigger,
        }
    }
}

/// Why a stream can't take these options (what only a batch read takes, or
/// what streams don't support yet), in the options' words; `None` when it can.
pub fn stream_option_error(options: &ScanOptions) -> Option<String> {
    if options.has_ending {
        return Some(
            "kafka-log options endingOffsets/endingTimestamp are for batch reads (spark.read); a stream \
             reads what arrives. Use trigger(availableNow=True) to stop at what is there when it starts"
                .into(),
        );
    }
    if options.starting_timestamp_us.is_some() {
        return Some(
            "kafka-log option startingTimestamp is not supported by the stream reader yet; \
             use startingOffsets (earliest, latest or JSON)"
                .into(),
        );
    }
    None
}

/// What the driver of a stream keeps between triggers: every topic-partition's
/// [`PartitionLog`], the offsets available, `Trigger.AvailableNow`'s end, and
/// the data losses found under `failOnDataLoss=false` (for the front end to warn).
#[derive(Debug)]
pub struct StreamState {
    settings: StreamSettings,
    context: ReadContext,
    logs: BTreeMap<TopicPartition, PartitionLog>,
    target: Option<Offsets>,
    latest: Offsets,
    warnings: Vec<String>,
}

impl StreamState {
    /// A stream reading segments through `context` (storage, keys, decode options).
    pub fn new(settings: StreamSettings, context: ReadContext) -> StreamState {
        StreamState {
            settings,
            context,
            logs: BTreeMap::new(),
            target: None,
            latest: Offsets::new(),
            warnings: Vec::new(),
        }
    }

    /// The state of a stream with these options; remote segments through
    /// `resolver` (`None`: the object stores, [`object_store_resolver`]).
    pub fn of_options(options: &ScanOptions, resolver: Option<Resolver>) -> Result<StreamState, StreamError> {
        let scan = super::plan::Scan::new(options.paths.iter().cloned())
            .isolation(options.isolation)
            .on_error(options.mode.on_error())
            .max_decompressed_size(usize::try_from(options.max_decompressed_size).unwrap_or(usize::MAX))
            .tiered_keys(options.tiered_key_pairs().map_err(|e| StreamError::Offsets(e.0))?)
            .resolver(resolver.unwrap_or_else(object_store_resolver));
        Ok(StreamState::new(options.into(), scan.context()?))
    }

    /// What this state reads through (storage, keys, decode options): its
    /// micro-batches' splits are cut for tasks through it too.
    pub fn context(&self) -> &ReadContext {
        &self.context
    }

    /// The segments under the `path`/`paths` options (remote ones through this
    /// state's storage), filtered by `pathGlobFilter`, in topic, partition, offset order.
    pub fn list(&self, options: &ScanOptions) -> Result<Vec<Segment>, StreamError> {
        let list_options = ListOptions {
            topic: options.topic.clone(),
            partition: options.partition,
            collect_problems: false,
        };
        let held = HeldByBytes { context: &self.context };
        let mut out = Vec::new();
        for root in &options.paths {
            let local = !is_remote(root);
            let storage: Arc<dyn Storage> = if local {
                Arc::new(LocalStorage)
            } else {
                self.context.storage_for(root)?
            };
            let listing = list_segments(root, storage.as_ref(), &list_options, &held).map_err(ScanError::from)?;
            out.extend(listing.segments);
        }
        if let Some(filter) = &options.path_glob_filter {
            // as Spark's pathGlobFilter: a glob on file names only
            let pattern = Pattern::new(filter);
            out.retain(|s| pattern.matches(basename(without_query(&s.path))));
        }
        out.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        Ok(out)
    }

    pub fn settings(&self) -> &StreamSettings {
        &self.settings
    }

    /// Whether any partition was listed yet.
    pub fn has_logs(&self) -> bool {
        !self.logs.is_empty()
    }

    /// The log of one topic-partition.
    pub fn log(&self, tp: &TopicPartition) -> Option<&PartitionLog> {
        self.logs.get(tp)
    }

    /// The offsets available at the last refresh (the last stable ones under read_committed).
    pub fn latest(&self) -> &Offsets {
        &self.latest
    }

    /// The data-loss warnings found since the last call (`failOnDataLoss=false`).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn data_loss(&mut self, message: String) -> Result<(), StreamError> {
        if self.settings.fail_on_data_loss {
            return Err(StreamError::DataLoss(data_loss_error(&message)));
        }
        self.warnings.push(data_loss_warning(&message));
        Ok(())
    }

    /// Whether the walk of `tp` must start again (earlier) to plan from `offset`.
    pub fn needs_walk(&self, tp: &TopicPartition, offset: Option<i64>) -> bool {
        match self.logs.get(tp) {
            None => true,
            Some(log) => offset.is_some_and(|o| o < log.origin && log.origin > log.earliest()),
        }
    }

    /// Take a new listing (`segments` of every partition, in topic, partition,
    /// offset order) and walk what was added; `wanted`: the offsets each
    /// partition's walk must start at or before (a checkpoint's). Returns the
    /// texts of what `mode` skipped.
    pub fn refresh(&mut self, segments: Vec<Segment>, wanted: &Offsets) -> Result<Vec<String>, StreamError> {
        let mut groups: BTreeMap<TopicPartition, Vec<Segment>> = BTreeMap::new();
        for seg in segments {
            groups.entry((seg.topic.clone(), seg.partition)).or_default().push(seg);
        }
        let mut skipped = Vec::new();
        for (tp, group) in &groups {
            let need = wanted.get(tp).copied();
            let rebuild = match self.logs.get(tp) {
                None => true,
                Some(log) => log.stale(group) || self.needs_walk(tp, need),
            };
            if rebuild {
                let origin = need.or_else(|| self.logs.get(tp).map(PartitionLog::origin));
                let log = PartitionLog::new(&tp.0, tp.1, group.clone(), origin, &self.context)?;
                self.logs.insert(tp.clone(), log);
            }
            let (mode, context) = (self.settings.mode, &self.context);
            if let Some(log) = self.logs.get_mut(tp) {
                skipped.extend(log.update(group.clone(), mode, context)?);
            }
        }
        for (tp, log) in self.logs.iter_mut() {
            if !groups.contains_key(tp) {
                log.clear_segments();
            }
        }
        let committed = self.settings.isolation == ScanIsolation::ReadCommitted;
        self.latest = self
            .logs
            .iter()
            .filter(|(_, log)| !log.segments.is_empty())
            .map(|(tp, log)| (tp.clone(), if committed { log.last_stable() } else { log.next_offset }))
            .collect();
        Ok(skipped)
    }

    /// The first offsets of a new stream (`startingOffsets`), after a refresh;
    /// `paths` for the messages.
    pub fn initial_offsets(&self, spec: &OffsetsSpec, paths: &[String]) -> Result<Offsets, StreamError> {
        let quoted = || paths.iter().map(|p| format!("'{p}'")).collect::<Vec<_>>().join(", ");
        if self.latest.is_empty() {
            return Err(StreamError::Offsets(format!(
                "kafka-log found no Kafka log segments under {}: a stream needs at least one \
                 <topic>-<partition> folder holding *.log segment files (new partitions and topics \
                 matching the path are picked up once it runs)",
                quoted()
            )));
        }
        if let OffsetsSpec::Offsets(given) = spec {
            let unknown: Vec<String> = given
                .keys()
                .filter(|tp| !self.latest.contains_key(*tp))
                .map(|(t, p)| format!("{t}-{p}"))
                .collect();
            if !unknown.is_empty() {
                let found: Vec<String> = self.latest.keys().map(|(t, p)| format!("{t}-{p}")).collect();
                return Err(StreamError::Offsets(format!(
                    "kafka-log option 'startingOffsets' names topic-partitions that have no log under {}: \
                     {} (found: {})",
                    quoted(),
                    unknown.join(", "),
                    found.join(", ")
                )));
            }
        }
        let mut out = Offsets::new();
        for (tp, &latest) in &self.latest {
            let wanted = match spec {
                OffsetsSpec::Earliest => -2,
                OffsetsSpec::Latest => -1,
                OffsetsSpec::Offsets(given) => given.get(tp).copied().unwrap_or(-2),
            };
            let offset = match wanted {
                -2 => self.logs.get(tp).map_or(0, PartitionLog::earliest),
                -1 => latest,
                o => o,
            };
            out.insert(tp.clone(), offset);
        }
        Ok(out)
    }

    /// `Trigger.AvailableNow`: stop at what is available now (after a refresh).
    pub fn prepare_available_now(&mut self) {
        self.target = Some(self.latest.clone());
    }

    /// The end of the next micro-batch from `begin` (after a refresh with
    /// `begin` wanted): what is available, at most `max_offsets` records and
    /// `max_bytes` bytes of batches over all partitions (Spark's Kafka
    /// source's sharing); partitions that went away keep their offsets.
    pub fn latest_offset(
        &mut self,
        begin: &Offsets,
        max_offsets: Option<i64>,
        max_bytes: Option<u64>,
    ) -> Result<Offsets, StreamError> {
        let mut until = Offsets::new();
        let mut starts = Offsets::new();
        let latest = self.latest.clone();
        for (tp, &available) in &latest {
            let mut available = available;
            if let Some(target) = &self.target {
                match target.get(tp) {
                    None => continue, // appeared after Trigger.AvailableNow started
                    Some(&t) => available = available.min(t),
                }
            }
            let Some(log) = self.logs.get(tp) else { continue };
            let (earliest, next) = (log.earliest(), log.next_offset);
            let first = begin.get(tp).copied().unwrap_or(earliest);
            let first = self.check_start(tp, first, earliest, next)?;
            starts.insert(tp.clone(), first);
            until.insert(tp.clone(), first.max(available));
        }
        if let Some(limit) = max_offsets {
            let sizes = until.iter().map(|(tp, u)| (tp.clone(), u - starts[tp])).collect();
            until = rate_limit(&starts, &until, limit, &sizes);
        }
        if let Some(limit) = max_bytes {
            let sizes: Offsets = until
                .iter()
                .map(|(tp, &u)| {
                    let log = &self.logs[tp];
                    (tp.clone(), log.bytes_before(u) - log.bytes_before(starts[tp]))
                })
                .collect();
            let zeros = sizes.keys().map(|tp| (tp.clone(), 0)).collect();
            let budget = rate_limit(&zeros, &sizes, i64::try_from(limit).unwrap_or(i64::MAX), &sizes);
            for (tp, u) in until.iter_mut() {
                if sizes[tp] > 0 {
                    *u = self.logs[tp].offset_within(starts[tp], budget[tp], *u);
                }
            }
        }
        let mut end = begin.clone();
        end.extend(until);
        Ok(end)
    }

    /// `first` checked against the log: gone (retention) or ahead of it.
    fn check_start(&mut self, tp: &TopicPartition, first: i64, earliest: i64, next: i64) -> Result<i64, StreamError> {
        let name = format!("{}-{}", tp.0, tp.1);
        if first < earliest {
            self.data_loss(format!(
                "{name}: offsets {first}-{} were deleted (retention) before this stream read them; \
                 the earliest offset left is {earliest}",
                earliest - 1
            ))?;
            return Ok(earliest);
        }
        if first > next {
            self.data_loss(format!(
                "{name}: the stream's offset {first} is ahead of the log, which ends at {next} (the folder \
                 was recreated, or the checkpoint belongs to other data); starting again from the earliest \
                 offset, {earliest}"
            ))?;
            return Ok(earliest);
        }
        Ok(first)
    }

    /// The offsets a micro-batch's partitions must be walked from (`begin`'s;
    /// -1, from the first segment, for a partition new in it), and whether any
    /// must be walked again (a restart replaying a micro-batch of the
    /// checkpoint's offset log).
    pub fn wanted_for(&self, begin: &Offsets, until: &Offsets) -> (Offsets, bool) {
        let wanted: Offsets = until
            .keys()
            .map(|tp| (tp.clone(), begin.get(tp).copied().unwrap_or(-1)))
            .collect();
        let again = wanted.iter().any(|(tp, &o)| self.needs_walk(tp, Some(o)));
        (wanted, again)
    }

    /// What a micro-batch from `begin` to `until` reads, per topic-partition
    /// in order (after a refresh with [`StreamState::wanted_for`] when it
    /// asks): the first offset (`None`: from the partition's first segment),
    /// the offset to stop before, the segments (sizes cut to their complete
    /// batches walked) and, under read_committed, the transactions.
    pub fn micro_batch_parts(&mut self, begin: &Offsets, until: &Offsets) -> Result<Vec<MicroBatchPart>, StreamError> {
        let mut parts = Vec::new();
        for (tp, &stop) in until {
            let Some(log) = self.logs.get(tp) else { continue };
            if log.segments.is_empty() {
                continue;
            }
            let earliest = log.earliest();
            let mut first = begin.get(tp).copied();
            if first == Some(stop) {
                continue;
            }
            if let Some(f) = first.filter(|&f| f < earliest) {
                self.data_loss(format!(
                    "{}-{}: offsets {f}-{} were deleted (retention) before this stream read them",
                    tp.0,
                    tp.1,
                    earliest - 1
                ))?;
                first = None;
            }
            if let Some(f) = first.filter(|&f| stop < f) {
                self.data_loss(format!(
                    "{}-{}: the log went back from offset {f} to {stop} (recreated?)",
                    tp.0, tp.1
                ))?;
                first = None;
            }
            if first.is_some_and(|f| f >= stop) {
                continue;
            }
            let log = &self.logs[tp];
            // Plan only the complete batches walked: the active segment's tail may be half-written.
            let segments = log
                .segments
                .iter()
                .map(|s| {
                    let mut s = s.clone();
                    if let Some(w) = log.walked(&s.path) {
                        s.size = s.size.min(w);
                    }
                    s
                })
                .collect();
            let transactions = (self.settings.isolation == ScanIsolation::ReadCommitted).then(|| log.transactions());
            parts.push(MicroBatchPart {
                topic: tp.0.clone(),
                partition: tp.1,
                start: first,
                end: stop,
                segments,
                transactions,
            });
        }
        Ok(parts)
    }

    /// The core's splits of a micro-batch from `begin` to `until` (one per
    /// segment, in topic, partition, offset order), after a refresh with
    /// [`StreamState::wanted_for`] when it asks: each segment started at the
    /// batch holding the first offset (from the walk, else its `.index`).
    pub fn micro_batch(&mut self, begin: &Offsets, until: &Offsets) -> Result<Vec<Split>, StreamError> {
        let parts = self.micro_batch_parts(begin, until)?;
        let mut splits = Vec::new();
        for part in parts {
            let log = &self.logs[&(part.topic.clone(), part.partition)];
            let bounds = HeaderBounds {
                start_offset: part.start,
                end_offset: Some(part.end),
                ..Default::default()
            };
            let mut warnings = Vec::new();
            let planned = plan_segments(&part.segments, &bounds, false, false, &mut warnings);
            for (i, (seg, how)) in part.segments.iter().zip(planned).enumerate() {
                if seg.size == 0 || how == SegmentPlan::Skipped {
                    continue;
                }
                let (so, eo) = segment_bounds(seg, bounds.start_offset, bounds.end_offset);
                let start = match log.seek(&seg.path, so) {
                    Some(position) => position,
                    None => match plan_segments(&part.segments[i..=i], &bounds, true, true, &mut warnings)[..] {
                        [SegmentPlan::Bytes { start, .. }] => start,
                        _ => 0,
                    },
                };
                if start >= seg.size {
                    continue;
                }
                splits.push(Split {
                    version: SPLIT_VERSION,
                    path: seg.path.clone(),
                    topic: part.topic.clone(),
                    partition: part.partition,
                    layout: seg.layout.as_str().to_string(),
                    manifest: seg.manifest.clone(),
                    size: seg.size,
                    start,
                    end: seg.size,
                    start_offset: so,
                    end_offset: eo,
                    start_ts_us: None,
                    end_ts_us: None,
                    transactions: part.transactions.clone(),
                    twins: Vec::new(),
                });
            }
        }
        Ok(splits)
    }

    /// A micro-batch committed: the byte index below its end is dropped.
    pub fn commit(&mut self, end: &Offsets) {
        for (tp, &offset) in end {
            if let Some(log) = self.logs.get_mut(tp) {
                log.forget_before(offset);
            }
        }
    }

    /// The query stopped.
    pub fn stop(&mut self) {
        self.logs.clear();
    }
}

/// One topic-partition of a micro-batch ([`StreamState::micro_batch_parts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MicroBatchPart {
    pub topic: String,
    pub partition: i64,
    pub start: Option<i64>,
    pub end: i64,
    pub segments: Vec<Segment>,
    pub transactions: Option<Vec<Transaction>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::{encode, EncodeOptions, RecordRef};

    fn tp(t: &str, p: i64) -> TopicPartition {
        (t.to_string(), p)
    }

    #[test]
    fn offsets_are_spark_kafka_json_partitions_in_numeric_order() {
        let mut o = Offsets::new();
        o.insert(tp("b", 10), 7);
        o.insert(tp("b", 2), 5);
        o.insert(tp("a\"x", 0), 1);
        let text = offsets_to_json(&o);
        assert_eq!(text, r#"{"a\"x":{"0":1},"b":{"2":5,"10":7}}"#);
        assert_eq!(offsets_from_json(&text).unwrap(), o);
        assert_eq!(offsets_to_json(&Offsets::new()), "{}");
        // Python's json.dumps spacing reads the same
        assert_eq!(offsets_from_json(r#"{"b": {"2": 5, "10": 7}}"#).unwrap().len(), 2);
        let e = offsets_from_json(r#"{"t": 3}"#).unwrap_err().to_string();
        assert_eq!(
            e,
            "kafka-log stream offset: topic \"t\" must map partitions to offsets, not 3"
        );
        assert!(offsets_from_json(r#"{"t":{"x":1}}"#).is_err());
    }

    #[test]
    fn rate_limit_shares_as_sparks_kafka_source() {
        // Spark's KafkaMicroBatchStream.rateLimit on (0..10, 0..29, 0..1), limit 8 of 40:
        // prorate 2.0 -> floor 2, 5.8 -> floor 5, 0.2 -> ceil 1
        let begin: Offsets = [(tp("t", 0), 0), (tp("t", 1), 0), (tp("t", 2), 0)].into();
        let until: Offsets = [(tp("t", 0), 10), (tp("t", 1), 29), (tp("t", 2), 1)].into();
        let sizes = until.clone();
        let got = rate_limit(&begin, &until, 8, &sizes);
        assert_eq!(got.values().copied().collect::<Vec<_>>(), [2, 5, 1]);
        // within the limit: everything
        assert_eq!(rate_limit(&begin, &until, 40, &sizes), until);
    }

    fn batch(base: i64, n: usize, out: &mut Vec<u8>) {
        let records = vec![RecordRef::new(None, Some(b"value"), 1_000); n];
        let options = EncodeOptions {
            base_offset: base,
            ..Default::default()
        };
        encode(&records, &options, out).unwrap();
    }

    fn context() -> ReadContext {
        super::super::plan::Scan::new(["unused"]).context().unwrap()
    }

    struct Dir(std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("kb-stream-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("t-0")).unwrap();
        Dir(d)
    }

    fn listed(d: &Dir) -> Vec<Segment> {
        let options = ScanOptions::parse([("path", d.0.to_str().unwrap())]).unwrap();
        StreamState::new(StreamSettings::default(), context())
            .list(&options)
            .unwrap()
    }

    #[test]
    fn a_growing_segment_is_walked_incrementally_and_a_half_batch_waits() {
        let d = dir("grow");
        let seg = d.0.join("t-0/00000000000000000000.log");
        let mut log = Vec::new();
        batch(0, 3, &mut log);
        batch(3, 2, &mut log);
        let first_two = log.len();
        let mut next = Vec::new();
        batch(5, 4, &mut next);
        log.extend_from_slice(&next[..next.len() / 2]); // half a batch
        std::fs::write(&seg, &log).unwrap();
        let mut state = StreamState::new(StreamSettings::default(), context());
        state.refresh(listed(&d), &Offsets::new()).unwrap();
        assert_eq!(state.latest()[&tp("t", 0)], 5);
        let l = state.log(&tp("t", 0)).unwrap();
        assert_eq!(l.walked(seg.to_str().unwrap()), Some(first_two as u64));
        assert_eq!(
            (l.bytes_before(3), l.bytes_before(5)),
            (l.bytes_before(4), first_two as i64)
        );
        // the rest of the batch arrives, then a rolled segment
        log.extend_from_slice(&next[next.len() / 2..]);
        std::fs::write(&seg, &log).unwrap();
        let mut rolled = Vec::new();
        batch(9, 1, &mut rolled);
        std::fs::write(d.0.join("t-0/00000000000000000009.log"), &rolled).unwrap();
        state.refresh(listed(&d), &Offsets::new()).unwrap();
        assert_eq!(state.latest()[&tp("t", 0)], 10);
        let start = state.initial_offsets(&OffsetsSpec::Earliest, &[]).unwrap();
        // maxOffsetsPerTrigger 4: the batch holding offset 3 is read from its start, rows cut at 4
        let end = state.latest_offset(&start, Some(4), None).unwrap();
        assert_eq!(end[&tp("t", 0)], 4);
        let end2 = state.latest_offset(&end, None, None).unwrap();
        assert_eq!(end2[&tp("t", 0)], 10);
        let splits = state.micro_batch(&end, &end2).unwrap();
        assert_eq!(splits.len(), 2);
        let first_batch = {
            let mut b = Vec::new();
            batch(0, 3, &mut b);
            b.len() as u64
        };
        assert_eq!(
            (splits[0].start, splits[0].start_offset, splits[0].end),
            (first_batch, Some(4), log.len() as u64)
        );
        assert_eq!((splits[1].start, splits[1].end_offset), (0, Some(10)));
        // maxBytesPerTrigger: at least one batch, and no more than fit
        let by_bytes = state.latest_offset(&start, None, Some(1)).unwrap();
        assert_eq!(by_bytes[&tp("t", 0)], 3);
        let by_bytes = state.latest_offset(&start, None, Some(first_two as u64)).unwrap();
        assert_eq!(by_bytes[&tp("t", 0)], 5);
    }

    #[test]
    fn read_committed_stops_at_the_last_stable_offset_until_the_marker() {
        let d = dir("txn");
        let seg = d.0.join("t-0/00000000000000000000.log");
        let mut log = Vec::new();
        batch(0, 2, &mut log);
        let txn = EncodeOptions {
            base_offset: 2,
            producer_id: 7,
            producer_epoch: 0,
            base_sequence: 0,
            transactional: true,
            ..Default::default()
        };
        encode(&[RecordRef::new(None, Some(b"t"), 1_000); 3], &txn, &mut log).unwrap();
        std::fs::write(&seg, &log).unwrap();
        let settings = StreamSettings {
            isolation: ScanIsolation::ReadCommitted,
            ..Default::default()
        };
        let mut state = StreamState::new(settings, context());
        state.refresh(listed(&d), &Offsets::new()).unwrap();
        assert_eq!(state.latest()[&tp("t", 0)], 2);
        crate::encode::control_batch(crate::encode::ControlKind::Abort, 7, 0, 5, 0, 1_000, -1, &mut log);
        std::fs::write(&seg, &log).unwrap();
        state.refresh(listed(&d), &Offsets::new()).unwrap();
        assert_eq!(state.latest()[&tp("t", 0)], 6);
        let t = state.log(&tp("t", 0)).unwrap().transactions();
        assert_eq!(
            t,
            [Transaction {
                producer_id: 7,
                first_offset: 2,
                last_offset: Some(5)
            }]
        );
        let start: Offsets = [(tp("t", 0), 0)].into();
        let splits = state.micro_batch(&start, &state.latest().clone()).unwrap();
        assert_eq!(splits[0].transactions.as_deref(), Some(&t[..]));
    }

    #[test]
    fn data_loss_fails_or_warns_with_the_sources_words() {
        let d = dir("loss");
        let mut b = Vec::new();
        batch(10, 5, &mut b);
        std::fs::write(d.0.join("t-0/00000000000000000010.log"), &b).unwrap();
        let mut state = StreamState::new(StreamSettings::default(), context());
        state.refresh(listed(&d), &Offsets::new()).unwrap();
        let begin: Offsets = [(tp("t", 0), 4)].into();
        let e = state.latest_offset(&begin, None, None).unwrap_err().to_string();
        assert_eq!(
            e,
            "kafka-log stream: t-0: offsets 4-9 were deleted (retention) before this stream read them; the \
             earliest offset left is 10. Set option failOnDataLoss=false to go on with a warning instead"
        );
        let settings = StreamSettings {
            fail_on_data_loss: false,
            ..Default::default()
        };
        let mut state = StreamState::new(settings, context());
        state.refresh(listed(&d), &Offsets::new()).unwrap();
        let ahead: Offsets = [(tp("t", 0), 99)].into();
        let end = state.latest_offset(&ahead, None, None).unwrap();
        assert_eq!(end[&tp("t", 0)], 15);
        let w = state.take_warnings();
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("kafka-log stream: t-0: the stream's offset 99 is ahead of the log, which ends at 15"));
    }

    #[test]
    fn a_restart_walks_from_the_checkpoint_and_forgets_committed_bytes() {
        let d = dir("restart");
        let mut log = Vec::new();
        for base in (0..20).step_by(4) {
            batch(base, 4, &mut log);
        }
        std::fs::write(d.0.join("t-0/00000000000000000000.log"), &log).unwrap();
        let mut state = StreamState::new(StreamSettings::default(), context());
        let begin: Offsets = [(tp("t", 0), 9)].into();
        let (wanted, again) = state.wanted_for(&begin, &begin);
        assert!(again);
        state.refresh(listed(&d), &wanted).unwrap();
        let l = state.log(&tp("t", 0)).unwrap();
        // no .index: walked from the start (origin 9)
        assert_eq!((l.origin(), l.next_offset()), (9, 20));
        let end = state.latest_offset(&begin, Some(5), None).unwrap();
        assert_eq!(end[&tp("t", 0)], 14);
        let splits = state.micro_batch(&begin, &end).unwrap();
        assert_eq!(
            (splits[0].start, splits[0].start_offset),
            (log.len() as u64 / 5 * 2, Some(9))
        );
        state.commit(&end);
        let l = state.log(&tp("t", 0)).unwrap();
        assert_eq!(l.bytes_before(14), log.len() as i64 / 5 * 3);
        assert_eq!(l.seek(&listed(&d)[0].path, Some(14)), Some(log.len() as u64 / 5 * 3));
    }
}
