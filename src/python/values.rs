//! `parse_values()`: a binary column in, a typed column out (see `kafkabatch.parse_values`).

use std::sync::Mutex;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{DataType, Field, Schema};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use super::arrow::{stream_capsule, take_once};
use super::encode::import_stream;
use super::errors::KafkaBatchError;
use crate::values::{parse_column, OnValueError, ValueFormat};

create_exception!(
    kafkabatch,
    ValueDecodeError,
    KafkaBatchError,
    "A record's value (or key) could not be parsed in the requested format."
);

/// Parsed columns, handed to Arrow consumers once through `__arrow_c_stream__`.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct ParsedColumn {
    chunks: Mutex<Option<Vec<RecordBatch>>>,
    data_type: DataType,
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
        let chunks = take_once(&self.chunks)?;
        let schema = std::sync::Arc::new(Schema::new(vec![Field::new("value", self.data_type.clone(), true)]));
        stream_capsule(py, chunks, schema)
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

/// Parse the first column of `column` (an object with `__arrow_c_stream__`).
#[pyfunction]
#[pyo3(signature = (column, *, format, data_type=None, avro_schema=None, writers=None, confluent=false, on_error="raise", threads=None))]
#[allow(clippy::too_many_arguments)]
fn parse_values(
    py: Python<'_>,
    column: &Bound<'_, PyAny>,
    format: &str,
    data_type: Option<&Bound<'_, PyAny>>,
    avro_schema: Option<String>,
    writers: Option<Vec<(u32, String)>>,
    confluent: bool,
    on_error: &str,
    threads: Option<usize>,
) -> PyResult<ParsedColumn> {
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
        other => {
            return Err(PyValueError::new_err(format!(
                "format must be 'string', 'json' or 'avro', not {other:?}"
            )))
        }
    }
    .map_err(PyValueError::new_err)?;
    let data_type = format.data_type().map_err(PyValueError::new_err)?;
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
        .detach(|| parse_column(&format, &arrays, on_error, threads.unwrap_or(0)))
        .map_err(|e| {
            let err = ValueDecodeError::new_err(format!("row {}: {}", e.row, e.reason));
            let value = err.value(py);
            let _ = value.setattr("row", e.row);
            let _ = value.setattr("reason", e.reason.as_str());
            err
        })?;
    let schema = std::sync::Arc::new(Schema::new(vec![Field::new("value", data_type.clone(), true)]));
    let chunks = parsed
        .into_iter()
        .map(|array| RecordBatch::try_new(schema.clone(), vec![array]))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PyRuntimeError::new_err(format!("parsed values do not fit their type: {e}")))?;
    Ok(ParsedColumn {
        chunks: Mutex::new(Some(chunks)),
        data_type,
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ValueDecodeError", m.py().get_type::<ValueDecodeError>())?;
    m.add_class::<ParsedColumn>()?;
    m.add_function(wrap_pyfunction!(parse_values, m)?)?;
    Ok(())
}
