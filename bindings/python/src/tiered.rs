//! Bindings for tiered storage: key pairs, and segment manifests that
//! locate and undo a remote segment's chunks (with the GIL released).

use std::collections::BTreeMap;

use pyo3::create_exception;
use pyo3::exceptions::{PyBaseException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use rsa::RsaPrivateKey;

use super::errors::KafkaBatchError;
use super::input::Input;
use kafkabatch::decode::{DEFAULT_MAX_DECOMPRESSED_SIZE, MAX_DECOMPRESSED_SIZE_LIMIT};
use kafkabatch::tiered::transform::{chunks_within, detransform_each_into, detransform_into};
use kafkabatch::tiered::{
    detransform_index, parse_manifest, parse_private_key, transform_for, ChunkIndex, IndexKind, Manifest, TieredError,
    Transform,
};

create_exception!(
    kafkabatch,
    TieredStorageError,
    KafkaBatchError,
    "A remote segment that cannot be read: its manifest, its key, a chunk, or a truncated object."
);

/// The Python exception for a tiered-storage error of object `name`, with
/// `kind`, `chunk` and `object` as attributes.
pub(crate) fn to_py(py: Python<'_>, name: &str, e: &TieredError) -> PyErr {
    let message = if name.is_empty() {
        e.to_string()
    } else {
        format!("{name}: {e}")
    };
    let err = TieredStorageError::new_err(message);
    let value = err.value(py);
    let _ = value.setattr("kind", e.kind.name());
    let _ = value.setattr("chunk", e.chunk);
    let _ = value.setattr("object", name);
    let _ = value.setattr("reason", e.reason.as_str());
    err
}

/// RSA private keys by key-pair id, to unwrap the data keys of encrypted
/// segments.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct TieredKeys {
    keys: BTreeMap<String, RsaPrivateKey>,
}

#[pymethods]
impl TieredKeys {
    #[new]
    fn new(py: Python<'_>, keys: BTreeMap<String, String>) -> PyResult<Self> {
        let parsed = py.detach(|| {
            keys.iter()
                .map(|(id, pem)| {
                    parse_private_key(pem)
                        .map(|key| (id.clone(), key))
                        .map_err(|e| (id.clone(), e))
                })
                .collect::<Result<BTreeMap<_, _>, _>>()
        });
        match parsed {
            Ok(keys) => Ok(TieredKeys { keys }),
            Err((id, e)) => Err(to_py(py, &format!("key pair {id:?}"), &e)),
        }
    }

    /// The key-pair ids, sorted.
    fn ids(&self) -> Vec<String> {
        self.keys.keys().cloned().collect()
    }

    fn __len__(&self) -> usize {
        self.keys.len()
    }

    fn __repr__(&self) -> String {
        format!("TieredKeys({:?})", self.ids())
    }
}

/// A remote segment's manifest (`.rsm-manifest`), its data key unwrapped.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct RemoteManifest {
    manifest: Manifest,
    transform: Transform,
    name: String,
}

fn index_kind(kind: &str) -> PyResult<IndexKind> {
    IndexKind::from_name(kind).ok_or_else(|| {
        PyValueError::new_err(format!(
            "index must be 'offset', 'timestamp', 'producerSnapshot', 'leaderEpoch' or 'transaction', not {kind:?}"
        ))
    })
}

impl RemoteManifest {
    fn err(&self, py: Python<'_>, e: &TieredError) -> PyErr {
        to_py(py, &self.name, e)
    }

    /// Undo chunks `first..` into a new bytes object, with the GIL released;
    /// the chunk failures (only the first with `stop_at_first`).
    #[allow(clippy::too_many_arguments)]
    fn undo<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        first: usize,
        max_decompressed_size: usize,
        threads: Option<usize>,
        cap_name: &str,
        stop_at_first: bool,
    ) -> PyResult<(Bound<'py, PyBytes>, Vec<PyErr>)> {
        if max_decompressed_size == 0 || max_decompressed_size > MAX_DECOMPRESSED_SIZE_LIMIT {
            return Err(PyValueError::new_err(format!(
                "{cap_name} must be between 1 and {MAX_DECOMPRESSED_SIZE_LIMIT} bytes, not {max_decompressed_size}"
            )));
        }
        let input = Input::new(data)?;
        let bytes = input.as_slice();
        let threads = threads.unwrap_or(0);
        self.manifest.check_chunk_sizes().map_err(|e| self.err(py, &e))?;
        let chunks = chunks_within(
            bytes,
            &self.manifest.chunk_index,
            first,
            &self.transform,
            max_decompressed_size,
            cap_name,
        )
        .map_err(|e| self.err(py, &e))?;
        let total: u64 = chunks.iter().map(|c| c.original_size).sum();
        let mut failures = Vec::new();
        // Chunks are undone straight into the new bytes object, with the GIL released.
        let out = PyBytes::new_with(py, total as usize, |out| {
            let result = py.detach(|| {
                if stop_at_first {
                    detransform_into(bytes, &chunks, &self.transform, threads, out).map(|()| Vec::new())
                } else {
                    detransform_each_into(bytes, &chunks, &self.transform, threads, out)
                }
            });
            match result {
                Ok(errors) => {
                    failures = errors;
                    Ok(())
                }
                Err(e) => Err(self.err(py, &e)),
            }
        });
        if stop_at_first {
            if let Some(e) = failures.first() {
                return Err(self.err(py, e));
            }
        }
        let out = out?;
        Ok((out, failures.iter().map(|e| self.err(py, e)).collect()))
    }
}

#[pymethods]
impl RemoteManifest {
    #[new]
    #[pyo3(signature = (text, keys=None, *, name=""))]
    fn new(py: Python<'_>, text: &Bound<'_, PyAny>, keys: Option<&TieredKeys>, name: &str) -> PyResult<Self> {
        let bytes: Vec<u8> = if let Ok(s) = text.cast::<PyString>() {
            s.to_str()?.as_bytes().to_vec()
        } else {
            Input::new(text)?.as_slice().to_vec()
        };
        let result = py.detach(|| -> Result<(Manifest, Transform), TieredError> {
            let manifest = parse_manifest(&bytes)?;
            let no_keys = BTreeMap::new();
            let transform = transform_for(&manifest, keys.map_or(&no_keys, |k| &k.keys))?;
            Ok((manifest, transform))
        });
        match result {
            Ok((manifest, transform)) => Ok(RemoteManifest {
                manifest,
                transform,
                name: name.to_string(),
            }),
            Err(e) => Err(to_py(py, name, &e)),
        }
    }

    /// The object name given, for messages.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Chunks are zstd frames.
    #[getter]
    fn compression(&self) -> bool {
        self.manifest.compression
    }

    /// Chunks and indexes are AES-GCM encrypted.
    #[getter]
    fn encrypted(&self) -> bool {
        self.transform.encrypted()
    }

    /// The key pair that wrapped the data key, for encrypted segments.
    #[getter]
    fn key_id(&self) -> Option<&str> {
        self.manifest.encryption.as_ref().map(|e| e.key_id.as_str())
    }

    /// `"fixed"` or `"variable"`.
    #[getter]
    fn chunk_index_type(&self) -> &'static str {
        match self.manifest.chunk_index {
            ChunkIndex::Fixed { .. } => "fixed",
            ChunkIndex::Variable { .. } => "variable",
        }
    }

    /// Size of the segment's `.log` (the original bytes).
    #[getter]
    fn original_size(&self) -> u64 {
        self.manifest.chunk_index.original_size()
    }

    #[getter]
    fn original_chunk_size(&self) -> u64 {
        self.manifest.chunk_index.original_chunk_size()
    }

    /// Size of the `.log` object as stored.
    #[getter]
    fn transformed_size(&self) -> u64 {
        self.manifest.chunk_index.transformed_size()
    }

    #[getter]
    fn chunk_count(&self) -> usize {
        self.manifest.chunk_index.count()
    }

    #[getter]
    fn topic(&self) -> Option<&str> {
        self.manifest.segment.topic.as_deref()
    }

    #[getter]
    fn partition(&self) -> Option<i32> {
        self.manifest.segment.partition
    }

    #[getter]
    fn topic_id(&self) -> Option<&str> {
        self.manifest.segment.topic_id.as_deref()
    }

    #[getter]
    fn segment_id(&self) -> Option<&str> {
        self.manifest.segment.segment_id.as_deref()
    }

    /// The segment's first offset, per the manifest's segment metadata.
    #[getter]
    fn start_offset(&self) -> Option<i64> {
        self.manifest.segment.start_offset
    }

    /// The segment's last offset, per the manifest's segment metadata.
    #[getter]
    fn end_offset(&self) -> Option<i64> {
        self.manifest.segment.end_offset
    }

    #[getter]
    fn max_timestamp(&self) -> Option<i64> {
        self.manifest.segment.max_timestamp_ms
    }

    /// Chunk `i` as `(original_position, original_size, transformed_position, transformed_size)`.
    fn chunk(&self, i: usize) -> PyResult<(u64, u64, u64, u64)> {
        let c = self.manifest.chunk_index.chunk(i).ok_or_else(|| {
            pyo3::exceptions::PyIndexError::new_err(format!(
                "chunk {i} of a segment with {} chunks",
                self.manifest.chunk_index.count()
            ))
        })?;
        Ok((
            c.original_position,
            c.original_size,
            c.transformed_position,
            c.transformed_size,
        ))
    }

    /// The chunks `(first, last)` (last excluded) holding original bytes `start..end`.
    fn chunks_for(&self, start: u64, end: u64) -> (usize, usize) {
        self.manifest.chunk_index.chunks_for(start, end)
    }

    /// Byte range `(start, end)` of chunks `first..last` in the `.log` object.
    fn transformed_range(&self, py: Python<'_>, first: usize, last: usize) -> PyResult<(u64, u64)> {
        self.manifest
            .chunk_index
            .transformed_range(first, last)
            .map_err(|e| self.err(py, &e))
    }

    /// Byte range `(start, end)` of chunks `first..last` in the original segment.
    fn original_range(&self, py: Python<'_>, first: usize, last: usize) -> PyResult<(u64, u64)> {
        self.manifest
            .chunk_index
            .original_range(first, last)
            .map_err(|e| self.err(py, &e))
    }

    /// `(position, size)` of an index in the `.indexes` object, or None.
    fn index_slice(&self, index: &str) -> PyResult<Option<(u64, u64)>> {
        Ok(self
            .manifest
            .indexes
            .get(index_kind(index)?)
            .map(|s| (s.position, s.size)))
    }

    /// Undo chunks `first..` given their transformed bytes (exactly whole chunks).
    /// `cap_name` names the per-chunk cap in errors (the caller's word for it).
    #[pyo3(signature = (data, first=0, *, max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, threads=None, cap_name="max_decompressed_size"))]
    fn detransform<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        first: usize,
        max_decompressed_size: usize,
        threads: Option<usize>,
        cap_name: &str,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let (bytes, errors) = self.undo(py, data, first, max_decompressed_size, threads, cap_name, true)?;
        match errors.into_iter().next() {
            None => Ok(bytes),
            Some(e) => Err(e),
        }
    }

    /// Undo chunks `first..` as :meth:`detransform` does, every chunk on its
    /// own: ``(bytes, errors)``, the bytes of a failed chunk zeroed and its
    /// :class:`TieredStorageError` (with ``chunk``) in ``errors``, in chunk order.
    #[pyo3(signature = (data, first=0, *, max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, threads=None, cap_name="max_decompressed_size"))]
    fn detransform_each<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        first: usize,
        max_decompressed_size: usize,
        threads: Option<usize>,
        cap_name: &str,
    ) -> PyResult<(Bound<'py, PyBytes>, Vec<Py<PyBaseException>>)> {
        let (bytes, errors) = self.undo(py, data, first, max_decompressed_size, threads, cap_name, false)?;
        Ok((bytes, errors.into_iter().map(|e| e.into_value(py)).collect()))
    }

    /// Without compression, a `TieredStorageError` (kind ``"manifest"``) when
    /// the chunk index's sizes can't be those of stored chunks (see
    /// `Manifest::check_chunk_sizes`); checked before a segment is read.
    fn check_chunk_sizes(&self, py: Python<'_>) -> PyResult<()> {
        self.manifest.check_chunk_sizes().map_err(|e| self.err(py, &e))
    }

    /// Undo one index's slice of the `.indexes` object (decrypt it when
    /// encrypted; indexes are never compressed).
    fn detransform_index<'py>(
        &self,
        py: Python<'py>,
        index: &str,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let kind = index_kind(index)?;
        let input = Input::new(data)?;
        let bytes = input.as_slice();
        let expected = self.manifest.indexes.get(kind).map_or(0, |s| s.size);
        if bytes.len() as u64 != expected {
            let e = TieredError::truncated(format!(
                "the {index} index has {} bytes, the manifest gives it {expected}",
                bytes.len()
            ));
            return Err(self.err(py, &e));
        }
        if bytes.is_empty() {
            return Ok(PyBytes::new(py, b""));
        }
        match py.detach(|| detransform_index(bytes, &self.transform)) {
            Ok(out) => Ok(PyBytes::new(py, &out)),
            Err(e) => {
                let e = TieredError {
                    reason: format!("{} index: {}", index, e.reason),
                    ..e
                };
                Err(self.err(py, &e))
            }
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "RemoteManifest(name={:?}, chunks={}, original_size={}, compression={}, encrypted={})",
            self.name,
            self.manifest.chunk_index.count(),
            self.manifest.chunk_index.original_size(),
            self.manifest.compression,
            self.transform.encrypted()
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TieredStorageError", m.py().get_type::<TieredStorageError>())?;
    m.add_class::<TieredKeys>()?;
    m.add_class::<RemoteManifest>()
}
