//! Remote files through the core's object stores (`s3://`, `gs://`, `abfs://`,
//! `http(s)://`): list with sizes, sizes and ranged reads, with the GIL released.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use kafkabatch::scan::Resolver;
use kafkabatch::storage::{uri, Location, Storage, StorageError};

use super::listing::PyFileSystemStorage;

/// The Python exception for a storage error: `FileNotFoundError`, `PermissionError`, `OSError`.
pub(crate) fn to_py(error: StorageError) -> PyErr {
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

/// Remote files as `kafkabatch.log.fs.open_source` reads them: through the
/// core's object store when `kafkabatch.log.fs.native_storage` gives one for
/// the URI, else through `pyarrow.fs` (`fallback`, which keeps the Python
/// exception a call raised).
pub(crate) fn python_resolver(fallback: Arc<PyFileSystemStorage>) -> Resolver {
    Arc::new(move |path: &str| {
        let native = Python::attach(|py| -> PyResult<Option<Arc<dyn Storage>>> {
            let found = py
                .import("kafkabatch.log.fs")?
                .getattr("native_storage")?
                .call1((path,))?;
            if found.is_none() {
                return Ok(None);
            }
            Ok(Some(found.cast::<ObjectStorage>()?.get().inner.clone()))
        })
        .map_err(|e| StorageError::Other {
            location: Location::new(path),
            message: e.to_string(),
        })?;
        Ok(native.unwrap_or_else(|| fallback.clone() as Arc<dyn Storage>))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ObjectStorage>()?;
    m.add_function(wrap_pyfunction!(resolve_storage, m)?)?;
    Ok(())
}
