//! Reading splits into Arrow: each split's bytes (a local file memory-mapped,
//! a remote file by ranged reads, an Aiven segment chunk by chunk through
//! [`TieredSource`]) walked by batch header, decoded in windows of complete
//! batches of at most `max_chunk_bytes` (one larger batch alone), batches
//! whose headers rule out every record in the bounds left undecoded, and the
//! rows filtered exactly with [`crate::prune::row_mask`].
//!
//! Under `read_committed` each decoded range gets the partition's aborted
//! transactions not finished before its first offset (what a broker sends
//! with a fetch from there), from the plan's pre-pass
//! (`partition_transactions`).
//!
//! A damaged remote segment (a `.log` object missing or truncated, a bad
//! manifest, a chunk that can't be undone) is read from another copy of its
//! offsets when its split carries one (its twins), from the first offset not
//! returned yet, whatever `on_error` says. Without one, under
//! `on_error = skip`, a chunk that can't be undone costs the batches that
//! overlap it (the read goes on at the first whole batch after it) and other
//! damage the rest of the segment; each loss is counted in the split's
//! [`SplitReport`]. Otherwise the error ends the read.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType};
use arrow_array::{BooleanArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, Buffer};
use rsa::RsaPrivateKey;

use super::index::offset_index_entries;
use super::layouts::{remote_name, sibling, Layout};
use super::listing::{segment_bounds, HeldOffsets, ListError, Segment};
use super::naming::{is_remote, text};
use super::plan::{ScanError, Split, Transaction};
use super::seek::{seek_tiered, SeekBounds};
use super::typed::{parse_batch, parse_while_decoding, TypedColumn};
use super::walk::{walk, Walk, Window};
use crate::arrow_out::Columns;
use crate::batch::WalkEnd;
use crate::decode::{decode_range_columns, ChunkStep, DecodeOptions, Isolation, OnError};
use crate::error::{DecodeError, ErrorKind};
use crate::prune::{row_mask, HeaderBounds};
use crate::storage::{LocalStorage, Location, Storage};
use crate::tiered::source::TieredSource;
use crate::tiered::{parse_manifest, transform_for, IndexKind, Manifest, TieredError, Transform};
use crate::txn::AbortedTxn;
use crate::values::PARSE_CHUNK_BYTES;

/// Size of the fixed prefix every batch and legacy message starts with: offset (8) and length (4).
const LOG_OVERHEAD: usize = 12;

/// What the readers of a scan's splits share: where remote files are, the
/// parsed keys of encrypted segments, decode options, the window size.
#[derive(Clone)]
pub struct ReadContext {
    pub(crate) resolver: Option<super::plan::Resolver>,
    /// Every path's storage, when the scan was given one (see [`Scan::storage`](super::Scan::storage)).
    pub(crate) storage: Option<Arc<dyn Storage>>,
    pub(crate) keys: Arc<BTreeMap<String, RsaPrivateKey>>,
    pub(crate) options: DecodeOptions,
    pub(crate) max_chunk_bytes: usize,
    /// The columns read (the offset and timestamp of bounded splits are
    /// built too, to filter rows, and dropped after).
    pub(crate) columns: Columns,
    /// A reader stops after this many rows.
    pub(crate) limit: Option<u64>,
    /// The columns parsed into types (see [`super::typed`]).
    pub(crate) typed: Arc<Vec<TypedColumn>>,
    /// `Some(hide_open)`: the splits' transactions are a Fetch response's
    /// aborted list (see [`ReadContext::with_fetch_aborted`]).
    pub(crate) fetch_aborted: Option<bool>,
    /// Whole local splits are sought with their index files (see [`ReadContext::with_index_seek`]).
    pub(crate) index_seek: bool,
}

impl std::fmt::Debug for ReadContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadContext")
            .field("key_ids", &self.keys.keys().collect::<Vec<_>>())
            .field("options", &self.options)
            .field("max_chunk_bytes", &self.max_chunk_bytes)
            .field("columns", &self.columns.names())
            .finish_non_exhaustive()
    }
}

impl ReadContext {
    /// This context reading the splits' transactions as a Fetch response's
    /// aborted list (`(producer id, first offset)`, no marker offsets known)
    /// instead of a pre-pass: as Kafka's consumer does, a listed transaction
    /// hides its producer's transactional batches from its first offset on
    /// until the producer's ABORT marker, which the read learns as it goes
    /// (its offset becomes the transaction's last offset, see
    /// [`SplitReport::transactions`]; the plan keeps the markers).
    /// `hide_open`: transactional batches of a producer no entry or marker
    /// explains stay hidden too.
    pub fn with_fetch_aborted(mut self, hide_open: bool) -> Self {
        self.fetch_aborted = Some(hide_open);
        self
    }

    /// This context with `typed` columns parsed as each chunk is decoded
    /// (rows a bounded read filters out are never parsed).
    pub fn with_typed(mut self, typed: Vec<TypedColumn>) -> Self {
        self.typed = Arc::new(typed);
        self
    }

    /// This context seeking a whole local split (one of a broker's segment
    /// files) with the `.index` and `.timeindex` beside it, as
    /// [`seek_file`](super::seek::seek_file) does (a bad index costs a read
    /// from the start and a line in [`ReadStats::index_warnings`]).
    pub fn with_index_seek(mut self) -> Self {
        self.index_seek = true;
        self
    }

    /// The storage holding `path`: the scan's own when it was given one, else
    /// local files, or the resolver's for URIs.
    pub fn storage_for(&self, path: &str) -> Result<Arc<dyn Storage>, ScanError> {
        if let Some(storage) = &self.storage {
            return Ok(storage.clone());
        }
        if !is_remote(path) {
            return Ok(Arc::new(LocalStorage));
        }
        match &self.resolver {
            Some(resolve) => Ok(resolve(path)?),
            None => Err(ScanError::Options(format!(
                "{path}: a remote location, and this scan was given no storage for remote roots"
            ))),
        }
    }

    /// The read_committed pre-pass over one partition's segments (in log
    /// order), local or remote, twins and damage handled as the read does
    /// (see [`Scan::plan`](super::Scan::plan)): the transactions an ABORT
    /// marker ends, then those still open, sorted by first offset and producer.
    pub fn transactions(&self, group: &[Segment]) -> Result<Vec<Transaction>, ScanError> {
        partition_transactions(group, self)
    }

    /// The transform undoing an Aiven segment's chunks: its data key unwrapped with the key pair it names.
    fn transform(&self, manifest: &Manifest) -> Result<Transform, TieredError> {
        transform_for(manifest, &self.keys)
    }

    /// Open the bytes of one segment.
    pub(super) fn open(&self, path: &str, layout: Layout, manifest: Option<&str>) -> Result<Source, ScanError> {
        if layout == Layout::Aiven {
            let Some(manifest_path) = manifest else {
                return Err(ScanError::Tiered {
                    object: path.to_string(),
                    error: TieredError::manifest("no manifest was listed for this remote segment"),
                });
            };
            let storage = self.storage_for(manifest_path)?;
            let location = Location::new(manifest_path);
            let tiered = |error: TieredError| ScanError::Tiered {
                object: manifest_path.to_string(),
                error,
            };
            let Some(size) = storage.size(&location)? else {
                return Err(tiered(TieredError::truncated("the manifest object is missing")));
            };
            let text = storage.read_range(&location, 0..size)?;
            let manifest = parse_manifest(text.as_slice()).map_err(tiered)?;
            let transform = self.transform(&manifest).map_err(tiered)?;
            let source = TieredSource::open(
                self.storage_for(path)?,
                Location::new(path),
                Arc::new(manifest),
                transform,
                self.options.max_decompressed_size,
                "max_decompressed_size",
            )?;
            return Ok(Source::Tiered(Box::new(source)));
        }
        Source::plain(self.storage_for(path)?, path)
    }
}

/// One segment's bytes.
pub(super) enum Source {
    /// A whole local file, memory-mapped.
    Mapped(Buffer),
    /// A plain remote file, by ranged reads.
    Ranged {
        storage: Arc<dyn Storage>,
        location: Location,
        size: u64,
    },
    /// An Aiven segment's original bytes.
    Tiered(Box<TieredSource>),
}

/// A piece of a segment held at once, walked by header: `data[from..to]`
/// are the bytes to read (file position `base + i` for `data[i]`).
pub(super) struct Piece {
    pub(super) data: Buffer,
    pub(super) base: u64,
    pub(super) from: usize,
    pub(super) to: usize,
    pub(super) walk: Walk,
}

impl Source {
    /// A plain segment file (a broker's or LocalTieredStorage's) through
    /// `storage`: the whole file memory-mapped where the storage maps
    /// (local files), else read by ranges.
    pub(super) fn plain(storage: Arc<dyn Storage>, path: &str) -> Result<Source, ScanError> {
        let location = Location::new(path);
        if let Some(map) = storage.map(&location)? {
            return Ok(Source::Mapped(map));
        }
        let size = storage
            .size(&location)?
            .ok_or_else(|| crate::storage::StorageError::NotFound(location.clone()))?;
        Ok(Source::Ranged {
            storage,
            location,
            size,
        })
    }

    /// The last offset the batch headers from `start` (a batch boundary)
    /// hold, walked piece by piece to the first bytes that don't walk;
    /// `None` when no batch does.
    fn last_offset_from(&mut self, start: u64, chunk: usize) -> Option<i64> {
        let size = self.size();
        let (mut pos, mut last) = (start, None);
        while pos < size {
            let piece = self.piece(pos, size, chunk).ok()?;
            if let Some(f) = piece.walk.batches.last() {
                last = Some(f.last_offset);
            }
            let next = piece.base + piece.walk.valid_end as u64;
            if next <= pos || piece.walk.valid_end < piece.to {
                break;
            }
            pos = next;
        }
        last
    }

    pub(super) fn size(&self) -> u64 {
        match self {
            Source::Mapped(map) => map.len() as u64,
            Source::Ranged { size, .. } => *size,
            Source::Tiered(source) => source.size(),
        }
    }

    /// Bytes of a remote (Aiven) object fetched so far.
    fn fetched(&self) -> u64 {
        match self {
            Source::Tiered(source) => source.requested(),
            _ => 0,
        }
    }

    fn read(&mut self, position: u64, length: u64) -> Result<Buffer, ScanError> {
        let end = position.saturating_add(length).min(self.size());
        let position = position.min(end);
        match self {
            Source::Mapped(map) => Ok(map.slice_with_length(position as usize, (end - position) as usize)),
            Source::Ranged { storage, location, .. } => Ok(storage.read_range(location, position..end)?),
            Source::Tiered(source) => Ok(source.read(position, end - position)?),
        }
    }

    /// The next piece from `pos` (a batch boundary) towards `end`: a mapped
    /// file at once; other sources about `chunk` bytes of complete batches
    /// (one larger batch whole), the last piece reaching `end` with whatever
    /// bytes there are.
    pub(super) fn piece(&mut self, pos: u64, end: u64, chunk: usize) -> Result<Piece, ScanError> {
        let end = end.min(self.size());
        if let Source::Mapped(map) = self {
            let data = map.clone();
            let walk = walk(&data, pos as usize);
            return Ok(Piece {
                walk,
                from: pos as usize,
                to: end as usize,
                base: 0,
                data,
            });
        }
        let want = (chunk.max(LOG_OVERHEAD) as u64).min(end - pos); // a batch's length is read whole
        let mut data = self.read(pos, want)?;
        let mut w = walk(&data, 0);
        if pos + want < end && w.valid_end == 0 && data.len() >= LOG_OVERHEAD {
            // one batch larger than the window: read it whole when it fits the range
            let length = i32::from_be_bytes(data[8..12].try_into().unwrap_or([0; 4]));
            let size = LOG_OVERHEAD as u64 + u64::try_from(length).unwrap_or(0);
            if length > 0 && pos + size <= end {
                data = self.read(pos, size)?;
                w = walk(&data, 0);
            }
        }
        let at_end = pos + data.len() as u64 >= end;
        let to = if at_end || w.valid_end == 0 {
            data.len()
        } else {
            w.valid_end
        };
        Ok(Piece {
            walk: w,
            from: 0,
            to,
            base: pos,
            data,
        })
    }
}

/// The ABORT markers of `data[range]` (walked in `walk`) ending
/// `transactions` (a Fetch response's aborted list): a marker of a producer
/// ends its listed transactions that begin at or before it, as Kafka's
/// consumer drops the producer from its aborted set there.
fn learn_aborts(
    walk: &Walk,
    data: &[u8],
    range: std::ops::Range<usize>,
    transactions: &mut [Transaction],
    options: &DecodeOptions,
) {
    // every listed producer open, so each of their ABORT markers is reported
    let mut open: BTreeMap<i64, i64> = transactions
        .iter()
        .filter(|t| t.last_offset.is_none())
        .map(|t| (t.producer_id, t.first_offset))
        .collect();
    if open.is_empty() {
        return;
    }
    let Some(ended) = walk.transaction_pass(data, range, &mut open, None, None, options) else {
        return;
    };
    for marker in ended {
        for t in transactions.iter_mut() {
            if t.producer_id == marker.producer_id && t.first_offset <= marker.marker_offset && t.last_offset.is_none()
            {
                t.last_offset = Some(marker.marker_offset);
            }
        }
    }
}

/// `error` with its positions counted from the start of the file.
fn relocate(error: DecodeError, base: u64, path: &str) -> ScanError {
    ScanError::Decode {
        path: path.to_string(),
        error: in_file(error, base),
    }
}

/// `error` (positions counted from `base`) with its positions counted from the start of the file.
fn in_file(mut error: DecodeError, base: u64) -> DecodeError {
    let base = base as usize;
    error.batch_position += base;
    if !error.in_payload {
        error.byte_position += base;
    }
    error
}

/// The `(producer id, first offset)` pairs a piece starting at `first_offset`
/// needs: the transactions not finished before it.
fn aborted_for(transactions: &[Transaction], first_offset: i64) -> Vec<AbortedTxn> {
    transactions
        .iter()
        .filter(|t| t.last_offset.is_none_or(|last| last >= first_offset))
        .map(|t| AbortedTxn {
            producer_id: t.producer_id,
            first_offset: t.first_offset,
        })
        .collect()
}

fn bounded(b: &HeaderBounds) -> bool {
    b.start_offset.is_some() || b.end_offset.is_some() || b.start_ts_us.is_some() || b.end_ts_us.is_some()
}

/// Only the rows of `batch` in `bounds` (a batch of `built` columns), with
/// the columns `wanted` only; `None` when no row is in bounds.
fn filter_rows(
    batch: RecordBatch,
    bounds: &HeaderBounds,
    built: Columns,
    wanted: Columns,
) -> Result<Option<RecordBatch>, ScanError> {
    let n = batch.num_rows();
    if n == 0 {
        return Ok(None);
    }
    if !bounded(bounds) {
        return Ok(Some(batch));
    }
    let batch = filter_bounded(batch, bounds, built)?;
    match batch {
        Some(batch) if built != wanted => {
            let keep: Vec<usize> = Columns::NAMES
                .iter()
                .filter(|name| wanted.names().contains(name))
                .filter_map(|name| batch.schema().index_of(name).ok())
                .collect();
            let projected = batch
                .project(&keep)
                .map_err(|e| ScanError::Options(format!("projecting columns: {e}")))?;
            Ok(Some(projected))
        }
        other => Ok(other),
    }
}

/// The rows of `batch` (with the offset and timestamp columns) in `bounds`.
fn filter_bounded(batch: RecordBatch, bounds: &HeaderBounds, built: Columns) -> Result<Option<RecordBatch>, ScanError> {
    let n = batch.num_rows();
    let (Some(at_offset), Some(at_timestamp)) = (built.position(Columns::OFFSET), built.position(Columns::TIMESTAMP))
    else {
        return Err(ScanError::Options(
            "a decoded batch without its offset or timestamp column".into(),
        ));
    };
    let offsets = batch.column(at_offset).as_primitive::<Int64Type>();
    let stamps = batch.column(at_timestamp).as_primitive::<TimestampMicrosecondType>();
    let (bits, kept) = row_mask(
        offsets.values().inner().as_slice(),
        stamps.values().inner().as_slice(),
        n,
        bounds,
    )
    .ok_or_else(|| ScanError::Options("a decoded batch without its offset or timestamp values".into()))?;
    if kept == n {
        return Ok(Some(batch));
    }
    if kept == 0 {
        return Ok(None);
    }
    let mask = BooleanArray::new(BooleanBuffer::new(Buffer::from_vec(bits), 0, n), None);
    let filtered = arrow_select::filter::filter_record_batch(&batch, &mask)
        .map_err(|e| ScanError::Options(format!("filtering rows: {e}")))?;
    Ok(Some(filtered))
}

/// What reading has found so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Splits opened.
    pub splits: usize,
    /// Batches decoded, records decoded, rows returned.
    pub batches: usize,
    pub records: usize,
    pub rows: usize,
    /// Batches dropped under `on_error = skip`, and their bytes.
    pub skipped: Vec<String>,
    pub skipped_bytes: usize,
    /// Bytes of batches left undecoded: their headers show no record in the bounds.
    pub pruned_bytes: usize,
    /// Bytes handed to the decoder (the ranges decoded, corrupt batches included).
    pub bytes_read: u64,
    /// Batches dropped under `on_error = skip` whose stored CRC did not match their bytes.
    pub crc_errors: usize,
    /// What each split read to its end found, in order (see [`ScanReader::take_finished`]).
    pub finished: Vec<SplitReport>,
    /// Index files that could not be used to seek a remote segment (read
    /// whole instead): one line each, naming the file and why.
    pub index_warnings: Vec<String>,
}

/// What reading one split found: the line `mode=PERMISSIVE` logs for a split
/// that lost batches or ended in bytes no batch could be read from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SplitReport {
    pub path: String,
    /// Bytes `[start, end)` of a segment of `size` bytes.
    pub start: u64,
    pub end: u64,
    pub size: u64,
    /// Batches decoded, records decoded, rows returned, corrupt batches dropped and their bytes.
    pub batches: usize,
    pub records: usize,
    pub rows: usize,
    pub skipped: usize,
    pub skipped_bytes: usize,
    /// The corrupt batches dropped, positions counted from the start of the file.
    pub errors: Vec<DecodeError>,
    /// Bytes of batches left undecoded: their headers show no record in the bounds.
    pub pruned_bytes: usize,
    /// The largest offset of the rows returned (when the offset column is read).
    pub last_offset: Option<i64>,
    /// Bytes after the last batch that could be read: an incomplete batch
    /// (`truncated`) or framing that can't be trusted (`broken`, from
    /// `end_error`).
    pub trailing_bytes: usize,
    pub status: &'static str,
    pub end_error: Option<String>,
    /// The error `end_error` describes, positions counted from the start of the file.
    pub broken: Option<DecodeError>,
    /// What a damaged remote segment (or a copy of it) cost, in order: a
    /// chunk that can't be undone, or, without a chunk, the rest of that copy.
    pub lost: Vec<Lost>,
    /// The other copy of the segment's offsets read instead of this damaged one.
    pub twin: Option<String>,
    /// The first offset asked of that copy.
    pub twin_from: Option<i64>,
    /// Bytes of remote (Aiven) objects fetched: chunks and index slices.
    pub fetched: u64,
    /// A read of a Fetch response's aborted list (see
    /// [`ReadContext::with_fetch_aborted`]): the list with the marker offsets
    /// learnt, for the read of the partition's next segment.
    pub transactions: Option<Vec<Transaction>>,
}

/// A piece of a remote segment that could not be read (see [`SplitReport::lost`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    pub chunk: Option<usize>,
    pub reason: String,
    /// The object named (a chunk's `.log`, a manifest...), the failure's kind, and the whole message.
    pub object: String,
    pub kind: &'static str,
    pub message: String,
}

impl Lost {
    fn part(&self) -> String {
        match self.chunk {
            Some(chunk) => format!("chunk {chunk} ({})", self.reason),
            None => format!("the rest of the segment ({})", self.reason),
        }
    }
}

impl SplitReport {
    /// Whether the split lost anything (what a PERMISSIVE read reports).
    pub fn lost_any(&self) -> bool {
        self.skipped > 0 || self.trailing_bytes > 0 || !self.lost.is_empty()
    }

    /// One line, for logs: the Python source's words (`SegmentResult.describe`).
    pub fn describe(&self) -> String {
        if let (Some(twin), Some(first)) = (&self.twin, self.lost.first()) {
            // the first loss is this copy's damage, the others the twin's read
            let mut text = format!(
                "{}: damaged ({}); its offsets read from {twin} instead: {} rows",
                self.path, first.reason, self.rows
            );
            for lost in &self.lost[1..] {
                text += &format!("; skipped {}", lost.part());
            }
            return text;
        }
        if let Some(first) = self.lost.first().filter(|_| self.batches == 0 && self.rows == 0) {
            return format!("{}: not read: {}", self.path, first.reason);
        }
        let mut text = if (self.start, self.end) == (0, self.size) {
            self.path.clone()
        } else {
            format!("{} [bytes {}-{}]", self.path, self.start, self.end)
        };
        text += &format!(": {} rows", self.rows);
        if self.skipped > 0 || self.lost.is_empty() {
            let plural = if self.skipped == 1 { "" } else { "es" };
            text += &format!(
                "; skipped {} corrupt batch{plural} ({} bytes)",
                self.skipped, self.skipped_bytes
            );
        }
        for lost in &self.lost {
            text += &format!("; skipped {}", lost.part());
        }
        if self.trailing_bytes > 0 {
            text += &format!("; {} trailing bytes ({})", self.trailing_bytes, self.status);
        }
        if let Some(error) = &self.end_error {
            text += error;
        }
        text
    }
}

/// One split being read.
struct SplitRead {
    /// The split (after a damage, the copy of its offsets being read instead).
    split: Split,
    /// Opened on the first read.
    source: Option<Source>,
    pos: u64,
    end: u64,
    /// Pieces are read up to here first (the whole batches before a chunk that can't be undone).
    limit: Option<u64>,
    done: bool,
    piece: Option<Piece>,
    windows: VecDeque<Window>,
    report: SplitReport,
    /// The last offset of the batches decoded so far (where a copy takes over).
    last_decoded: Option<i64>,
    /// The other copies of the split's offsets not tried yet.
    copies: VecDeque<Split>,
    /// The error that made this split's own copy unreadable, once it did.
    damaged: Option<ScanError>,
}

impl SplitRead {
    fn new(mut split: Split) -> Self {
        let report = SplitReport {
            path: split.path.clone(),
            start: split.start,
            end: split.end,
            size: split.size,
            status: "clean",
            ..SplitReport::default()
        };
        let copies = std::mem::take(&mut split.twins).into();
        SplitRead {
            report,
            pos: split.start,
            end: split.end,
            split,
            source: None,
            limit: None,
            done: false,
            piece: None,
            windows: VecDeque::new(),
            last_decoded: None,
            copies,
            damaged: None,
        }
    }

    /// Read the next copy of the offsets not returned yet instead (false: none is left).
    fn next_copy(&mut self) -> bool {
        let Some(mut copy) = self.copies.pop_front() else {
            return false;
        };
        if let Some(last) = self.last_decoded {
            copy.start_offset = Some(copy.start_offset.map_or(last + 1, |s| s.max(last + 1)));
        }
        self.report.fetched += self.source.as_ref().map_or(0, Source::fetched);
        if self.split.transactions.is_some() {
            // the same partition's: what was learnt of them so far goes on
            copy.transactions = self.split.transactions.take();
        }
        self.report.twin = Some(copy.path.clone());
        self.report.twin_from = copy.start_offset;
        self.pos = copy.start;
        self.end = copy.end;
        self.split = copy;
        self.source = None;
        self.limit = None;
        self.piece = None;
        self.windows.clear();
        true
    }

    /// Count `error` (a tiered failure) as lost to this split's read.
    fn lose(&mut self, error: &ScanError, stats: &mut ReadStats) {
        let lost = match error {
            ScanError::Tiered { error: e, object } => Lost {
                chunk: e.chunk,
                reason: e.reason.clone(),
                object: object.clone(),
                kind: e.kind.name(),
                message: error.to_string(),
            },
            other => Lost {
                chunk: None,
                reason: other.to_string(),
                object: self.split.path.clone(),
                kind: "other",
                message: other.to_string(),
            },
        };
        self.report.lost.push(lost);
        stats.skipped.push(error.to_string());
    }
}

/// Where a walk standing at `pos` (a batch boundary) goes when chunk `chunk`
/// of a remote segment can't be undone (see [`past_bad_chunk`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PastChunk {
    /// Whole batches before the chunk end here: walk them first.
    Before(u64),
    /// The bytes from `pos` to here can't be walked: go on here (at `end`: nothing after it).
    Resume(u64),
}

/// What to do at chunk `chunk` of `source` (the segment at `path`), which
/// can't be undone, for a walk at `pos` within `end`: read the whole batches
/// before it, then go on at the first batch found after it (with the offset
/// index of the segment's `.indexes`, see [`resume_after`]).
fn past_bad_chunk(
    source: &mut TieredSource,
    path: &str,
    chunk: usize,
    pos: u64,
    end: u64,
) -> Result<PastChunk, ScanError> {
    let (bad_start, bad_end) = source.chunk_range(chunk)?;
    let good_end = source.whole_batches_end(pos, bad_start.max(pos));
    if good_end > pos {
        return Ok(PastChunk::Before(good_end));
    }
    let indexes = Location::new(sibling(path, text::INDEXES));
    let base = remote_name(path).map(|n| n.base_offset);
    let resume = resume_after(source, bad_end.max(pos), &indexes, base).map_or(end, |r| r.min(end));
    Ok(PastChunk::Resume(if resume > pos { resume } else { end }))
}

/// How far past a chunk that can't be undone a batch start is looked for
/// when no offset index entry bounds the search.
pub const RESYNC_LIMIT: u64 = 1 << 20;

/// The first batch start at or after original byte `position` of a remote
/// segment (the end of a chunk that can't be undone), or `None` when none is
/// found: a position from which batches run exactly to the next entry of
/// the segment's offset index (in `indexes`, its `.indexes` object; for a
/// segment whose first offset is `base_offset`), or to the end of the
/// segment, the first of them whole with a valid CRC. Candidates are tried
/// up to [`RESYNC_LIMIT`] bytes past `position`.
pub fn resume_after(
    source: &mut TieredSource,
    position: u64,
    indexes: &Location,
    base_offset: Option<i64>,
) -> Option<u64> {
    let size = source.size();
    let mut target = size;
    if let Some(base) = base_offset {
        let entries = source
            .index(IndexKind::Offset, indexes)
            .ok()
            .flatten()
            .and_then(|raw| offset_index_entries(&raw, base).ok());
        if let Some((_, positions)) = entries {
            let after = positions
                .iter()
                .filter_map(|&p| u64::try_from(p).ok())
                .find(|&p| position <= p && p < size);
            if let Some(p) = after {
                target = p;
            }
        }
    }
    let last = target.min(position.saturating_add(RESYNC_LIMIT));
    (position..=last)
        .find(|&candidate| candidate == target || source.batches_reach(candidate, target))
        .filter(|&candidate| candidate < size)
}

/// The record batches of splits, in order: an iterator of
/// `Result<RecordBatch, ScanError>` of [`crate::arrow_out::schema`]; no batch is empty.
pub struct ScanReader {
    splits: VecDeque<Split>,
    context: ReadContext,
    current: Option<SplitRead>,
    pending: VecDeque<RecordBatch>,
    stats: ReadStats,
    failed: bool,
    /// Rows returned (counted under a limit).
    returned: usize,
}

impl std::fmt::Debug for ScanReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanReader")
            .field("splits_left", &self.splits.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl ScanReader {
    /// A reader of `splits` (from a plan, or deserialised on an executor).
    pub fn new(splits: Vec<Split>, context: ReadContext) -> Self {
        ScanReader {
            splits: splits.into(),
            context,
            current: None,
            pending: VecDeque::new(),
            stats: ReadStats::default(),
            failed: false,
            returned: 0,
        }
    }

    /// The schema of every batch: [`crate::arrow_out::schema`], or the columns asked for only.
    pub fn schema(&self) -> arrow_schema::SchemaRef {
        self.context.columns.schema()
    }

    /// What reading has found so far.
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    /// The reports of the splits read to their end since the last call.
    pub fn take_finished(&mut self) -> Vec<SplitReport> {
        std::mem::take(&mut self.stats.finished)
    }

    /// Fill `pending` with the next window's rows; false when every split is read.
    fn advance(&mut self) -> Result<bool, ScanError> {
        loop {
            let Some(read) = self.current.as_mut() else {
                let Some(split) = self.splits.pop_front() else {
                    return Ok(false);
                };
                self.stats.splits += 1;
                self.current = Some(SplitRead::new(split));
                continue;
            };
            if let Some(window) = read.windows.pop_front() {
                let last = window.2;
                read_window(read, window, &self.context, &mut self.stats, &mut self.pending)?;
                if last {
                    read.done = true;
                    read.windows.clear();
                }
                return Ok(true);
            }
            if read.done || (read.source.is_some() && read.pos >= read.end) {
                if let Some(mut done) = self.current.take() {
                    done.report.fetched += done.source.as_ref().map_or(0, Source::fetched);
                    if self.context.fetch_aborted.is_some() {
                        done.report.transactions = done.split.transactions.take();
                    }
                    self.stats.finished.push(done.report);
                }
                continue;
            }
            let step = match read.source.as_mut() {
                None => {
                    let split = &read.split;
                    let warnings = &mut self.stats.index_warnings;
                    self.context
                        .open(&split.path, split.layout(), split.manifest.as_deref())
                        .and_then(|mut source| {
                            read.end = read.end.min(source.size());
                            if let Source::Mapped(map) = &source {
                                let whole = read.pos == 0 && read.end == map.len() as u64;
                                if self.context.index_seek && whole && read.split.layout() == Layout::Broker {
                                    let (start, end) = seek_local(map, &read.split, warnings);
                                    (read.pos, read.end) = (start, end.map_or(read.end, |e| e.min(read.end)));
                                    (read.report.start, read.report.end) = (read.pos, read.end);
                                }
                            }
                            if let Source::Tiered(tiered) = &mut source {
                                if read.pos == 0 && read.end == tiered.size() {
                                    let (start, end) = seek_remote(tiered, &read.split, warnings)?;
                                    (read.pos, read.end) = (start, end.map_or(read.end, |e| e.min(read.end)));
                                    (read.report.start, read.report.end) = (read.pos, read.end);
                                }
                            }
                            read.source = Some(source);
                            Ok(())
                        })
                }
                Some(source) => {
                    let end = read.limit.map_or(read.end, |limit| limit.min(read.end));
                    source.piece(read.pos, end, self.context.max_chunk_bytes).map(|piece| {
                        let bounds = read.split.bounds();
                        let windows = piece
                            .walk
                            .windows(
                                &piece.data,
                                piece.from,
                                piece.to,
                                self.context.max_chunk_bytes,
                                bounds.start_offset,
                                bounds.end_offset,
                            )
                            .unwrap_or_else(|| vec![(piece.from, piece.to, true)]);
                        read.pos = piece.base + piece.to as u64;
                        if read.limit.is_some_and(|limit| read.pos >= limit) {
                            read.limit = None;
                        }
                        read.windows = windows.into();
                        read.piece = Some(piece);
                    })
                }
            };
            if let Err(error) = step {
                self.damaged(error)?;
            }
        }
    }

    /// After `error` opening or reading the current split: a damaged remote
    /// segment is read from another copy of its offsets when there is one
    /// (whatever `on_error` says); else, under `on_error = skip`, a chunk that
    /// can't be undone costs the batches that overlap it (the read goes on
    /// past it) and any other damage the rest of the segment, counted in the
    /// split's report; else the error stands.
    fn damaged(&mut self, error: ScanError) -> Result<(), ScanError> {
        let skip = self.context.options.on_error == OnError::Skip;
        let Some(read) = self.current.as_mut() else {
            return Err(error);
        };
        let ScanError::Tiered { error: tiered, .. } = &error else {
            return Err(error);
        };
        let chunk = tiered.chunk;
        let own_copy = read.damaged.is_none();
        if own_copy && !read.copies.is_empty() {
            read.lose(&error, &mut self.stats);
            read.damaged = Some(error);
            read.next_copy();
            return Ok(());
        }
        if !skip {
            if own_copy {
                return Err(error);
            }
            read.lose(&error, &mut self.stats);
            if read.next_copy() {
                return Ok(());
            }
            return Err(read.damaged.take().unwrap_or(error));
        }
        if let (Some(chunk), Some(Source::Tiered(source))) = (chunk, read.source.as_mut()) {
            let (pos, end) = (read.pos, read.end);
            match past_bad_chunk(source, &read.split.path, chunk, pos, end)? {
                PastChunk::Before(good_end) => read.limit = Some(good_end),
                PastChunk::Resume(resume) => {
                    let lost = usize::try_from(resume.saturating_sub(pos)).unwrap_or(usize::MAX);
                    read.report.skipped_bytes += lost;
                    self.stats.skipped_bytes += lost;
                    read.lose(&error, &mut self.stats);
                    read.pos = resume;
                    read.done = resume >= end;
                }
            }
            return Ok(());
        }
        read.lose(&error, &mut self.stats);
        if !read.next_copy() {
            read.done = true;
        }
        Ok(())
    }
}

/// The byte range of a whole remote (Aiven) split worth reading for its
/// bounds, from the indexes of its `.indexes` object (see
/// [`seek_tiered`]); an index that can't be used costs a read of the whole
/// segment and a line in `warnings`.
fn seek_remote(
    source: &mut TieredSource,
    split: &Split,
    warnings: &mut Vec<String>,
) -> Result<(u64, Option<u64>), ScanError> {
    let bounds = split.bounds();
    let Some(base) = remote_name(&split.path).map(|n| n.base_offset) else {
        return Ok((0, None));
    };
    let indexes = Location::new(sibling(&split.path, text::INDEXES));
    let wanted = SeekBounds {
        start_offset: bounds.start_offset,
        end_offset: bounds.end_offset,
        start_timestamp_ms: bounds.start_ts_us.map(|us| us.div_euclid(1000)),
    };
    match seek_tiered(source, &indexes, base, wanted)? {
        Ok(found) => Ok(found),
        Err(bad) => {
            warnings.push(format!(
                "{}: {bad}; scanning the whole segment instead",
                indexes.as_str()
            ));
            Ok((0, None))
        }
    }
}

/// The byte range of a whole local split worth reading for its bounds, from
/// the index files beside it (see [`seek_file`](super::seek::seek_file)); an
/// index that can't be used costs a read of the whole segment and a line in
/// `warnings`.
fn seek_local(map: &Buffer, split: &Split, warnings: &mut Vec<String>) -> (u64, Option<u64>) {
    let bounds = split.bounds();
    let wanted = SeekBounds {
        start_offset: bounds.start_offset,
        end_offset: bounds.end_offset,
        start_timestamp_ms: bounds.start_ts_us.map(|us| us.div_euclid(1000)),
    };
    match super::seek::seek_file(map.as_slice(), &split.path, wanted) {
        Ok((start, end)) => (start as u64, end.map(|e| e as u64)),
        Err(bad) => {
            warnings.push(format!("{}: {bad}; scanning the whole segment instead", split.path));
            (0, None)
        }
    }
}

/// Decode one window of the current piece into `out` (rows in bounds only).
fn read_window(
    read: &mut SplitRead,
    (a, b, _last): Window,
    context: &ReadContext,
    stats: &mut ReadStats,
    out: &mut VecDeque<RecordBatch>,
) -> Result<(), ScanError> {
    let Some(piece) = read.piece.as_ref() else {
        return Ok(());
    };
    let bounds = read.split.bounds();
    let ranges = if bounds.start_ts_us.is_some() || bounds.end_ts_us.is_some() {
        // a Fetch response's aborted list ends at markers: those stay to be learnt
        match piece.walk.kept_ranges(a, b, &bounds, context.fetch_aborted.is_some()) {
            Some((ranges, pruned)) => {
                stats.pruned_bytes += pruned;
                read.report.pruned_bytes += pruned;
                ranges
            }
            None => vec![(a, b)],
        }
    } else {
        vec![(a, b)]
    };
    let partition = i32::try_from(read.split.partition)
        .map_err(|_| ScanError::Options(format!("partition {} is not an int32", read.split.partition)))?;
    // rows are filtered by their offsets and timestamps: built for that when not wanted
    let built = if bounded(&bounds) {
        context.columns.union(Columns::OFFSET).union(Columns::TIMESTAMP)
    } else {
        context.columns
    };
    for (x, y) in ranges {
        let mut options = context.options.clone();
        if let Some(transactions) = &read.split.transactions {
            let first = piece
                .data
                .get(x..x + 8)
                .map_or(0, |b| i64::from_be_bytes(b.try_into().unwrap_or([0; 8])));
            options.isolation = Isolation::ReadCommitted {
                aborted: Some(aborted_for(transactions, first)),
                hide_open: context.fetch_aborted.unwrap_or(false),
            };
        }
        // typed values of a read that keeps every row: parsed as each chunk is cut
        let typed = context.typed.as_slice();
        let failed = AtomicBool::new(false);
        let parse = |chunk| parse_while_decoding(typed, chunk, &failed);
        let mut step = (!typed.is_empty() && !bounded(&bounds)).then_some(ChunkStep {
            chunk_bytes: PARSE_CHUNK_BYTES,
            apply: &parse,
        });
        let decode = |step: Option<&ChunkStep>| {
            decode_range_columns(
                &piece.data,
                x,
                y,
                Some(&read.split.topic),
                Some(partition),
                &options,
                built,
                step,
            )
            .map_err(|e| relocate(e, piece.base, &read.split.path))
        };
        let mut decoded = decode(step.as_ref())?;
        if failed.load(Relaxed) {
            // a value failed: decoded again and parsed after, which names it
            step = None;
            decoded = decode(None)?;
        }
        if let (Some(_), Some(transactions)) = (context.fetch_aborted, read.split.transactions.as_mut()) {
            learn_aborts(&piece.walk, &piece.data, x..y, transactions, &context.options);
        }
        stats.batches += decoded.batches;
        read.report.batches += decoded.batches;
        stats.records += decoded.records;
        read.report.records += decoded.records;
        stats.skipped_bytes += decoded.skipped_bytes;
        stats.bytes_read += (y - x) as u64;
        let report = &mut read.report;
        report.skipped += decoded.skipped.len();
        report.skipped_bytes += decoded.skipped_bytes;
        match &decoded.end {
            WalkEnd::Clean => {}
            WalkEnd::Truncated { len, .. } => {
                report.trailing_bytes += len;
                report.status = "truncated";
            }
            WalkEnd::Broken(e) => {
                report.trailing_bytes += y.saturating_sub(e.batch_position);
                report.status = "broken";
                let at = piece.base as usize + e.batch_position;
                report.end_error = Some(format!(" from byte {at}: {}", e.reason));
                report.broken = Some(in_file(e.clone(), piece.base));
            }
        }
        for e in decoded.skipped {
            if e.kind == ErrorKind::CrcMismatch {
                stats.crc_errors += 1;
            }
            let e = in_file(e, piece.base);
            stats.skipped.push(
                ScanError::Decode {
                    path: read.split.path.clone(),
                    error: e.clone(),
                }
                .to_string(),
            );
            report.errors.push(e);
        }
        for batch in decoded.chunks {
            if let Some(batch) = filter_rows(batch, &bounds, built, context.columns)? {
                let batch = if typed.is_empty() || step.is_some() {
                    batch
                } else {
                    parse_batch(typed, batch, options.threads)?
                };
                stats.rows += batch.num_rows();
                report.rows += batch.num_rows();
                let offsets = batch
                    .column_by_name("offset")
                    .and_then(|c| c.as_primitive_opt::<Int64Type>());
                if let Some(last) = offsets.and_then(|o| o.values().iter().max().copied()) {
                    report.last_offset = Some(report.last_offset.map_or(last, |l| l.max(last)));
                }
                out.push_back(batch);
            }
        }
    }
    // the offsets of the batches decoded so far: a copy of the segment takes over after them
    let through = piece.walk.batches.partition_point(|f| f.position + f.size <= b);
    if let Some(last) = through.checked_sub(1).map(|i| piece.walk.batches[i].last_offset) {
        read.last_decoded = Some(read.last_decoded.map_or(last, |l| l.max(last)));
    }
    Ok(())
}

impl Iterator for ScanReader {
    type Item = Result<RecordBatch, ScanError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(batch) = self.pending.pop_front() {
                let Some(limit) = self.context.limit else {
                    return Some(Ok(batch));
                };
                let left = usize::try_from(limit).unwrap_or(usize::MAX) - self.returned;
                if left == 0 {
                    self.pending.clear();
                    self.splits.clear();
                    self.current = None;
                    return None;
                }
                let batch = if batch.num_rows() > left {
                    batch.slice(0, left)
                } else {
                    batch
                };
                self.returned += batch.num_rows();
                return Some(Ok(batch));
            }
            if self.failed {
                return None;
            }
            match self.advance() {
                Ok(true) => continue,
                Ok(false) => return None,
                Err(e) => {
                    self.failed = true;
                    self.current = None;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// The read_committed pre-pass over one partition's segments (in log
/// order), each walked over the offsets the overlap rule leaves to it: the
/// transactions an ABORT marker ends, then those still open, sorted by first
/// offset and producer. A damaged remote segment is walked in another copy
/// of its offsets when there is one (as the read does); else, under
/// `on_error = skip`, walked around its chunks that can't be undone, or left
/// out (the read that follows counts what it lost).
pub(crate) fn partition_transactions(group: &[Segment], context: &ReadContext) -> Result<Vec<Transaction>, ScanError> {
    let skip = context.options.on_error == OnError::Skip;
    let mut open: BTreeMap<i64, i64> = BTreeMap::new();
    let mut done: Vec<Transaction> = Vec::new();
    for seg in group {
        let span = segment_bounds(seg, None, None);
        let mut walked = |copy: &Segment, around: bool| {
            let before = (open.clone(), done.len());
            let result = walk_transactions(copy, (0, None), span, context, &mut open, &mut done, around);
            if result.is_err() {
                // this copy can't be walked: as if it never was
                open = before.0;
                done.truncate(before.1);
            }
            result
        };
        let damaged = match walked(seg, false) {
            Ok(()) => continue,
            Err(e @ ScanError::Tiered { .. }) => e,
            Err(e) => return Err(e),
        };
        let mut twin_walked = false;
        for twin in &seg.twins {
            match walked(twin, false) {
                Ok(()) => {
                    twin_walked = true;
                    break;
                }
                Err(ScanError::Tiered { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        if twin_walked {
            continue;
        }
        if !skip {
            return Err(damaged);
        }
        match walked(seg, true) {
            Ok(()) | Err(ScanError::Tiered { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(with_open(done, open))
}

/// The transactions an ABORT marker ended (`done`) and those still `open`,
/// sorted by first offset and producer.
fn with_open(mut done: Vec<Transaction>, open: BTreeMap<i64, i64>) -> Vec<Transaction> {
    done.extend(open.into_iter().map(|(producer_id, first_offset)| Transaction {
        producer_id,
        first_offset,
        last_offset: None,
    }));
    done.sort_by_key(|t| (t.first_offset, t.producer_id));
    done
}

/// A piece of a segment walked by [`span_transactions`]: the segment, a byte
/// range of it (end `None`: to its end) and the offsets `[start, end)`.
pub type SegmentSpan = (Segment, (u64, Option<u64>), (Option<i64>, Option<i64>));

/// The read_committed pre-pass over pieces of one partition's segments, in
/// log order, as a front end cut them: each piece a segment (read from
/// `context`'s storage), a byte range of it (start at a batch boundary, end
/// `None` for the end) and the offsets `[start, end)` it is walked for.
/// Errors stand (no twins, no skipping).
pub fn span_transactions(spans: &[SegmentSpan], context: &ReadContext) -> Result<Vec<Transaction>, ScanError> {
    let mut open: BTreeMap<i64, i64> = BTreeMap::new();
    let mut done: Vec<Transaction> = Vec::new();
    for (seg, bytes, offsets) in spans {
        walk_transactions(seg, *bytes, *offsets, context, &mut open, &mut done, false)?;
    }
    Ok(with_open(done, open))
}

/// The pre-pass over one copy of a segment, over `bytes` (start, end or
/// `None` for the end of the file) for the offsets `span` (`around`: chunks
/// that can't be undone are walked around).
fn walk_transactions(
    copy: &Segment,
    bytes: (u64, Option<u64>),
    (start, end): (Option<i64>, Option<i64>),
    context: &ReadContext,
    open: &mut BTreeMap<i64, i64>,
    done: &mut Vec<Transaction>,
    around: bool,
) -> Result<(), ScanError> {
    let mut source = context.open(&copy.path, copy.layout, copy.manifest.as_deref())?;
    let size = bytes.1.map_or(source.size(), |end| end.min(source.size()));
    let (mut pos, mut limit) = (bytes.0, None);
    while pos < size {
        let piece = match source.piece(pos, limit.unwrap_or(size), context.max_chunk_bytes) {
            Ok(piece) => piece,
            Err(ScanError::Tiered { object, error }) => {
                let (Some(chunk), Source::Tiered(tiered), true) = (error.chunk, &mut source, around) else {
                    return Err(ScanError::Tiered { object, error });
                };
                match past_bad_chunk(tiered, &copy.path, chunk, pos, size)? {
                    PastChunk::Before(good_end) => limit = Some(good_end),
                    PastChunk::Resume(resume) => pos = resume,
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        let ended = piece
            .walk
            .transaction_pass(&piece.data, piece.from..piece.to, open, start, end, &context.options)
            .unwrap_or_default();
        done.extend(ended.into_iter().map(|t| Transaction {
            producer_id: t.producer_id,
            first_offset: t.first_offset,
            last_offset: Some(t.marker_offset),
        }));
        let next = piece.base + piece.to as u64;
        if next <= pos || piece.walk.valid_end < piece.to {
            break; // the rest can't be walked
        }
        pos = next;
        if limit.is_some_and(|l| pos >= l) {
            limit = None;
        }
    }
    Ok(())
}

/// Confirms a remote segment's manifest by its bytes: the last offset its last
/// batch header holds, walked from the last entry of its offset index (else
/// from its start); `None` when it can't be read. Plain files (an empty
/// manifest): [`plain_last_offset`].
pub struct HeldByBytes<'a> {
    pub context: &'a ReadContext,
}

impl HeldOffsets for HeldByBytes<'_> {
    fn held_last_offset(&self, log: &str, manifest: &str, base_offset: i64) -> Option<i64> {
        let chunk = self.context.max_chunk_bytes;
        if manifest.is_empty() {
            let storage = self.context.storage_for(log).ok()?;
            return plain_last_offset(storage, log, chunk);
        }
        let mut source = self.context.open(log, Layout::Aiven, Some(manifest)).ok()?;
        // from the last entry of its offset index (fetched from its .indexes object), else the start
        let size = source.size();
        let tail = match &mut source {
            Source::Tiered(tiered) => tiered
                .index(IndexKind::Offset, &Location::new(sibling(log, text::INDEXES)))
                .ok()
                .flatten()
                .and_then(|raw| offset_index_entries(&raw, base_offset).ok())
                .and_then(|(_, positions)| positions.last().copied())
                .and_then(|p| u64::try_from(p).ok())
                .filter(|&p| p > 0 && p < size),
            _ => None,
        };
        if let Some(last) = tail.and_then(|at| source.last_offset_from(at, chunk)) {
            return Some(last);
        }
        source.last_offset_from(0, chunk)
    }
}

/// Walks plain segment files itself (asked with an empty manifest) through
/// `storage`, and asks `remote` about remote (Aiven) segments' manifests.
pub struct HeldPlainFiles<'a, H: ?Sized, S: ?Sized> {
    pub remote: &'a H,
    pub storage: &'a S,
    pub max_chunk_bytes: usize,
}

impl<H, S> HeldOffsets for HeldPlainFiles<'_, H, S>
where
    H: HeldOffsets + ?Sized,
    S: Fn(&str) -> Result<Arc<dyn Storage>, ListError> + ?Sized,
{
    fn held_last_offset(&self, log: &str, manifest: &str, base_offset: i64) -> Option<i64> {
        if manifest.is_empty() {
            return plain_last_offset((self.storage)(log).ok()?, log, self.max_chunk_bytes);
        }
        self.remote.held_last_offset(log, manifest, base_offset)
    }
}

/// The last offset a plain segment file (a broker's or LocalTieredStorage's)
/// really holds: its last batch header's, walked from where the last entry of
/// its `.index` points when the file is read by ranges (else, or when that
/// position doesn't walk, from the start); `None` when it can't be read.
pub fn plain_last_offset(storage: Arc<dyn Storage>, log: &str, chunk: usize) -> Option<i64> {
    let mut source = Source::plain(storage, log).ok()?;
    if let Source::Ranged { storage, .. } = &source {
        let tail = index_tail(storage.as_ref(), log, source.size());
        if let Some(last) = tail.and_then(|at| source.last_offset_from(at, chunk)) {
            return Some(last);
        }
    }
    source.last_offset_from(0, chunk)
}

/// Where the last entry in use of a segment's `.index` points, found with a
/// binary search over its entries (a broker preallocates the active segment's
/// index with zeros: entries past entry 0 with a relative offset of 0 are not
/// in use), when that is a position inside the segment's `size` bytes.
fn index_tail(storage: &dyn Storage, log: &str, size: u64) -> Option<u64> {
    let index = Location::new(sibling(log, ".index"));
    let entries = storage.size(&index).ok()?? / 8;
    let entry = |i: u64| -> Option<(i32, u32)> {
        let bytes = storage.read_range(&index, i * 8..i * 8 + 8).ok()?;
        let bytes: [u8; 8] = bytes.as_slice().try_into().ok()?;
        let (relative, position) = bytes.split_at(4);
        Some((
            i32::from_be_bytes(relative.try_into().ok()?),
            u32::from_be_bytes(position.try_into().ok()?),
        ))
    };
    // entries [0, used) are in use: `lo` is, `hi` is not
    let (mut lo, mut hi) = (0u64, entries);
    if hi == 0 {
        return None;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if entry(mid)?.0 != 0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let position = u64::from(entry(lo)?.1);
    (position > 0 && position < size).then_some(position)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};

    use crate::compression::Codec;
    use crate::decode::{decode, DecodeOptions, Isolation};
    use crate::generate::{Kind, PartitionConfig, PartitionGenerator};
    use crate::scan::{Scan, ScanIsolation};

    use super::{Arc, Buffer, LocalStorage, Location, Storage};

    /// (topic, partition, offset, timestamp µs) of each row.
    type Row = (String, i32, i64, i64);

    fn rows_of(batches: impl IntoIterator<Item = arrow_array::RecordBatch>) -> Vec<Row> {
        let mut out = Vec::new();
        for b in batches {
            let topics = b.column(2).as_string::<i32>();
            let partitions = b.column(3).as_primitive::<Int32Type>();
            let offsets = b.column(4).as_primitive::<Int64Type>();
            let stamps = b.column(5).as_primitive::<TimestampMicrosecondType>();
            for i in 0..b.num_rows() {
                out.push((
                    topics.value(i).to_string(),
                    partitions.value(i),
                    offsets.value(i),
                    stamps.value(i),
                ));
            }
        }
        out
    }

    /// A broker log dir: transactional orders in small segments, legacy v1 gzip audit lines.
    fn generated(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kb-scan-read-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut orders = PartitionConfig::new(dir.join("orders-0"), "orders", 0, Kind::Orders);
        orders.target_bytes = 400 << 10;
        orders.segment_bytes = 64 << 10;
        orders.transactional_producers = 3;
        let mut audit = PartitionConfig::new(dir.join("audit-legacy-1"), "audit-legacy", 1, Kind::Audit);
        audit.magic = 1;
        audit.codec = Codec::Gzip;
        audit.target_bytes = 200 << 10;
        audit.segment_bytes = 64 << 10;
        audit.transactional_producers = 0;
        for cfg in [orders, audit] {
            let mut g = PartitionGenerator::new(cfg).unwrap();
            g.step(u64::MAX).unwrap();
            g.finish().unwrap();
        }
        dir
    }

    /// Every partition's segments joined and decoded at once: what a scan must return.
    fn expected(dir: &Path, committed: bool) -> Vec<Row> {
        let mut folders: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        folders.sort();
        let mut out = Vec::new();
        for folder in folders {
            let name = folder.file_name().unwrap().to_str().unwrap().to_string();
            let (topic, partition) = name.rsplit_once('-').unwrap();
            let mut logs: Vec<_> = std::fs::read_dir(&folder)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "log"))
                .collect();
            logs.sort();
            let data: Vec<u8> = logs.iter().flat_map(|p| std::fs::read(p).unwrap()).collect();
            let options = DecodeOptions {
                isolation: if committed {
                    Isolation::ReadCommitted {
                        aborted: None,
                        hide_open: true,
                    }
                } else {
                    Isolation::ReadUncommitted
                },
                ..Default::default()
            };
            let decoded = decode(&data, Some(topic), Some(partition.parse().unwrap()), &options).unwrap();
            out.extend(rows_of(decoded.chunks));
        }
        out
    }

    fn read(scan: &Scan) -> Vec<Row> {
        rows_of(scan.reader().unwrap().map(Result::unwrap))
    }

    #[test]
    fn a_scan_returns_what_decoding_each_partition_whole_returns_under_any_bounds() {
        let dir = generated("bounds");
        let root = dir.to_str().unwrap();
        for committed in [false, true] {
            let all = expected(&dir, committed);
            assert!(all.len() > 1000 && all.iter().any(|r| r.0 == "audit-legacy"));
            let isolation = if committed {
                ScanIsolation::ReadCommitted
            } else {
                ScanIsolation::ReadUncommitted
            };
            let scan = |s: Option<i64>, e: Option<i64>, t0: Option<i64>, t1: Option<i64>| {
                Scan::new([root])
                    .isolation(isolation)
                    .max_chunk_bytes(5000)
                    .start_offset(s)
                    .end_offset(e)
                    .timestamp_range_us(t0, t1)
            };
            assert_eq!(read(&scan(None, None, None, None)), all);
            let (first_ts, last_ts) = (
                all.iter().map(|r| r.3).min().unwrap(),
                all.iter().map(|r| r.3).max().unwrap(),
            );
            let mid = first_ts + (last_ts - first_ts) / 2;
            for (s, e, t0, t1) in [
                (Some(700), None, None, None),
                (None, Some(333), None, None),
                (Some(250), Some(1900), None, None),
                (None, None, Some(mid), None),
                (None, None, None, Some(mid)),
                (Some(100), None, Some(first_ts + 1), Some(mid)),
                (Some(50), Some(10), None, None),
            ] {
                let want: Vec<Row> = all
                    .iter()
                    .filter(|r| {
                        s.is_none_or(|s| r.2 >= s)
                            && e.is_none_or(|e| r.2 < e)
                            && t0.is_none_or(|t| r.3 >= t)
                            && t1.is_none_or(|t| r.3 < t)
                    })
                    .cloned()
                    .collect();
                assert_eq!(read(&scan(s, e, t0, t1)), want, "{committed} {s:?} {e:?} {t0:?} {t1:?}");
            }
            // per-partition bounds and filters
            let one = Scan::new([root])
                .isolation(isolation)
                .partition_start_offset("orders", 0, 900)
                .topics(["orders"]);
            let want: Vec<Row> = all.iter().filter(|r| r.0 == "orders" && r.2 >= 900).cloned().collect();
            assert_eq!(read(&one), want);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Copies `from` (a log dir) to `to`, each partition's newest segment cut after the
    /// first half of its batches.
    fn shorter_copy(from: &Path, to: &Path) {
        let _ = std::fs::remove_dir_all(to);
        for folder in std::fs::read_dir(from).unwrap().map(|e| e.unwrap().path()) {
            let into = to.join(folder.file_name().unwrap());
            std::fs::create_dir_all(&into).unwrap();
            let mut files: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
            files.sort();
            let newest = files
                .iter()
                .rfind(|p| p.extension().is_some_and(|e| e == "log"))
                .cloned();
            for file in files {
                let mut data = std::fs::read(&file).unwrap();
                if Some(&file) == newest.as_ref() {
                    let batches = super::walk(&data, 0).batches;
                    assert!(batches.len() > 1, "{file:?}: too few batches to cut");
                    let kept = &batches[batches.len() / 2 - 1];
                    data.truncate(kept.position + kept.size);
                }
                std::fs::write(into.join(file.file_name().unwrap()), data).unwrap();
            }
        }
    }

    #[test]
    fn two_copies_of_a_log_dir_give_each_offset_once_from_the_longer() {
        // Two copies of the same broker log dir (a backup and the live one), the backup's
        // newest segments shorter: each offset once, the longer copy's tail included, whichever
        // copy sorts first and in whichever order the roots come.
        let long = generated("copies");
        let short = long.with_file_name(format!("kb-scan-read-a-short-copy-{}", std::process::id()));
        shorter_copy(&long, &short);
        let (l, s) = (long.to_str().unwrap(), short.to_str().unwrap());
        for committed in [false, true] {
            let isolation = if committed {
                ScanIsolation::ReadCommitted
            } else {
                ScanIsolation::ReadUncommitted
            };
            let mut want = expected(&long, committed);
            want.sort();
            assert!(want.len() < 2 * expected(&short, committed).len());
            for roots in [[s, l], [l, s]] {
                let mut got = read(&Scan::new(roots).isolation(isolation).max_chunk_bytes(5000));
                got.sort();
                let twice = got.windows(2).filter(|w| w[0] == w[1]).count();
                assert_eq!(
                    (got.len(), twice),
                    (want.len(), 0),
                    "roots {roots:?}, read_committed {committed}"
                );
                assert!(got == want, "roots {roots:?}, read_committed {committed}: other rows");
            }
        }
        let _ = std::fs::remove_dir_all(&short);
    }

    #[test]
    fn a_topic_override_giving_two_logs_one_key_reads_both_whole() {
        // orders-0 and audit-legacy-1 are different logs; named as one topic they are not copies.
        let dir = generated("override");
        let want = expected(&dir, false).len();
        let scan = Scan::new([dir.to_str().unwrap()])
            .topic_override(Some("all".into()))
            .partition_override(Some(0));
        let got = read(&scan);
        assert_eq!(got.len(), want);
        assert!(got.iter().all(|r| r.0 == "all"));
    }

    #[test]
    fn a_projected_scan_returns_the_full_scans_columns_and_builds_no_others() {
        use crate::arrow_out::{schema, Columns};
        let dir = generated("columns");
        let root = dir.to_str().unwrap();
        let all: Vec<arrow_array::RecordBatch> = Scan::new([root])
            .max_chunk_bytes(5000)
            .reader()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mid = rows_of(all.iter().cloned())[1000].3;
        for (names, t0) in [
            (vec![], None),
            (vec!["offset"], None),
            (vec!["value", "timestamp"], None),
            (vec!["headers", "key", "partition"], Some(mid)),
            (vec![], Some(mid)),
            (vec!["topic", "timestampType"], Some(mid)),
        ] {
            let columns = Columns::named(&names).unwrap();
            let scan = Scan::new([root]).max_chunk_bytes(5000).timestamp_range_us(t0, None);
            let full: Vec<_> = scan.reader().unwrap().map(Result::unwrap).collect();
            let reader = scan.clone().columns(columns).reader().unwrap();
            let want_schema = columns.schema();
            assert_eq!(reader.schema(), want_schema);
            let got: Vec<_> = reader.map(Result::unwrap).collect();
            assert!(got.iter().all(|b| b.schema() == want_schema), "{names:?}");
            let rows = |bs: &[arrow_array::RecordBatch]| bs.iter().map(|b| b.num_rows()).sum::<usize>();
            assert_eq!(rows(&got), rows(&full), "{names:?} {t0:?}");
            assert!(rows(&got) > 0);
            // the same values as the full read's columns of these names, concatenated
            for name in &names {
                let at = schema().index_of(name).unwrap();
                let want =
                    arrow_select::concat::concat(&full.iter().map(|b| b.column(at).as_ref()).collect::<Vec<_>>())
                        .unwrap();
                let here = want_schema.index_of(name).unwrap();
                let have =
                    arrow_select::concat::concat(&got.iter().map(|b| b.column(here).as_ref()).collect::<Vec<_>>())
                        .unwrap();
                assert_eq!(have.as_ref(), want.as_ref(), "{name}");
            }
        }
        assert!(Columns::named(["offsets"])
            .unwrap_err()
            .contains("the columns are key, value, topic"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn time_bounds_cut_splits_to_the_batches_that_can_match() {
        let dir = generated("narrow");
        let root = dir.to_str().unwrap();
        let all = expected(&dir, false);
        let last_ts = all.iter().filter(|r| r.0 == "orders").map(|r| r.3).max().unwrap();
        let plan = Scan::new([root])
            .topics(["orders"])
            .timestamp_range_us(Some(last_ts), None)
            .plan()
            .unwrap();
        let splits: Vec<_> = plan.splits().collect();
        // the newest record lies in the last segment: the others are planned away
        assert_eq!(splits.len(), 1, "{splits:?}");
        assert!(splits[0].start > 0 || splits[0].end < splits[0].size);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_local_pre_pass_is_the_scans() {
        let dir = generated("txns");
        let root = dir.to_str().unwrap();
        let plan = Scan::new([root])
            .topics(["orders"])
            .isolation(ScanIsolation::ReadCommitted)
            .plan()
            .unwrap();
        let want = plan.partitions[0].transactions.clone().unwrap();
        assert!(want.iter().any(|t| t.last_offset.is_some()), "{want:?}");
        let listed = crate::scan::listing::list_segments(
            dir.join("orders-0").to_str().unwrap(),
            &super::LocalStorage,
            &Default::default(),
            &super::HeldByBytes {
                context: &Scan::new([root]).context().unwrap(),
            },
        )
        .unwrap();
        let group = listed.segments;
        assert_eq!(crate::scan::plan::local_transactions(&group, 5000).unwrap(), want);
        let mut remote = group[0].clone();
        remote.path = "s3://b/orders-0/00000000000000000000.log".into();
        assert!(crate::scan::plan::local_transactions(&[remote], 5000).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_legacy_wrapper_opening_a_segment_is_judged_after_the_segment_before() {
        let dir = generated("legacy");
        let root = dir.to_str().unwrap();
        let all = expected(&dir, false);
        let past_end = all.iter().map(|r| r.3).max().unwrap() + 1;
        let scan = Scan::new([root])
            .topics(["audit-legacy"])
            .timestamp_range_us(Some(past_end), None);
        let plan = scan.plan().unwrap();
        let logs = std::fs::read_dir(dir.join("audit-legacy-1"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "log"))
            .count();
        let splits: Vec<_> = plan.splits().collect();
        // only the partition's first wrapper has no batch before it to show a broker
        // assigned its offsets (and so its timestamp): every other is ruled out
        assert!(logs > 1, "{logs}");
        assert_eq!(splits.len(), 1, "{splits:?}");
        assert!(splits[0].path.ends_with("00000000000000000000.log"), "{splits:?}");
        assert_eq!(read(&scan), Vec::<Row>::new());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn offset_bounds_seek_with_the_index_and_a_bad_index_costs_a_warning_not_rows() {
        let dir = generated("seek");
        let root = dir.to_str().unwrap();
        let all = expected(&dir, false);
        let want: Vec<Row> = all.iter().filter(|r| r.0 == "orders" && r.2 >= 1500).cloned().collect();
        let scan = Scan::new([root]).topics(["orders"]).start_offset(Some(1500));
        let plan = scan.plan().unwrap();
        let first = plan.splits().next().unwrap().clone();
        // the .index places the bound inside the first segment read: its leading batches are left out
        assert!(first.start > 0, "{first:?}");
        assert!(plan.index_warnings.is_empty(), "{:?}", plan.index_warnings);
        assert_eq!(read(&scan), want);
        // a torn index (not whole 8-byte entries) can't be trusted: the segment is read from its start
        let index = std::path::Path::new(&first.path).with_extension("index");
        let mut bytes = std::fs::read(&index).unwrap();
        bytes.extend_from_slice(&[0, 0, 1]);
        std::fs::write(&index, bytes).unwrap();
        let plan = scan.plan().unwrap();
        let name = index.file_name().unwrap().to_str().unwrap();
        assert!(
            plan.index_warnings.len() == 1 && plan.index_warnings[0].contains(name),
            "{:?}",
            plan.index_warnings
        );
        assert_eq!(plan.splits().next().unwrap().start, 0);
        assert_eq!(read(&scan), want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `dir`'s `orders-0` segments uploaded as Aiven's plugin stores them
    /// (zstd chunks of 2 KiB, no indexes) under `bucket`, the segment
    /// `twice` uploaded a second time under another id: the `.log` objects,
    /// first uploads in offset order.
    fn uploaded(dir: &Path, bucket: &Path, twice: Option<usize>) -> Vec<PathBuf> {
        use base64::Engine;
        let folder = bucket.join("orders-MWJ6FHTfRYy67jzwZdeqSQ").join("0");
        std::fs::create_dir_all(&folder).unwrap();
        let mut logs: Vec<_> = std::fs::read_dir(dir.join("orders-0"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        logs.sort();
        let mut rng = crate::tiered::write::SampleRng::new(7);
        let mut out = Vec::new();
        let mut upload = |log: &Path, id: &str| {
            let original = std::fs::read(log).unwrap();
            let (stored, sizes) =
                crate::tiered::write::transform_chunks(&original, 2048, true, None, &mut rng).unwrap();
            let base = log.file_stem().unwrap().to_str().unwrap();
            let object = folder.join(format!("{base}-{id}.log"));
            std::fs::write(&object, stored).unwrap();
            let packed = crate::tiered::write::zstd_frame(&crate::tiered::write::pack_sizes(&sizes)).unwrap();
            let packed = crate::tiered::chunk_index::BASE64.encode(packed);
            let empty = r#"{"position":0,"size":0}"#;
            let manifest = format!(
                r#"{{"version":"1","chunkIndex":{{"type":"variable","originalChunkSize":2048,"originalFileSize":{},"transformedChunks":"{packed}"}},"segmentIndexes":{{"offset":{empty},"timestamp":{empty},"producerSnapshot":{empty},"leaderEpoch":{empty},"transaction":null}},"compression":true}}"#,
                original.len()
            );
            std::fs::write(object.with_extension("rsm-manifest"), manifest).unwrap();
            object
        };
        for (i, log) in logs.iter().enumerate() {
            out.push(upload(
                log,
                &format!("tqimKeZwStOEOwRzT3L5o{}", (b'A' + i as u8) as char),
            ));
        }
        if let Some(i) = twice {
            upload(&logs[i], "zzimKeZwStOEOwRzT3L5oQ");
        }
        out
    }

    /// Byte `at` of a `.log` object flipped: the chunk holding it no longer undoes.
    fn damage(object: &Path, at: usize) {
        let mut bytes = std::fs::read(object).unwrap();
        bytes[at] ^= 0x55;
        std::fs::write(object, bytes).unwrap();
    }

    #[test]
    fn a_chunk_that_cant_be_undone_costs_its_batches_under_skip_and_fails_a_strict_read() {
        use crate::decode::OnError;
        let dir = generated("bad-chunk");
        let bucket = dir.with_extension("bucket");
        let objects = uploaded(&dir, &bucket, None);
        let size = std::fs::metadata(&objects[1]).unwrap().len() as usize;
        damage(&objects[1], size / 2);
        let root = bucket.to_str().unwrap();
        let strict = Scan::new([root])
            .reader()
            .unwrap()
            .map(|b| b.map(|_| ()))
            .collect::<Result<Vec<_>, _>>();
        let error = strict.unwrap_err().to_string();
        assert!(
            error.contains("tqimKeZwStOEOwRzT3L5oB.log") && error.contains("chunk"),
            "{error}"
        );
        for committed in [false, true] {
            let isolation = if committed {
                ScanIsolation::ReadCommitted
            } else {
                ScanIsolation::ReadUncommitted
            };
            let scan = Scan::new([root]).on_error(OnError::Skip).isolation(isolation);
            let mut reader = scan.reader().unwrap();
            let got = rows_of(reader.by_ref().map(Result::unwrap));
            let want: Vec<Row> = expected(&dir, committed)
                .into_iter()
                .filter(|r| r.0 == "orders")
                .collect();
            // only rows of the log, in order, and only some of the damaged segment's lost
            let lost = want.len() - got.len();
            assert!(lost > 0 && lost < want.len() / 4, "{lost} of {}", want.len());
            assert!(got.iter().all(|r| want.contains(r)) && got.windows(2).all(|w| w[0].2 < w[1].2));
            let reports = reader.take_finished();
            let damaged: Vec<_> = reports.iter().filter(|r| r.lost_any()).collect();
            assert_eq!(damaged.len(), 1, "{reports:?}");
            assert!(damaged[0].path.ends_with("tqimKeZwStOEOwRzT3L5oB.log"));
            assert_eq!(damaged[0].lost.len(), 1);
            assert!(damaged[0].lost[0].chunk.is_some() && damaged[0].skipped_bytes > 0);
            assert!(
                damaged[0].describe().contains("; skipped chunk "),
                "{}",
                damaged[0].describe()
            );
            // rows on both sides of the chunk: the read went on past it
            let first_lost = want.iter().position(|r| !got.contains(r)).unwrap();
            assert!(want[first_lost..].iter().filter(|r| got.contains(r)).count() > 0);
        }
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&bucket).unwrap();
    }

    #[test]
    fn a_damaged_segment_is_read_from_its_twin_whatever_the_mode() {
        use crate::decode::OnError;
        let dir = generated("twin");
        let bucket = dir.with_extension("bucket");
        let objects = uploaded(&dir, &bucket, Some(1));
        let want: Vec<Row> = expected(&dir, false).into_iter().filter(|r| r.0 == "orders").collect();
        let root = bucket.to_str().unwrap();
        let plan = Scan::new([root]).plan().unwrap();
        let with_twins: Vec<_> = plan.splits().filter(|s| !s.twins.is_empty()).collect();
        assert_eq!(with_twins.len(), 1, "{plan:?}");
        // the copy read first loses its last 100 bytes (the object no longer fits its manifest)
        let first = &with_twins[0].path;
        let bytes = std::fs::read(first).unwrap();
        std::fs::write(first, &bytes[..bytes.len() - 100]).unwrap();
        for on_error in [OnError::Raise, OnError::Skip] {
            let mut reader = Scan::new([root])
                .on_error(on_error)
                .max_chunk_bytes(5000)
                .reader()
                .unwrap();
            assert_eq!(rows_of(reader.by_ref().map(Result::unwrap)), want);
            let reports = reader.take_finished();
            let twin: Vec<_> = reports.iter().filter(|r| r.twin.is_some()).collect();
            assert_eq!(twin.len(), 1, "{reports:?}");
            assert!(
                twin[0].describe().contains("its offsets read from"),
                "{}",
                twin[0].describe()
            );
        }
        // a chunk damaged in the middle of the copy read first: its rows before the chunk, the rest from the twin
        std::fs::write(first, &bytes).unwrap();
        damage(Path::new(first), bytes.len() / 2);
        let got = rows_of(
            Scan::new([root])
                .max_chunk_bytes(3000)
                .reader()
                .unwrap()
                .map(Result::unwrap),
        );
        assert_eq!(got, want);
        assert!(objects.len() > 2);
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&bucket).unwrap();
    }

    /// A front end's storage: paths `data/...` (no scheme) of a folder elsewhere, each read counted.
    #[derive(Debug)]
    struct Elsewhere {
        dir: String,
        reads: std::sync::atomic::AtomicUsize,
    }

    impl Elsewhere {
        fn local(&self, l: &Location) -> Location {
            Location::new(l.as_str().replacen("data", &self.dir, 1))
        }
    }

    impl Storage for Elsewhere {
        fn list(
            &self,
            prefix: &Location,
            recursive: bool,
        ) -> Result<Vec<crate::storage::Entry>, crate::storage::StorageError> {
            let entries = LocalStorage.list(&self.local(prefix), recursive)?;
            Ok(entries
                .into_iter()
                .map(|e| crate::storage::Entry {
                    location: Location::new(e.location.as_str().replacen(&self.dir, "data", 1)),
                    size: e.size,
                })
                .collect())
        }
        fn size(&self, l: &Location) -> Result<Option<u64>, crate::storage::StorageError> {
            LocalStorage.size(&self.local(l))
        }
        fn read_range(&self, l: &Location, r: std::ops::Range<u64>) -> Result<Buffer, crate::storage::StorageError> {
            self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            LocalStorage.read_range(&self.local(l), r)
        }
    }

    #[test]
    fn a_scan_given_a_storage_reads_every_path_through_it() {
        let dir = generated("given");
        let storage = Arc::new(Elsewhere {
            dir: dir.to_str().unwrap().to_string(),
            reads: Default::default(),
        });
        for (committed, isolation) in [
            (false, ScanIsolation::ReadUncommitted),
            (true, ScanIsolation::ReadCommitted),
        ] {
            let all = expected(&dir, committed);
            let scan = |s: Option<i64>| {
                Scan::new(["data"])
                    .storage(storage.clone())
                    .isolation(isolation)
                    .max_chunk_bytes(5000)
                    .start_offset(s)
            };
            assert_eq!(read(&scan(None)), all);
            let want: Vec<Row> = all.iter().filter(|r| r.2 >= 700).cloned().collect();
            assert_eq!(read(&scan(Some(700))), want);
            let plan = scan(None).plan().unwrap();
            assert!(plan.splits().all(|s| s.path.starts_with("data/")), "{plan:?}");
        }
        assert!(storage.reads.load(std::sync::atomic::Ordering::Relaxed) > 0);
        // a glob, listed through the storage too
        let orders = Scan::new(["data/orders-*"]).storage(storage.clone());
        let want: Vec<Row> = expected(&dir, false).into_iter().filter(|r| r.0 == "orders").collect();
        assert_eq!(read(&orders), want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_root_fails_in_its_words_and_a_remote_one_needs_a_storage() {
        let missing = Scan::new(["/nonexistent/kb-scan"]).plan().unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/kb-scan"), "{missing}");
        let remote = Scan::new(["s3://bucket/prefix/"]).plan().unwrap_err();
        assert!(remote.to_string().contains("no storage"), "{remote}");
        let bad = Scan::new(["/tmp"]).max_chunk_bytes(0).plan().unwrap_err();
        assert_eq!(bad.to_string(), "max_chunk_bytes must be positive");
    }
}
