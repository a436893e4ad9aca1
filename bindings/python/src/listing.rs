//! Listing segments from Python: local roots through the core's file-system
//! storage (the GIL released), remote ones through a `pyarrow.fs.FileSystem`
//! (the caller's, or the one `kafkabatch.log.fs.resolve_remote` gives, looked
//! up at each call so tests and users can replace it).

use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow_buffer::Buffer;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::tiered::TieredStorageError;
use kafkabatch::scan::layouts::Layout;
use kafkabatch::scan::listing::{
    self, HeldOffsets, ListError, ListOptions, ListWarning, Listing, Problem, Segment, WarningKind,
};
use kafkabatch::scan::naming::without_query;
use kafkabatch::scan::plan::DEFAULT_MAX_CHUNK_BYTES;
use kafkabatch::scan::read::HeldPlainFiles;
use kafkabatch::storage::{Entry, LocalStorage, Location, Storage, StorageError};

/// A storage calling a `pyarrow.fs.FileSystem` with the GIL re-attached. The
/// last Python exception a call raised is kept, to be raised as it was.
#[derive(Debug)]
pub(crate) struct PyFileSystemStorage {
    /// The caller's file system (its paths: the URI without scheme and query), or
    /// `None` for `kafkabatch.log.fs.resolve_remote`.
    filesystem: Option<Py<PyAny>>,
    error: Mutex<Option<PyErr>>,
}

impl PyFileSystemStorage {
    /// Remote files as `kafkabatch.log.fs.resolve_remote` resolves them (the package's choice of storage).
    pub(crate) fn resolving() -> Self {
        PyFileSystemStorage {
            filesystem: None,
            error: Mutex::new(None),
        }
    }

    /// Every file through the caller's `filesystem` (paths in it; a scheme and query are dropped).
    pub(crate) fn over(filesystem: Py<PyAny>) -> Self {
        PyFileSystemStorage {
            filesystem: Some(filesystem),
            error: Mutex::new(None),
        }
    }

    /// The storage reading `segment` (a `kafkabatch.log.listing.Segment`): the
    /// file system it was listed in (its `filesystem`), else `None`.
    pub(crate) fn of_segment(segment: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
        let given = segment.getattr_opt(intern!(segment.py(), "filesystem"))?;
        Ok(given.filter(|fs| !fs.is_none()).map(|fs| Self::over(fs.unbind())))
    }

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

    pub(crate) fn take_error(&self) -> Option<PyErr> {
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

pub(crate) fn tiered_error(problem: &Problem) -> PyErr {
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
        ListError::Tiered(p, warned) => {
            let err = tiered_error(&p);
            let _ = err
                .value(py)
                .setattr("listing_warnings", warnings_list(py, &warned).ok());
            err
        }
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

/// A segment as the fields of `kafkabatch.log.listing.Segment` (a dict the Python
/// dataclass takes as its own, `keys` left to Python): `path`, `topic`, `partition`,
/// `base_offset`, `size`, `layout`, `manifest`, `segment_id`, `topic_id`,
/// `floor_offset`, `stop_offset`, `twins` (a list of the same dicts, or `()`).
pub(crate) fn segment_fields<'py>(py: Python<'py>, s: &Segment) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "path"), s.path.as_str())?;
    d.set_item(intern!(py, "topic"), s.topic.as_str())?;
    d.set_item(intern!(py, "partition"), s.partition)?;
    d.set_item(intern!(py, "base_offset"), s.base_offset)?;
    d.set_item(intern!(py, "size"), s.size)?;
    d.set_item(intern!(py, "layout"), s.layout.as_str())?;
    d.set_item(intern!(py, "manifest"), s.manifest.as_deref())?;
    d.set_item(intern!(py, "segment_id"), s.segment_id.as_deref())?;
    d.set_item(intern!(py, "topic_id"), s.topic_id.as_deref())?;
    d.set_item(intern!(py, "floor_offset"), s.floor_offset)?;
    d.set_item(intern!(py, "stop_offset"), s.stop_offset)?;
    if s.twins.is_empty() {
        d.set_item(intern!(py, "twins"), PyTuple::empty(py))?; // no new container for the garbage collector
    } else {
        let twins = PyList::empty(py);
        for twin in &s.twins {
            twins.append(segment_fields(py, twin)?)?;
        }
        d.set_item(intern!(py, "twins"), twins)?;
    }
    Ok(d)
}

/// Warnings as `(kind, message)`.
fn warnings_list<'py>(py: Python<'py>, warnings: &[ListWarning]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for w in warnings {
        let kind = match w.kind {
            WarningKind::TieredStorage => "tiered_storage",
        };
        list.append((kind, w.message.as_str()))?;
    }
    Ok(list)
}

/// The core's listing of `roots` (local ones through the core's file-system
/// storage, remote ones through a [`PyFileSystemStorage`]; when `filesystem`
/// is given, every root is a path in it, listed through it), joined as
/// `kafkabatch::scan::listing::list_roots` joins them; a Python exception
/// raised by a callback is raised as it was.
pub(crate) fn list_with(
    py: Python<'_>,
    roots: Vec<String>,
    topic: Option<String>,
    partition: Option<i64>,
    collect_problems: bool,
    filesystem: Option<Py<PyAny>>,
    held_last_offset: Option<Py<PyAny>>,
) -> PyResult<Listing> {
    let options = ListOptions {
        topic,
        partition,
        collect_problems,
    };
    let held = PyHeld {
        function: held_last_offset,
        error: Mutex::new(None),
    };
    let given = filesystem.is_some();
    let python_storage = Arc::new(PyFileSystemStorage {
        filesystem,
        error: Mutex::new(None),
    });
    let storage = |root: &str| -> Result<Arc<dyn Storage>, ListError> {
        let remote = kafkabatch::scan::naming::is_remote(root);
        Ok(if remote || given {
            python_storage.clone()
        } else {
            Arc::new(LocalStorage)
        })
    };
    let held_files = HeldPlainFiles {
        remote: &held,
        storage: &storage,
        max_chunk_bytes: DEFAULT_MAX_CHUNK_BYTES,
    };
    let result = py.detach(|| listing::list_roots(&roots, &storage, &options, &held_files));
    if let Some(raised) = held.error.lock().ok().and_then(|mut slot| slot.take()) {
        return Err(raised);
    }
    result.map_err(|e| to_py(py, e, Some(python_storage.as_ref())))
}

/// A listing's warnings and problems as `list_roots` returns them.
pub(crate) fn warnings_and_problems<'py>(
    py: Python<'py>,
    listed: &Listing,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let warnings = warnings_list(py, &listed.warnings)?;
    let problems = PyList::empty(py);
    for (s, p) in &listed.problems {
        problems.append((segment_fields(py, s)?, tiered_error(p).into_value(py)))?;
    }
    Ok((warnings, problems))
}

/// The core's listing of `roots`, joined: `(segments, warnings, problems)`;
/// with `name_glob` (Spark's `pathGlobFilter`), only the segments whose file
/// names match it.
#[pyfunction]
#[pyo3(signature = (roots, *, topic=None, partition=None, collect_problems=false, filesystem=None, held_last_offset=None, name_glob=None))]
#[allow(clippy::too_many_arguments)]
fn list_roots<'py>(
    py: Python<'py>,
    roots: Vec<String>,
    topic: Option<String>,
    partition: Option<i64>,
    collect_problems: bool,
    filesystem: Option<Py<PyAny>>,
    held_last_offset: Option<Py<PyAny>>,
    name_glob: Option<String>,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut listed = list_with(
        py,
        roots,
        topic,
        partition,
        collect_problems,
        filesystem,
        held_last_offset,
    )?;
    if let Some(glob) = &name_glob {
        listing::keep_names(&mut listed.segments, glob);
    }
    let segments = PyList::empty(py);
    for s in &listed.segments {
        segments.append(segment_fields(py, s)?)?;
    }
    let (warnings, problems) = warnings_and_problems(py, &listed)?;
    (segments, warnings, problems).into_pyobject(py)
}

/// The core's listing of one `root`: `list_roots` of `[root]`.
#[pyfunction]
#[pyo3(signature = (root, *, topic=None, partition=None, collect_problems=false, filesystem=None, held_last_offset=None))]
fn list_segments<'py>(
    py: Python<'py>,
    root: String,
    topic: Option<String>,
    partition: Option<i64>,
    collect_problems: bool,
    filesystem: Option<Py<PyAny>>,
    held_last_offset: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    list_roots(
        py,
        vec![root],
        topic,
        partition,
        collect_problems,
        filesystem,
        held_last_offset,
        None,
    )
}

/// The remote-segment facts in a path's names: `(layout, topic, partition, topic_id,
/// segment_id, base_offset, suffix)` (layout `""` when the folders fit no layout), or `None`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn remote_name(
    path: &str,
) -> Option<(
    &'static str,
    Option<String>,
    Option<i64>,
    Option<String>,
    String,
    i64,
    String,
)> {
    let n = kafkabatch::scan::layouts::remote_name(path)?;
    Some((
        n.layout.map_or("", |l| l.as_str()),
        n.topic,
        n.partition,
        n.topic_id,
        n.segment_id,
        n.base_offset,
        n.suffix,
    ))
}

/// Why a remote segment can't be read, in the listing's words: `"missing_object"` (`path`:
/// the manifest whose `.log` is gone), `"missing_manifest"` (`path`: the `.log`), `"layout"`
/// (`path`: the object whose folders fit no layout).
#[pyfunction]
fn listing_reason(what: &str, path: &str) -> PyResult<String> {
    use kafkabatch::scan::layouts::{layout_reason, sibling};
    use kafkabatch::scan::naming::text;
    match what {
        "missing_object" => Ok(text::missing_object(path)),
        "missing_manifest" => Ok(text::missing_manifest(&sibling(path, text::MANIFEST))),
        "layout" => Ok(layout_reason(path)),
        other => Err(PyValueError::new_err(format!(
            "what must be 'missing_object', 'missing_manifest' or 'layout', not {other:?}"
        ))),
    }
}

/// One segment's fields as the stream state's `refresh` takes them: `(path, topic, partition,
/// base_offset, size, layout, manifest, segment_id, topic_id, floor_offset, stop_offset)`.
pub(crate) type SegmentTuple = (
    String,
    String,
    i64,
    Option<i64>,
    u64,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
);

/// The core's segment of a [`SegmentTuple`].
pub(crate) fn segment_of(
    (path, topic, partition, base_offset, size, layout, manifest, segment_id, topic_id, floor, stop): SegmentTuple,
) -> PyResult<Segment> {
    let layout = match layout.as_str() {
        "broker" => Layout::Broker,
        "local-tiered" => Layout::LocalTiered,
        "aiven" => Layout::Aiven,
        other => return Err(PyValueError::new_err(format!("unknown segment layout {other:?}"))),
    };
    Ok(Segment {
        path,
        topic,
        partition,
        base_offset,
        size,
        layout,
        manifest,
        segment_id,
        topic_id,
        floor_offset: floor,
        stop_offset: stop,
        twins: Vec::new(),
    })
}

/// The core's segment of a `kafkabatch.log.listing.Segment` (its attributes),
/// with its twins (theirs left out: the listing gives twins none).
pub(crate) fn segment_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Segment> {
    let fields = |o: &Bound<'_, PyAny>| -> PyResult<SegmentTuple> {
        Ok((
            o.getattr(intern!(o.py(), "path"))?.extract()?,
            o.getattr(intern!(o.py(), "topic"))?.extract()?,
            o.getattr(intern!(o.py(), "partition"))?.extract()?,
            o.getattr(intern!(o.py(), "base_offset"))?.extract()?,
            o.getattr(intern!(o.py(), "size"))?.extract()?,
            o.getattr(intern!(o.py(), "layout"))?.extract()?,
            o.getattr(intern!(o.py(), "manifest"))?.extract()?,
            o.getattr(intern!(o.py(), "segment_id"))?.extract()?,
            o.getattr(intern!(o.py(), "topic_id"))?.extract()?,
            o.getattr(intern!(o.py(), "floor_offset"))?.extract()?,
            o.getattr(intern!(o.py(), "stop_offset"))?.extract()?,
        ))
    };
    let mut seg = segment_of(fields(obj)?)?;
    for twin in obj.getattr(intern!(obj.py(), "twins"))?.try_iter()? {
        seg.twins.push(segment_of(fields(&twin?)?)?);
    }
    Ok(seg)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(list_roots, m)?)?;
    m.add_function(wrap_pyfunction!(list_segments, m)?)?;
    m.add_function(wrap_pyfunction!(listing_reason, m)?)?;
    m.add_function(wrap_pyfunction!(remote_name, m)?)
}
