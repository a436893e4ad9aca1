//! Remote files through the core's object stores (`s3://`, `gs://`, `abfs://`,
//! `http(s)://`): list with sizes, sizes and ranged reads, with the GIL released.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use kafkabatch::storage::{uri, Location, Storage, StorageError};

/// The Python exception for a storage error: `FileNotFoundError`, `PermissionError`, `OSError`.
fn to_py(error: StorageError) -> PyErr {
    let message = error.to_string();
    match error {
        StorageError::NotFound(_) => PyFileNotFoundError::new_err(message),
        StorageError::PermissionDenied(_) => PyPermissionError::new_err(message),
        StorageError::OutOfRange { .. } | StorageError::Other { .. } => PyOSError::new_err(message),
    }
}

fn range_of(start: u64, end: u64) -> PyResult<Range<u64>> {
    if end < start {
        return Err(PyValueError::new_err(format!(
            "range {start}..{end} ends before it starts"
        )));
    }
    Ok(start..end)
}

/// One bucket (container, host) of an object store; made by `resolve_storage`.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct ObjectStorage {
    inner: Arc<dyn Storage>,
}

#[pymethods]
impl ObjectStorage {
    /// `(uri, size)` of every file under the prefix `uri` (recursively by default),
    /// spelled as `uri` is (its scheme and query kept), sorted.
    #[pyo3(signature = (uri, recursive = true))]
    fn list(&self, py: Python<'_>, uri: &str, recursive: bool) -> PyResult<Vec<(String, u64)>> {
        let prefix = Location::new(uri);
        let entries = py.detach(|| self.inner.list(&prefix, recursive)).map_err(to_py)?;
        Ok(entries
            .into_iter()
            .map(|e| (e.location.as_str().to_string(), e.size))
            .collect())
    }

    /// The size of the file `uri`, `None` when there is none.
    fn size(&self, py: Python<'_>, uri: &str) -> PyResult<Option<u64>> {
        let at = Location::new(uri);
        py.detach(|| self.inner.size(&at)).map_err(to_py)
    }

    /// The bytes `start..end` of the file `uri` (one ranged GET).
    fn read<'py>(&self, py: Python<'py>, uri: &str, start: u64, end: u64) -> PyResult<Bound<'py, PyBytes>> {
        let at = Location::new(uri);
        let range = range_of(start, end)?;
        let bytes = py.detach(|| self.inner.read_range(&at, range)).map_err(to_py)?;
        Ok(PyBytes::new(py, bytes.as_slice()))
    }

    /// Several ranges of the file `uri`, nearby ones fetched in one request.
    fn read_ranges<'py>(
        &self,
        py: Python<'py>,
        uri: &str,
        ranges: Vec<(u64, u64)>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let at = Location::new(uri);
        let ranges = ranges
            .into_iter()
            .map(|(a, b)| range_of(a, b))
            .collect::<PyResult<Vec<_>>>()?;
        let parts = py.detach(|| self.inner.read_ranges(&at, &ranges)).map_err(to_py)?;
        Ok(parts.iter().map(|b| PyBytes::new(py, b.as_slice())).collect())
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}

/// The object storage serving `uri` with `options` (object_store configuration
/// keys over the environment's), or `None` when the object stores don't serve
/// it (a local path, another scheme, a query not in pyarrow's S3 words).
#[pyfunction]
#[pyo3(signature = (uri, options = None))]
fn resolve_storage(
    py: Python<'_>,
    uri: &str,
    options: Option<HashMap<String, String>>,
) -> PyResult<Option<ObjectStorage>> {
    let options = options.unwrap_or_default();
    let found = py.detach(|| uri::resolve(uri, &options)).map_err(|e| match e {
        StorageError::Other { message, .. } => PyValueError::new_err(format!("{uri}: {message}")),
        other => to_py(other),
    })?;
    Ok(found.map(|(inner, _)| ObjectStorage { inner }))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ObjectStorage>()?;
    m.add_function(wrap_pyfunction!(resolve_storage, m)?)?;
    Ok(())
}
