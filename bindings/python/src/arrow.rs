//! Arrow out through the PyCapsule interface, and `decode()`.

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use arrow_array::ffi::FFI_ArrowArray;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, RecordBatch, RecordBatchIterator, RecordBatchReader, StructArray};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::SchemaRef;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use super::errors::to_py;
use super::input::Input;
use super::values::ValueParser;
use kafkabatch::arrow_out::{schema, view_schema};
use kafkabatch::batch::WalkEnd;
use kafkabatch::decode::{self, DEFAULT_MAX_DECOMPRESSED_SIZE};
use kafkabatch::values::PARSE_CHUNK_BYTES;

/// The output schema, exported with `__arrow_c_schema__`.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct ArrowSchema {
    /// Key and value as `binary_view` (`decode(..., binary_view=True)`).
    binary_view: bool,
}

#[pymethods]
impl ArrowSchema {
    #[new]
    #[pyo3(signature = (binary_view=false))]
    fn new(binary_view: bool) -> Self {
        ArrowSchema { binary_view }
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = if self.binary_view { view_schema() } else { schema() };
        let ffi = FFI_ArrowSchema::try_from(schema.as_ref()).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        PyCapsule::new_with_value(py, ffi, c"arrow_schema")
    }
}

/// Decoded record batches and what the walk found, handed to Arrow
/// consumers once through `__arrow_c_stream__`.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct DecodedStream {
    stream: ArrowStream,
    /// Chunks handed out by `_export_arrays`, alive until imported. Filled
    /// once and never grown after, so the addresses handed out stay valid.
    exported: Mutex<Vec<FFI_ArrowArray>>,
    /// Batches decoded and records produced.
    #[pyo3(get)]
    batches: usize,
    #[pyo3(get)]
    records: usize,
    /// Batches hidden by read_committed.
    #[pyo3(get)]
    hidden_batches: usize,
    /// Batches dropped under on_error="skip", as exception instances.
    #[pyo3(get)]
    skipped: Vec<Py<PyAny>>,
    #[pyo3(get)]
    skipped_bytes: usize,
    /// Bytes after the last complete batch (an incomplete tail or broken framing).
    #[pyo3(get)]
    trailing_bytes: usize,
    /// "clean", "truncated" or "broken".
    #[pyo3(get)]
    end: &'static str,
    /// Why the framing broke (under on_error="skip"), as an exception instance.
    #[pyo3(get)]
    end_error: Option<Py<PyAny>>,
    /// Some chunk's values did not parse with the `values` parser given to
    /// `decode`: the chunks are not all parsed, and the caller parses the
    /// column again to name the bad record.
    #[pyo3(get)]
    values_failed: bool,
}

#[pymethods]
impl DecodedStream {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The protocol lets a producer ignore the requested schema; ours is fixed.
        let _ = requested_schema;
        self.stream.capsule(py)
    }

    /// The chunks as C Data Interface `ArrowArray` structs (of the schema's
    /// struct type) held by this stream, by address, for
    /// `pyarrow.RecordBatch._import_from_c(address, SCHEMA)`. With the schema
    /// already imported this costs about half of reading the C stream, which
    /// counts when a fetch is decoded per call. Importing moves an array out
    /// (the struct is marked released); the rest are released with the stream.
    fn _export_arrays(&self) -> PyResult<Vec<usize>> {
        let chunks = self.stream.batches()?;
        let mut exported = self
            .exported
            .lock()
            .map_err(|_| PyRuntimeError::new_err("stream lock poisoned"))?;
        *exported = chunks
            .into_iter()
            .map(|batch| FFI_ArrowArray::new(&StructArray::from(batch).into_data()))
            .collect();
        Ok(exported
            .iter()
            .map(|array| std::ptr::from_ref::<FFI_ArrowArray>(array).addr())
            .collect())
    }
}

/// What taking a one-shot stream (or its chunks) a second time raises.
fn already_consumed() -> PyErr {
    PyRuntimeError::new_err("this stream was already consumed")
}

/// An Arrow C stream handed to one consumer through `__arrow_c_stream__`
/// (`pyarrow.RecordBatchReader.from_stream`, `pyarrow.table`, polars...);
/// a second take raises `RuntimeError`.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct ArrowStream {
    reader: Mutex<Option<Box<dyn RecordBatchReader + Send>>>,
}

impl ArrowStream {
    /// The batches of `reader`, read as the consumer pulls them.
    pub(crate) fn new(reader: Box<dyn RecordBatchReader + Send>) -> Self {
        ArrowStream {
            reader: Mutex::new(Some(reader)),
        }
    }

    /// `chunks`, of `schema`.
    pub(crate) fn of_batches(chunks: Vec<RecordBatch>, schema: SchemaRef) -> Self {
        ArrowStream::new(Box::new(RecordBatchIterator::new(chunks.into_iter().map(Ok), schema)))
    }

    /// The reader, once: every later take raises `RuntimeError`.
    fn take(&self) -> PyResult<Box<dyn RecordBatchReader + Send>> {
        self.reader
            .lock()
            .map_err(|_| PyRuntimeError::new_err("stream lock poisoned"))?
            .take()
            .ok_or_else(already_consumed)
    }

    /// The stream as an `arrow_array_stream` capsule, once.
    pub(crate) fn capsule<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(self.take()?), c"arrow_array_stream")
    }

    /// The stream's batches read to its end, once (instead of the capsule).
    pub(crate) fn batches(&self) -> PyResult<Vec<RecordBatch>> {
        self.take()?
            .collect::<Result<_, _>>()
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }
}

#[pymethods]
impl ArrowStream {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // the schema is fixed
        self.capsule(py)
    }
}

/// Decode every batch of `data` into Arrow record batches (see `kafkabatch.decode`).
#[pyfunction]
#[pyo3(signature = (data, *, topic=None, partition=None, validate_crc=true, include_control=false, on_error="raise", max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, isolation="read_uncommitted", aborted_transactions=None, hide_open_transactions=None, threads=None, start=0, end=None, binary_view=false, values=None))]
#[pyo3(name = "decode")]
#[allow(clippy::too_many_arguments)]
fn decode_py(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    topic: Option<String>,
    partition: Option<i32>,
    validate_crc: bool,
    include_control: bool,
    on_error: &str,
    max_decompressed_size: usize,
    isolation: &str,
    aborted_transactions: Option<Vec<(i64, i64)>>,
    hide_open_transactions: Option<bool>,
    threads: Option<usize>,
    start: usize,
    end: Option<usize>,
    binary_view: bool,
    values: Option<Bound<'_, ValueParser>>,
) -> PyResult<DecodedStream> {
    let (mut options, mode) = super::options(
        validate_crc,
        include_control,
        on_error,
        max_decompressed_size,
        isolation,
        aborted_transactions,
        hide_open_transactions,
    )?;
    options.threads = match threads {
        Some(0) => {
            return Err(PyValueError::new_err(
                "threads must be at least 1 (or None for automatic)",
            ))
        }
        Some(n) => n,
        None => 0,
    };
    if mode == "keep" {
        return Err(PyValueError::new_err(
            "decode() takes on_error='raise' or 'skip'; 'keep' is for iter_batches()",
        ));
    }
    let input = Input::new(data)?;
    let len = input.as_slice().len();
    let end = end.unwrap_or(len);
    if start > end || end > len {
        return Err(PyValueError::new_err(format!(
            "start {start} and end {end} must satisfy 0 <= start <= end <= {len}"
        )));
    }
    // With a value parser, each chunk's values are parsed as it is cut.
    let values_failed = AtomicBool::new(false);
    let failed = &values_failed;
    let parse = values
        .as_ref()
        .map(Bound::get)
        .map(|parser| move |chunk| parser.parse_chunk(chunk, failed));
    let step = parse.as_ref().map(|parse| decode::ChunkStep {
        chunk_bytes: PARSE_CHUNK_BYTES,
        apply: parse,
    });
    let result = if binary_view {
        let buffer = input.into_arrow_buffer();
        py.detach(|| {
            decode::decode_range_views(
                &buffer,
                start,
                end,
                topic.as_deref(),
                partition,
                &options,
                step.as_ref(),
            )
        })
    } else {
        let bytes = input.as_slice();
        py.detach(|| decode::decode_range(bytes, start, end, topic.as_deref(), partition, &options, step.as_ref()))
    };
    let out = result.map_err(|e| to_py(py, &e))?;
    let trailing_bytes = match &out.end {
        WalkEnd::Clean => 0,
        WalkEnd::Truncated { len, .. } => *len,
        WalkEnd::Broken(e) => end - e.batch_position,
    };
    // binary or binary_view, as decoded; there is always a chunk.
    let stream_schema = out.chunks.first().map_or_else(schema, RecordBatch::schema);
    Ok(DecodedStream {
        stream: ArrowStream::of_batches(out.chunks, stream_schema),
        values_failed: values_failed.into_inner(),
        exported: Mutex::new(Vec::new()),
        batches: out.batches,
        records: out.records,
        hidden_batches: out.hidden_batches,
        skipped: out
            .skipped
            .iter()
            .map(|e| to_py(py, e).into_value(py).into_any())
            .collect(),
        skipped_bytes: out.skipped_bytes,
        trailing_bytes,
        end_error: match &out.end {
            WalkEnd::Broken(e) => Some(to_py(py, e).into_value(py).into_any()),
            _ => None,
        },
        end: match out.end {
            WalkEnd::Clean => "clean",
            WalkEnd::Truncated { .. } => "truncated",
            WalkEnd::Broken(_) => "broken",
        },
    })
}

/// Bytes of the complete batches at the start of `data` (Kafka's `validBytes`).
#[pyfunction]
fn valid_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
    let input = Input::new(data)?;
    let bytes = input.as_slice();
    Ok(py.detach(|| kafkabatch::batch::valid_bytes(bytes)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArrowSchema>()?;
    m.add_class::<ArrowStream>()?;
    m.add_class::<DecodedStream>()?;
    m.add_function(wrap_pyfunction!(decode_py, m)?)?;
    m.add_function(wrap_pyfunction!(valid_bytes, m)?)?;
    Ok(())
}
