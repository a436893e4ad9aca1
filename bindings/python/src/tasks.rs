//! Spark's tasks for the Python `kafka-log` source, planned and read by the
//! core as the JVM source's are: the source's options → the core's
//! [`ScanOptions`] → [`Scan::plan`] → splits cut at `maxBytesPerPartition` and
//! packed into tasks ([`kafkabatch::scan::tasks::tasks_of_plan`]), each task a list
//! of serialised [`Split`]s; an executor reads a split with the core's
//! [`ScanReader`]. Remote files go through the package's storage
//! (`kafkabatch.log.fs`: the core's object stores, else `pyarrow.fs`).

use std::sync::Arc;

use pyo3::exceptions::{PyFileNotFoundError, PyPermissionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use super::arrow::ArrowStream;
use super::listing::PyFileSystemStorage;
use super::spark_options::predicate_of;
use super::storage::python_resolver;
use super::stream::StreamState;
use kafkabatch::scan::listing::ListError;
use kafkabatch::scan::options::ScanOptions;
use kafkabatch::scan::stream::{offsets_from_json, Offsets};
use kafkabatch::scan::tasks::{split_work, tasks_of, tasks_of_plan, Tasks};
use kafkabatch::scan::{translate, ReadContext, Scan, ScanError, ScanReader, Split, SplitReport};

/// A pushed filter as `kafkabatch.spark.pushdown` hands it: column, operator, typed literals, negated.
type Filter<'py> = (String, String, Vec<(String, Bound<'py, PyAny>)>, bool);

/// The source's options as the core parses them (the errors were said at `load()`).
fn options_of(options: Vec<(String, String)>) -> PyResult<ScanOptions> {
    ScanOptions::parse(options).map_err(|e| PyValueError::new_err(e.0))
}

/// The core's scan of a batch read with these options, remote files read
/// through the package's storage (`fallback` keeps a `pyarrow.fs` exception).
fn scan_of(options: &ScanOptions, fallback: &Arc<PyFileSystemStorage>) -> PyResult<Scan> {
    let scan = options.scan().map_err(|e| PyValueError::new_err(e.0))?;
    Ok(scan.resolver(python_resolver(fallback.clone())))
}

/// The Python exception of a planning or reading failure: a `pyarrow.fs`
/// exception as it was raised, a decode error with its positions in the file
/// (the caller names the file), a missing file as `FileNotFoundError`.
fn to_py(py: Python<'_>, e: ScanError, fallback: &PyFileSystemStorage) -> PyErr {
    match (e, fallback.take_error()) {
        (ScanError::Storage(_) | ScanError::List(ListError::Storage(_)), Some(raised)) => raised,
        (ScanError::Decode { error, .. }, _) => super::errors::to_py(py, &error),
        (ScanError::List(ListError::NotFound(text)), _) => PyFileNotFoundError::new_err(text),
        (ScanError::List(ListError::PermissionDenied(text)), _) => PyPermissionError::new_err(text),
        (ScanError::List(ListError::Tiered(problem, _)), _) => super::listing::tiered_error(&problem),
        (ScanError::Tiered { object, error }, _) => super::tiered::to_py(py, &object, &error),
        (ScanError::Storage(e), _) => super::storage::to_py(e),
        (e, _) => PyValueError::new_err(e.to_string()),
    }
}

/// Plan a batch read of the `kafka-log` source (see the stub).
#[pyfunction]
#[pyo3(signature = (options, filters, default_min_partitions))]
fn _spark_plan_tasks<'py>(
    py: Python<'py>,
    options: Vec<(String, String)>,
    filters: Vec<Filter<'py>>,
    default_min_partitions: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let options = options_of(options)?;
    let fallback = Arc::new(PyFileSystemStorage::resolving());
    let mut scan = scan_of(&options, &fallback)?;
    let predicates = filters
        .into_iter()
        .map(|(column, op, literals, negated)| predicate_of(column, &op, &literals, negated))
        .collect::<PyResult<Vec<_>>>()?;
    if !predicates.is_empty() {
        scan = scan.record_filter(translate(&predicates).0);
    }
    let context = scan.context().map_err(|e| to_py(py, e, &fallback))?;
    let plan = py
        .detach(|| scan.plan_with(&context))
        .map_err(|e| to_py(py, e, &fallback))?;
    let tasks = py.detach(|| tasks_of_plan(&plan, &options, default_min_partitions, split_work, &context));
    let d = PyDict::new(py);
    d.set_item("tasks", task_list(py, &tasks)?)?;
    d.set_item("partitions", plan.partitions.len())?;
    d.set_item("index_warnings", &tasks.index_warnings)?;
    Ok(d)
}

/// Tasks as `_spark_plan_tasks` gives them: per task, its splits as tuples (see the stub).
fn task_list<'py>(py: Python<'py>, tasks: &Tasks) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for task in &tasks.tasks {
        let splits = PyList::empty(py);
        for split in task {
            splits.append((
                PyBytes::new(py, &split.to_bytes()),
                split.path.as_str(),
                split.topic.as_str(),
                split.partition,
                split.start,
                split.end,
                split.size,
                tasks.starts_at_index(split),
            ))?;
        }
        out.append(splits)?;
    }
    Ok(out)
}

/// Plan the micro-batch of a `kafka-log` stream from `start` to `end`
/// (offsets JSON) with the driver's state, as the JVM source plans its
/// micro-batches, into tasks as a batch read's are (see the stub).
#[pyfunction]
fn _spark_stream_tasks<'py>(
    py: Python<'py>,
    state: &Bound<'py, StreamState>,
    start: &str,
    end: &str,
    options: Vec<(String, String)>,
    default_min_partitions: i64,
) -> PyResult<Bound<'py, PyList>> {
    let options = options_of(options)?;
    let (begin, until) = (offsets_of(start)?, offsets_of(end)?);
    let mut state = state.borrow_mut();
    let planned = state.core.micro_batch(&begin, &until);
    let splits = planned.map_err(|e| state.error(py, e))?;
    let fallback = Arc::new(PyFileSystemStorage::resolving());
    let context = read_context(py, &options, &fallback, 1)?;
    // warnings of untrusted indexes are the batch read's; a micro-batch reads such a segment whole
    let tasks = py.detach(|| tasks_of(&splits, &options, default_min_partitions, split_work, &context));
    task_list(py, &tasks)
}

fn offsets_of(text: &str) -> PyResult<Offsets> {
    offsets_from_json(text).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// What readers of a planned split need under these options (decoding on
/// `threads` threads, keys, storage): the bounds come with the split, so the
/// options' offset and time bounds (a stream's `startingOffsets` latest
/// among them) play no part.
fn read_context(
    py: Python<'_>,
    options: &ScanOptions,
    fallback: &Arc<PyFileSystemStorage>,
    threads: usize,
) -> PyResult<ReadContext> {
    let scan = options.split_scan().map_err(|e| PyValueError::new_err(e.0))?;
    scan.threads(threads)
        .resolver(python_resolver(fallback.clone()))
        .context()
        .map_err(|e| to_py(py, e, fallback))
}

/// The core's read of one planned split (see `_spark_read_split`).
#[pyclass(module = "kafkabatch._kafkabatch")]
struct SplitRead {
    reader: Option<ScanReader>,
    fallback: Arc<PyFileSystemStorage>,
    report: Option<SplitReport>,
    index_warnings: Vec<String>,
}

#[pymethods]
impl SplitRead {
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
                Err(to_py(py, e, &self.fallback))
            }
            None => {
                self.report = reader.take_finished().pop();
                self.index_warnings = reader.stats().index_warnings.clone();
                self.reader = None;
                Ok(None)
            }
        }
    }

    /// Once read to its end: whether the split lost batches or bytes, the
    /// line saying what it found (the source's PERMISSIVE log), and the
    /// texts of the index warnings; None before.
    fn report(&self) -> Option<(bool, String, Vec<String>)> {
        let r = self.report.as_ref()?;
        Some((r.lost_any(), r.describe(), self.index_warnings.clone()))
    }
}

/// Read one split planned by `_spark_plan_tasks` with the source's options (see the stub).
#[pyfunction]
fn _spark_read_split(
    py: Python<'_>,
    split: &[u8],
    options: Vec<(String, String)>,
    threads: usize,
) -> PyResult<SplitRead> {
    let split = Split::from_bytes(split).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let options = options_of(options)?;
    let fallback = Arc::new(PyFileSystemStorage::resolving());
    let context = read_context(py, &options, &fallback, threads)?;
    Ok(SplitRead {
        reader: Some(ScanReader::new(vec![split], context)),
        fallback,
        report: None,
        index_warnings: Vec::new(),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SplitRead>()?;
    m.add_function(wrap_pyfunction!(_spark_plan_tasks, m)?)?;
    m.add_function(wrap_pyfunction!(_spark_stream_tasks, m)?)?;
    m.add_function(wrap_pyfunction!(_spark_read_split, m)?)
}
