//! `PartitionWriter`: the sample-log generator of one partition folder
//! (`kafkabatch::generate`), driven by `kafkabatch.generate` in steps so Python
//! can draw a progress bar. Each step runs with the GIL released.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::input::Input;
use kafkabatch::tiered::write::{pack_sizes, transform_chunks, zstd_frame, SampleRng, SegmentKey};
use kafkabatch::tiered::TieredError;

use kafkabatch::compression::{Codec, CompressOptions};
use kafkabatch::encode::EncodeError;
use kafkabatch::generate::{
    GenerateError, Kind, PartitionConfig, PartitionGenerator, PartitionSummary, DEFAULT_INDEX_INTERVAL_BYTES,
};

fn to_py(e: GenerateError) -> PyErr {
    match e {
        GenerateError::Io { path, source } => match source.raw_os_error() {
            // OSError(errno, strerror, filename) picks the right subclass (FileExistsError, ...).
            Some(errno) => PyOSError::new_err((errno, source.to_string(), path.display().to_string())),
            None => PyOSError::new_err(format!("{}: {source}", path.display())),
        },
        GenerateError::Encode(e @ EncodeError::Compression { .. }) => PyRuntimeError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

fn summary_dict<'py>(py: Python<'py>, s: &PartitionSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("log_bytes", s.log_bytes)?;
    d.set_item("index_bytes", s.index_bytes)?;
    d.set_item("segments", s.segments)?;
    d.set_item("records", s.records)?;
    d.set_item("batches", s.batches)?;
    d.set_item("control_batches", s.control_batches)?;
    d.set_item("committed_records", s.committed_records)?;
    d.set_item("aborted_records", s.aborted_records)?;
    d.set_item("committed_transactions", s.committed_transactions)?;
    d.set_item("aborted_transactions", s.aborted_transactions)?;
    d.set_item("tombstones", s.tombstones)?;
    d.set_item("null_keys", s.null_keys)?;
    d.set_item("next_offset", s.next_offset)?;
    d.set_item("first_timestamp", s.first_timestamp)?;
    d.set_item("last_timestamp", s.last_timestamp)?;
    Ok(d)
}

/// Writes one `<topic>-<partition>` folder of generated segments and index
/// files. Call `step()` until `done`, then `finish()`.
#[pyclass(module = "kafkabatch._kafkabatch")]
pub struct PartitionWriter {
    inner: PartitionGenerator,
}

#[pymethods]
impl PartitionWriter {
    #[new]
    #[pyo3(signature = (folder, topic, partition, *, kind, target_bytes, magic=2, compression="none", compression_level=None, snappy_xerial=false, segment_bytes=16 << 20, index_interval_bytes=DEFAULT_INDEX_INTERVAL_BYTES, seed=0, start_timestamp=1_793_491_200_000, producer_id_base=1000, transactional_producers=2, batch_bytes=16384))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        folder: PathBuf,
        topic: &str,
        partition: i32,
        kind: &str,
        target_bytes: u64,
        magic: i8,
        compression: &str,
        compression_level: Option<i32>,
        snappy_xerial: bool,
        segment_bytes: u64,
        index_interval_bytes: u64,
        seed: u64,
        start_timestamp: i64,
        producer_id_base: i64,
        transactional_producers: u32,
        batch_bytes: u64,
    ) -> PyResult<Self> {
        let kind = Kind::from_name(kind).ok_or_else(|| {
            let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            PyValueError::new_err(format!("unknown kind {kind:?}; use one of {names:?}"))
        })?;
        let codec = Codec::from_name(compression)
            .ok_or_else(|| PyValueError::new_err(format!("unknown compression {compression:?}")))?;
        let cfg = PartitionConfig {
            dir: folder,
            topic: topic.to_string(),
            partition,
            kind,
            magic,
            codec,
            compress: CompressOptions {
                level: compression_level,
                snappy_xerial,
            },
            target_bytes,
            segment_bytes,
            index_interval_bytes,
            seed,
            start_timestamp,
            producer_id_base,
            transactional_producers,
            batch_bytes,
        };
        Ok(PartitionWriter {
            inner: PartitionGenerator::new(cfg).map_err(to_py)?,
        })
    }

    /// Append about `budget` bytes (GIL released); returns the bytes appended.
    fn step(&mut self, py: Python<'_>, budget: u64) -> PyResult<u64> {
        let inner = &mut self.inner;
        py.detach(|| inner.step(budget)).map_err(to_py)
    }

    /// Whether the target size is reached.
    #[getter]
    fn done(&self) -> bool {
        self.inner.is_done()
    }

    /// The totals so far, as a dict.
    #[getter]
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        summary_dict(py, self.inner.summary())
    }

    /// End open transactions, close the last segment, write its index files;
    /// returns the totals as a dict.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = &mut self.inner;
        let summary = py.detach(|| inner.finish()).map_err(to_py)?;
        summary_dict(py, &summary)
    }
}

fn tiered_to_py(e: TieredError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Stores segments as Aiven's tiered-storage plugin does (`kafkabatch::tiered::write`),
/// for sample buckets: every random byte from a ChaCha20 stream of `seed`.
/// `public_key` (SubjectPublicKeyInfo PEM) encrypts; `compression` zstd's.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct TieredUploader {
    rng: Mutex<SampleRng>,
    compression: bool,
    public_key: Option<String>,
}

#[pymethods]
impl TieredUploader {
    #[new]
    #[pyo3(signature = (seed, *, compression=false, public_key=None))]
    fn new(seed: u64, compression: bool, public_key: Option<String>) -> Self {
        TieredUploader {
            rng: Mutex::new(SampleRng::new(seed)),
            compression,
            public_key,
        }
    }

    /// A new RSA key pair of `bits` bits: `(private PKCS#8 PEM, public PEM)`.
    #[pyo3(signature = (bits=2048))]
    fn key_pair(&self, py: Python<'_>, bits: usize) -> PyResult<(String, String)> {
        py.detach(|| self.rng().key_pair(bits)).map_err(tiered_to_py)
    }

    /// `n` random bytes of the stream (segment and topic ids).
    fn random_bytes<'py>(&self, py: Python<'py>, n: usize) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.rng().bytes(n))
    }

    /// One segment stored: its `.log` bytes cut into `chunk_size` chunks and
    /// transformed, and each of `indexes` sealed alone (never compressed;
    /// empty ones stay empty). Returns a dict: `log`, `indexes`, `sizes`
    /// (transformed chunk sizes), `packed_sizes` (zstd'd
    /// `ChunkSizesBinaryCodec`), `wrapped_key` and `aad` (None unencrypted).
    fn segment<'py>(
        &self,
        py: Python<'py>,
        log: &Bound<'py, PyAny>,
        indexes: Vec<Vec<u8>>,
        chunk_size: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let log = Input::new(log)?;
        type Stored = (Vec<u8>, Vec<u32>, Vec<u8>, Vec<Vec<u8>>, Option<SegmentKey>);
        let (bytes, sizes, packed, sealed, key) = py
            .detach(|| -> Result<Stored, TieredError> {
                let mut rng = self.rng();
                let key = match &self.public_key {
                    Some(pem) => Some(SegmentKey::new(&mut rng, pem)?),
                    None => None,
                };
                let (bytes, sizes) =
                    transform_chunks(log.as_slice(), chunk_size, self.compression, key.as_ref(), &mut rng)?;
                let packed = zstd_frame(&pack_sizes(&sizes))?;
                let sealed = indexes
                    .iter()
                    .map(|data| match &key {
                        Some(key) if !data.is_empty() => key.seal(&mut rng, data),
                        _ => Ok(data.clone()),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((bytes, sizes, packed, sealed, key))
            })
            .map_err(tiered_to_py)?;
        let d = PyDict::new(py);
        d.set_item("log", PyBytes::new(py, &bytes))?;
        d.set_item("sizes", sizes)?;
        d.set_item("packed_sizes", PyBytes::new(py, &packed))?;
        let sealed: Vec<Bound<'py, PyBytes>> = sealed.iter().map(|b| PyBytes::new(py, b)).collect();
        d.set_item("indexes", sealed)?;
        d.set_item("wrapped_key", key.as_ref().map(|k| PyBytes::new(py, &k.wrapped)))?;
        d.set_item("aad", key.as_ref().map(|k| PyBytes::new(py, &k.aad)))?;
        Ok(d)
    }
}

impl TieredUploader {
    fn rng(&self) -> std::sync::MutexGuard<'_, SampleRng> {
        self.rng.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PartitionWriter>()?;
    m.add_class::<TieredUploader>()?;
    // The Avro writer schemas of the generated shipments, by Schema Registry id.
    let schemas = pyo3::types::PyDict::new(m.py());
    for (id, schema) in kafkabatch::generate::SHIPMENT_SCHEMA_IDS.iter().zip([
        kafkabatch::generate::SHIPMENT_SCHEMA_V1,
        kafkabatch::generate::SHIPMENT_SCHEMA_V2,
    ]) {
        schemas.set_item(id, schema)?;
    }
    m.add("SHIPMENT_SCHEMAS", schemas)
}
