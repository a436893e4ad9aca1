//! `_scan_read`: the core's `Scan` (roots → plan → Arrow) as a pyarrow
//! `RecordBatchReader`. Internal: it exists so the tests can compare the
//! core's reader with `kafkabatch.scan_log`; local roots only for now.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::{PyFileNotFoundError, PyPermissionError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::arrow::ArrowStream;
use super::input::Input;
use super::listing::{list_with, segment_fields, segment_from_py, warnings_and_problems, PyFileSystemStorage};
use super::storage::python_resolver;
use super::values::ValueParser;
use kafkabatch::arrow_out::Columns;
use kafkabatch::decode::{OnError, DEFAULT_MAX_DECOMPRESSED_SIZE};
use kafkabatch::prune::HeaderBounds;
use kafkabatch::scan::layouts::Layout;
use kafkabatch::scan::listing::{by_partition, HeldOffsets, ListError, Segment};
use kafkabatch::scan::plan::{local_transactions, plan_segments, SegmentPlan, DEFAULT_MAX_CHUNK_BYTES};
use kafkabatch::scan::read::{span_transactions, HeldByBytes};
use kafkabatch::scan::{
    Aggregate, GroupBy, Scan, ScanError, ScanIsolation, ScanReader, Split, SplitReport, Transaction,
};
use kafkabatch::storage::{Entry, Location, Storage, StorageError};

/// The core's reader as Arrow's C stream reader; errors become Arrow errors with the core's words.
struct Stream(ScanReader);

impl Iterator for Stream {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0
            .next()
            .map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for Stream {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }
}

/// An offset bound: an int for every partition, or `{topic: {partition: offset}}` /
/// `{(topic, partition): offset}`.
fn offset_bound(
    mut scan: Scan,
    spec: Option<&Bound<'_, PyAny>>,
    what: &str,
    set: fn(Scan, &str, i64, i64) -> Scan,
    all: fn(Scan, Option<i64>) -> Scan,
) -> PyResult<Scan> {
    let Some(spec) = spec else {
        return Ok(scan);
    };
    if let Ok(value) = spec.extract::<i64>() {
        return Ok(all(scan, Some(value)));
    }
    let Ok(map) = spec.cast::<PyDict>() else {
        return Err(PyTypeError::new_err(format!("{what} must be an int or a mapping")));
    };
    for (key, value) in map.iter() {
        if let Ok(tuple) = key.cast::<PyTuple>() {
            let (topic, partition): (String, i64) = tuple.extract()?;
            scan = set(scan, &topic, partition, value.extract()?);
        } else {
            let topic: String = key.extract()?;
            let per: BTreeMap<i64, i64> = value.extract()?;
            for (partition, offset) in per {
                scan = set(scan, &topic, partition, offset);
            }
        }
    }
    Ok(scan)
}

fn on_error_of(on_error: &str) -> PyResult<OnError> {
    match on_error {
        "raise" => Ok(OnError::Raise),
        "skip" => Ok(OnError::Skip),
        other => Err(PyValueError::new_err(format!(
            "on_error must be 'raise' or 'skip', not {other:?}"
        ))),
    }
}

/// The core's `Scan` of `roots` with the keyword options of `_scan_read`.
#[allow(clippy::too_many_arguments)]
fn scan_of(
    roots: Vec<String>,
    start_offset: Option<&Bound<'_, PyAny>>,
    end_offset: Option<&Bound<'_, PyAny>>,
    start_timestamp: Option<i64>,
    end_timestamp: Option<i64>,
    isolation: &str,
    topic: Option<String>,
    partition: Option<i64>,
    topics: Option<Vec<String>>,
    partitions: Option<Vec<i64>>,
    tiered_keys: Option<BTreeMap<String, String>>,
    validate_crc: bool,
    include_control: bool,
    on_error: &str,
    max_decompressed_size: usize,
    max_chunk_bytes: usize,
    columns: Option<Vec<String>>,
) -> PyResult<Scan> {
    let isolation = match isolation {
        "read_uncommitted" => ScanIsolation::ReadUncommitted,
        "read_committed" => ScanIsolation::ReadCommitted,
        other => {
            return Err(PyValueError::new_err(format!(
                "isolation must be 'read_uncommitted' or 'read_committed', not {other:?}"
            )))
        }
    };
    let on_error = on_error_of(on_error)?;
    let mut scan = Scan::new(roots)
        .start_timestamp_ms(start_timestamp)
        .end_timestamp_ms(end_timestamp)
        .isolation(isolation)
        .topic_override(topic)
        .partition_override(partition)
        .tiered_keys(tiered_keys.unwrap_or_default())
        .validate_crc(validate_crc)
        .include_control(include_control)
        .on_error(on_error)
        .max_decompressed_size(max_decompressed_size)
        .max_chunk_bytes(max_chunk_bytes);
    if let Some(topics) = topics {
        scan = scan.topics(topics);
    }
    if let Some(partitions) = partitions {
        scan = scan.partitions(partitions);
    }
    if let Some(names) = columns {
        scan = scan.columns(Columns::named(&names).map_err(PyValueError::new_err)?);
    }
    scan = offset_bound(
        scan,
        start_offset,
        "start_offset",
        Scan::partition_start_offset,
        Scan::start_offset,
    )?;
    offset_bound(
        scan,
        end_offset,
        "end_offset",
        Scan::partition_end_offset,
        Scan::end_offset,
    )
}

fn scan_error(e: ScanError) -> PyErr {
    match e {
        ScanError::List(ListError::NotFound(text)) => PyFileNotFoundError::new_err(text),
        ScanError::List(ListError::PermissionDenied(text)) => PyPermissionError::new_err(text),
        ScanError::List(ListError::Tiered(problem, _)) => super::listing::tiered_error(&problem),
        ScanError::Tiered { object, error } => Python::attach(|py| super::tiered::to_py(py, &object, &error)),
        ScanError::Storage(e) => super::storage::to_py(e),
        ScanError::Value(bad) => Python::attach(|py| super::values::bad_value_error(py, &bad)),
        e => PyValueError::new_err(e.to_string()),
    }
}

/// Read `roots` with the core's `Scan` into a `pyarrow.RecordBatchReader` of
/// `kafkabatch.SCHEMA` (internal: see the stub).
#[pyfunction]
#[pyo3(signature = (roots, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None, isolation="read_uncommitted", topic=None, partition=None, topics=None, partitions=None, tiered_keys=None, validate_crc=true, include_control=false, on_error="raise", max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, max_chunk_bytes=DEFAULT_MAX_CHUNK_BYTES, columns=None))]
#[allow(clippy::too_many_arguments)]
fn _scan_read<'py>(
    py: Python<'py>,
    roots: Vec<String>,
    start_offset: Option<&Bound<'py, PyAny>>,
    end_offset: Option<&Bound<'py, PyAny>>,
    start_timestamp: Option<i64>,
    end_timestamp: Option<i64>,
    isolation: &str,
    topic: Option<String>,
    partition: Option<i64>,
    topics: Option<Vec<String>>,
    partitions: Option<Vec<i64>>,
    tiered_keys: Option<BTreeMap<String, String>>,
    validate_crc: bool,
    include_control: bool,
    on_error: &str,
    max_decompressed_size: usize,
    max_chunk_bytes: usize,
    columns: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let scan = scan_of(
        roots,
        start_offset,
        end_offset,
        start_timestamp,
        end_timestamp,
        isolation,
        topic,
        partition,
        topics,
        partitions,
        tiered_keys,
        validate_crc,
        include_control,
        on_error,
        max_decompressed_size,
        max_chunk_bytes,
        columns,
    )?;
    let reader = py.detach(|| scan.reader()).map_err(scan_error)?;
    let stream = Bound::new(py, ArrowStream::new(Box::new(Stream(reader))))?;
    py.import("pyarrow")?
        .getattr("RecordBatchReader")?
        .call_method1("from_stream", (stream,))
}

/// One listed segment as `plan_partition` takes it: path, base offset, size,
/// layout name, floor and stop offsets (the overlap rule's).
type SegmentFields = (String, Option<i64>, u64, String, Option<i64>, Option<i64>);

/// What `plan_partition` returns: `(how, start, end)` per segment, and the index warnings.
type PlannedPartition = (Vec<(u8, u64, u64)>, Vec<String>);

/// The core's segments of `plan_partition`'s fields.
fn core_segments(segments: Vec<SegmentFields>) -> Vec<Segment> {
    segments
        .into_iter()
        .map(|(path, base_offset, size, layout, floor_offset, stop_offset)| Segment {
            path,
            topic: String::new(),
            partition: 0,
            base_offset,
            size,
            layout: match layout.as_str() {
                "aiven" => Layout::Aiven,
                "local-tiered" => Layout::LocalTiered,
                _ => Layout::Broker,
            },
            manifest: None,
            segment_id: None,
            topic_id: None,
            floor_offset,
            stop_offset,
            twins: Vec::new(),
        })
        .collect()
}

/// A scan reading listed segments: through `given` (the caller's file system
/// the segments were listed in) for every path, else remote files as
/// `kafkabatch.log.fs.open_source` reads them; with the storage that keeps
/// the Python exception a call raised.
fn storage_scan(given: Option<PyFileSystemStorage>) -> (Arc<PyFileSystemStorage>, Scan) {
    let scan = Scan::new(["."]);
    match given {
        Some(storage) => {
            let storage = Arc::new(storage);
            (storage.clone(), scan.storage(storage))
        }
        None => {
            let fallback = Arc::new(PyFileSystemStorage::resolving());
            (fallback.clone(), scan.resolver(python_resolver(fallback)))
        }
    }
}

/// The last offset a remote (Aiven) segment's bytes really hold: its last batch
/// header's, walked from the last entry of its offset index (else from its
/// start); `None` when it can't be read (what checks a manifest's end offset
/// before it hides another copy's offsets). A plain file with `manifest` empty.
/// Read with `tiered_keys`, through `filesystem` (its paths) when given.
#[pyfunction]
#[pyo3(signature = (log, manifest, base_offset, *, tiered_keys=None, filesystem=None, max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, max_chunk_bytes=DEFAULT_MAX_CHUNK_BYTES))]
#[allow(clippy::too_many_arguments)]
fn held_last_offset(
    py: Python<'_>,
    log: &str,
    manifest: &str,
    base_offset: i64,
    tiered_keys: Option<BTreeMap<String, String>>,
    filesystem: Option<Py<PyAny>>,
    max_decompressed_size: usize,
    max_chunk_bytes: usize,
) -> PyResult<Option<i64>> {
    let (_fallback, scan) = storage_scan(filesystem.map(PyFileSystemStorage::over));
    let context = scan
        .tiered_keys(tiered_keys.unwrap_or_default())
        .max_decompressed_size(max_decompressed_size)
        .max_chunk_bytes(max_chunk_bytes)
        .context()
        .map_err(scan_error)?;
    Ok(py.detach(|| HeldByBytes { context: &context }.held_last_offset(log, manifest, base_offset)))
}

/// The read_committed pre-pass over one partition's segments
/// (`kafkabatch.log.listing.Segment`s in log order, local or remote, with
/// their twins), in the core: `(producer_id, first_offset, marker offset or
/// None while open)` sorted by first offset. Remote files are read as
/// `kafkabatch.log.fs.open_source` reads them; `on_error="skip"`: a damaged
/// remote segment without a readable twin is walked around its chunks that
/// can't be undone, or left out (the read that follows counts what it lost).
#[pyfunction]
#[pyo3(signature = (segments, *, tiered_keys=None, on_error="raise", max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, max_chunk_bytes=DEFAULT_MAX_CHUNK_BYTES))]
fn partition_transactions(
    py: Python<'_>,
    segments: Vec<Bound<'_, PyAny>>,
    tiered_keys: Option<BTreeMap<String, String>>,
    on_error: &str,
    max_decompressed_size: usize,
    max_chunk_bytes: usize,
) -> PyResult<Vec<(i64, i64, Option<i64>)>> {
    let group = segments.iter().map(segment_from_py).collect::<PyResult<Vec<_>>>()?;
    let on_error = on_error_of(on_error)?;
    let given = match segments.first() {
        Some(first) => PyFileSystemStorage::of_segment(first)?,
        None => None,
    };
    let (fallback, scan) = storage_scan(given);
    let context = scan
        .tiered_keys(tiered_keys.unwrap_or_default())
        .on_error(on_error)
        .max_decompressed_size(max_decompressed_size)
        .max_chunk_bytes(max_chunk_bytes)
        .context()
        .map_err(scan_error)?;
    let found = py.detach(|| context.transactions(&group));
    transaction_tuples(found, || fallback.take_error())
}

/// A pre-pass's transactions as Python takes them (`(producer_id,
/// first_offset, marker offset or None)`), or its error: a storage's
/// failure as the Python exception it was (`raised`, pyarrow's or a source's).
fn transaction_tuples(
    found: Result<Vec<Transaction>, ScanError>,
    raised: impl FnOnce() -> Option<PyErr>,
) -> PyResult<Vec<(i64, i64, Option<i64>)>> {
    let found = found.map_err(|e| match (&e, raised()) {
        (ScanError::Storage(_), Some(raised)) => raised,
        _ => scan_error(e),
    })?;
    Ok(found
        .into_iter()
        .map(|t| (t.producer_id, t.first_offset, t.last_offset))
        .collect())
}

/// Segments' bytes from objects a Python caller opened (a
/// `kafkabatch.log.fs.Source`: `size`, and `read(position, length)` giving a
/// buffer of those bytes), each by a name; the last exception a `read`
/// raised is kept, to be raised as it was.
#[derive(Debug)]
struct PySources {
    sources: Vec<(String, Py<PyAny>, u64)>,
    error: Mutex<Option<PyErr>>,
}

impl PySources {
    /// The sources `(name, object)` with their sizes (their `size` attribute).
    fn new(py: Python<'_>, sources: Vec<(String, Py<PyAny>)>) -> PyResult<Self> {
        let sources = sources
            .into_iter()
            .map(|(name, source)| {
                let size: u64 = source.bind(py).getattr("size")?.extract()?;
                Ok((name, source, size))
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PySources {
            sources,
            error: Mutex::new(None),
        })
    }

    fn find(&self, location: &Location) -> Option<&(String, Py<PyAny>, u64)> {
        self.sources.iter().find(|(name, ..)| name == location.as_str())
    }

    fn take_error(&self) -> Option<PyErr> {
        self.error.lock().ok()?.take()
    }
}

impl Storage for PySources {
    fn list(&self, _prefix: &Location, _recursive: bool) -> Result<Vec<Entry>, StorageError> {
        Ok(Vec::new())
    }

    fn size(&self, location: &Location) -> Result<Option<u64>, StorageError> {
        Ok(self.find(location).map(|(_, _, size)| *size))
    }

    fn read_range(&self, location: &Location, range: Range<u64>) -> Result<arrow_buffer::Buffer, StorageError> {
        let Some((_, source, size)) = self.find(location) else {
            return Err(StorageError::NotFound(location.clone()));
        };
        if range.end > *size || range.start > range.end {
            return Err(StorageError::OutOfRange {
                location: location.clone(),
                start: range.start,
                end: range.end,
                size: *size,
            });
        }
        let wanted = range.end - range.start;
        Python::attach(|py| -> PyResult<arrow_buffer::Buffer> {
            let got = source.bind(py).call_method1("read", (range.start, wanted))?;
            let input = Input::new(&got)?;
            let n = input.as_slice().len() as u64;
            if n != wanted {
                return Err(PyValueError::new_err(format!(
                    "{location}: read({}, {wanted}) gave {n} bytes",
                    range.start
                )));
            }
            Ok(input.into_arrow_buffer())
        })
        .map_err(|e| {
            let message = e.to_string();
            if let Ok(mut slot) = self.error.lock() {
                *slot = Some(e);
            }
            StorageError::Other {
                location: location.clone(),
                message,
            }
        })
    }
}

/// The read_committed pre-pass over pieces of one partition, in log order,
/// in the core: each piece `(source, start, end, start_offset, end_offset)`,
/// an open segment (a `kafkabatch.log.fs.Source`) walked by its batch
/// headers over bytes `[start, end)` (`end` None: to its end; `start` a
/// batch boundary) for the offsets `[start_offset, end_offset)`. The
/// transactions an ABORT marker ends and those still open, as
/// `(producer_id, first_offset, marker offset or None)` sorted by first
/// offset; pieces are read about `max_chunk_bytes` at a time.
#[pyfunction]
#[pyo3(signature = (pieces, *, max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, max_chunk_bytes=DEFAULT_MAX_CHUNK_BYTES))]
#[allow(clippy::type_complexity)]
fn source_transactions(
    py: Python<'_>,
    pieces: Vec<(Py<PyAny>, u64, Option<u64>, Option<i64>, Option<i64>)>,
    max_decompressed_size: usize,
    max_chunk_bytes: usize,
) -> PyResult<Vec<(i64, i64, Option<i64>)>> {
    let mut named = Vec::with_capacity(pieces.len());
    let mut spans = Vec::with_capacity(pieces.len());
    for (i, (source, start, end, start_offset, end_offset)) in pieces.into_iter().enumerate() {
        let name = format!("piece {i}");
        named.push((name.clone(), source));
        let fields = (name, None, 0, "broker".to_string(), None, None);
        let seg = core_segments(vec![fields]).remove(0);
        spans.push((seg, (start, end), (start_offset, end_offset)));
    }
    let sources = Arc::new(PySources::new(py, named)?);
    let context = Scan::new(["."])
        .max_decompressed_size(max_decompressed_size)
        .max_chunk_bytes(max_chunk_bytes)
        .storage(sources.clone())
        .context()
        .map_err(scan_error)?;
    let found = py.detach(|| span_transactions(&spans, &context));
    transaction_tuples(found, || sources.take_error())
}

/// A typed column as `_read_segment` takes it: the column, its parser, and
/// the local ids of schema GUIDs when its values are Confluent-framed.
type TypedSpec<'py> = (String, Bound<'py, ValueParser>, Option<BTreeMap<String, u32>>);

/// The read of one segment by the core's reader (see `_read_segment`):
/// iterated, one record batch at a time; `report()` once it is done.
#[pyclass(module = "kafkabatch._kafkabatch")]
struct SegmentRead {
    reader: Option<ScanReader>,
    fallback: Arc<PyFileSystemStorage>,
    /// The caller's open segment, when it gave one (`source`).
    sources: Option<Arc<PySources>>,
    report: Option<SplitReport>,
    index_warnings: Vec<String>,
}

#[pymethods]
impl SegmentRead {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<ArrowStream>> {
        let Some(reader) = self.reader.as_mut() else {
            return Ok(None);
        };
        match py.detach(|| reader.next()) {
            Some(Ok(batch)) => {
                let schema = batch.schema();
                Ok(Some(ArrowStream::of_batches(vec![batch], schema)))
            }
            Some(Err(e)) => {
                self.reader = None;
                let raised = self.sources.as_ref().and_then(|s| s.take_error());
                Err(match (e, raised.or_else(|| self.fallback.take_error())) {
                    (ScanError::Storage(_), Some(raised)) => raised,
                    // positions in the file; Python names it (`kafkabatch.log.errors.in_file`)
                    (ScanError::Decode { error, .. }, _) => super::errors::to_py(py, &error),
                    (ScanError::Value(bad), _) => super::values::bad_value_error(py, &bad),
                    (e, _) => scan_error(e),
                })
            }
            None => {
                self.report = reader.take_finished().pop();
                self.index_warnings = reader.stats().index_warnings.clone();
                self.reader = None;
                Ok(None)
            }
        }
    }

    /// What the read found, once done: a dict of `start`, `end`, `batches`,
    /// `records`, `rows`, `skipped` (the corrupt batches dropped, as
    /// exceptions), `skipped_bytes`, `pruned_bytes`, `trailing_bytes`,
    /// `status`, `end_error` (an exception or None), `lost` (what damage
    /// cost, as `TieredStorageError`s), `twin`, `twin_from`, `last_offset`,
    /// `fetched` (bytes of remote objects), `index_warnings`, `transactions`
    /// (with `fetch_aborted`: the aborted list, marker offsets learnt); None before the end.
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(r) = &self.report else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("start", r.start)?;
        d.set_item("end", r.end)?;
        d.set_item("batches", r.batches)?;
        d.set_item("records", r.records)?;
        d.set_item("rows", r.rows)?;
        let skipped = PyList::empty(py);
        for e in &r.errors {
            skipped.append(super::errors::to_py(py, e).into_value(py))?;
        }
        d.set_item("skipped", skipped)?;
        d.set_item("skipped_bytes", r.skipped_bytes)?;
        d.set_item("pruned_bytes", r.pruned_bytes)?;
        d.set_item("trailing_bytes", r.trailing_bytes)?;
        d.set_item("status", r.status)?;
        d.set_item(
            "end_error",
            r.broken.as_ref().map(|e| super::errors::to_py(py, e).into_value(py)),
        )?;
        let lost = PyList::empty(py);
        for l in &r.lost {
            let err = super::tiered::TieredStorageError::new_err(l.message.clone());
            let value = err.value(py);
            value.setattr("kind", l.kind)?;
            value.setattr("chunk", l.chunk)?;
            value.setattr("object", l.object.as_str())?;
            value.setattr("reason", l.reason.as_str())?;
            lost.append(value)?;
        }
        d.set_item("lost", lost)?;
        d.set_item("twin", r.twin.as_deref())?;
        d.set_item("twin_from", r.twin_from)?;
        d.set_item("last_offset", r.last_offset)?;
        d.set_item("fetched", r.fetched)?;
        d.set_item("index_warnings", self.index_warnings.clone())?;
        let learnt: Option<Vec<(i64, i64, Option<i64>)>> = r.transactions.as_ref().map(|found| {
            found
                .iter()
                .map(|t| (t.producer_id, t.first_offset, t.last_offset))
                .collect()
        });
        d.set_item("transactions", learnt)?;
        Ok(Some(d))
    }
}

/// Read one segment (a `kafkabatch.log.listing.Segment`, through its
/// `filesystem` when it was listed in one; its twins read
/// instead when it turns out damaged, up to offset `following` where the
/// partition's next segment takes over) with the core's reader: Aiven
/// segments are sought with their `.indexes` object, chunks that can't be
/// undone skipped under `on_error="skip"`; rows in the bounds only
/// (timestamps in µs); `transactions` (`(producer_id, first_offset,
/// marker offset or None)`): the partition's pre-pass, for read_committed;
/// `byte_range` (`(start, end)`): the bytes of a local file to read, as
/// planned (`plan_partition`), else the whole segment; `typed` (`(column,
/// value_parser, guid_ids or None)`): the columns parsed into types as each
/// chunk is decoded (`guid_ids`: Confluent-framed values, schema ids in the
/// headers read too; see `ValueSpec.apply`); `fetch_aborted` (`hide_open`):
/// `transactions` are a Fetch response's aborted list, ended by the ABORT
/// markers read (the report's `transactions`: the list with what was learnt);
/// `source`: the segment's bytes from this open object instead (a
/// `kafkabatch.log.fs.Source`, its bytes plain: an Aiven segment's already
/// undone; no twins); `index_seek`: a whole local segment of a broker is
/// sought with the `.index`/`.timeindex` beside it (a bad one: the report's
/// `index_warnings`, and a read from the start).
#[pyfunction]
#[pyo3(signature = (segment, *, following=None, byte_range=None, start_offset=None, end_offset=None, start_ts_us=None, end_ts_us=None, transactions=None, tiered_keys=None, validate_crc=true, include_control=false, on_error="raise", max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, max_chunk_bytes=DEFAULT_MAX_CHUNK_BYTES, typed=None, fetch_aborted=None, source=None, index_seek=false))]
#[allow(clippy::too_many_arguments)]
fn _read_segment(
    segment: &Bound<'_, PyAny>,
    following: Option<i64>,
    byte_range: Option<(u64, u64)>,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    start_ts_us: Option<i64>,
    end_ts_us: Option<i64>,
    transactions: Option<Vec<(i64, i64, Option<i64>)>>,
    tiered_keys: Option<BTreeMap<String, String>>,
    validate_crc: bool,
    include_control: bool,
    on_error: &str,
    max_decompressed_size: usize,
    max_chunk_bytes: usize,
    typed: Option<Vec<TypedSpec<'_>>>,
    fetch_aborted: Option<bool>,
    source: Option<Py<PyAny>>,
    index_seek: bool,
) -> PyResult<SegmentRead> {
    let mut seg = segment_from_py(segment)?;
    let typed = typed
        .unwrap_or_default()
        .iter()
        .map(|(column, parser, guid_ids)| parser.get().typed_column(column, guid_ids.clone()))
        .collect::<PyResult<Vec<_>>>()?;
    let sources = match source {
        Some(source) => {
            // the caller's bytes, plain (an Aiven segment's already undone), are the one copy read
            seg.twins.clear();
            seg.layout = Layout::Broker;
            seg.manifest = None;
            let named = vec![(seg.path.clone(), source)];
            Some(Arc::new(PySources::new(segment.py(), named)?))
        }
        None => None,
    };
    let (fallback, scan) = match &sources {
        Some(sources) => (
            Arc::new(PyFileSystemStorage::resolving()),
            Scan::new(["."]).storage(sources.clone()),
        ),
        None => storage_scan(PyFileSystemStorage::of_segment(segment)?),
    };
    let context = scan
        .tiered_keys(tiered_keys.unwrap_or_default())
        .validate_crc(validate_crc)
        .include_control(include_control)
        .on_error(on_error_of(on_error)?)
        .max_decompressed_size(max_decompressed_size)
        .max_chunk_bytes(max_chunk_bytes)
        .context()
        .map_err(scan_error)?
        .with_typed(typed);
    let context = match fetch_aborted {
        Some(hide_open) => context.with_fetch_aborted(hide_open),
        None => context,
    };
    let context = if index_seek { context.with_index_seek() } else { context };
    let bounds = HeaderBounds {
        start_offset,
        end_offset,
        start_ts_us,
        end_ts_us,
    };
    let transactions = transactions.map(|found| {
        found
            .into_iter()
            .map(|(producer_id, first_offset, last_offset)| Transaction {
                producer_id,
                first_offset,
                last_offset,
            })
            .collect()
    });
    let range = byte_range.unwrap_or((0, seg.size));
    if range.0 > range.1 {
        return Err(PyValueError::new_err(format!(
            "byte_range {}..{} ends before it starts",
            range.0, range.1
        )));
    }
    let split = Split::of_segment(&seg, range, &bounds, following, transactions);
    Ok(SegmentRead {
        reader: Some(ScanReader::new(vec![split], context)),
        fallback,
        sources,
        report: None,
        index_warnings: Vec::new(),
    })
}

/// The plan of each segment of one partition (in offset order) for the
/// bounds, from the core's planner (`kafkabatch::scan::plan::plan_segments`):
/// `(0, 0, 0)` skipped by its name, `(1, start, end)` the bytes to read of a
/// local file, `(2, 0, 0)` for the caller to seek (remote, or a file the core
/// can't open: the caller's read says why; every segment its name leaves
/// without `open`); and the texts of the index warnings (a bad `.index`: the
/// segment is read from its start).
#[pyfunction]
#[pyo3(signature = (segments, *, start_offset=None, end_offset=None, start_ts_us=None, end_ts_us=None, keep_control=false, open=true))]
#[allow(clippy::too_many_arguments)]
fn plan_partition(
    py: Python<'_>,
    segments: Vec<SegmentFields>,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    start_ts_us: Option<i64>,
    end_ts_us: Option<i64>,
    keep_control: bool,
    open: bool,
) -> PyResult<PlannedPartition> {
    let group = core_segments(segments);
    let bounds = HeaderBounds {
        start_offset,
        end_offset,
        start_ts_us,
        end_ts_us,
    };
    Ok(py.detach(|| {
        let mut warnings = Vec::new();
        let plans = plan_segments(&group, &bounds, keep_control, open, &mut warnings)
            .into_iter()
            .map(plan_tuple)
            .collect();
        (plans, warnings)
    }))
}

/// One segment's plan as `plan_partition` gives it: `(how, start, end)`.
fn plan_tuple(p: SegmentPlan) -> (u8, u64, u64) {
    match p {
        SegmentPlan::Skipped => (0, 0, 0),
        SegmentPlan::Bytes { start, end } => (1, start, end),
        SegmentPlan::Elsewhere => (2, 0, 0),
    }
}

/// The header bounds `bounds_of(topic, partition)` gives: `(start_offset,
/// end_offset, start_ts_us, end_ts_us)`, or None for a partition left out.
type PyBounds = Option<(Option<i64>, Option<i64>, Option<i64>, Option<i64>)>;

/// List `roots` (joined, see `list_roots`) and plan every partition in the
/// core: `(partitions, warnings, problems, index_warnings)`, each partition
/// `(segments, plans, transactions)` with the segments as `list_roots` gives
/// them, their plans as `plan_partition` gives them, and (with
/// `transactions`) the read_committed pre-pass of a partition of local
/// segments as `partition_transactions` gives it (None when the core can't
/// walk them: remote segments, twins, a file it can't open).
/// `bounds_of(topic, partition)` gives each partition's bounds, or None to
/// leave the partition out. With `filesystem` (a `pyarrow.fs.FileSystem`), the
/// roots are paths in it and every segment is left to the read to seek (`(2, 0, 0)`).
#[pyfunction]
#[pyo3(signature = (roots, bounds_of, *, topic=None, partition=None, collect_problems=false, filesystem=None, held_last_offset=None, keep_control=false, transactions=false, max_chunk_bytes=DEFAULT_MAX_CHUNK_BYTES))]
#[allow(clippy::too_many_arguments)]
fn plan_roots<'py>(
    py: Python<'py>,
    roots: Vec<String>,
    bounds_of: Bound<'py, PyAny>,
    topic: Option<String>,
    partition: Option<i64>,
    collect_problems: bool,
    filesystem: Option<Py<PyAny>>,
    held_last_offset: Option<Py<PyAny>>,
    keep_control: bool,
    transactions: bool,
    max_chunk_bytes: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    // Files in a caller's file system are neither mapped nor sought here: the read seeks them.
    let local = filesystem.is_none();
    let mut listed = list_with(
        py,
        roots,
        topic,
        partition,
        collect_problems,
        filesystem,
        held_last_offset,
    )?;
    let (warnings, problems) = warnings_and_problems(py, &listed)?;
    let mut groups = Vec::new();
    for group in by_partition(std::mem::take(&mut listed.segments)) {
        let wanted: PyBounds = bounds_of
            .call1((group[0].topic.as_str(), group[0].partition))?
            .extract()?;
        if let Some((start_offset, end_offset, start_ts_us, end_ts_us)) = wanted {
            let bounds = HeaderBounds {
                start_offset,
                end_offset,
                start_ts_us,
                end_ts_us,
            };
            groups.push((group, bounds));
        }
    }
    let mut index_warnings = Vec::new();
    let planned: Vec<_> = py.detach(|| {
        groups
            .iter()
            .map(|(group, bounds)| {
                let txns = (local && transactions && group.iter().all(|s| s.twins.is_empty()))
                    .then(|| local_transactions(group, max_chunk_bytes).ok())
                    .flatten();
                let plans: Vec<_> = plan_segments(group, bounds, keep_control, local, &mut index_warnings)
                    .into_iter()
                    .map(plan_tuple)
                    .collect();
                (plans, txns)
            })
            .collect()
    });
    let partitions = PyList::empty(py);
    for ((group, _), (plans, txns)) in groups.iter().zip(planned) {
        let segments = PyList::empty(py);
        for s in group {
            segments.append(segment_fields(py, s)?)?;
        }
        let txns: Option<Vec<(i64, i64, Option<i64>)>> = txns.map(|found| {
            found
                .into_iter()
                .map(|t| (t.producer_id, t.first_offset, t.last_offset))
                .collect()
        });
        partitions.append((segments, plans, txns))?;
    }
    (partitions, warnings, problems, index_warnings).into_pyobject(py)
}

/// A group's `(topic, partition, values)`, as `_scan_header_aggregates` returns it.
type Row = (Option<String>, Option<i64>, Vec<Option<i64>>);

/// `aggregates` of what `_scan_read(roots, **options)` returns, from batch
/// headers alone: `(rows, None)`, or `(None, why)` when the headers can't
/// answer exactly (internal: see the stub).
#[pyfunction]
#[pyo3(signature = (roots, aggregates, group_by, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None, isolation="read_uncommitted", topic=None, partition=None, topics=None, partitions=None, tiered_keys=None, validate_crc=true, include_control=false, on_error="raise", max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, max_chunk_bytes=DEFAULT_MAX_CHUNK_BYTES))]
#[allow(clippy::too_many_arguments)]
fn _scan_header_aggregates<'py>(
    py: Python<'py>,
    roots: Vec<String>,
    aggregates: Vec<String>,
    group_by: &str,
    start_offset: Option<&Bound<'py, PyAny>>,
    end_offset: Option<&Bound<'py, PyAny>>,
    start_timestamp: Option<i64>,
    end_timestamp: Option<i64>,
    isolation: &str,
    topic: Option<String>,
    partition: Option<i64>,
    topics: Option<Vec<String>>,
    partitions: Option<Vec<i64>>,
    tiered_keys: Option<BTreeMap<String, String>>,
    validate_crc: bool,
    include_control: bool,
    on_error: &str,
    max_decompressed_size: usize,
    max_chunk_bytes: usize,
) -> PyResult<(Option<Vec<Row>>, Option<String>)> {
    let aggregates = aggregates
        .iter()
        .map(|a| match a.as_str() {
            "count" => Ok(Aggregate::Count),
            "min_offset" => Ok(Aggregate::MinOffset),
            "max_offset" => Ok(Aggregate::MaxOffset),
            "min_timestamp" => Ok(Aggregate::MinTimestamp),
            "max_timestamp" => Ok(Aggregate::MaxTimestamp),
            other => Err(PyValueError::new_err(format!(
                "aggregates are count, min_offset, max_offset, min_timestamp, max_timestamp, not {other:?}"
            ))),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let group_by = match group_by {
        "all" => GroupBy::All,
        "topic" => GroupBy::Topic,
        "partition" => GroupBy::TopicPartition,
        other => {
            return Err(PyValueError::new_err(format!(
                "group_by must be 'all', 'topic' or 'partition', not {other:?}"
            )))
        }
    };
    let scan = scan_of(
        roots,
        start_offset,
        end_offset,
        start_timestamp,
        end_timestamp,
        isolation,
        topic,
        partition,
        topics,
        partitions,
        tiered_keys,
        validate_crc,
        include_control,
        on_error,
        max_decompressed_size,
        max_chunk_bytes,
        None,
    )?;
    let answer = py
        .detach(|| {
            let plan = scan.plan()?;
            plan.header_aggregates(&scan, &aggregates, group_by)
        })
        .map_err(scan_error)?;
    Ok(match answer {
        Ok(rows) => (
            Some(rows.into_iter().map(|r| (r.topic, r.partition, r.values)).collect()),
            None,
        ),
        Err(why) => (None, Some(why.to_string())),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SegmentRead>()?;
    m.add_function(wrap_pyfunction!(_read_segment, m)?)?;
    m.add_function(wrap_pyfunction!(plan_partition, m)?)?;
    m.add_function(wrap_pyfunction!(plan_roots, m)?)?;
    m.add_function(wrap_pyfunction!(partition_transactions, m)?)?;
    m.add_function(wrap_pyfunction!(held_last_offset, m)?)?;
    m.add_function(wrap_pyfunction!(source_transactions, m)?)?;
    m.add_function(wrap_pyfunction!(_scan_read, m)?)?;
    m.add_function(wrap_pyfunction!(_scan_header_aggregates, m)?)
}
