//! `StreamState`: the core's stream state (`kafkabatch::scan::stream`) for
//! the Python `kafka-log` stream reader, which keeps the listing, the
//! PySpark glue and its own exception and warning classes.

use std::collections::BTreeMap;
use std::sync::Arc;

use pyo3::exceptions::{PyFileNotFoundError, PyPermissionError, PyValueError};
use pyo3::prelude::*;

use kafkabatch::scan::listing::ListError;
use kafkabatch::scan::stream::{offsets_from_json, offsets_to_json, Offsets, StreamError, StreamState as Core};
use kafkabatch::scan::{OffsetsSpec, Resolver, ScanError, ScanOptions};
use kafkabatch::storage::Storage;

use crate::errors::CorruptBatchError;
use crate::listing::{segment_of, PyFileSystemStorage, SegmentTuple};

/// One topic-partition of a micro-batch: topic, partition, first offset
/// (None: from its first segment), offset to stop before, each walked
/// segment's complete bytes by path, transactions (read_committed).
type Part = (
    String,
    i64,
    Option<i64>,
    i64,
    BTreeMap<String, u64>,
    Option<Vec<(i64, i64, Option<i64>)>>,
);

/// The driver's state of one `kafka-log` stream (internal: see the stub).
#[pyclass(module = "kafkabatch._kafkabatch")]
pub struct StreamState {
    pub(crate) core: Core,
    data_loss_error: Py<PyAny>,
}

impl StreamState {
    pub(crate) fn error(&self, py: Python<'_>, e: StreamError) -> PyErr {
        match e {
            StreamError::DataLoss(text) => match self.data_loss_error.bind(py).call1((text.clone(),)) {
                Ok(instance) => PyErr::from_value(instance),
                Err(_) => PyValueError::new_err(text),
            },
            StreamError::Corrupt(text) => CorruptBatchError::new_err(text),
            StreamError::Offsets(text) => PyValueError::new_err(text),
            StreamError::Scan(ScanError::List(ListError::NotFound(text))) => PyFileNotFoundError::new_err(text),
            StreamError::Scan(ScanError::List(ListError::PermissionDenied(text))) => PyPermissionError::new_err(text),
            StreamError::Scan(e) => PyValueError::new_err(e.to_string()),
        }
    }
}

fn offsets(text: &str) -> PyResult<Offsets> {
    offsets_from_json(text).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymethods]
impl StreamState {
    #[new]
    fn new(options: Vec<(String, String)>, data_loss_error: Py<PyAny>) -> PyResult<Self> {
        let parsed = ScanOptions::parse(options).map_err(|e| PyValueError::new_err(e.0))?;
        // Remote segments as the package's listing reads them (object_store, or pyarrow's credential chain).
        let resolver: Resolver =
            Arc::new(|_path: &str| Ok(Arc::new(PyFileSystemStorage::resolving()) as Arc<dyn Storage>));
        let core = Core::of_options(&parsed, Some(resolver)).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(StreamState { core, data_loss_error })
    }

    /// Whether any partition was listed yet.
    fn has_logs(&self) -> bool {
        self.core.has_logs()
    }

    /// The offsets available at the last refresh, as offsets JSON (`None`: no partition).
    fn latest(&self) -> Option<String> {
        let latest = self.core.latest();
        (!latest.is_empty()).then(|| offsets_to_json(latest))
    }

    /// Take a new listing and walk what was added; `wanted`: offsets JSON of
    /// where partitions' walks must start at or before (-1: their first segment).
    fn refresh(&mut self, py: Python<'_>, segments: Vec<SegmentTuple>, wanted: &str) -> PyResult<Vec<String>> {
        let wanted = offsets(wanted)?;
        let segments = segments.into_iter().map(segment_of).collect::<PyResult<Vec<_>>>()?;
        let core = &mut self.core;
        let done = py.detach(|| core.refresh(segments, &wanted));
        done.map_err(|e| self.error(py, e))
    }

    /// The offsets JSON to refresh with before planning a micro-batch from
    /// `start` to `end` (a restart replaying it), `None` when the walks serve.
    fn wanted_for(&self, start: &str, end: &str) -> PyResult<Option<String>> {
        let (wanted, again) = self.core.wanted_for(&offsets(start)?, &offsets(end)?);
        Ok(again.then(|| offsets_to_json(&wanted)))
    }

    /// `startingOffsets` (`"earliest"`, `"latest"` or offsets JSON with -2/-1) as offsets JSON.
    fn initial_offsets(&self, py: Python<'_>, spec: &str, paths: Vec<String>) -> PyResult<String> {
        let spec = match spec {
            "earliest" => OffsetsSpec::Earliest,
            "latest" => OffsetsSpec::Latest,
            json => OffsetsSpec::Offsets(offsets(json)?),
        };
        let found = self.core.initial_offsets(&spec, &paths);
        found.map(|o| offsets_to_json(&o)).map_err(|e| self.error(py, e))
    }

    fn prepare_available_now(&mut self) {
        self.core.prepare_available_now();
    }

    /// The end of the next micro-batch from `start` (offsets JSON).
    #[pyo3(signature = (start, max_offsets=None, max_bytes=None))]
    fn latest_offset(
        &mut self,
        py: Python<'_>,
        start: &str,
        max_offsets: Option<i64>,
        max_bytes: Option<u64>,
    ) -> PyResult<String> {
        let begin = offsets(start)?;
        let found = self.core.latest_offset(&begin, max_offsets, max_bytes);
        found.map(|o| offsets_to_json(&o)).map_err(|e| self.error(py, e))
    }

    /// The data losses found under failOnDataLoss=false since the last call.
    fn take_warnings(&mut self) -> Vec<String> {
        self.core.take_warnings()
    }

    /// What a micro-batch from `start` to `end` reads, per topic-partition.
    fn micro_batch_parts(&mut self, py: Python<'_>, start: &str, end: &str) -> PyResult<Vec<Part>> {
        let (begin, until) = (offsets(start)?, offsets(end)?);
        let parts = self
            .core
            .micro_batch_parts(&begin, &until)
            .map_err(|e| self.error(py, e))?;
        Ok(parts
            .into_iter()
            .map(|p| {
                let sizes = p.segments.into_iter().map(|s| (s.path, s.size)).collect();
                let txns = p.transactions.map(|t| {
                    t.into_iter()
                        .map(|t| (t.producer_id, t.first_offset, t.last_offset))
                        .collect()
                });
                (p.topic, p.partition, p.start, p.end, sizes, txns)
            })
            .collect())
    }

    /// Where to start reading `path` of a partition for records from
    /// `start_offset`, from the walk (`None`: not walked).
    fn seek(&self, topic: String, partition: i64, path: &str, start_offset: Option<i64>) -> Option<u64> {
        self.core.log(&(topic, partition))?.seek(path, start_offset)
    }

    /// The first offset of a partition still in the log.
    fn earliest(&self, topic: String, partition: i64) -> Option<i64> {
        self.core.log(&(topic, partition)).map(|l| l.earliest())
    }

    /// A micro-batch up to `end` (offsets JSON) committed.
    fn commit(&mut self, end: &str) -> PyResult<()> {
        self.core.commit(&offsets(end)?);
        Ok(())
    }

    fn stop(&mut self) {
        self.core.stop();
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StreamState>()
}
