//! `decode_internal()`: the key and value columns of one of Kafka's internal
//! topics in, a table of typed records out (see `kafkabatch::kmsg`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use arrow_array::ffi::{from_ffi, FFI_ArrowArray};
use arrow_array::{
    make_array, Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, LargeBinaryArray, RecordBatch,
};
use arrow_schema::ffi::FFI_ArrowSchema;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use super::arrow::ArrowStream;
use kafkabatch::kmsg::{decode_internal as decode_rows, Definitions, Kind, NullRows, Payloads};

/// A decoded table, handed to Arrow consumers once through `__arrow_c_stream__`.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct InternalTable {
    stream: ArrowStream,
}

#[pymethods]
impl InternalTable {
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

/// An Arrow array from an object with `__arrow_c_array__` (a pyarrow
/// `Array`; a `ChunkedArray` is combined first).
fn import_array(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<ArrayRef> {
    let obj = if !obj.hasattr("__arrow_c_array__")? && obj.hasattr("combine_chunks")? {
        obj.call_method0("combine_chunks")?
    } else {
        obj.clone()
    };
    let pair = obj
        .call_method0("__arrow_c_array__")
        .map_err(|_| PyTypeError::new_err(format!("{what} must be an Arrow array (with __arrow_c_array__)")))?;
    let pair = pair
        .cast::<PyTuple>()
        .map_err(|_| PyTypeError::new_err("__arrow_c_array__ did not return a tuple"))?;
    let schema_capsule = pair.get_item(0)?;
    let array_capsule = pair.get_item(1)?;
    let schema_capsule = schema_capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("__arrow_c_array__ did not return PyCapsules"))?;
    let array_capsule = array_capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("__arrow_c_array__ did not return PyCapsules"))?;
    let schema_ptr = schema_capsule
        .pointer_checked(Some(c"arrow_schema"))?
        .cast::<FFI_ArrowSchema>();
    let array_ptr = array_capsule
        .pointer_checked(Some(c"arrow_array"))?
        .cast::<FFI_ArrowArray>()
        .as_ptr();
    // SAFETY: capsules named "arrow_schema"/"arrow_array" hold an ArrowSchema
    // and an ArrowArray (Arrow PyCapsule interface). The schema is only read;
    // the array is moved out and an empty (released) one left behind, so the
    // capsule's destructor does not release it twice.
    let (schema, array) = unsafe {
        let array = std::ptr::replace(array_ptr, FFI_ArrowArray::empty());
        (schema_ptr.as_ref(), array)
    };
    // SAFETY: the array and schema come from the same __arrow_c_array__ call.
    let data =
        unsafe { from_ffi(array, schema) }.map_err(|e| PyValueError::new_err(format!("cannot import {what}: {e}")))?;
    Ok(make_array(data))
}

/// Which binary type a keys or values column is (read in place).
enum Binary<'a> {
    Small(&'a BinaryArray),
    Large(&'a LargeBinaryArray),
    View(&'a BinaryViewArray),
    Null(usize),
}

fn binary<'a>(array: &'a ArrayRef, what: &str) -> PyResult<Binary<'a>> {
    let any = array.as_any();
    if let Some(a) = any.downcast_ref::<BinaryArray>() {
        Ok(Binary::Small(a))
    } else if let Some(a) = any.downcast_ref::<LargeBinaryArray>() {
        Ok(Binary::Large(a))
    } else if let Some(a) = any.downcast_ref::<BinaryViewArray>() {
        Ok(Binary::View(a))
    } else if array.null_count() == array.len() {
        Ok(Binary::Null(array.len()))
    } else {
        Err(PyTypeError::new_err(format!(
            "{what} must be a binary, large_binary or binary_view array, not {}",
            array.data_type()
        )))
    }
}

/// `decode_rows` with the keys and values read in place, whatever their binary types.
fn decode_binary(
    defs: &Definitions,
    kind: Kind,
    keys: &Binary<'_>,
    values: &Binary<'_>,
    control: Option<&[bool]>,
    json: bool,
) -> RecordBatch {
    fn with_values<K: Payloads + ?Sized>(
        defs: &Definitions,
        kind: Kind,
        keys: &K,
        values: &Binary<'_>,
        control: Option<&[bool]>,
        json: bool,
    ) -> RecordBatch {
        match values {
            Binary::Small(v) => decode_rows(defs, kind, keys, *v, control, json),
            Binary::Large(v) => decode_rows(defs, kind, keys, *v, control, json),
            Binary::View(v) => decode_rows(defs, kind, keys, *v, control, json),
            Binary::Null(n) => decode_rows(defs, kind, keys, &NullRows(*n), control, json),
        }
    }
    match keys {
        Binary::Small(k) => with_values(defs, kind, *k, values, control, json),
        Binary::Large(k) => with_values(defs, kind, *k, values, control, json),
        Binary::View(k) => with_values(defs, kind, *k, values, control, json),
        Binary::Null(n) => with_values(defs, kind, &NullRows(*n), values, control, json),
    }
}

fn builtin() -> &'static Definitions {
    static BUILTIN: OnceLock<Definitions> = OnceLock::new();
    BUILTIN.get_or_init(Definitions::builtin)
}

/// What a folder of definitions holds: its `*.json` files' names, sizes and
/// modification times (a changed file is read again).
type FolderState = Vec<(PathBuf, u64, Option<SystemTime>)>;
/// Definitions read from a folder, by folder, with the state they were read in.
type FolderCache = Mutex<HashMap<PathBuf, (FolderState, Arc<Definitions>)>>;

fn folder_state(dir: &Path) -> Result<FolderState, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut state: FolderState = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| {
            let meta = e.metadata().ok();
            (
                e.path(),
                meta.as_ref().map_or(0, |m| m.len()),
                meta.and_then(|m| m.modified().ok()),
            )
        })
        .collect();
    state.sort();
    Ok(state)
}

/// The definitions of `dir` (see `Definitions::with_dir`), read once per
/// folder state: a scan decodes batch after batch with the same folder.
fn with_dir(dir: &Path) -> Result<Arc<Definitions>, String> {
    static CACHE: OnceLock<FolderCache> = OnceLock::new();
    let state = folder_state(dir)?;
    let cache = CACHE.get_or_init(Default::default);
    if let Some((seen, defs)) = cache.lock().map_err(|_| "definitions cache poisoned")?.get(dir) {
        if *seen == state {
            return Ok(Arc::clone(defs));
        }
    }
    let defs = Arc::new(Definitions::with_dir(dir)?);
    let mut cache = cache.lock().map_err(|_| "definitions cache poisoned")?;
    if cache.len() >= 16 {
        cache.clear(); // a few folders at most in practice; never grows without bound
    }
    cache.insert(dir.to_path_buf(), (state, Arc::clone(&defs)));
    Ok(defs)
}

/// Decode the keys and values of one of Kafka's internal topics into typed
/// records (see `kafkabatch` docs, "Kafka's internal topics").
#[pyfunction]
#[pyo3(signature = (kind, keys, values, *, control=None, definitions=None, json=false))]
fn decode_internal(
    py: Python<'_>,
    kind: &str,
    keys: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
    control: Option<&Bound<'_, PyAny>>,
    definitions: Option<String>,
    json: bool,
) -> PyResult<InternalTable> {
    let parsed = Kind::parse(kind).filter(|k| Kind::TOPICS.contains(k)).ok_or_else(|| {
        let names: Vec<&str> = Kind::TOPICS.iter().map(|k| k.name()).collect();
        PyValueError::new_err(format!("kind must be one of {}, not {kind:?}", names.join(", ")))
    })?;
    let keys = import_array(keys, "keys")?;
    let values = import_array(values, "values")?;
    if keys.len() != values.len() {
        return Err(PyValueError::new_err(format!(
            "keys and values must have the same length ({} and {})",
            keys.len(),
            values.len()
        )));
    }
    let control = match control {
        None => None,
        Some(c) if c.is_none() => None,
        Some(c) => {
            let array = import_array(c, "control")?;
            let flags = array.as_any().downcast_ref::<BooleanArray>().ok_or_else(|| {
                PyTypeError::new_err(format!("control must be a bool array, not {}", array.data_type()))
            })?;
            if flags.len() != keys.len() {
                return Err(PyValueError::new_err(format!(
                    "control must have one entry per record ({}, not {})",
                    keys.len(),
                    flags.len()
                )));
            }
            Some(flags.iter().map(|f| f.unwrap_or(false)).collect::<Vec<bool>>())
        }
    };
    let key_rows = binary(&keys, "keys")?;
    let value_rows = binary(&values, "values")?;
    let batch = py
        .detach(|| -> Result<RecordBatch, String> {
            let owned;
            let defs = match &definitions {
                None => builtin(),
                Some(dir) => {
                    owned = with_dir(Path::new(dir))?;
                    &*owned
                }
            };
            Ok(decode_binary(
                defs,
                parsed,
                &key_rows,
                &value_rows,
                control.as_deref(),
                json,
            ))
        })
        .map_err(|e| PyValueError::new_err(format!("definitions: {e}")))?;
    let schema = batch.schema();
    Ok(InternalTable {
        stream: ArrowStream::of_batches(vec![batch], schema),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<InternalTable>()?;
    m.add_function(wrap_pyfunction!(decode_internal, m)?)?;
    Ok(())
}
