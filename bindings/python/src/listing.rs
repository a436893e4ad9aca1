//! Listing segments from Python: local roots through the core's file-system
//! storage (the GIL released), remote ones through a `pyarrow.fs.FileSystem`
//! (the caller's, or the one `kafkabatch.log.fs.resolve_remote` gives, looked
//! up at each call so tests and users can replace it).

use std::ops::Range;
use std::sync::Mutex;

use arrow_buffer::Buffer;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::tiered::TieredStorageError;
use kafkabatch::scan::listing::{self, HeldOffsets, ListError, ListOptions, Problem, Segment, WarningKind};
use kafkabatch::scan::naming::without_query;
use kafkabatch::storage::{Entry, LocalStorage, Location, Storage, StorageError};

/// A storage calling a `pyarrow.fs.FileSystem` with the GIL re-attached. The
/// last Python exception a call raised is kept, to be raised as it was.
#[derive(Debug)]
struct PyFileSystemStorage {
    /// The caller's file system (its paths: the URI without scheme and query), or
    /// `None` for `kafkabatch.log.fs.resolve_remote`.
    filesystem: Option<Py<PyAny>>,
    error: Mutex<Option<PyErr>>,
}

impl PyFileSystemStorage {
    fn resolve<'py>(&self, py: Python<'py>, location: &Location) -> PyResult<(Bound<'py, PyAny>, String)> {
        match &self.filesystem {
            Some(fs) => {
                let base = without_query(location.as_str());
                let path = base.split_once("://").map_or(base, |(_, rest)| rest);
                Ok((fs.bind(py).clone(), path.to_string()))
            }
            None => {
                let resolved = py
                    .import("kafkabatch.log.fs")?
                    .getattr("resolve_remote")?
                    .call1((location.as_str(),))?;
                resolved.extract()
            }
        }
    }

    /// A Python call's outcome as the trait's: an exception is kept and named by location.
    fn call<T>(&self, location: &Location, f: impl FnOnce(Python<'_>) -> PyResult<T>) -> Result<T, StorageError> {
        Python::attach(|py| {
            f(py).map_err(|e| {
                let message = e.to_string();
                if let Ok(mut slot) = self.error.lock() {
                    *slot = Some(e);
                }
                StorageError::Other {
                    location: location.clone(),
                    message,
                }
            })
        })
    }

    fn take_error(&self) -> Option<PyErr> {
        self.error.lock().ok()?.take()
    }
}

fn file_type<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("pyarrow.fs")?.getattr("FileType")?.getattr(name)
}

impl Storage for PyFileSystemStorage {
    fn list(&self, prefix: &Location, recursive: bool) -> Result<Vec<Entry>, StorageError> {
        let found = self.call(prefix, |py| {
            let (fs, path) = self.resolve(py, prefix)?;
            let path = path.trim_end_matches('/').to_string();
            let info = fs.call_method1("get_file_info", (path.as_str(),))?;
            if info.getattr("type")?.eq(file_type(py, "NotFound")?)? {
                return Ok(None);
            }
            let selector =
                py.import("pyarrow.fs")?
                    .getattr("FileSelector")?
                    .call1((path.as_str(), false, recursive))?;
            let infos = fs.call_method1("get_file_info", (selector,))?;
            let file = file_type(py, "File")?;
            let base = without_query(prefix.as_str());
            let (head, suffix) = (base.trim_end_matches('/'), &prefix.as_str()[base.len()..]);
            let mut entries = Vec::new();
            for item in infos.try_iter()? {
                let item = item?;
                if !item.getattr("type")?.eq(&file)? {
                    continue;
                }
                let item_path: String = item.getattr("path")?.extract()?;
                let size: u64 = item.getattr("size")?.extract()?;
                let rest = item_path.get(path.len()..).unwrap_or("");
                entries.push(Entry {
                    location: Location::new(format!("{head}{rest}{suffix}")),
                    size,
                });
            }
            Ok(Some(entries))
        })?;
        found.ok_or_else(|| StorageError::NotFound(prefix.clone()))
    }

    fn size(&self, location: &Location) -> Result<Option<u64>, StorageError> {
        self.call(location, |py| {
            let (fs, path) = self.resolve(py, location)?;
            let info = fs.call_method1("get_file_info", (path,))?;
            if info.getattr("type")?.eq(file_type(py, "File")?)? {
                Ok(Some(info.getattr("size")?.extract()?))
            } else {
                Ok(None)
            }
        })
    }

    fn read_range(&self, location: &Location, range: Range<u64>) -> Result<Buffer, StorageError> {
        let bytes: Vec<u8> = self.call(location, |py| {
            let (fs, path) = self.resolve(py, location)?;
            let file = fs.call_method1("open_input_file", (path,))?;
            let data = file.call_method1("read_at", (range.end.saturating_sub(range.start), range.start));
            file.call_method0("close")?;
            py.import("builtins")?.getattr("bytes")?.call1((data?,))?.extract()
        })?;
        if bytes.len() as u64 != range.end.saturating_sub(range.start) {
            return Err(StorageError::OutOfRange {
                location: location.clone(),
                start: range.start,
                end: range.end,
                size: range.start + bytes.len() as u64,
            });
        }
        Ok(Buffer::from_vec(bytes))
    }
}

/// `held_last_offset(log, manifest, base_offset) -> int | None` from Python; its first exception is kept.
struct PyHeld {
    function: Option<Py<PyAny>>,
    error: Mutex<Option<PyErr>>,
}

impl HeldOffsets for PyHeld {
    fn held_last_offset(&self, log: &str, manifest: &str, base_offset: i64) -> Option<i64> {
        let function = self.function.as_ref()?;
        Python::attach(|py| {
            match function
                .bind(py)
                .call1((log, manifest, base_offset))
                .and_then(|r| r.extract::<Option<i64>>())
            {
                Ok(last) => last,
                Err(e) => {
                    if let Ok(mut slot) = self.error.lock() {
                        slot.get_or_insert(e);
                    }
                    None
                }
            }
        })
    }
}

fn tiered_error(problem: &Problem) -> PyErr {
    Python::attach(|py| {
        let err = TieredStorageError::new_err(problem.to_string());
        let value = err.value(py);
        let _ = value.setattr("kind", problem.kind);
        let _ = value.setattr("chunk", py.None());
        let _ = value.setattr("object", problem.object.as_str());
        let _ = value.setattr("reason", problem.reason.as_str());
        err
    })
}

fn os_error(py: Python<'_>, path: &str, error: &std::io::Error) -> PyErr {
    match error.raw_os_error() {
        Some(errno) => {
            let strerror = py
                .import("os")
                .and_then(|os| os.getattr("strerror")?.call1((errno,))?.extract::<String>())
                .unwrap_or_else(|_| error.to_string());
            PyOSError::new_err((errno, strerror, path.to_string()))
        }
        None => PyOSError::new_err(format!("{path}: {error}")),
    }
}

fn to_py(py: Python<'_>, error: ListError, storage: Option<&PyFileSystemStorage>) -> PyErr {
    match error {
        ListError::NotFound(m) => PyFileNotFoundError::new_err(m),
        ListError::PermissionDenied(m) => PyPermissionError::new_err(m),
        ListError::Naming(m) => PyValueError::new_err(m),
        ListError::Tiered(p) => tiered_error(&p),
        ListError::Io { path, error } => os_error(py, &path, &error),
        ListError::Storage(e) => {
            if let Some(raised) = storage.and_then(PyFileSystemStorage::take_error) {
                return raised;
            }
            match e {
                StorageError::NotFound(l) => PyFileNotFoundError::new_err(format!("no such file or folder: {l}")),
                StorageError::PermissionDenied(l) => PyPermissionError::new_err(format!("permission denied: {l}")),
                other => PyOSError::new_err(other.to_string()),
            }
        }
    }
}

/// `(path, topic, partition, base_offset, size, layout, manifest, segment_id, topic_id,
/// floor_offset, stop_offset, twins)`, twins in the same form.
fn segment_tuple<'py>(py: Python<'py>, s: &Segment) -> PyResult<Bound<'py, PyTuple>> {
    let twins = PyList::empty(py);
    for twin in &s.twins {
        twins.append(segment_tuple(py, twin)?)?;
    }
    (
        s.path.as_str(),
        s.topic.as_str(),
        s.partition,
        s.base_offset,
        s.size,
        s.layout.as_str(),
        s.manifest.as_deref(),
        s.segment_id.as_deref(),
        s.topic_id.as_deref(),
        s.floor_offset,
        s.stop_offset,
        twins,
    )
        .into_pyobject(py)
}

/// The core's listing of `root`: `(segments, warnings, problems)`.
#[pyfunction]
#[pyo3(signature = (root, *, topic=None, partition=None, collect_problems=false, filesystem=None, held_last_offset=None))]
fn list_segments<'py>(
    py: Python<'py>,
    root: &str,
    topic: Option<String>,
    partition: Option<i64>,
    collect_problems: bool,
    filesystem: Option<Py<PyAny>>,
    held_last_offset: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let options = ListOptions {
        topic,
        partition,
        collect_problems,
    };
    let held = PyHeld {
        function: held_last_offset,
        error: Mutex::new(None),
    };
    let remote = kafkabatch::scan::naming::uri_scheme(root).is_some_and(|s| !s.eq_ignore_ascii_case("file"));
    let python_storage = (remote || filesystem.is_some()).then(|| PyFileSystemStorage {
        filesystem,
        error: Mutex::new(None),
    });
    let storage: &dyn Storage = match &python_storage {
        Some(s) => s,
        None => &LocalStorage,
    };
    let result = py.detach(|| listing::list_segments(root, storage, &options, &held));
    if let Some(raised) = held.error.lock().ok().and_then(|mut slot| slot.take()) {
        return Err(raised);
    }
    let listed = result.map_err(|e| to_py(py, e, python_storage.as_ref()))?;
    let segments = PyList::empty(py);
    for s in &listed.segments {
        segments.append(segment_tuple(py, s)?)?;
    }
    let warnings = PyList::empty(py);
    for w in &listed.warnings {
        let kind = match w.kind {
            WarningKind::TieredStorage => "tiered_storage",
        };
        warnings.append((kind, w.message.as_str()))?;
    }
    let problems = PyList::empty(py);
    for (s, p) in &listed.problems {
        problems.append((segment_tuple(py, s)?, tiered_error(p).into_value(py)))?;
    }
    (segments, warnings, problems).into_pyobject(py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(list_segments, m)?)
}
