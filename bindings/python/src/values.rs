//! `value_parser()`: a binary column in, a typed column out (see
//! `kafkabatch.parse_values`), or each chunk of a decode parsed as it is cut.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{DataType, Field, FieldRef, Schema};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use super::arrow::ArrowStream;
use super::encode::import_stream;
use super::errors::KafkaBatchError;
use kafkabatch::scan::{BadValue, TypedColumn};
use kafkabatch::values::headers;
use kafkabatch::values::protobuf::{frames_of, ProtoSource, Protobuf, SchemaFiles, MAX_RECURSION};
use kafkabatch::values::{parse_column, OnValueError, ValueFormat};

/// A schema file from Python: `(import name, kind, bytes)`, kind `"proto"`
/// (text), `"descriptor"` (a `FileDescriptorProto`) or `"descriptor_set"`.
type PyProtoFile = (String, String, Vec<u8>);

fn proto_files(files: Vec<PyProtoFile>) -> PyResult<SchemaFiles> {
    files
        .into_iter()
        .map(|(name, kind, bytes)| {
            let source = match kind.as_str() {
                "proto" => ProtoSource::Text(
                    String::from_utf8(bytes).map_err(|_| PyValueError::new_err(format!("{name} is not UTF-8 text")))?,
                ),
                "descriptor" => ProtoSource::Descriptor(bytes),
                "descriptor_set" => ProtoSource::Set(bytes),
                other => return Err(PyValueError::new_err(format!("unknown Protobuf schema kind {other:?}"))),
            };
            Ok((name, source))
        })
        .collect()
}

fn proto_writers(writers: Vec<(u32, Vec<PyProtoFile>)>) -> PyResult<Vec<(u32, SchemaFiles)>> {
    writers
        .into_iter()
        .map(|(id, files)| Ok((id, proto_files(files)?)))
        .collect()
}

/// The full name of the message a column of Confluent-framed Protobuf values
/// is read as (see `Protobuf::confluent`).
#[pyfunction]
#[pyo3(signature = (writers, *, message=None, frames=None))]
fn protobuf_message(
    py: Python<'_>,
    writers: Vec<(u32, Vec<PyProtoFile>)>,
    message: Option<String>,
    frames: Option<Vec<(u32, Vec<i32>)>>,
) -> PyResult<String> {
    let writers = proto_writers(writers)?;
    let frames = frames.unwrap_or_default();
    py.detach(|| Protobuf::confluent(&writers, message.as_deref(), &frames, MAX_RECURSION))
        .map(|p| p.message_name().to_string())
        .map_err(PyValueError::new_err)
}

/// The distinct `(schema id, message indexes)` of the Confluent Protobuf
/// frames in the first column of `column` (an object with `__arrow_c_stream__`).
#[pyfunction]
fn protobuf_frames(py: Python<'_>, column: &Bound<'_, PyAny>) -> PyResult<Vec<(u32, Vec<i32>)>> {
    let batches = import_stream(column)?;
    py.detach(|| {
        let mut seen: Vec<(u32, Vec<i32>)> = Vec::new();
        for batch in &batches {
            if let Some(array) = batch.columns().first() {
                for frame in frames_of(array.as_ref())? {
                    if !seen.contains(&frame) {
                        seen.push(frame);
                    }
                }
            }
        }
        Ok::<_, String>(seen)
    })
    .map_err(PyValueError::new_err)
}

/// A schema GUID as UUID text (`8-4-4-4-12` hex digits), as the registry names it.
fn guid_text(guid: &[u8; 16]) -> String {
    let hex: String = guid.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The 16 bytes of a GUID given as UUID text (hyphens optional).
pub(crate) fn guid_bytes(text: &str) -> PyResult<[u8; 16]> {
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'-').collect();
    let bad = || PyValueError::new_err(format!("guid_ids: {text:?} is not a schema GUID (UUID text)"));
    if digits.len() != 32 {
        return Err(bad());
    }
    let mut guid = [0u8; 16];
    for (byte, pair) in guid.iter_mut().zip(digits.chunks(2)) {
        let pair = std::str::from_utf8(pair).map_err(|_| bad())?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
    }
    Ok(guid)
}

/// `column` and `headers` of each batch of `records` (an object with `__arrow_c_stream__`).
fn column_and_headers(records: &Bound<'_, PyAny>, column: &str) -> PyResult<Vec<(ArrayRef, ArrayRef)>> {
    import_stream(records)?
        .iter()
        .map(|batch| {
            let get = |name: &str| {
                batch
                    .column_by_name(name)
                    .cloned()
                    .ok_or_else(|| PyValueError::new_err(format!("the records have no {name} column")))
            };
            Ok((get(column)?, get("headers")?))
        })
        .collect()
}

/// The distinct schema GUIDs (UUID text) in the `column` schema-id headers of
/// `records`' `headers` column (see `kafkabatch::values::headers`).
#[pyfunction]
fn header_guids(py: Python<'_>, records: &Bound<'_, PyAny>, column: &str) -> PyResult<Vec<String>> {
    let batches = column_and_headers(records, "headers")?; // the headers column alone
    py.detach(|| {
        let mut guids = std::collections::BTreeSet::new();
        for (headers, _) in &batches {
            guids.extend(headers::header_guids(headers.as_ref(), column)?);
        }
        Ok::<_, String>(guids.iter().map(guid_text).collect())
    })
    .map_err(PyValueError::new_err)
}

/// `records`' `column` with the Confluent prefix of each row's schema-id
/// header put in front (`guid_ids`: the local ids of GUIDs, as UUID text);
/// `None` when no row has such a header.
#[pyfunction]
#[pyo3(signature = (records, column, guid_ids=None))]
fn header_frames(
    py: Python<'_>,
    records: &Bound<'_, PyAny>,
    column: &str,
    guid_ids: Option<BTreeMap<String, u32>>,
) -> PyResult<Option<ParsedColumn>> {
    let guid_ids = guid_ids
        .unwrap_or_default()
        .iter()
        .map(|(guid, id)| Ok((guid_bytes(guid)?, *id)))
        .collect::<PyResult<BTreeMap<_, _>>>()?;
    let batches = column_and_headers(records, column)?;
    let framed = py
        .detach(|| {
            let framed = batches
                .iter()
                .map(|(values, headers)| {
                    headers::with_header_frames(values.as_ref(), headers.as_ref(), column, &guid_ids)
                })
                .collect::<Result<Vec<_>, String>>()?;
            if framed.iter().all(Option::is_none) {
                return Ok(None);
            }
            // batches without such a header keep their values, as binary like the framed ones
            batches
                .iter()
                .zip(framed)
                .map(|((values, _), framed)| framed.map_or_else(|| headers::binary_column(values.as_ref(), column), Ok))
                .collect::<Result<Vec<_>, String>>()
                .map(Some)
        })
        .map_err(PyValueError::new_err)?;
    let Some(arrays) = framed else {
        return Ok(None);
    };
    let schema = std::sync::Arc::new(Schema::new(vec![Field::new("value", DataType::Binary, true)]));
    let chunks = arrays
        .into_iter()
        .map(|array| RecordBatch::try_new(schema.clone(), vec![array]))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PyRuntimeError::new_err(format!("framed values do not fit their type: {e}")))?;
    Ok(Some(ParsedColumn::new(chunks, DataType::Binary)))
}

create_exception!(
    kafkabatch,
    ValueDecodeError,
    KafkaBatchError,
    "A record's value (or key) could not be parsed in the requested format."
);

/// The `ValueDecodeError` of a value the core's reader could not parse, with
/// `row`, `reason`, `column`, `topic`, `partition` and `offset` set.
pub(crate) fn bad_value_error(py: Python<'_>, bad: &BadValue) -> PyErr {
    let err = ValueDecodeError::new_err(bad.to_string());
    let value = err.value(py);
    let _ = value.setattr("row", bad.row);
    let _ = value.setattr("reason", bad.reason.as_str());
    let _ = value.setattr("column", bad.column.as_str());
    let _ = value.setattr("topic", bad.topic.as_deref());
    let _ = value.setattr("partition", bad.partition);
    let _ = value.setattr("offset", bad.offset);
    err
}

/// Parsed columns, handed to Arrow consumers once through `__arrow_c_stream__`.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct ParsedColumn {
    stream: ArrowStream,
}

impl ParsedColumn {
    /// `chunks`, each a one-column batch named `value` of `data_type`.
    fn new(chunks: Vec<RecordBatch>, data_type: DataType) -> Self {
        let schema = Arc::new(Schema::new(vec![Field::new("value", data_type, true)]));
        ParsedColumn {
            stream: ArrowStream::of_batches(chunks, schema),
        }
    }
}

#[pymethods]
impl ParsedColumn {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        self.stream.capsule(py)
    }
}

/// The Arrow type behind an object's `__arrow_c_schema__` (a pyarrow type, field or schema).
fn import_type(obj: &Bound<'_, PyAny>) -> PyResult<DataType> {
    let capsule = obj.call_method0("__arrow_c_schema__")?;
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("__arrow_c_schema__ did not return a PyCapsule"))?;
    let ptr = capsule
        .pointer_checked(Some(c"arrow_schema"))?
        .cast::<FFI_ArrowSchema>();
    // SAFETY: a capsule named "arrow_schema" holds an ArrowSchema (Arrow
    // PyCapsule interface), alive as long as the capsule; it is only read.
    let ffi = unsafe { ptr.as_ref() };
    DataType::try_from(ffi).map_err(|e| PyValueError::new_err(format!("cannot import the Arrow type: {e}")))
}

/// How one column is parsed (see `ValueSpec` in `kafkabatch.values.spec`):
/// the format with its schemas compiled, made once per call and used either
/// on a column (`parse`) or by `decode(values=...)` on each chunk as it is
/// decoded.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct ValueParser {
    format: Arc<ValueFormat>,
    on_error: OnValueError,
    data_type: DataType,
}

/// A parser for `format` (`"string"`, `"json"`, `"avro"` or `"protobuf"`).
#[pyfunction]
#[pyo3(signature = (*, format, data_type=None, avro_schema=None, writers=None, confluent=false, on_error="raise", proto_files=None, proto_writers=None, message=None, max_recursion=None))]
#[allow(clippy::too_many_arguments)]
fn value_parser(
    py: Python<'_>,
    format: &str,
    data_type: Option<&Bound<'_, PyAny>>,
    avro_schema: Option<String>,
    writers: Option<Vec<(u32, String)>>,
    confluent: bool,
    on_error: &str,
    proto_files: Option<Vec<PyProtoFile>>,
    proto_writers: Option<Vec<(u32, Vec<PyProtoFile>)>>,
    message: Option<String>,
    max_recursion: Option<usize>,
) -> PyResult<ValueParser> {
    let on_error = match on_error {
        "raise" => OnValueError::Raise,
        "null" => OnValueError::Null,
        other => {
            return Err(PyValueError::new_err(format!(
                "on_value_error must be 'raise' or 'null', not {other:?}"
            )))
        }
    };
    let format = match format {
        "string" => Ok(ValueFormat::Utf8),
        "json" => {
            let data_type = data_type.ok_or_else(|| PyValueError::new_err("JSON values need a schema"))?;
            ValueFormat::json(import_type(data_type)?, confluent)
        }
        "avro" if confluent => {
            let writers = writers.unwrap_or_default();
            ValueFormat::avro_confluent(&writers, avro_schema.as_deref())
        }
        "avro" => {
            let schema = avro_schema.ok_or_else(|| PyValueError::new_err("plain Avro values need a schema"))?;
            ValueFormat::avro_plain(&schema)
        }
        "protobuf" => {
            let depth = max_recursion.unwrap_or(MAX_RECURSION);
            if confluent {
                let writers = self::proto_writers(proto_writers.unwrap_or_default())?;
                py.detach(|| Protobuf::confluent(&writers, message.as_deref(), &[], depth))
                    .map(ValueFormat::Protobuf)
            } else {
                let files = self::proto_files(
                    proto_files.ok_or_else(|| PyValueError::new_err("plain Protobuf values need a schema"))?,
                )?;
                let message = message
                    .ok_or_else(|| PyValueError::new_err("plain Protobuf values need the message's full name"))?;
                py.detach(|| Protobuf::plain(&files, &message, depth))
                    .map(ValueFormat::Protobuf)
            }
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "format must be 'string', 'json', 'avro' or 'protobuf', not {other:?}"
            )))
        }
    }
    .map_err(PyValueError::new_err)?;
    let data_type = format.data_type().map_err(PyValueError::new_err)?;
    Ok(ValueParser {
        format: Arc::new(format),
        on_error,
        data_type,
    })
}

#[pymethods]
impl ValueParser {
    /// Parse the first column of `column` (an object with `__arrow_c_stream__`).
    #[pyo3(signature = (column, *, threads=None))]
    fn parse(&self, py: Python<'_>, column: &Bound<'_, PyAny>, threads: Option<usize>) -> PyResult<ParsedColumn> {
        let batches = import_stream(column)?;
        let arrays: Vec<ArrayRef> = batches
            .iter()
            .map(|b| {
                b.columns()
                    .first()
                    .cloned()
                    .ok_or_else(|| PyValueError::new_err("the column stream has no column"))
            })
            .collect::<PyResult<_>>()?;
        let parsed = py
            .detach(|| parse_column(&self.format, &arrays, self.on_error, threads.unwrap_or(0)))
            .map_err(|e| {
                let err = ValueDecodeError::new_err(format!("row {}: {}", e.row, e.reason));
                let value = err.value(py);
                let _ = value.setattr("row", e.row);
                let _ = value.setattr("reason", e.reason.as_str());
                err
            })?;
        let schema = std::sync::Arc::new(Schema::new(vec![Field::new("value", self.data_type.clone(), true)]));
        let chunks = parsed
            .into_iter()
            .map(|array| RecordBatch::try_new(schema.clone(), vec![array]))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PyRuntimeError::new_err(format!("parsed values do not fit their type: {e}")))?;
        Ok(ParsedColumn::new(chunks, self.data_type.clone()))
    }
}

impl ValueParser {
    /// The core reader's parser of `column` with this format; `guid_ids`
    /// (Confluent-framed values: the local ids of schema GUIDs in the
    /// records' headers, as UUID text) makes it read the schema ids of the
    /// records' headers.
    pub(crate) fn typed_column(&self, column: &str, guid_ids: Option<BTreeMap<String, u32>>) -> PyResult<TypedColumn> {
        let header_frames = guid_ids
            .map(|ids| {
                ids.iter()
                    .map(|(guid, id)| Ok((guid_bytes(guid)?, *id)))
                    .collect::<PyResult<BTreeMap<_, _>>>()
            })
            .transpose()?;
        TypedColumn::new(column, self.format.clone(), self.on_error, header_frames).map_err(PyValueError::new_err)
    }

    /// `chunk` (decoded records) with its `value` column parsed. A chunk
    /// whose values fail to parse (under `on_value_error="raise"`), or whose
    /// parse panics, comes back as it was and sets `failed`: the caller then
    /// parses the whole table the column way, which names the first bad
    /// record. Once `failed` is set, later chunks are left as they are.
    pub(crate) fn parse_chunk(&self, chunk: RecordBatch, failed: &AtomicBool) -> RecordBatch {
        if failed.load(Relaxed) {
            return chunk;
        }
        let Ok(index) = chunk.schema().index_of("value") else {
            failed.store(true, Relaxed);
            return chunk;
        };
        let parsed = catch_unwind(AssertUnwindSafe(|| {
            let array = self.format.parse(chunk.column(index).as_ref(), 0, self.on_error).ok()?;
            let mut fields: Vec<FieldRef> = chunk.schema().fields().iter().cloned().collect();
            fields[index] = std::sync::Arc::new(Field::new("value", self.data_type.clone(), true));
            let mut columns = chunk.columns().to_vec();
            columns[index] = array;
            RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), columns).ok()
        }));
        match parsed {
            Ok(Some(parsed)) => parsed,
            _ => {
                failed.store(true, Relaxed);
                chunk
            }
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ValueDecodeError", m.py().get_type::<ValueDecodeError>())?;
    m.add_class::<ParsedColumn>()?;
    m.add_class::<ValueParser>()?;
    m.add_function(wrap_pyfunction!(value_parser, m)?)?;
    m.add_function(wrap_pyfunction!(protobuf_message, m)?)?;
    m.add_function(wrap_pyfunction!(protobuf_frames, m)?)?;
    m.add_function(wrap_pyfunction!(header_guids, m)?)?;
    m.add_function(wrap_pyfunction!(header_frames, m)?)?;
    Ok(())
}
