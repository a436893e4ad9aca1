//! `encode()` and `control_batch()`: Arrow columns in, Kafka batches out.
//!
//! `kafkabatch.encode` (Python) normalises whatever it is given into one
//! Arrow table of known column types (see `_encode.py`) and hands it over
//! through `__arrow_c_stream__`; here the columns are borrowed straight from
//! the Arrow buffers into `RecordRef`s and encoded with the GIL released. No
//! Python object is made per record.

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{Array, Int64Array, LargeBinaryArray, LargeListArray, LargeStringArray, RecordBatch, StructArray};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule};

use kafkabatch::compression::{Codec, CompressOptions};
use kafkabatch::encode::{
    control_batch, ControlKind, EncodeError, EncodeOptions, Encoder, HeaderRef, RecordRef, TimestampType,
};

/// Read every record batch of an object's `__arrow_c_stream__`.
pub(crate) fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("__arrow_c_stream__ did not return a PyCapsule"))?;
    const NAME: &std::ffi::CStr = c"arrow_array_stream";
    if !capsule.is_valid_checked(Some(NAME)) {
        return Err(PyTypeError::new_err(
            "__arrow_c_stream__ returned a capsule not named 'arrow_array_stream', or an empty one",
        ));
    }
    let ptr = capsule
        .pointer_checked(Some(NAME))?
        .cast::<FFI_ArrowArrayStream>()
        .as_ptr();
    // SAFETY: a capsule named "arrow_array_stream" holds an ArrowArrayStream
    // (Arrow PyCapsule interface); `from_raw` moves it out and marks the
    // original released, so the capsule's destructor does not free it again.
    let stream = unsafe { FFI_ArrowArrayStream::from_raw(ptr) };
    let reader = RecordBatchStreamReader::try_new(stream)
        .map_err(|e| PyValueError::new_err(format!("cannot import the Arrow stream: {e}")))?;
    reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PyValueError::new_err(format!("cannot read the Arrow stream: {e}")))
}

/// The headers column, taken apart.
struct HeaderColumns<'a> {
    list: &'a LargeListArray,
    entries: &'a StructArray,
    key_offsets: &'a [i64],
    key_data: &'a [u8],
    keys: &'a LargeStringArray,
    values: &'a LargeBinaryArray,
}

/// One batch's columns, typed.
struct Columns<'a> {
    rows: usize,
    key: Option<&'a LargeBinaryArray>,
    value: &'a LargeBinaryArray,
    timestamp: Option<&'a Int64Array>,
    headers: Option<HeaderColumns<'a>>,
}

fn expect<'a, T: 'static>(batch: &'a RecordBatch, name: &str, want: &str) -> Result<Option<&'a T>, String> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(col) => col
            .as_any()
            .downcast_ref::<T>()
            .map(Some)
            .ok_or_else(|| format!("column {name:?} must be {want}, not {}", col.data_type())),
    }
}

fn columns(batch: &RecordBatch) -> Result<Columns<'_>, String> {
    let value = expect::<LargeBinaryArray>(batch, "value", "large_binary")?
        .ok_or_else(|| "column \"value\" is missing".to_string())?;
    let key = expect::<LargeBinaryArray>(batch, "key", "large_binary")?;
    let timestamp = expect::<Int64Array>(batch, "timestamp", "int64")?;
    if timestamp.is_some_and(|t| t.null_count() > 0) {
        return Err("column \"timestamp\" must not hold nulls here (fill them with -1)".into());
    }
    let want = "large_list<struct<key: large_string, value: large_binary>>";
    let headers = match expect::<LargeListArray>(batch, "headers", want)? {
        None => None,
        Some(list) => {
            let entries = list
                .values()
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| format!("column \"headers\" must be {want}"))?;
            let (Some(keys), Some(values)) = (entries.column_by_name("key"), entries.column_by_name("value")) else {
                return Err(format!("column \"headers\" must be {want}"));
            };
            let keys = keys
                .as_any()
                .downcast_ref::<LargeStringArray>()
                .ok_or_else(|| format!("column \"headers\" must be {want}"))?;
            let values = values
                .as_any()
                .downcast_ref::<LargeBinaryArray>()
                .ok_or_else(|| format!("column \"headers\" must be {want}"))?;
            Some(HeaderColumns {
                list,
                entries,
                key_offsets: keys.value_offsets(),
                key_data: keys.value_data(),
                keys,
                values,
            })
        }
    };
    Ok(Columns {
        rows: batch.num_rows(),
        key,
        value,
        timestamp,
        headers,
    })
}

/// Why encoding stopped.
enum Failure {
    Encode(EncodeError),
    /// A header the encoder cannot take (null entry, null or non-UTF-8 key).
    Header {
        index: u64,
        reason: String,
    },
}

impl From<EncodeError> for Failure {
    fn from(e: EncodeError) -> Self {
        Failure::Encode(e)
    }
}

/// Rough output size, to allocate once.
fn estimate(cols: &[Columns<'_>], codec: Codec) -> usize {
    let mut total = 0usize;
    for c in cols {
        let data = |offsets: &[i64]| (offsets[offsets.len() - 1] - offsets[0]).max(0) as usize;
        total += data(c.value.value_offsets()) + c.key.map_or(0, |k| data(k.value_offsets())) + 16 * c.rows;
        if let Some(h) = &c.headers {
            total += data(h.key_offsets) + data(h.values.value_offsets()) + 4 * h.keys.len();
        }
    }
    if codec == Codec::None {
        total + 4096
    } else {
        total / 3 + 4096
    }
}

fn encode_columns(cols: &[Columns<'_>], opts: &EncodeOptions) -> Result<Vec<u8>, Failure> {
    let mut enc = Encoder::with_buffer(opts, Vec::with_capacity(estimate(cols, opts.codec)))?;
    let mut index = 0u64;
    for c in cols {
        let mut headers: Vec<HeaderRef<'_>> = Vec::new();
        for i in 0..c.rows {
            headers.clear();
            if let Some(h) = &c.headers {
                if h.list.is_valid(i) {
                    let offsets = h.list.value_offsets();
                    let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                    for j in start..end {
                        let bad = |reason: String| Failure::Header { index, reason };
                        if h.entries.is_null(j) {
                            return Err(bad(format!(
                                "header {} is null (a header needs a string key)",
                                j - start
                            )));
                        }
                        if h.keys.is_null(j) {
                            return Err(bad(format!(
                                "header {} has a null key (keys must be strings)",
                                j - start
                            )));
                        }
                        let raw = &h.key_data[h.key_offsets[j] as usize..h.key_offsets[j + 1] as usize];
                        let key = std::str::from_utf8(raw)
                            .map_err(|e| bad(format!("header {} key is not UTF-8: {e}", j - start)))?;
                        let value = if h.values.is_null(j) {
                            None
                        } else {
                            Some(h.values.value(j))
                        };
                        headers.push((key, value));
                    }
                }
            }
            let record = RecordRef {
                key: c.key.and_then(|k| k.is_valid(i).then(|| k.value(i))),
                value: c.value.is_valid(i).then(|| c.value.value(i)),
                timestamp: c.timestamp.map_or(-1, |t| t.value(i)),
                headers: &headers,
            };
            enc.push(&record)?;
            index += 1;
        }
    }
    let (out, _summary) = enc.finish()?;
    Ok(out)
}

/// The Python name of an `EncodeOptions` field.
fn python_argument(argument: &str) -> &str {
    match argument {
        "codec" => "compression",
        other => other,
    }
}

/// A Python exception for an encoding failure, with `argument` (the option
/// or column it is about, or None) and `record` (the record index, or None).
fn to_py(py: Python<'_>, failure: Failure) -> PyErr {
    let (err, argument, record): (PyErr, Option<String>, Option<u64>) = match failure {
        Failure::Header { index, reason } => (
            PyValueError::new_err(format!("record {index}: column 'headers': {reason}")),
            Some("headers".into()),
            Some(index),
        ),
        Failure::Encode(EncodeError::InvalidOption { argument, reason }) => {
            let name = python_argument(argument);
            (
                PyValueError::new_err(format!("invalid {name}: {reason}")),
                Some(name.to_string()),
                None,
            )
        }
        Failure::Encode(EncodeError::InvalidRecord { index, field, reason }) => {
            let message = match field {
                "key" | "value" | "timestamp" | "headers" => format!("record {index}: column '{field}': {reason}"),
                _ => format!("record {index}: invalid {field}: {reason}"),
            };
            (PyValueError::new_err(message), Some(field.to_string()), Some(index))
        }
        Failure::Encode(e @ EncodeError::BatchTooLarge { .. }) => (
            PyValueError::new_err(format!(
                "{e}; use records_per_batch or max_batch_bytes for smaller batches"
            )),
            None,
            None,
        ),
        Failure::Encode(e @ EncodeError::Compression { .. }) => {
            (PyRuntimeError::new_err(e.to_string()), Some("compression".into()), None)
        }
    };
    let value = err.value(py);
    let _ = value.setattr("argument", argument);
    let _ = value.setattr("record", record);
    err
}

fn codec_from_name(name: &str) -> PyResult<Codec> {
    Codec::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown compression {name:?}; use one of 'none', 'gzip', 'snappy', 'lz4', 'zstd'"
        ))
    })
}

fn timestamp_type_from_name(name: &str) -> PyResult<TimestampType> {
    match name {
        "create" => Ok(TimestampType::CreateTime),
        "log_append" => Ok(TimestampType::LogAppendTime),
        other => Err(PyValueError::new_err(format!(
            "timestamp_type must be 'create' or 'log_append', not {other:?}"
        ))),
    }
}

/// Encode the records of an Arrow stream (columns `value` large_binary;
/// optional `key` large_binary, `timestamp` int64 ms without nulls, `headers`
/// large_list<struct<key: large_string, value: large_binary>>) into Kafka
/// batches. See `kafkabatch.encode`.
#[pyfunction]
#[pyo3(signature = (records, *, magic=2, compression="none", compression_level=None, snappy_xerial=false, base_offset=0, records_per_batch=None, max_batch_bytes=None, producer_id=-1, producer_epoch=-1, base_sequence=-1, transactional=false, partition_leader_epoch=-1, timestamp_type="create", log_append_time=None))]
#[allow(clippy::too_many_arguments)]
fn encode<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    magic: i8,
    compression: &str,
    compression_level: Option<i32>,
    snappy_xerial: bool,
    base_offset: i64,
    records_per_batch: Option<usize>,
    max_batch_bytes: Option<usize>,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    partition_leader_epoch: i32,
    timestamp_type: &str,
    log_append_time: Option<i64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let opts = EncodeOptions {
        magic,
        codec: codec_from_name(compression)?,
        compress: CompressOptions {
            level: compression_level,
            snappy_xerial,
        },
        base_offset,
        records_per_batch,
        max_batch_bytes,
        producer_id,
        producer_epoch,
        base_sequence,
        transactional,
        partition_leader_epoch,
        timestamp_type: timestamp_type_from_name(timestamp_type)?,
        log_append_time,
    };
    let batches = import_stream(records)?;
    let cols = batches
        .iter()
        .map(columns)
        .collect::<Result<Vec<_>, _>>()
        .map_err(PyTypeError::new_err)?;
    let out = py.detach(|| encode_columns(&cols, &opts)).map_err(|f| to_py(py, f))?;
    Ok(PyBytes::new(py, &out))
}

/// One control batch (a transaction marker). See `kafkabatch.control_batch`.
#[pyfunction(name = "control_batch")]
#[pyo3(signature = (kind, producer_id, producer_epoch, base_offset, coordinator_epoch=0, timestamp=-1, partition_leader_epoch=-1))]
#[allow(clippy::too_many_arguments)]
fn control_batch_py<'py>(
    py: Python<'py>,
    kind: &str,
    producer_id: i64,
    producer_epoch: i16,
    base_offset: i64,
    coordinator_epoch: i32,
    timestamp: i64,
    partition_leader_epoch: i32,
) -> PyResult<Bound<'py, PyBytes>> {
    let kind = match kind {
        "commit" => ControlKind::Commit,
        "abort" => ControlKind::Abort,
        other => {
            return Err(PyValueError::new_err(format!(
                "kind must be 'commit' or 'abort', not {other:?}"
            )))
        }
    };
    let check = |ok: bool, argument: &str, value: i64, want: &str| {
        if ok {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!("invalid {argument}: {value} ({want})")))
        }
    };
    check(
        producer_id >= 0,
        "producer_id",
        producer_id,
        "a marker needs the producer's id, >= 0",
    )?;
    check(
        producer_epoch >= 0,
        "producer_epoch",
        producer_epoch.into(),
        "a marker needs the producer's epoch, >= 0",
    )?;
    check(base_offset >= 0, "base_offset", base_offset, "offsets start at 0")?;
    check(
        timestamp >= -1,
        "timestamp",
        timestamp,
        "must be -1, meaning none, or >= 0",
    )?;
    check(
        partition_leader_epoch >= -1,
        "partition_leader_epoch",
        partition_leader_epoch.into(),
        "must be -1 or >= 0",
    )?;
    let mut out = Vec::with_capacity(80);
    control_batch(
        kind,
        producer_id,
        producer_epoch,
        base_offset,
        coordinator_epoch,
        timestamp,
        partition_leader_epoch,
        &mut out,
    );
    Ok(PyBytes::new(py, &out))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(encode, m)?)?;
    m.add_function(wrap_pyfunction!(control_batch_py, m)?)?;
    Ok(())
}
