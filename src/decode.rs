//! Decoding a buffer of batches: walk, check, decompress, and send records to
//! a sink. `decode` fills Arrow columns; `decode_batch` is the per-batch step
//! shared with the batch iterator.

use arrow_array::RecordBatch;

use crate::arrow_out::{ColumnBuilder, Columns, InputWindows};
use crate::batch::{self, BatchHeader, BatchWalker, RawBatch, WalkEnd, LOG_APPEND_TIME, V2_HEADER_SIZE};
use crate::compression::{self, Codec};
use crate::error::{DecodeError, ErrorKind};
use crate::legacy;
use crate::parallel;
use crate::record::{self, OwnedRecords, RecordContext, RecordSink};
use crate::txn::{self, AbortedTxn};

/// Default cap on one batch's decompressed size: far above Kafka's largest
/// legal batches (`message.max.bytes` defaults to 1 MiB), small enough that a
/// decompression bomb cannot exhaust memory.
pub const DEFAULT_MAX_DECOMPRESSED_SIZE: usize = 256 << 20;
/// Largest cap accepted: Arrow's 32-bit offsets must hold one batch.
pub const MAX_DECOMPRESSED_SIZE_LIMIT: usize = 1 << 30;
/// Output is cut into record batches of at most about this many bytes per
/// column, well inside Arrow's 32-bit offsets.
pub const CHUNK_BYTES: usize = 256 << 20;

/// Output is also cut at this many rows per record batch.
pub const CHUNK_ROWS: usize = 16 << 20;

/// Upper bounds on the rows and key/value bytes a buffer decodes to, from
/// its headers alone, so the columns are allocated once. Counts from the wire
/// are claims: each is capped by what the batch's bytes could hold.
#[derive(Debug, Clone, Copy, Default)]
struct SizeHint {
    records: usize,
    bytes: usize,
}

impl SizeHint {
    fn of(data: &[u8], start: usize, max_decompressed_size: usize) -> SizeHint {
        let mut hint = SizeHint::default();
        for raw in BatchWalker::starting_at(data, start) {
            let len = raw.bytes.len();
            if raw.magic() == 2 && len >= V2_HEADER_SIZE {
                let payload = len - V2_HEADER_SIZE;
                let count = batch::be_i32(raw.bytes, batch::V2_RECORD_COUNT_OFFSET).max(0) as usize;
                let compressed = raw.is_compressed_v2();
                // A record takes at least 7 bytes (length, attributes, 2 deltas, 3 lengths).
                // Compressed: Kafka payloads rarely inflate past ~8x; the
                // reservation is virtual, so an over-estimate costs nothing.
                let room = if compressed {
                    payload.saturating_mul(8).min(max_decompressed_size)
                } else {
                    payload
                };
                hint.records += count.min(room / 7);
                hint.bytes += room;
            } else {
                hint.records += 1;
                hint.bytes += len;
            }
        }
        hint
    }
}

/// What to do with a batch that cannot be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// Stop and return the error.
    Raise,
    /// Drop the batch, remember why, and go on with the next one (when the
    /// framing still locates it).
    Skip,
}

/// Which records a reader sees (Kafka's `isolation.level`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Everything, aborted transactions included.
    #[default]
    ReadUncommitted,
    /// Committed data only (see [`crate::txn`]); `aborted` is an explicit
    /// aborted-transaction list (Fetch response, `.txnindex`); `hide_open`
    /// hides transactions with no marker in the data (past the last stable
    /// offset) instead of leaving them to the list.
    ReadCommitted {
        aborted: Option<Vec<AbortedTxn>>,
        hide_open: bool,
    },
}

#[derive(Debug, Clone)]
pub struct DecodeOptions {
    pub validate_crc: bool,
    pub include_control: bool,
    pub on_error: OnError,
    pub max_decompressed_size: usize,
    pub isolation: Isolation,
    /// Threads to decode with; 0 = one per core for inputs of many batches.
    pub threads: usize,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            validate_crc: true,
            include_control: false,
            on_error: OnError::Raise,
            max_decompressed_size: DEFAULT_MAX_DECOMPRESSED_SIZE,
            isolation: Isolation::ReadUncommitted,
            threads: 0,
        }
    }
}

/// The result of decoding a buffer.
#[derive(Debug)]
pub struct Decoded {
    /// Arrow record batches of [`crate::arrow_out::schema`], in input order.
    pub chunks: Vec<RecordBatch>,
    /// Batches decoded (records taken or, for control batches, skipped).
    pub batches: usize,
    pub records: usize,
    /// Batches hidden by read_committed (aborted or open transactions, markers).
    pub hidden_batches: usize,
    /// Batches dropped under `OnError::Skip`, with why.
    pub skipped: Vec<DecodeError>,
    /// Bytes of the dropped batches.
    pub skipped_bytes: usize,
    /// How the walk ended (clean, a truncated tail, or broken framing under `Skip`).
    pub end: WalkEnd,
}

impl Decoded {
    /// Nothing decoded yet: no chunks, counts at zero, a clean end.
    fn empty() -> Self {
        Decoded {
            chunks: Vec::new(),
            batches: 0,
            records: 0,
            hidden_batches: 0,
            skipped: Vec::new(),
            skipped_bytes: 0,
            end: WalkEnd::Clean,
        }
    }
}

/// A step applied to each chunk of output as it is cut, on the thread that
/// decoded it: `kafkabatch.decode(value_format=...)` parses the values of a
/// few megabytes of records while they are in cache, and the next chunk
/// writes its values into the buffer those raw values just gave back, so the
/// raw values of a whole input are never held (nor faulted in) at once.
pub struct ChunkStep<'a> {
    /// Cut a chunk once a key, value or header column holds this many bytes.
    pub chunk_bytes: usize,
    /// Turns a chunk of [`crate::arrow_out::schema`] (or the view schema)
    /// into the chunk returned; every chunk goes through it, an empty one too.
    pub apply: &'a (dyn Fn(RecordBatch) -> RecordBatch + Sync),
}

/// Decode every batch of `data` into Arrow record batches.
pub fn decode(
    data: &[u8],
    topic: Option<&str>,
    partition: Option<i32>,
    options: &DecodeOptions,
) -> Result<Decoded, DecodeError> {
    decode_range(data, 0, data.len(), topic, partition, options, None)
}

/// Decode the batches of `data[start..end]`, `start` being a batch boundary
/// (e.g. from an offset index). Positions in errors count from the start of
/// `data`, so they stay those of the whole file. Each chunk goes through
/// `step`, if given, as it is cut.
pub fn decode_range(
    data: &[u8],
    start: usize,
    end: usize,
    topic: Option<&str>,
    partition: Option<i32>,
    options: &DecodeOptions,
    step: Option<&ChunkStep>,
) -> Result<Decoded, DecodeError> {
    decode_into(data, None, start, end, topic, partition, options, step, Columns::ALL)
}

/// As [`decode_range`], building only `columns` (batches of
/// [`Columns::schema`]): the other columns are never written.
#[allow(clippy::too_many_arguments)]
pub fn decode_range_columns(
    data: &[u8],
    start: usize,
    end: usize,
    topic: Option<&str>,
    partition: Option<i32>,
    options: &DecodeOptions,
    columns: Columns,
    step: Option<&ChunkStep>,
) -> Result<Decoded, DecodeError> {
    decode_into(data, None, start, end, topic, partition, options, step, columns)
}

/// As [`decode_range`] over `input`, with `binary_view` key and value
/// columns ([`crate::arrow_out::view_schema`]): values of uncompressed
/// batches are referenced in `input`, not copied; the output keeps `input`
/// alive. Each chunk goes through `step`, if given, as it is cut.
pub fn decode_range_views(
    input: &arrow_buffer::Buffer,
    start: usize,
    end: usize,
    topic: Option<&str>,
    partition: Option<i32>,
    options: &DecodeOptions,
    step: Option<&ChunkStep>,
) -> Result<Decoded, DecodeError> {
    decode_into(
        input.as_slice(),
        Some(&InputWindows::new(input)),
        start,
        end,
        topic,
        partition,
        options,
        step,
        Columns::ALL,
    )
}

#[allow(clippy::too_many_arguments)]
fn decode_into(
    data: &[u8],
    views: Option<&InputWindows>,
    start: usize,
    end: usize,
    topic: Option<&str>,
    partition: Option<i32>,
    options: &DecodeOptions,
    step: Option<&ChunkStep>,
    columns: Columns,
) -> Result<Decoded, DecodeError> {
    let data = &data[..end.min(data.len())];
    let start = start.min(data.len());
    let hidden = match &options.isolation {
        Isolation::ReadUncommitted => None,
        Isolation::ReadCommitted { aborted, hide_open } => {
            Some(hidden_batches(data, start, aborted.as_deref(), *hide_open, options))
        }
    };
    let job = Job {
        data,
        views,
        topic,
        partition,
        options,
        hidden: hidden.as_ref(),
        step,
        columns,
    };
    let (threads, cuts) = split_for_threads(data, start, options.threads);
    if threads <= 1 {
        return decode_part(&job, start, data.len());
    }
    let results = decode_stealing(&job, threads, &cuts)?;
    let mut out = Decoded::empty();
    for part in results {
        out.chunks.extend(part.chunks.into_iter().filter(|c| c.num_rows() > 0));
        out.batches += part.batches;
        out.records += part.records;
        out.hidden_batches += part.hidden_batches;
        out.skipped.extend(part.skipped);
        out.skipped_bytes += part.skipped_bytes;
        out.end = part.end;
    }
    if out.chunks.is_empty() {
        let empty = if views.is_some() {
            crate::arrow_out::empty_view_batch()
        } else {
            crate::arrow_out::empty_batch()
        };
        let empty = match columns {
            Columns::ALL => empty,
            some => RecordBatch::new_empty(some.project(empty.schema())),
        };
        out.chunks.push(job.stepped(empty));
    }
    Ok(out)
}

/// Inputs with less decoding work than this (record bytes, estimated from
/// the batch headers) decode on the calling thread alone; from here on, one
/// helper per further core may join in. Waking the helpers costs the caller
/// ~30 µs and a helper arrives ~80 µs later on these VMs, to take half of
/// what is left (see `decode_stealing`); its share is one more Arrow chunk
/// (~20 µs to import and free when pyarrow's code has left the caches).
/// Measured on 2 vCPUs, one call of 100-byte records at a time: 0.6 MB
/// lost 10-20 % with a helper; 1.2 MB gained ~15 % decoded back to back and
/// about nothing right after another reader had run; 2.4 MB gained 8-15 %.
pub const PARALLEL_MIN_WORK: usize = 1 << 20;
/// A compressed batch's records are guessed at this many times its size on
/// the wire (Kafka's codecs typically shrink record data 3-5x).
const COMPRESSED_WORK_FACTOR: usize = 4;
/// Explicitly requested threads still get at least this much work each.
const REQUESTED_MIN_WORK: usize = 256 << 10;

/// Estimated decoding work of a batch: its record bytes.
fn work_of(raw: &batch::RawBatch) -> usize {
    let len = raw.bytes.len();
    if raw.is_compressed_v2() {
        len.saturating_mul(COMPRESSED_WORK_FACTOR)
    } else {
        len
    }
}

/// The unit of work threads hand each other: whole batches worth at least
/// this much decoding (one 1,000-record batch of 100-byte values), and no
/// more than `MAX_PIECES` pieces in all.
const PIECE_MIN_WORK: usize = 96 << 10;
const MAX_PIECES: usize = 1 << 16;
/// A thread steals only from a run with at least this many pieces left (it
/// takes half): a smaller share would not pay for its Arrow chunk.
const STEAL_MIN_PIECES: u32 = 4;

/// The threads to decode `data[start..]` with, and byte positions cutting it
/// at batch boundaries into pieces: `[start, b1, ..., len]` (the last piece
/// holds any tail). `requested` threads when non-zero, else one per core,
/// and never less than a minimum of work per thread. Compressed batches
/// count by their estimated records, not their wire size, so a few MB of
/// zstd batches spread over the cores.
fn split_for_threads(data: &[u8], start: usize, requested: usize) -> (usize, Vec<usize>) {
    let total: usize = BatchWalker::starting_at(data, start).map(|raw| work_of(&raw)).sum();
    let threads = if requested > 0 {
        requested.min((total / REQUESTED_MIN_WORK).max(1))
    } else if total >= PARALLEL_MIN_WORK {
        parallel::cores()
    } else {
        1
    };
    let mut cuts = vec![start];
    if threads > 1 {
        let piece = PIECE_MIN_WORK.max(total / MAX_PIECES + 1);
        let mut since_cut = 0usize;
        for raw in BatchWalker::starting_at(data, start) {
            since_cut += work_of(&raw);
            let next = raw.position + raw.bytes.len();
            if since_cut >= piece && next < data.len() {
                cuts.push(next);
                since_cut = 0;
            }
        }
    }
    cuts.push(data.len());
    (threads, cuts)
}

/// Who decodes which pieces: thread `i` owns the run `[next, end)` of
/// pieces in `runs[i]`, one atomic word each. The owner claims from the
/// front; a thread with nothing left takes the back half of the largest run.
/// Both change a run by compare-and-swap, so no piece is taken twice, and
/// each thread takes its pieces in order, from runs of consecutive pieces.
struct Runs {
    runs: Vec<std::sync::atomic::AtomicU64>,
}

impl Runs {
    /// `threads` runs; the first holds all `pieces`.
    fn new(threads: usize, pieces: u32) -> Self {
        use std::sync::atomic::AtomicU64;
        Runs {
            runs: (0..threads)
                .map(|i| AtomicU64::new(if i == 0 { Self::pack(0, pieces) } else { 0 }))
                .collect(),
        }
    }

    fn pack(next: u32, end: u32) -> u64 {
        (next as u64) << 32 | end as u64
    }

    fn unpack(word: u64) -> (u32, u32) {
        ((word >> 32) as u32, word as u32)
    }

    /// Thread `me`'s next piece, and how many it has left after that.
    fn claim(&self, me: usize) -> Option<(usize, u32)> {
        use std::sync::atomic::Ordering::{AcqRel, Acquire};
        let run = &self.runs[me];
        let mut word = run.load(Acquire);
        loop {
            let (next, end) = Self::unpack(word);
            if next >= end {
                return None;
            }
            match run.compare_exchange_weak(word, Self::pack(next + 1, end), AcqRel, Acquire) {
                Ok(_) => return Some((next as usize, end - next - 1)),
                Err(now) => word = now,
            }
        }
    }

    /// Give thread `me` (whose run is done) the back half of the largest
    /// other run, if that has at least `STEAL_MIN_PIECES` left.
    fn steal(&self, me: usize) -> bool {
        use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
        loop {
            let victim = (0..self.runs.len())
                .filter(|&i| i != me)
                .map(|i| {
                    let word = self.runs[i].load(Acquire);
                    let (next, end) = Self::unpack(word);
                    (i, word, end.saturating_sub(next))
                })
                .max_by_key(|&(_, _, left)| left);
            let Some((victim, word, left)) = victim.filter(|&(_, _, left)| left >= STEAL_MIN_PIECES) else {
                return false;
            };
            let (next, end) = Self::unpack(word);
            let mid = next + left / 2;
            // Pieces only ever leave a run, so an unchanged word means
            // [mid, end) is still unclaimed (no ABA).
            if self.runs[victim]
                .compare_exchange(word, Self::pack(next, mid), AcqRel, Acquire)
                .is_ok()
            {
                self.runs[me].store(Self::pack(mid, end), Release);
                return true;
            }
        }
    }
}

/// Decode the pieces `cuts` marks out on `threads` threads, the calling one
/// included (see [`crate::parallel`]), and return the parts in input order.
///
/// Work stealing over runs of consecutive pieces ([`Runs`]): the first
/// thread to arrive (the caller: a parked helper wakes ~80 µs later) owns
/// every piece and decodes them in order; a helper that arrives, or runs
/// out, takes the back half of what is left of the largest run. A helper
/// that wakes late so takes a smaller share, the threads end at about the
/// same time, and each run is one Arrow chunk: two threads make two chunks
/// (plus one per later steal), where cutting the input into fixed pieces
/// made one per piece.
fn decode_stealing(job: &Job, threads: usize, cuts: &[usize]) -> Result<Vec<Decoded>, DecodeError> {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::sync::Mutex;
    let runs = Runs::new(threads, u32::try_from(cuts.len() - 1).unwrap_or(u32::MAX));
    let arrived = AtomicUsize::new(0);
    // The first piece known to have failed; pieces after it are not started.
    let failed = AtomicUsize::new(usize::MAX);
    // (first piece, that run's result)
    let parts: Mutex<Vec<(usize, Result<Decoded, DecodeError>)>> = Mutex::new(Vec::new());
    let work = || {
        let me = arrived.fetch_add(1, Relaxed);
        if me >= threads {
            return;
        }
        loop {
            let Some((first, left)) = runs.claim(me).filter(|&(i, _)| i <= failed.load(Relaxed)) else {
                if failed.load(Relaxed) == usize::MAX && runs.steal(me) {
                    continue;
                }
                return;
            };
            // Columns sized for this thread's share: the whole run when it
            // was stolen, an even share of the input for the first owner
            // (helpers usually arrive); past that, columns grow.
            let share = if first == 0 {
                (left as usize).min(cuts.len().div_ceil(threads))
            } else {
                left as usize
            };
            let mut part = Part::new(job, cuts[first], cuts[first + 1 + share]);
            let mut piece = first;
            let result = loop {
                if let Err(e) = part.feed(cuts[piece], cuts[piece + 1]) {
                    failed.fetch_min(piece, Relaxed);
                    break Err(e);
                }
                match runs.claim(me) {
                    Some((i, _)) if i <= failed.load(Relaxed) => piece = i,
                    _ => break Ok(part.finish()),
                }
            };
            parts.lock().unwrap_or_else(|e| e.into_inner()).push((first, result));
        }
    };
    if !parallel::run_beside(threads - 1, &work) {
        return Err(DecodeError::corrupt(0, None, 0, "a decoding thread panicked"));
    }
    // Every piece before the first failure was decoded (a thread stops
    // claiming only past a failure), so that error wins, as in a sequential
    // walk.
    let mut parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
    parts.sort_unstable_by_key(|&(first, _)| first);
    parts.into_iter().map(|(_, part)| part).collect()
}

/// What every part of one decode shares.
struct Job<'a> {
    data: &'a [u8],
    /// `Some` for `binary_view` output over these bytes.
    views: Option<&'a InputWindows>,
    topic: Option<&'a str>,
    partition: Option<i32>,
    options: &'a DecodeOptions,
    /// Batches read_committed hides, by position.
    hidden: Option<&'a txn::Hidden>,
    step: Option<&'a ChunkStep<'a>>,
    /// The columns built.
    columns: Columns,
}

impl Job<'_> {
    /// Key, value or header bytes a chunk is cut at.
    fn chunk_bytes(&self) -> usize {
        self.step.map_or(CHUNK_BYTES, |s| s.chunk_bytes.clamp(1, CHUNK_BYTES))
    }

    /// Key, value or header bytes reserved for a chunk. A chunk is cut after
    /// the batch that reaches [`Job::chunk_bytes`], so small chunks get room
    /// for that batch too (one as large again): a column that grows moves to
    /// fresh memory, which costs a page fault per 4 KiB written, and with
    /// 2 MiB chunks that was every chunk's value column. Room never touched
    /// costs no memory.
    fn chunk_room(&self) -> usize {
        match self.step {
            Some(_) => self.chunk_bytes().saturating_mul(2),
            None => self.chunk_bytes(),
        }
    }

    /// `chunk` after the job's step, if any.
    fn stepped(&self, chunk: RecordBatch) -> RecordBatch {
        match self.step {
            Some(step) => (step.apply)(chunk),
            None => chunk,
        }
    }
}

/// Decode the batches in `job.data[start..end]` (`start` a batch boundary).
fn decode_part(job: &Job, start: usize, end: usize) -> Result<Decoded, DecodeError> {
    let mut part = Part::new(job, start, end);
    part.feed(start, end)?;
    Ok(part.finish())
}

/// Consecutive pieces of a job decoded into one set of columns.
struct Part<'j, 'a> {
    job: &'j Job<'a>,
    builder: ColumnBuilder,
    scratch: Vec<u8>,
    out: Decoded,
    /// Records the columns were sized for.
    hint_records: usize,
}

impl<'j, 'a> Part<'j, 'a> {
    /// Columns sized for the batches in `job.data[start..end]`.
    fn new(job: &'j Job<'a>, start: usize, end: usize) -> Self {
        let mut builder = match job.views {
            Some(input) => ColumnBuilder::with_views(input.clone()),
            None => ColumnBuilder::new(),
        }
        .with_columns(job.columns);
        let hint = SizeHint::of(&job.data[..end], start, job.options.max_decompressed_size);
        let chunk_bytes = job.chunk_bytes();
        let records = match job.step {
            // Cut into small chunks: rows for about one chunk's share of the bytes.
            Some(_) if hint.bytes > chunk_bytes => (hint.records / (hint.bytes / chunk_bytes)).max(1),
            _ => hint.records,
        };
        builder.reserve(records.min(CHUNK_ROWS), hint.bytes.min(job.chunk_room()));
        let out = Decoded::empty();
        Part {
            job,
            builder,
            scratch: Vec::new(),
            out,
            hint_records: hint.records,
        }
    }

    /// Decode the batches in `job.data[start..end]` (`start` a batch
    /// boundary) after those fed before.
    fn feed(&mut self, start: usize, end: usize) -> Result<(), DecodeError> {
        let Job {
            data,
            topic,
            partition,
            options,
            hidden,
            ..
        } = *self.job;
        let data = &data[..end];
        let (builder, out) = (&mut self.builder, &mut self.out);
        let mut walker = BatchWalker::starting_at(data, start);
        for raw in walker.by_ref() {
            if hidden.is_some_and(|h| h.contains(raw.position)) {
                out.hidden_batches += 1;
                continue;
            }
            let mark = builder.mark();
            let rows_before = builder.len();
            match decode_batch(&raw, options, &mut self.scratch, Some(&mut *builder)) {
                Ok(_) if builder.overflowed() => {
                    builder.rollback(mark);
                    return Err(DecodeError::corrupt(
                        raw.position,
                        Some(raw.first_offset_field()),
                        raw.position,
                        "batch too large for Arrow's 32-bit offsets",
                    ));
                }
                Ok(_) => {
                    out.batches += 1;
                    out.records += builder.len() - rows_before;
                }
                Err(e) => {
                    builder.rollback(mark);
                    match options.on_error {
                        OnError::Raise => return Err(e),
                        OnError::Skip => {
                            out.skipped_bytes += raw.bytes.len();
                            out.skipped.push(e);
                        }
                    }
                }
            }
            let chunk_bytes = self.job.chunk_bytes();
            if builder.largest_buffer() >= chunk_bytes || builder.len() >= CHUNK_ROWS {
                // The next chunk likely holds about as many rows as this one.
                let rows = builder.len();
                out.chunks.extend(
                    builder
                        .finish(topic, partition)
                        .into_iter()
                        .map(|c| self.job.stepped(c)),
                );
                let left = self.hint_records.saturating_sub(out.records);
                let records = if self.job.step.is_some() {
                    left.min(rows + rows / 8)
                } else {
                    left
                };
                builder.reserve(
                    records.min(CHUNK_ROWS),
                    self.job
                        .chunk_room()
                        .min(self.job.data.len() - (raw.position + raw.bytes.len())),
                );
            }
        }
        match walker.end() {
            Some(WalkEnd::Broken(e)) if options.on_error == OnError::Raise => return Err(e.clone()),
            Some(end) => out.end = end.clone(),
            None => {}
        }
        Ok(())
    }

    fn finish(mut self) -> Decoded {
        if !self.builder.is_empty() || self.out.chunks.is_empty() {
            let chunks = self.builder.finish(self.job.topic, self.job.partition);
            self.out.chunks.extend(chunks.into_iter().map(|c| self.job.stepped(c)));
        }
        self.out
    }
}

/// The batches of `data` (from byte `start`) a read_committed reader does
/// not see: [`txn::hidden_batches`], with control records read by
/// [`decode_batch`] under `options`' size cap (CRCs are not checked here;
/// the decode pass reports a bad one).
pub fn hidden_batches(
    data: &[u8],
    start: usize,
    explicit: Option<&[AbortedTxn]>,
    hide_open: bool,
    options: &DecodeOptions,
) -> txn::Hidden {
    let options = DecodeOptions {
        include_control: true,
        validate_crc: false,
        ..options.clone()
    };
    txn::hidden_batches(data, start, explicit, hide_open, |raw| {
        let mut sink = OwnedRecords::default();
        decode_batch(raw, &options, &mut Vec::new(), Some(&mut sink)).ok()?;
        sink.records.into_iter().next()
    })
}

/// One step of the read_committed pre-pass over a piece of a partition:
/// [`txn::transaction_pass`], with control records read by [`decode_batch`]
/// under `options`' size cap, as in [`hidden_batches`].
pub fn transaction_pass(
    data: &[u8],
    open: &mut std::collections::BTreeMap<i64, i64>,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    options: &DecodeOptions,
) -> Vec<txn::EndedTxn> {
    let options = DecodeOptions {
        include_control: true,
        validate_crc: false,
        ..options.clone()
    };
    txn::transaction_pass(data, open, start_offset, end_offset, |raw| {
        let mut sink = OwnedRecords::default();
        decode_batch(raw, &options, &mut Vec::new(), Some(&mut sink)).ok()?;
        sink.records.into_iter().next()
    })
}

/// Check one batch and, when `sink` is given, send its records there.
/// Control batches send their records only with `include_control`.
/// `scratch` holds decompressed payloads between calls.
pub fn decode_batch<S: RecordSink>(
    raw: &RawBatch,
    options: &DecodeOptions,
    scratch: &mut Vec<u8>,
    sink: Option<&mut S>,
) -> Result<BatchHeader, DecodeError> {
    match raw.magic() {
        2 => decode_v2(raw, options, scratch, sink),
        0 | 1 => legacy::decode_legacy(raw, options.validate_crc, options.max_decompressed_size, scratch, sink),
        magic => Err(DecodeError::new(
            ErrorKind::Unsupported,
            raw.position,
            Some(raw.first_offset_field()),
            raw.position + batch::MAGIC_OFFSET,
            format!("unknown magic byte {magic} (Kafka knows 0, 1 and 2)"),
        )),
    }
}

fn decode_v2<S: RecordSink>(
    raw: &RawBatch,
    options: &DecodeOptions,
    scratch: &mut Vec<u8>,
    sink: Option<&mut S>,
) -> Result<BatchHeader, DecodeError> {
    let header = batch::parse_v2_header(raw)?;
    if options.validate_crc && !header.crc_valid {
        return Err(batch::crc_error(
            &header,
            crate::crc::crc32c(&raw.bytes[batch::V2_ATTRIBUTES_OFFSET..]),
        ));
    }
    let sink = match sink {
        Some(s) if options.include_control || !header.is_control => s,
        _ => return Ok(header),
    };
    let ctx = RecordContext {
        base_offset: header.base_offset,
        base_timestamp: header.base_timestamp,
        log_append_time: (header.timestamp_type == LOG_APPEND_TIME).then_some(header.max_timestamp),
        timestamp_type: header.timestamp_type,
        base_sequence: header.base_sequence,
    };
    let payload = &raw.bytes[V2_HEADER_SIZE..];
    let count = header.record_count as usize;
    if header.codec == Codec::None {
        record::read_records(payload, count, &ctx, sink).map_err(|e| {
            e.locate(
                header.position,
                Some(header.base_offset),
                header.position + V2_HEADER_SIZE,
                false,
            )
        })?;
    } else {
        let n = compression::decompress_reusing(header.codec, payload, 2, options.max_decompressed_size, scratch)
            .map_err(|e| {
                header.error(
                    ErrorKind::Decompression,
                    header.position + V2_HEADER_SIZE,
                    e.to_string(),
                )
            })?;
        record::read_records(&scratch[..n], count, &ctx, sink)
            .map_err(|e| e.locate(header.position, Some(header.base_offset), 0, true))?;
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{record, write_v2, V2Header};

    /// A transactional batch of `n` records of producer `pid` at `base`.
    fn txn_batch(pid: i64, base: i64, n: usize) -> Vec<u8> {
        use crate::encode::{encode, EncodeOptions, RecordRef};
        let records = vec![RecordRef::new(None, Some(b"v"), 1_000); n];
        let options = EncodeOptions {
            base_offset: base,
            producer_id: pid,
            producer_epoch: 0,
            base_sequence: 0,
            transactional: true,
            ..Default::default()
        };
        let mut out = Vec::new();
        encode(&records, &options, &mut out).unwrap();
        out
    }

    #[test]
    fn transaction_pass_carries_open_transactions_across_pieces() {
        use crate::encode::{control_batch, ControlKind};
        use std::collections::BTreeMap;
        // piece 1: P7 opens at 0, P8 opens at 2 and commits at 3
        let mut one = [txn_batch(7, 0, 2), txn_batch(8, 2, 1)].concat();
        control_batch(ControlKind::Commit, 8, 0, 3, 0, 1_000, 0, &mut one);
        // piece 2: P7 continues at 4, aborts at 5; P9 opens at 6
        let mut two = txn_batch(7, 4, 1);
        control_batch(ControlKind::Abort, 7, 0, 5, 0, 1_000, 0, &mut two);
        two.extend(txn_batch(9, 6, 1));
        let options = DecodeOptions::default();
        let mut open = BTreeMap::new();
        assert!(transaction_pass(&one, &mut open, None, None, &options).is_empty());
        assert_eq!(open, BTreeMap::from([(7, 0)]));
        let ended = transaction_pass(&two, &mut open, None, None, &options);
        assert_eq!(
            ended,
            vec![txn::EndedTxn {
                producer_id: 7,
                first_offset: 0,
                marker_offset: 5
            }]
        );
        assert_eq!(open, BTreeMap::from([(9, 6)]));
        // offsets bounds: batches ending before 4 were seen elsewhere; the walk stops at 6
        let mut open = BTreeMap::new();
        let ended = transaction_pass(&[one, two].concat(), &mut open, Some(4), Some(6), &options);
        assert_eq!(ended[0].first_offset, 4);
        assert!(open.is_empty());
        // a marker that can't be read (its record runs past the batch) closes nothing
        let mut broken = Vec::new();
        control_batch(ControlKind::Abort, 7, 0, 5, 0, 1_000, 0, &mut broken);
        broken[61] = 0x7f;
        let mut open = BTreeMap::from([(7, 0)]);
        assert!(transaction_pass(&broken, &mut open, None, None, &options).is_empty());
        assert_eq!(open, BTreeMap::from([(7, 0)]));
    }

    /// An uncompressed v2 batch of `values`, by hand from the spec.
    fn v2_batch(base_offset: i64, values: &[&[u8]]) -> Vec<u8> {
        let records: Vec<u8> = (0..)
            .zip(values)
            .flat_map(|(delta, value)| record(0, delta, None, Some(value), &[]))
            .collect();
        let header = V2Header {
            base_offset,
            partition_leader_epoch: 0,
            attributes: 0,
            last_offset_delta: values.len() as i32 - 1,
            base_timestamp: 1_000,
            max_timestamp: 1_000,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            record_count: values.len() as i32,
        };
        write_v2(&header, &records)
    }

    /// A batch of 200 600-byte records, and `n` copies of it with base
    /// offsets 0, 200, 400, ... (each batch ~120 KB).
    fn numbered_batches(n: i64) -> (Vec<u8>, Vec<u8>) {
        let one = v2_batch(0, &[&[7u8; 600][..]; 200]);
        let mut data = Vec::new();
        for i in 0..n {
            let mut b = one.clone();
            b[..8].copy_from_slice(&(i * 200).to_be_bytes());
            data.extend_from_slice(&b);
        }
        (one, data)
    }

    #[test]
    fn threads_give_identical_results_in_order() {
        let (one, mut data) = numbered_batches(300);
        data.extend_from_slice(&one[..50]); // a truncated tail
        assert!(data.len() > 3 * PARALLEL_MIN_WORK);
        let single = decode(
            &data,
            Some("t"),
            Some(1),
            &DecodeOptions {
                threads: 1,
                ..Default::default()
            },
        )
        .expect("valid");
        let parallel = decode(
            &data,
            Some("t"),
            Some(1),
            &DecodeOptions {
                threads: 3,
                ..Default::default()
            },
        )
        .expect("valid");
        let concat = |d: &Decoded| arrow_select_free_concat(&d.chunks);
        // How many chunks depends on when helpers arrive (none may, while
        // other tests hold them); `runs_*` below test the sharing itself.
        assert_eq!(single.chunks.len(), 1);
        assert_eq!(concat(&single), concat(&parallel));
        assert_eq!(
            (single.records, single.end.clone()),
            (parallel.records, parallel.end.clone())
        );
    }

    #[test]
    fn a_chunk_step_sees_every_chunk_cut_at_its_size_and_changes_only_what_it_returns() {
        use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
        let (_, data) = numbered_batches(300); // 36 MB of 600-byte values
        let plain = decode(&data, None, None, &DecodeOptions::default()).expect("valid");
        let chunk_bytes = 1 << 20;
        for threads in [1, 3] {
            let (calls, largest) = (AtomicUsize::new(0), AtomicUsize::new(0));
            // Counts the chunks, notes the largest, and keeps only even offsets.
            let apply = |chunk: RecordBatch| {
                calls.fetch_add(1, Relaxed);
                let values = chunk.column(1).as_any().downcast_ref::<arrow_array::BinaryArray>();
                largest.fetch_max(values.expect("binary").value_data().len(), Relaxed);
                let offsets = chunk.column(4).as_any().downcast_ref::<arrow_array::Int64Array>();
                let even: arrow_array::BooleanArray =
                    offsets.expect("int64").iter().map(|o| o.map(|o| o % 2 == 0)).collect();
                arrow_select::filter::filter_record_batch(&chunk, &even).expect("same rows")
            };
            let step = ChunkStep {
                chunk_bytes,
                apply: &apply,
            };
            let options = DecodeOptions {
                threads,
                ..Default::default()
            };
            let stepped = decode_range(&data, 0, data.len(), None, None, &options, Some(&step)).expect("valid");
            let expected: Vec<_> = arrow_select_free_concat(&plain.chunks)
                .into_iter()
                .filter(|(offset, _)| offset % 2 == 0)
                .collect();
            assert_eq!(arrow_select_free_concat(&stepped.chunks), expected, "{threads} threads");
            assert!(
                calls.load(Relaxed) >= data.len() / chunk_bytes / 2,
                "cut into about 1 MiB chunks"
            );
            // A chunk is cut after the batch that reaches the size.
            assert!(largest.load(Relaxed) < chunk_bytes + 200 * 600 + 1);
            assert_eq!(stepped.records, plain.records, "counts are of decoded records");
        }
        // An empty input's one empty chunk goes through the step too.
        let calls = AtomicUsize::new(0);
        let apply = |chunk: RecordBatch| {
            calls.fetch_add(1, Relaxed);
            chunk
        };
        let step = ChunkStep {
            chunk_bytes,
            apply: &apply,
        };
        let empty = decode_range(&[], 0, 0, None, None, &DecodeOptions::default(), Some(&step)).expect("valid");
        assert_eq!((empty.chunks.len(), calls.load(Relaxed)), (1, 1));
    }

    #[test]
    fn with_threads_the_first_corrupt_batch_in_input_order_is_reported() {
        let (one, data) = numbered_batches(100);
        let at = |batch: usize| batch * one.len() + 200; // inside batch `batch`'s records
        for corrupt in [vec![70], vec![30, 70], vec![5, 95], vec![99]] {
            let mut bad = data.clone();
            for &b in &corrupt {
                bad[at(b)] ^= 1;
            }
            let single = decode(
                &bad,
                None,
                None,
                &DecodeOptions {
                    threads: 1,
                    ..Default::default()
                },
            )
            .expect_err("corrupt");
            assert_eq!(single.batch_position, corrupt[0] * one.len());
            for threads in [2, 3, 4] {
                for _ in 0..5 {
                    let many = decode(
                        &bad,
                        None,
                        None,
                        &DecodeOptions {
                            threads,
                            ..Default::default()
                        },
                    )
                    .expect_err("corrupt");
                    assert_eq!(
                        many.to_string(),
                        single.to_string(),
                        "corrupt batches {corrupt:?}, {threads} threads"
                    );
                }
            }
        }
    }

    #[test]
    fn runs_share_pieces_from_the_back() {
        let runs = Runs::new(2, 10);
        assert_eq!(runs.claim(0), Some((0, 9)));
        assert!(runs.steal(1)); // the back half of pieces 1..10
        let owner: Vec<usize> = std::iter::from_fn(|| runs.claim(0).map(|(i, _)| i)).collect();
        assert_eq!(owner, [1, 2, 3, 4]);
        assert_eq!(runs.claim(1), Some((5, 4)));
        assert!(runs.steal(0)); // 4 left: 6, 7 stay, 8, 9 move
        assert_eq!(runs.claim(0), Some((8, 1)));
        assert!(!runs.steal(1), "fewer than STEAL_MIN_PIECES left");
        assert_eq!(runs.claim(1).map(|c| c.0), Some(6));
    }

    #[test]
    fn racing_threads_take_every_piece_once_in_ascending_runs() {
        const PIECES: u32 = 200_000;
        let runs = Runs::new(4, PIECES);
        let arrived = std::sync::atomic::AtomicUsize::new(0);
        let taken: Vec<Vec<usize>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let me = arrived.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let mut mine = Vec::new();
                        loop {
                            match runs.claim(me) {
                                Some((i, _)) => mine.push(i),
                                None if runs.steal(me) => mine.push(usize::MAX), // a new run starts
                                None => return mine,
                            }
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("no panic")).collect()
        });
        let mut all: Vec<usize> = taken.iter().flatten().copied().filter(|&i| i != usize::MAX).collect();
        for mine in &taken {
            for run in mine.split(|&i| i == usize::MAX) {
                assert!(run.windows(2).all(|w| w[1] == w[0] + 1), "a run is consecutive pieces");
            }
        }
        all.sort_unstable();
        assert_eq!(all, (0..PIECES as usize).collect::<Vec<_>>());
    }

    #[test]
    fn views_reference_the_input_and_equal_the_copied_columns() {
        use crate::encode::{encode, EncodeOptions, RecordRef};
        use arrow_array::{Array, BinaryArray, BinaryViewArray};
        let long = [9u8; 300];
        let values: Vec<&[u8]> = vec![b"", b"short", b"twelve bytes", b"thirteen byte", &long];
        let mut data = v2_batch(0, &values);
        let records: Vec<RecordRef> = values
            .iter()
            .map(|v| RecordRef::new(Some(b"key-longer-than-12"), Some(v), 5))
            .collect();
        for magic in [2, 1] {
            let opts = EncodeOptions {
                magic,
                codec: Codec::Gzip,
                base_offset: 5,
                ..Default::default()
            };
            encode(&records, &opts, &mut data).expect("encodes");
        }
        data.extend(v2_batch(20, &values));
        let input = arrow_buffer::Buffer::from_vec(data.clone());
        let options = DecodeOptions {
            threads: 1,
            ..Default::default()
        };
        let copied = decode(&data, Some("t"), Some(0), &options).expect("valid");
        let viewed = decode_range_views(&input, 0, input.len(), Some("t"), Some(0), &options, None).expect("valid");
        assert_eq!(viewed.chunks[0].schema(), crate::arrow_out::view_schema());
        assert_eq!(viewed.records, 20);
        for column in [0, 1] {
            let c = copied.chunks[0]
                .column(column)
                .as_any()
                .downcast_ref::<BinaryArray>()
                .expect("binary");
            let v = viewed.chunks[0]
                .column(column)
                .as_any()
                .downcast_ref::<BinaryViewArray>()
                .expect("view");
            assert_eq!(c.iter().collect::<Vec<_>>(), v.iter().collect::<Vec<_>>());
        }
        for column in 2..8 {
            assert_eq!(
                copied.chunks[0].column(column).to_data(),
                viewed.chunks[0].column(column).to_data()
            );
        }
        // The long values of the uncompressed batches point into the input;
        // the compressed batches' values were copied to one owned buffer.
        let values = viewed.chunks[0]
            .column(1)
            .as_any()
            .downcast_ref::<BinaryViewArray>()
            .expect("view");
        assert_eq!(values.data_buffers().len(), 2);
        assert_eq!(values.data_buffers()[0].as_ptr(), input.as_ptr());
        assert_eq!(values.data_buffers()[1].len(), 2 * (13 + 300));
        // An empty input gives the view schema too.
        let empty = decode_range_views(
            &arrow_buffer::Buffer::from_vec(Vec::<u8>::new()),
            0,
            0,
            None,
            None,
            &options,
            None,
        )
        .expect("valid");
        assert_eq!(empty.chunks[0].schema(), crate::arrow_out::view_schema());
    }

    /// (offset, value) pairs of every chunk, in order.
    fn arrow_select_free_concat(chunks: &[RecordBatch]) -> Vec<(i64, Vec<u8>)> {
        use arrow_array::{BinaryArray, Int64Array};
        let mut rows = Vec::new();
        for c in chunks {
            let offsets = c.column(4).as_any().downcast_ref::<Int64Array>().expect("int64");
            let values = c.column(1).as_any().downcast_ref::<BinaryArray>().expect("binary");
            for i in 0..c.num_rows() {
                rows.push((offsets.value(i), values.value(i).to_vec()));
            }
        }
        rows
    }

    #[test]
    fn mixed_magics_in_one_buffer() {
        let data = [
            crate::legacy::message(0, 0, 0, -1, None, Some(b"v0")),
            crate::legacy::message(1, 1, 0, 9, None, Some(b"v1")),
            v2_batch(2, &[b"a", b"b"]),
        ]
        .concat();
        let out = decode(&data, Some("t"), Some(0), &DecodeOptions::default()).expect("valid");
        assert_eq!((out.batches, out.records), (3, 4));
        assert_eq!(out.chunks[0].num_rows(), 4);
    }

    #[test]
    fn skip_keeps_the_batches_around_a_corrupt_one() {
        let mut middle = v2_batch(2, &[b"x"]);
        let last = middle.len() - 2;
        middle[last] ^= 0xff;
        let data = [v2_batch(0, &[b"a", b"b"]), middle, v2_batch(3, &[b"c"])].concat();
        let raise = decode(&data, None, None, &DecodeOptions::default()).unwrap_err();
        assert_eq!(
            (raise.kind, raise.batch_position),
            (ErrorKind::CrcMismatch, v2_batch(0, &[b"a", b"b"]).len())
        );
        let options = DecodeOptions {
            on_error: OnError::Skip,
            ..Default::default()
        };
        let out = decode(&data, None, None, &options).expect("skip mode");
        assert_eq!((out.batches, out.records, out.skipped.len()), (2, 3, 1));
    }

    #[test]
    fn a_broken_frame_ends_skip_mode_with_what_came_before() {
        let mut data = v2_batch(0, &[b"a"]);
        let mut frame = [0u8; 20];
        frame[11] = 3; // size 3: below the minimum
        data.extend_from_slice(&frame);
        assert!(decode(&data, None, None, &DecodeOptions::default()).is_err());
        let options = DecodeOptions {
            on_error: OnError::Skip,
            ..Default::default()
        };
        let out = decode(&data, None, None, &options).expect("skip");
        assert_eq!(out.records, 1);
        assert!(matches!(out.end, WalkEnd::Broken(_)));
    }

    #[test]
    fn a_zero_filled_tail_is_a_quiet_end() {
        // A segment preallocated by a broker (log.preallocate=true): its data, then zeros.
        let mut data = v2_batch(0, &[b"a", b"b"]);
        let len = data.len();
        data.resize(len + 4096, 0);
        let out = decode(&data, None, None, &DecodeOptions::default()).expect("zeros end the data");
        assert_eq!(out.records, 2);
        assert_eq!(
            out.end,
            WalkEnd::Truncated {
                position: len,
                len: 4096
            }
        );
    }

    #[test]
    fn every_truncation_is_a_quiet_tail_and_every_bit_flip_an_error() {
        let data = v2_batch(0, &[b"hello", b"world"]);
        for cut in 0..data.len() {
            let out = decode(&data[..cut], None, None, &DecodeOptions::default()).expect("truncated tail");
            assert_eq!(out.records, 0);
        }
        // Base offset, length and leader epoch sit outside the CRC by design
        // (brokers rewrite them); from the magic byte on, every flip is caught.
        for byte in batch::MAGIC_OFFSET..data.len() {
            for bit in 0..8 {
                let mut bad = data.clone();
                bad[byte] ^= 1 << bit;
                let r = decode(&bad, None, None, &DecodeOptions::default());
                // Either an error or (size field grew) a truncated tail; never wrong rows.
                if let Ok(out) = r {
                    assert_eq!(out.records, 0, "flip at {byte}:{bit} decoded rows");
                }
            }
        }
    }

    #[test]
    fn control_batches_are_skipped_unless_asked() {
        let mut control = v2_batch(5, &[b"\x00\x00\x00\x06"]);
        control[22] |= 0x30; // transactional + control
        let crc = crate::crc::crc32c(&control[21..]);
        control[17..21].copy_from_slice(&crc.to_be_bytes());
        let out = decode(&control, None, None, &DecodeOptions::default()).expect("valid");
        assert_eq!(out.records, 0);
        let options = DecodeOptions {
            include_control: true,
            ..Default::default()
        };
        assert_eq!(decode(&control, None, None, &options).expect("valid").records, 1);
        let mut sink = OwnedRecords::default();
        let raw = BatchWalker::new(&control).next().expect("one");
        let header = decode_batch(&raw, &options, &mut Vec::new(), Some(&mut sink)).expect("valid");
        assert!(header.is_control && header.is_transactional);
    }

    /// read_committed end to end (the visibility rules: `crate::txn`).
    mod read_committed {
        use super::super::*;
        use crate::test_support::{record, write_v2, V2Header};
        use crate::txn::AbortedTxn;

        /// A one-record v2 batch with producer fields, by hand from the spec.
        fn batch(offset: i64, producer_id: i64, transactional: bool, control: Option<i16>) -> Vec<u8> {
            let (key, value): (Vec<u8>, Vec<u8>) = match control {
                Some(t) => ([0i16.to_be_bytes(), t.to_be_bytes()].concat(), vec![0, 0, 0, 0, 0, 0]),
                None => (b"k".to_vec(), format!("v{offset}").into_bytes()),
            };
            let attributes: i16 = if transactional { 0x10 } else { 0 } | if control.is_some() { 0x20 } else { 0 };
            let header = V2Header {
                base_offset: offset,
                partition_leader_epoch: 0,
                attributes,
                last_offset_delta: 0,
                base_timestamp: 0,
                max_timestamp: 0,
                producer_id,
                producer_epoch: 0,
                base_sequence: if producer_id >= 0 { 0 } else { -1 },
                record_count: 1,
            };
            write_v2(&header, &record(0, 0, Some(&key), Some(&value), &[]))
        }

        const COMMIT: Option<i16> = Some(1);
        const ABORT: Option<i16> = Some(0);

        fn committed_offsets(data: &[u8], explicit: Option<Vec<AbortedTxn>>) -> Vec<i64> {
            let hide_open = explicit.is_none();
            let options = DecodeOptions {
                isolation: Isolation::ReadCommitted {
                    aborted: explicit,
                    hide_open,
                },
                ..Default::default()
            };
            let out = decode(data, None, None, &options).expect("valid");
            let offsets = out.chunks[0]
                .column(4)
                .as_any()
                .downcast_ref::<arrow_array::Int64Array>()
                .expect("int64")
                .values()
                .to_vec();
            offsets
        }

        #[test]
        fn interleaved_producers_commit_abort_and_open() {
            let data = [
                batch(0, 1, true, None),   // P1 txn A
                batch(1, 2, true, None),   // P2 txn B
                batch(2, -1, false, None), // plain
                batch(3, 1, true, None),   // P1 txn A
                batch(4, 1, true, COMMIT), // P1 commits A
                batch(5, 2, true, ABORT),  // P2 aborts B
                batch(6, 2, true, None),   // P2 txn C
                batch(7, 7, false, None),  // idempotent, not transactional
                batch(8, 2, true, COMMIT), // P2 commits C
                batch(9, 1, true, None),   // P1 txn D, still open
            ]
            .concat();
            assert_eq!(committed_offsets(&data, None), vec![0, 2, 3, 6, 7]);
            // With an explicit list, data past the markers is the broker's to judge.
            assert_eq!(committed_offsets(&data, Some(vec![])), vec![0, 2, 3, 6, 7, 9]);
            let read_uncommitted = decode(&data, None, None, &DecodeOptions::default()).expect("valid");
            assert_eq!(read_uncommitted.records, 7);
        }

        #[test]
        fn explicit_lists_apply_unsorted_and_without_markers() {
            // No markers at all (a fetch response cut before them).
            let data = [
                batch(10, 1, true, None),
                batch(11, 2, true, None),
                batch(12, 1, true, None),
                batch(13, 3, true, None),
            ]
            .concat();
            let list = vec![
                AbortedTxn {
                    producer_id: 3,
                    first_offset: 13,
                },
                AbortedTxn {
                    producer_id: 1,
                    first_offset: 10,
                },
            ];
            assert_eq!(committed_offsets(&data, Some(list)), vec![11]);
        }

        #[test]
        fn abort_marker_closes_the_aborted_transaction() {
            let data = [
                batch(0, 1, true, None),
                batch(1, 1, true, ABORT),
                batch(2, 1, true, None), // a new transaction, committed
                batch(3, 1, true, COMMIT),
            ]
            .concat();
            let list = vec![AbortedTxn {
                producer_id: 1,
                first_offset: 0,
            }];
            assert_eq!(committed_offsets(&data, Some(list)), vec![2]);
            assert_eq!(committed_offsets(&data, None), vec![2]);
        }
    }
}
