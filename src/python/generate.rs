//! `PartitionWriter`: the sample-log generator of one partition folder
//! (`crate::generate`), driven by `kafkabatch.generate` in steps so Python
//! can draw a progress bar. Each step runs with the GIL released.

use std::path::PathBuf;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::compression::{Codec, CompressOptions};
use crate::encode::EncodeError;
use crate::generate::{
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PartitionWriter>()?;
    // The Avro writer schemas of the generated shipments, by Schema Registry id.
    let schemas = pyo3::types::PyDict::new(m.py());
    for (id, schema) in crate::generate::SHIPMENT_SCHEMA_IDS
        .iter()
        .zip([crate::generate::SHIPMENT_SCHEMA_V1, crate::generate::SHIPMENT_SCHEMA_V2])
    {
        schemas.set_item(id, schema)?;
    }
    m.add("SHIPMENT_SCHEMAS", schemas)
}
