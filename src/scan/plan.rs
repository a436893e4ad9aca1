//! From roots and options to a plan: the segments of each topic-partition
//! worth reading, as [`Split`]s (a byte range of one segment with the bounds
//! its records must fall in), and for `read_committed` each partition's
//! aborted and still-open transactions, collected from its batch headers
//! before any record is read.
//!
//! The semantics are those of the Python package's `scan_log`: offset bounds
//! (one for every partition or per topic-partition), time bounds, the overlap
//! rule between copies of a partition (see [`crate::scan::listing`]), segments
//! skipped by their names, leading and trailing batches outside time bounds
//! cut by one header walk of each local segment.
//!
//! Local segments are sought with their `.index` under offset bounds, every
//! position checked against the log ([`crate::scan::seek`]).
//!
//! Roots are joined as [`crate::scan::listing::list_roots`] joins them: copies
//! of one partition under several roots (a bucket and a broker log dir) give
//! each offset once.
//!
//! A damaged remote segment is read from another copy of its offsets when
//! the listing found one (its twins, carried by its [`Split`]); under
//! `on_error = skip`, remote segments that can't be listed are left out
//! ([`Plan::problems`]), and the reader goes on past what it can't read of
//! the others (see [`crate::scan::read`]).
//!
//! Not here yet: seeks with tiered `.indexes` (remote segments are walked
//! from their first batch).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use arrow_buffer::Buffer;
use rsa::RsaPrivateKey;
use serde::{Deserialize, Serialize};

use super::layouts::Layout;
use super::listing::{
    by_partition, keep_names, list_roots, segment_bounds, sort_key, ListError, ListOptions, ListWarning, Segment,
};
use super::naming::uri_scheme;
use super::pushdown::RecordFilter;
use super::read::{self, ReadContext, ScanReader};
use super::walk::walk_after;
use crate::arrow_out::Columns;
use crate::decode::{DecodeOptions, OnError, DEFAULT_MAX_DECOMPRESSED_SIZE, MAX_DECOMPRESSED_SIZE_LIMIT};
use crate::error::DecodeError;
use crate::prune::HeaderBounds;
use crate::storage::{LocalStorage, Location, Storage, StorageError};
use crate::tiered::source::SourceError;
use crate::tiered::{parse_private_key, TieredError};

/// Bytes of complete batches decoded at once (one batch larger than this is decoded alone).
pub const DEFAULT_MAX_CHUNK_BYTES: usize = 16 << 20;

/// The version written into every serialised [`Split`].
pub const SPLIT_VERSION: u32 = 1;

/// The storage of a remote root or file (`s3://...`): a front end's choice
/// (object_store, a `pyarrow.fs.FileSystem`, Hadoop's `FileSystem`).
pub type Resolver = Arc<dyn Fn(&str) -> Result<Arc<dyn Storage>, StorageError> + Send + Sync>;

/// Remote roots and files through the object stores the core serves (`s3://`,
/// `gs://`, `az://`, `http(s)://`), configured from the environment and the
/// URI's query (see `storage::uri`): the resolver the JVM source and streams use.
pub fn object_store_resolver() -> Resolver {
    Arc::new(|path: &str| {
        // A core built without the `remote` feature (the fuzz targets) serves no URI.
        #[cfg(feature = "remote")]
        if let Some((storage, _)) = crate::storage::uri::resolve(path, &std::collections::HashMap::new())? {
            return Ok(storage);
        }
        Err(StorageError::Other {
            location: crate::storage::Location::new(path),
            message: "no object store serves this location".into(),
        })
    })
}

/// Which records a scan returns of transactional producers (Kafka's `isolation.level`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScanIsolation {
    /// Every record, aborted transactions included.
    #[default]
    ReadUncommitted,
    /// Committed records only: each partition's transactions are collected from
    /// its headers first, so a marker in a later window or segment still decides.
    ReadCommitted,
}

/// An offset bound: one for every partition, and per topic-partition overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetBound {
    pub all: Option<i64>,
    pub per_partition: BTreeMap<(String, i64), i64>,
}

impl OffsetBound {
    /// The bound of one topic-partition: its own, else the one for all.
    pub fn get(&self, topic: &str, partition: i64) -> Option<i64> {
        self.per_partition
            .get(&(topic.to_string(), partition))
            .copied()
            .or(self.all)
    }
}

/// An aborted transaction (or one still open: no `last_offset`), as a broker's
/// `.txnindex` or a Fetch response's aborted list says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Transaction {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The ABORT marker's offset; `None` while open.
    pub last_offset: Option<i64>,
}

/// One byte range of one segment to read, with everything a reader needs but
/// the keys of encrypted segments (those travel once with the options).
/// Serialises to versioned JSON ([`Split::to_bytes`]) for Spark's executors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    pub version: u32,
    /// A local path or a URI (for Aiven segments, the `.log` object).
    pub path: String,
    pub topic: String,
    pub partition: i64,
    /// `broker`, `local-tiered` or `aiven`.
    pub layout: String,
    /// The Aiven manifest object.
    pub manifest: Option<String>,
    /// The segment's (original) size in bytes.
    pub size: u64,
    /// Bytes `[start, end)` of the segment: `start` is a batch boundary.
    pub start: u64,
    pub end: u64,
    /// Exact bounds of the records returned (timestamps in microseconds).
    pub start_offset: Option<i64>,
    pub end_offset: Option<i64>,
    pub start_ts_us: Option<i64>,
    pub end_ts_us: Option<i64>,
    /// The partition's transactions (read_committed), from the plan's pre-pass.
    pub transactions: Option<Vec<Transaction>>,
    /// Other copies of the segment's offsets (another upload, a broker
    /// folder), each as a split of the offsets this one returns: read
    /// instead, from the first offset not returned yet, when this one turns
    /// out damaged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub twins: Vec<Split>,
}

impl Split {
    /// The split reading bytes `start..end` of `seg` (a segment of one
    /// partition, the next of which starts at offset `following`) for
    /// `bounds` (narrowed to the offsets the overlap rule leaves it), with its
    /// twins as the copies read instead when it turns out damaged (each up to
    /// where the partition's next segment takes over).
    pub fn of_segment(
        seg: &Segment,
        (start, end): (u64, u64),
        bounds: &HeaderBounds,
        following: Option<i64>,
        transactions: Option<Vec<Transaction>>,
    ) -> Split {
        let (so, eo) = segment_bounds(seg, bounds.start_offset, bounds.end_offset);
        let split = |copy: &Segment, start: u64, end: u64, end_offset: Option<i64>| Split {
            version: SPLIT_VERSION,
            path: copy.path.clone(),
            topic: seg.topic.clone(),
            partition: seg.partition,
            layout: copy.layout.as_str().to_string(),
            manifest: copy.manifest.clone(),
            size: copy.size.max(end),
            start,
            end,
            start_offset: so,
            end_offset,
            start_ts_us: bounds.start_ts_us,
            end_ts_us: bounds.end_ts_us,
            transactions: transactions.clone(),
            twins: Vec::new(),
        };
        let stop = following.map_or(eo, |n| Some(eo.map_or(n, |e| e.min(n))));
        let mut planned = split(seg, start, end, eo);
        planned.twins = seg.twins.iter().map(|t| split(t, 0, t.size, stop)).collect();
        planned
    }

    /// The split as versioned JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        // A struct of strings, numbers and options always serialises.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A split from [`Split::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Split, ScanError> {
        let split: Split = serde_json::from_slice(bytes).map_err(|e| ScanError::Split(e.to_string()))?;
        if split.version != SPLIT_VERSION {
            return Err(ScanError::Split(format!(
                "split version {} is not {SPLIT_VERSION} (planned by another kafkabatch version)",
                split.version
            )));
        }
        if split.start > split.end || split.end > split.size {
            return Err(ScanError::Split(format!(
                "bytes {}..{} do not fit a segment of {} bytes",
                split.start, split.end, split.size
            )));
        }
        Ok(split)
    }

    /// The header bounds of the records it returns.
    pub fn bounds(&self) -> HeaderBounds {
        HeaderBounds {
            start_offset: self.start_offset,
            end_offset: self.end_offset,
            start_ts_us: self.start_ts_us,
            end_ts_us: self.end_ts_us,
        }
    }

    pub(crate) fn layout(&self) -> Layout {
        match self.layout.as_str() {
            "aiven" => Layout::Aiven,
            "local-tiered" => Layout::LocalTiered,
            _ => Layout::Broker,
        }
    }
}

/// One topic-partition's part of a plan: its splits in offset order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionPlan {
    pub topic: String,
    pub partition: i64,
    pub splits: Vec<Split>,
    /// Aborted and open transactions (read_committed), sorted by first offset.
    pub transactions: Option<Vec<Transaction>>,
}

/// What a scan will read, partition by partition, in topic and partition order.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub partitions: Vec<PartitionPlan>,
    /// What listing warned about (remote uploads in progress or abandoned).
    pub warnings: Vec<ListWarning>,
    /// Remote segments that can't be listed, left out under `on_error = skip`
    /// (else they fail the plan), each naming its object.
    pub problems: Vec<String>,
    /// Index files that could not be trusted (each such segment is read from its start), naming them.
    pub index_warnings: Vec<String>,
}

impl Plan {
    /// Every split, in topic, partition, offset order.
    pub fn splits(&self) -> impl Iterator<Item = &Split> {
        self.partitions.iter().flat_map(|p| p.splits.iter())
    }
}

/// Why a scan failed, naming the file (or the option) concerned.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// A bad option, in the option's name.
    #[error("{0}")]
    Options(String),
    #[error(transparent)]
    List(#[from] ListError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A remote segment that can't be read (manifest, key, chunk, truncated object).
    #[error("{object}: {error}")]
    Tiered { object: String, error: TieredError },
    /// A batch that can't be decoded, its positions counted from the start of the file.
    #[error("{path}: {error}")]
    Decode { path: String, error: DecodeError },
    /// A serialised split that can't be read back.
    #[error("bad split: {0}")]
    Split(String),
    /// A value (or key) that can't be parsed in its column's format.
    #[error("{0}")]
    Value(Box<super::typed::BadValue>),
}

impl From<SourceError> for ScanError {
    fn from(e: SourceError) -> Self {
        match e {
            SourceError::Tiered { object, error } => ScanError::Tiered {
                object: object.to_string(),
                error,
            },
            SourceError::Storage(e) => ScanError::Storage(e),
        }
    }
}

/// A read of Kafka log segments: roots (local paths, URIs, globs of either,
/// broker log dirs, `<topic>-<partition>` folders, segment files, tiered-storage
/// buckets) and options, planned with [`Scan::plan`] and read with
/// [`Scan::reader`] into Arrow record batches of [`crate::arrow_out::schema`].
///
/// ```
/// use kafkabatch::generate::{Kind, PartitionConfig, PartitionGenerator};
/// use kafkabatch::scan::{Scan, ScanIsolation};
///
/// // a broker log dir with one partition of generated orders
/// let dir = std::env::temp_dir().join(format!("kb-scan-doc-{}", std::process::id()));
/// let mut orders = PartitionGenerator::new(PartitionConfig::new(dir.join("orders-0"), "orders", 0, Kind::Orders))?;
/// orders.step(u64::MAX)?;
/// let written = orders.finish()?;
///
/// let scan = Scan::new([dir.to_str().unwrap()])
///     .start_offset(Some(10))
///     .isolation(ScanIsolation::ReadCommitted);
/// let plan = scan.plan()?;
/// assert_eq!((plan.partitions.len(), plan.partitions[0].topic.as_str()), (1, "orders"));
/// let mut rows = 0;
/// for batch in scan.reader()? {
///     rows += batch?.num_rows();
/// }
/// assert!(rows > 0 && rows as u64 <= written.records);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Scan {
    roots: Vec<String>,
    start_offset: OffsetBound,
    end_offset: OffsetBound,
    start_ts_us: Option<i64>,
    end_ts_us: Option<i64>,
    isolation: ScanIsolation,
    topics: Option<BTreeSet<String>>,
    partitions: Option<BTreeSet<i64>>,
    topic_override: Option<String>,
    partition_override: Option<i64>,
    keys: BTreeMap<String, String>,
    validate_crc: bool,
    include_control: bool,
    on_error: OnError,
    max_decompressed_size: usize,
    max_chunk_bytes: usize,
    resolver: Option<Resolver>,
    storage: Option<Arc<dyn Storage>>,
    columns: Columns,
    filter: Option<RecordFilter>,
    /// Spark's `pathGlobFilter`: only segments whose file names match.
    name_glob: Option<String>,
    limit: Option<u64>,
    /// Decode threads per split read (0: one per core).
    threads: usize,
}

impl fmt::Debug for Scan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // keys are never shown
        f.debug_struct("Scan")
            .field("roots", &self.roots)
            .field("start_offset", &self.start_offset)
            .field("end_offset", &self.end_offset)
            .field("start_ts_us", &self.start_ts_us)
            .field("end_ts_us", &self.end_ts_us)
            .field("isolation", &self.isolation)
            .field("topics", &self.topics)
            .field("partitions", &self.partitions)
            .field("key_ids", &self.keys.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Scan {
    /// A scan of `roots`, every record of every partition, read_uncommitted.
    pub fn new<I, S>(roots: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Scan {
            roots: roots.into_iter().map(Into::into).collect(),
            start_offset: OffsetBound::default(),
            end_offset: OffsetBound::default(),
            start_ts_us: None,
            end_ts_us: None,
            isolation: ScanIsolation::ReadUncommitted,
            topics: None,
            partitions: None,
            topic_override: None,
            partition_override: None,
            keys: BTreeMap::new(),
            validate_crc: true,
            include_control: false,
            on_error: OnError::Raise,
            max_decompressed_size: DEFAULT_MAX_DECOMPRESSED_SIZE,
            max_chunk_bytes: DEFAULT_MAX_CHUNK_BYTES,
            resolver: None,
            storage: None,
            columns: Columns::ALL,
            filter: None,
            name_glob: None,
            limit: None,
            threads: 0,
        }
    }

    /// The first offset returned (inclusive), for every partition.
    pub fn start_offset(mut self, offset: Option<i64>) -> Self {
        self.start_offset.all = offset;
        self
    }

    /// The offset to stop before (exclusive), for every partition.
    pub fn end_offset(mut self, offset: Option<i64>) -> Self {
        self.end_offset.all = offset;
        self
    }

    /// The first offset of one topic-partition (over [`Scan::start_offset`]).
    pub fn partition_start_offset(mut self, topic: &str, partition: i64, offset: i64) -> Self {
        self.start_offset
            .per_partition
            .insert((topic.to_string(), partition), offset);
        self
    }

    /// The offset one topic-partition stops before (over [`Scan::end_offset`]).
    pub fn partition_end_offset(mut self, topic: &str, partition: i64, offset: i64) -> Self {
        self.end_offset
            .per_partition
            .insert((topic.to_string(), partition), offset);
        self
    }

    /// Records from this time on (epoch milliseconds, inclusive).
    pub fn start_timestamp_ms(mut self, ms: Option<i64>) -> Self {
        self.start_ts_us = ms.map(|t| t.saturating_mul(1000));
        self
    }

    /// Records before this time (epoch milliseconds, exclusive).
    pub fn end_timestamp_ms(mut self, ms: Option<i64>) -> Self {
        self.end_ts_us = ms.map(|t| t.saturating_mul(1000));
        self
    }

    /// Time bounds in microseconds (what a front end parsed dates into).
    pub fn timestamp_range_us(mut self, start: Option<i64>, end: Option<i64>) -> Self {
        self.start_ts_us = start;
        self.end_ts_us = end;
        self
    }

    pub fn isolation(mut self, isolation: ScanIsolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// Only these topics (after names are read and overrides applied).
    pub fn topics<I: IntoIterator<Item = S>, S: Into<String>>(mut self, topics: I) -> Self {
        self.topics = Some(topics.into_iter().map(Into::into).collect());
        self
    }

    /// Only these partitions.
    pub fn partitions<I: IntoIterator<Item = i64>>(mut self, partitions: I) -> Self {
        self.partitions = Some(partitions.into_iter().collect());
        self
    }

    /// Every segment's topic, instead of its folder's (Python's `topic=`).
    pub fn topic_override(mut self, topic: Option<String>) -> Self {
        self.topic_override = topic;
        self
    }

    /// Every segment's partition, instead of its folder's (Python's `partition=`).
    pub fn partition_override(mut self, partition: Option<i64>) -> Self {
        self.partition_override = partition;
        self
    }

    /// RSA private keys (PEM text) by key-pair id, for encrypted tiered segments.
    pub fn tiered_keys<I, K, P>(mut self, keys: I) -> Self
    where
        I: IntoIterator<Item = (K, P)>,
        K: Into<String>,
        P: Into<String>,
    {
        self.keys = keys.into_iter().map(|(k, p)| (k.into(), p.into())).collect();
        self
    }

    pub fn validate_crc(mut self, on: bool) -> Self {
        self.validate_crc = on;
        self
    }

    pub fn include_control(mut self, on: bool) -> Self {
        self.include_control = on;
        self
    }

    pub fn on_error(mut self, on_error: OnError) -> Self {
        self.on_error = on_error;
        self
    }

    /// The cap on one batch's decompressed size, in bytes.
    pub fn max_decompressed_size(mut self, bytes: usize) -> Self {
        self.max_decompressed_size = bytes;
        self
    }

    /// Bytes of complete batches decoded at once (default 16 MiB).
    pub fn max_chunk_bytes(mut self, bytes: usize) -> Self {
        self.max_chunk_bytes = bytes;
        self
    }

    /// Only these columns of [`crate::arrow_out::schema`] (all by default;
    /// [`Columns::named`] takes names): the others are never built.
    pub fn columns(mut self, columns: Columns) -> Self {
        self.columns = columns;
        self
    }

    /// Only the records an engine's pushed predicates can match
    /// ([`super::pushdown::translate`]): folders kept by name, bounds intersected.
    pub fn record_filter(mut self, filter: RecordFilter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Only segments whose file names match `glob` (an `fnmatch` pattern on the
    /// name alone, case-sensitive: Spark's `pathGlobFilter`).
    pub fn path_glob_filter(mut self, glob: Option<String>) -> Self {
        self.name_glob = glob;
        self
    }

    /// Each reader of this scan's splits stops after this many rows (an
    /// engine's pushed `LIMIT`: it still limits the rows of all its tasks).
    pub fn limit(mut self, rows: Option<u64>) -> Self {
        self.limit = rows;
        self
    }

    /// Decode threads for each split read (0, the default: one per core);
    /// an engine running a task per core wants 1.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// The storage of remote roots and files; without it, a remote root is an error.
    pub fn resolver(mut self, resolver: Resolver) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// One storage for every root and file of this scan, whatever its path
    /// looks like: the roots are paths in it (`bucket/prefix/` for a front
    /// end's S3 file system), nothing is read from the local disk or through
    /// the [resolver](Scan::resolver), and the planner asks it for everything
    /// it would map or seek locally.
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = Some(storage);
        self
    }

    fn check(&self) -> Result<(), ScanError> {
        if self.roots.is_empty() {
            return Err(ScanError::Options("no roots to scan".into()));
        }
        if self.max_chunk_bytes == 0 {
            return Err(ScanError::Options("max_chunk_bytes must be positive".into()));
        }
        if self.max_decompressed_size == 0 || self.max_decompressed_size > MAX_DECOMPRESSED_SIZE_LIMIT {
            return Err(ScanError::Options(format!(
                "max_decompressed_size must be between 1 and {MAX_DECOMPRESSED_SIZE_LIMIT} bytes, not {}",
                self.max_decompressed_size
            )));
        }
        Ok(())
    }

    /// What readers of this scan's splits need (keys parsed once).
    pub fn context(&self) -> Result<ReadContext, ScanError> {
        self.check()?;
        let mut keys: BTreeMap<String, RsaPrivateKey> = BTreeMap::new();
        for (id, pem) in &self.keys {
            let key = parse_private_key(pem).map_err(|error| ScanError::Tiered {
                object: format!("key pair {id:?}"),
                error,
            })?;
            keys.insert(id.clone(), key);
        }
        Ok(ReadContext {
            resolver: self.resolver.clone(),
            storage: self.storage.clone(),
            keys: Arc::new(keys),
            options: DecodeOptions {
                validate_crc: self.validate_crc,
                include_control: self.include_control,
                on_error: self.on_error,
                max_decompressed_size: self.max_decompressed_size,
                threads: self.threads,
                ..DecodeOptions::default()
            },
            max_chunk_bytes: self.max_chunk_bytes,
            columns: self.columns,
            limit: self.limit,
            typed: Arc::new(Vec::new()),
            fetch_aborted: None,
        })
    }

    /// List the roots, leave each offset to one copy, skip what names and
    /// headers rule out, and (read_committed) collect each partition's transactions.
    pub fn plan(&self) -> Result<Plan, ScanError> {
        let context = self.context()?;
        self.plan_with(&context)
    }

    /// [`Scan::plan`] with a context already made.
    pub fn plan_with(&self, context: &ReadContext) -> Result<Plan, ScanError> {
        let options = ListOptions {
            topic: self.topic_override.clone(),
            partition: self.partition_override,
            collect_problems: self.on_error == OnError::Skip,
        };
        let held = read::HeldByBytes { context };
        let storage = |root: &str| {
            context.storage_for(root).map_err(|e| match e {
                ScanError::Storage(e) => ListError::Storage(e),
                e => ListError::Storage(StorageError::Other {
                    location: Location::new(root),
                    message: e.to_string(),
                }),
            })
        };
        let listing = list_roots(&self.roots, &storage, &options, &held)?;
        let (mut segments, warnings) = (listing.segments, listing.warnings);
        let problems = listing.problems.iter().map(|(_, p)| p.to_string()).collect();
        if let Some(glob) = &self.name_glob {
            keep_names(&mut segments, glob);
        }
        segments.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        segments.retain(|s| {
            self.topics.as_ref().is_none_or(|t| t.contains(&s.topic))
                && self.partitions.as_ref().is_none_or(|p| p.contains(&s.partition))
                && self.filter.as_ref().is_none_or(|f| f.keeps(&s.topic, s.partition))
        });
        let mut partitions = Vec::new();
        let mut index_warnings = Vec::new();
        for group in by_partition(segments) {
            let (topic, partition) = (group[0].topic.clone(), group[0].partition);
            let bounds = HeaderBounds {
                start_offset: self.start_offset.get(&topic, partition),
                end_offset: self.end_offset.get(&topic, partition),
                start_ts_us: self.start_ts_us,
                end_ts_us: self.end_ts_us,
            };
            let bounds = self.filter.as_ref().map_or(bounds, |f| f.bounds(&bounds));
            let transactions = match self.isolation {
                ScanIsolation::ReadCommitted => Some(read::partition_transactions(&group, context)?),
                ScanIsolation::ReadUncommitted => None,
            };
            let mut splits = Vec::new();
            for (i, (seg, planned)) in group
                .iter()
                .zip(plan_segments(
                    &group,
                    &bounds,
                    false,
                    context.storage.is_none(),
                    &mut index_warnings,
                ))
                .enumerate()
            {
                let (start, end) = match planned {
                    SegmentPlan::Skipped => continue,
                    SegmentPlan::Bytes { start, end } if start >= end => continue,
                    SegmentPlan::Bytes { start, end } => (start, end),
                    SegmentPlan::Elsewhere => (0, seg.size),
                };
                let planned =
                    Split::of_segment(seg, (start, end), &bounds, next_start(&group, i), transactions.clone());
                splits.push(planned);
            }
            partitions.push(PartitionPlan {
                topic,
                partition,
                splits,
                transactions,
            });
        }
        Ok(Plan {
            partitions,
            warnings,
            problems,
            index_warnings,
        })
    }

    /// The records of every split of [`Scan::plan`], in topic, partition, offset order.
    pub fn reader(&self) -> Result<ScanReader, ScanError> {
        let context = self.context()?;
        let plan = self.plan_with(&context)?;
        Ok(ScanReader::new(plan.splits().cloned().collect(), context))
    }
}

/// How to read one segment of a partition, planned without decoding
/// anything ([`plan_segments`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentPlan {
    /// Its name (or the bounds alone) shows it holds no record in the bounds:
    /// left unopened.
    Skipped,
    /// Bytes `[start, end)` of the local file hold every record in the bounds
    /// (`start == end`: its headers rule out every batch).
    Bytes { start: u64, end: u64 },
    /// Not a local file (a remote object, an Aiven segment), or one that can't
    /// be opened or sought here: the caller seeks it (and reports why it can't).
    Elsewhere,
}

/// The read_committed pre-pass over one partition's local segments (in
/// offset order), each walked by its headers over the offsets the overlap
/// rule leaves to it: the transactions an ABORT marker ends, then those still
/// open, sorted by first offset and producer. Remote segments need a
/// [`Scan`] (its storage and keys).
pub fn local_transactions(group: &[Segment], max_chunk_bytes: usize) -> Result<Vec<Transaction>, ScanError> {
    if let Some(seg) = group
        .iter()
        .find(|s| s.layout == Layout::Aiven || uri_scheme(&s.path).is_some())
    {
        return Err(ScanError::Options(format!("{}: not a local segment", seg.path)));
    }
    let context = ReadContext {
        resolver: None,
        storage: None,
        keys: Arc::new(BTreeMap::new()),
        options: DecodeOptions::default(),
        max_chunk_bytes: max_chunk_bytes.max(1),
        columns: Columns::default(),
        limit: None,
        typed: Arc::new(Vec::new()),
        fetch_aborted: None,
    };
    read::partition_transactions(group, &context)
}

/// Segments up to this size (as listed) are read whole to be planned, larger ones mapped.
const SMALL_FILE_BYTES: u64 = 256 << 10;

/// The plan of each segment of one partition (`group`, in offset order) for
/// `bounds`: segments whose names show they hold no offset in the bounds (the
/// offsets the overlap rule leaves them) are skipped; local files are sought
/// with their `.index` under offset bounds (every position checked against
/// the log: a missing or bad index costs a read from the start and a warning
/// in `warnings`, naming the file) and, under time bounds, narrowed by one
/// header walk to the batches that can hold a record in them (`keep_control`:
/// transaction markers are kept). Without `open`, no file is opened: the
/// segments their names leave are [`SegmentPlan::Elsewhere`].
pub fn plan_segments(
    group: &[Segment],
    bounds: &HeaderBounds,
    keep_control: bool,
    open: bool,
    warnings: &mut Vec<String>,
) -> Vec<SegmentPlan> {
    let mut plans = Vec::with_capacity(group.len());
    // the last offset of the segment before, when it was walked to its end (a broker's log, no overlap)
    let mut previous_last = None;
    for (i, seg) in group.iter().enumerate() {
        let (so, eo) = segment_bounds(seg, bounds.start_offset, bounds.end_offset);
        let seg_bounds = HeaderBounds {
            start_offset: so,
            end_offset: eo,
            ..*bounds
        };
        let plain = seg.layout == Layout::Broker && seg.floor_offset.is_none() && seg.stop_offset.is_none();
        if segment_skippable(group, i, bounds) || empty(&seg_bounds) {
            plans.push(SegmentPlan::Skipped);
            previous_last = None;
        } else if !open {
            plans.push(SegmentPlan::Elsewhere);
        } else {
            let after = previous_last.filter(|_| plain);
            let (plan, last) = plan_local_segment(seg, &seg_bounds, keep_control, after, warnings);
            plans.push(plan);
            previous_last = last.filter(|_| plain);
        }
    }
    plans
}

/// [`plan_segments`] of one segment that its name does not rule out, after
/// a segment whose last batch ended at `previous_last`; with the last offset
/// of this one's last batch when its headers were walked to its end.
fn plan_local_segment(
    seg: &Segment,
    bounds: &HeaderBounds,
    keep_control: bool,
    previous_last: Option<i64>,
    warnings: &mut Vec<String>,
) -> (SegmentPlan, Option<i64>) {
    if seg.layout == Layout::Aiven || uri_scheme(&seg.path).is_some() {
        return (SegmentPlan::Elsewhere, None);
    }
    let offsets = bounds.start_offset.is_some() || bounds.end_offset.is_some();
    let times = bounds.start_ts_us.is_some() || bounds.end_ts_us.is_some();
    // A small file costs less read than mapped (no map to set up, fault in and tear down).
    let held = if seg.size <= SMALL_FILE_BYTES {
        std::fs::read(&seg.path).ok().map(Buffer::from_vec)
    } else {
        LocalStorage.map(&Location::new(seg.path.as_str())).ok().flatten()
    };
    let Some(map) = held else {
        return (SegmentPlan::Elsewhere, None); // the read that follows says why
    };
    let size = map.len();
    if !(offsets || times) || size == 0 {
        let plan = SegmentPlan::Bytes {
            start: 0,
            end: size as u64,
        };
        return (plan, None);
    }
    let (mut start, mut end) = (0, size);
    if offsets {
        let log_path = std::path::Path::new(&seg.path);
        let index_path = log_path.with_extension("index");
        let index = match std::fs::read(&index_path) {
            Ok(data) => Some(data),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || index_path.is_dir() => None,
            Err(_) => return (SegmentPlan::Elsewhere, None),
        };
        let base = match &index {
            None => 0,
            Some(_) => match log_path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(super::naming::segment_base_offset)
            {
                Some(base) => base,
                None => return (SegmentPlan::Elsewhere, None), // a name without a base offset: the caller's words
            },
        };
        let index_name = index_path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let found = super::seek::seek_range(
            &map,
            base,
            super::seek::IndexFile {
                name: index_name,
                data: index.as_deref(),
            },
            super::seek::IndexFile { name: "", data: None },
            super::seek::SeekBounds {
                start_offset: bounds.start_offset,
                end_offset: bounds.end_offset,
                start_timestamp_ms: None,
            },
        );
        match found {
            Ok((a, b)) => (start, end) = (a.min(size), b.map_or(size, |b| b.min(size))),
            Err(bad) => warnings.push(format!("{}: {bad}; scanning the whole segment instead", seg.path)),
        }
    }
    let mut last = None;
    if times && start < end {
        let w = walk_after(&map, start, previous_last.filter(|_| start == 0));
        if let Some((a, b)) = w.narrow(start, end, bounds, keep_control) {
            (start, end) = (a, b);
        }
        last = w.last_offset_at_end(size);
    }
    let plan = SegmentPlan::Bytes {
        start: start as u64,
        end: end as u64,
    };
    (plan, last)
}

/// The first offset the segment after `group[i]` returns (`None` for the last).
pub fn next_start(group: &[Segment], i: usize) -> Option<i64> {
    let following = group.get(i + 1)?;
    let base = following.base_offset?;
    Some(following.floor_offset.map_or(base, |floor| floor.max(base)))
}

/// Bounds no record can meet: `start >= end` for offsets or for times.
fn empty(b: &HeaderBounds) -> bool {
    matches!((b.start_offset, b.end_offset), (Some(s), Some(e)) if s >= e)
        || matches!((b.start_ts_us, b.end_ts_us), (Some(s), Some(e)) if s >= e)
}

/// Whether file names alone show segment `i` (of one partition, in order)
/// holds no offset in `bounds` (the offsets the overlap rule leaves to it).
fn segment_skippable(segments: &[Segment], i: usize, bounds: &HeaderBounds) -> bool {
    let seg = &segments[i];
    let Some(base) = seg.base_offset else {
        return false;
    };
    let first = seg.floor_offset.map_or(base, |f| f.max(base));
    if bounds.end_offset.is_some_and(|e| first >= e) {
        return true;
    }
    if let Some(start) = bounds.start_offset {
        if seg.stop_offset.is_some_and(|stop| stop <= start) {
            return true;
        }
        if seg.stop_offset.is_none() {
            if let Some(next) = segments.get(i + 1) {
                if next.floor_offset.is_none() && next.base_offset.is_some_and(|b| b <= start) {
                    return true;
                }
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base: i64) -> Segment {
        Segment {
            path: format!("/d/t-0/{base:020}.log"),
            topic: "t".into(),
            partition: 0,
            base_offset: Some(base),
            size: 10,
            layout: Layout::Broker,
            manifest: None,
            segment_id: None,
            topic_id: None,
            floor_offset: None,
            stop_offset: None,
            twins: Vec::new(),
        }
    }

    #[test]
    fn segments_are_skipped_by_their_names_only_when_no_offset_can_be_in_bounds() {
        let group = vec![seg(0), seg(100), seg(200)];
        let at = |s: Option<i64>, e: Option<i64>| {
            let b = HeaderBounds {
                start_offset: s,
                end_offset: e,
                ..Default::default()
            };
            (0..3).map(|i| segment_skippable(&group, i, &b)).collect::<Vec<_>>()
        };
        assert_eq!(at(None, None), [false, false, false]);
        assert_eq!(at(Some(150), None), [true, false, false]);
        assert_eq!(at(Some(100), None), [true, false, false]);
        assert_eq!(at(Some(99), Some(100)), [false, true, true]);
        assert_eq!(at(None, Some(201)), [false, false, false]);
    }

    #[test]
    fn splits_round_trip_as_json_and_carry_no_keys() {
        let split = Split {
            version: SPLIT_VERSION,
            path: "s3://b/t-0/0.log".into(),
            topic: "t".into(),
            partition: 3,
            layout: "aiven".into(),
            manifest: Some("s3://b/t-0/0.rsm-manifest".into()),
            size: 100,
            start: 10,
            end: 90,
            start_offset: Some(5),
            end_offset: None,
            start_ts_us: Some(1_000),
            end_ts_us: None,
            transactions: Some(vec![Transaction {
                producer_id: 7,
                first_offset: 3,
                last_offset: None,
            }]),
            twins: Vec::new(),
        };
        let bytes = split.to_bytes();
        assert_eq!(Split::from_bytes(&bytes).unwrap(), split);
        let text = String::from_utf8(bytes).unwrap();
        assert!(!text.contains("key"), "{text}");
        let mut bad = split.clone();
        bad.end = 200;
        assert!(Split::from_bytes(&bad.to_bytes()).is_err());
        bad.end = 90;
        bad.version = 99;
        assert!(Split::from_bytes(&bad.to_bytes())
            .unwrap_err()
            .to_string()
            .contains("version 99"));
    }

    #[test]
    fn per_partition_bounds_override_the_one_for_all() {
        let mut b = OffsetBound {
            all: Some(5),
            ..Default::default()
        };
        b.per_partition.insert(("t".into(), 1), 9);
        assert_eq!(
            (b.get("t", 0), b.get("t", 1), b.get("u", 1)),
            (Some(5), Some(9), Some(5))
        );
    }
}
