//! `iter_batches()`: batch headers, cheaply, and records on request.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use super::errors::to_py;
use super::input::Input;
use kafkabatch::batch::{be_i64, BatchHeader, BatchWalker, RawBatch, WalkEnd};
use kafkabatch::compression::Codec;
use kafkabatch::control::parse_control;
use kafkabatch::decode::{
    decode_batch, hidden_batches, DecodeOptions, Isolation, OnError, DEFAULT_MAX_DECOMPRESSED_SIZE,
};
use kafkabatch::prune::HeaderBounds;
use kafkabatch::record::{OwnedRecord, OwnedRecords};
use kafkabatch::txn::Hidden;

/// One record, for small jobs (`Batch.records()`).
#[pyclass(frozen, module = "kafkabatch._kafkabatch", eq)]
#[derive(PartialEq)]
pub struct Record {
    inner: OwnedRecord,
}

#[pymethods]
impl Record {
    #[getter]
    fn offset(&self) -> i64 {
        self.inner.offset
    }
    /// Milliseconds since the epoch; -1 for v0 records.
    #[getter]
    fn timestamp(&self) -> i64 {
        self.inner.timestamp
    }
    /// 0 CreateTime, 1 LogAppendTime, -1 none (v0).
    #[getter]
    fn timestamp_type(&self) -> i8 {
        self.inner.timestamp_type
    }
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.inner.key.as_deref().map(|k| PyBytes::new(py, k))
    }
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.inner.value.as_deref().map(|v| PyBytes::new(py, v))
    }
    /// `[(key, value), ...]` in wire order; duplicates kept, values may be None.
    #[getter]
    fn headers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .inner
            .headers
            .iter()
            .map(|(k, v)| {
                PyTuple::new(
                    py,
                    [
                        k.into_pyobject(py)?.into_any(),
                        v.as_deref().map(|v| PyBytes::new(py, v).into_any()).into_pyobject(py)?,
                    ],
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }
    /// The producer sequence number of this record, -1 when none.
    #[getter]
    fn sequence(&self) -> i32 {
        self.inner.sequence
    }

    fn __repr__(&self) -> String {
        format!(
            "Record(offset={}, timestamp={}, timestamp_type={}, key={}, value={}, headers={})",
            self.inner.offset,
            self.inner.timestamp,
            self.inner.timestamp_type,
            short_bytes(self.inner.key.as_deref()),
            short_bytes(self.inner.value.as_deref()),
            self.inner.headers.len()
        )
    }
}

fn short_bytes(b: Option<&[u8]>) -> String {
    match b {
        None => "None".into(),
        Some(b) => format!("<{} bytes>", b.len()),
    }
}

/// The control record of a control batch (a transaction marker, or a KRaft record).
#[pyclass(frozen, module = "kafkabatch._kafkabatch", get_all)]
pub struct ControlRecord {
    version: i16,
    /// "COMMIT", "ABORT", or another control type name.
    #[pyo3(name = "type")]
    type_name: &'static str,
    type_id: i16,
    coordinator_epoch: Option<i32>,
}

#[pymethods]
impl ControlRecord {
    fn __repr__(&self) -> String {
        let epoch = self
            .coordinator_epoch
            .map_or_else(|| "None".to_string(), |e| e.to_string());
        format!(
            "ControlRecord(type={:?}, version={}, coordinator_epoch={epoch})",
            self.type_name, self.version
        )
    }
}

/// One batch: a v2 record batch, an uncompressed legacy message, or a legacy
/// compressed wrapper.
#[pyclass(frozen, module = "kafkabatch._kafkabatch")]
pub struct Batch {
    input: Arc<Input>,
    header: BatchHeader,
    options: DecodeOptions,
    error: Option<Py<PyAny>>,
}

#[pymethods]
impl Batch {
    #[getter]
    fn position(&self) -> usize {
        self.header.position
    }
    #[getter]
    fn size_in_bytes(&self) -> usize {
        self.header.size_in_bytes
    }
    #[getter]
    fn magic(&self) -> i8 {
        self.header.magic
    }
    #[getter]
    fn base_offset(&self) -> i64 {
        self.header.base_offset
    }
    #[getter]
    fn last_offset(&self) -> i64 {
        self.header.last_offset
    }
    #[getter]
    fn next_offset(&self) -> i64 {
        self.header.last_offset.wrapping_add(1)
    }
    #[getter]
    fn partition_leader_epoch(&self) -> Option<i32> {
        self.header.partition_leader_epoch
    }
    #[getter]
    fn crc(&self) -> u32 {
        self.header.crc
    }
    /// Whether the stored CRC matches the bytes.
    #[getter]
    fn is_valid(&self) -> bool {
        self.header.crc_valid && self.error.is_none()
    }
    #[getter]
    fn crc_valid(&self) -> bool {
        self.header.crc_valid
    }
    #[getter]
    fn attributes(&self) -> i16 {
        self.header.attributes
    }
    #[getter]
    fn compression(&self) -> &'static str {
        self.header.codec.name()
    }
    #[getter]
    fn timestamp_type(&self) -> i8 {
        self.header.timestamp_type
    }
    #[getter]
    fn is_transactional(&self) -> bool {
        self.header.is_transactional
    }
    #[getter]
    fn is_control(&self) -> bool {
        self.header.is_control
    }
    #[getter]
    fn delete_horizon_ms(&self) -> Option<i64> {
        self.header.delete_horizon_ms
    }
    #[getter]
    fn base_timestamp(&self) -> i64 {
        self.header.base_timestamp
    }
    #[getter]
    fn max_timestamp(&self) -> i64 {
        self.header.max_timestamp
    }
    #[getter]
    fn producer_id(&self) -> i64 {
        self.header.producer_id
    }
    #[getter]
    fn producer_epoch(&self) -> i16 {
        self.header.producer_epoch
    }
    #[getter]
    fn base_sequence(&self) -> i32 {
        self.header.base_sequence
    }
    #[getter]
    fn last_sequence(&self) -> i32 {
        self.header.last_sequence()
    }
    #[getter]
    fn record_count(&self) -> i32 {
        self.header.record_count
    }
    /// With `on_error="keep"`: why this batch could not be decoded, else None.
    #[getter]
    fn error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.error.as_ref().map(|e| e.clone_ref(py))
    }

    /// The batch's records (control records included), decoded now.
    fn records(&self, py: Python<'_>) -> PyResult<Vec<Record>> {
        Ok(self
            .owned_records(py)?
            .into_iter()
            .map(|inner| Record { inner })
            .collect())
    }

    /// The control record of a control batch, else None.
    #[getter]
    fn control(&self, py: Python<'_>) -> PyResult<Option<ControlRecord>> {
        if !self.header.is_control {
            return Ok(None);
        }
        let records = self.owned_records(py)?;
        let first = records.first().ok_or_else(|| {
            to_py(
                py,
                &self.header.error(
                    kafkabatch::error::ErrorKind::Corrupt,
                    self.header.position,
                    "control batch has no records",
                ),
            )
        })?;
        let control = parse_control(first.key.as_deref(), first.value.as_deref()).map_err(|why| {
            to_py(
                py,
                &self
                    .header
                    .error(kafkabatch::error::ErrorKind::Corrupt, self.header.position, why),
            )
        })?;
        Ok(Some(ControlRecord {
            version: control.version,
            type_name: control.type_name(),
            type_id: control.type_id,
            coordinator_epoch: control.coordinator_epoch,
        }))
    }

    fn __len__(&self) -> usize {
        self.header.record_count.max(0) as usize
    }

    fn __repr__(&self) -> String {
        format!(
            "Batch(position={}, magic={}, base_offset={}, last_offset={}, record_count={}, compression={:?}, size_in_bytes={}{})",
            self.header.position,
            self.header.magic,
            self.header.base_offset,
            self.header.last_offset,
            self.header.record_count,
            self.header.codec.name(),
            self.header.size_in_bytes,
            if self.error.is_some() { ", error=..." } else { "" }
        )
    }
}

impl Batch {
    fn owned_records(&self, py: Python<'_>) -> PyResult<Vec<OwnedRecord>> {
        let data = self.input.as_slice();
        let raw = RawBatch {
            position: self.header.position,
            bytes: &data[self.header.position..self.header.position + self.header.size_in_bytes],
        };
        let options = DecodeOptions {
            include_control: true,
            ..self.options.clone()
        };
        let result = py.detach(|| {
            let mut sink = OwnedRecords::default();
            decode_batch(&raw, &options, &mut Vec::new(), Some(&mut sink)).map(|_| sink.records)
        });
        result.map_err(|e| to_py(py, &e))
    }
}

/// The header fields that can be read from a batch that failed to decode.
fn fallback_header(raw: &RawBatch) -> BatchHeader {
    let magic = raw.magic();
    if magic == 2 {
        if let Ok(header) = kafkabatch::batch::parse_v2_header(raw) {
            return header;
        }
    }
    let b = raw.bytes;
    let offset = be_i64(b, 0);
    // Legacy: crc at 12, attributes at 17, v1 timestamp at 18 (spec "Message Set").
    let legacy = matches!(magic, 0 | 1);
    let attributes = if legacy {
        b[17] as i16
    } else if b.len() > 22 {
        kafkabatch::batch::be_i16(b, 21)
    } else {
        0
    };
    let timestamp = if magic == 1 && b.len() >= 26 { be_i64(b, 18) } else { -1 };
    let (crc_at, crc_from) = if legacy { (12, 16) } else { (17, 21) };
    let crc = kafkabatch::batch::be_u32(b, crc_at);
    let computed = if legacy {
        kafkabatch::crc::crc32(&b[crc_from..])
    } else {
        kafkabatch::crc::crc32c(b.get(crc_from..).unwrap_or_default())
    };
    BatchHeader {
        position: raw.position,
        size_in_bytes: b.len(),
        magic,
        base_offset: offset,
        last_offset: offset,
        partition_leader_epoch: None,
        crc,
        crc_valid: crc == computed,
        attributes,
        // An unknown codec id shows as "none"; `attributes` keeps the real bits.
        codec: Codec::from_id((attributes & 0x07) as u8).unwrap_or(Codec::None),
        timestamp_type: match magic {
            1 if attributes & 0x08 != 0 => 1,
            1 => 0,
            _ => -1,
        },
        is_transactional: false,
        is_control: false,
        delete_horizon_ms: None,
        base_timestamp: timestamp,
        max_timestamp: timestamp,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        record_count: 0,
    }
}

/// Iterates the batches of a buffer (see `kafkabatch.iter_batches`).
#[pyclass(module = "kafkabatch._kafkabatch")]
pub struct BatchIterator {
    input: Arc<Input>,
    options: DecodeOptions,
    keep: bool,
    position: usize,
    scratch: Vec<u8>,
    end: Option<WalkEnd>,
    /// read_committed: batches not to yield.
    hidden: Option<Hidden>,
}

#[pymethods]
impl BatchIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(mut slf: PyRefMut<'_, Self>, py: Python<'_>) -> PyResult<Option<Batch>> {
        let this = &mut *slf;
        loop {
            if this.end.is_some() {
                return Ok(None);
            }
            let data = this.input.as_slice();
            let mut walker = BatchWalker::starting_at(data, this.position);
            let Some(raw) = walker.next() else {
                let end = walker.end().cloned().unwrap_or(WalkEnd::Clean);
                this.position = walker.position();
                this.end = Some(end.clone());
                if let (WalkEnd::Broken(e), OnError::Raise) = (&end, this.options.on_error) {
                    return Err(to_py(py, e));
                }
                return Ok(None);
            };
            this.position = walker.position();
            if this.hidden.as_ref().is_some_and(|h| h.contains(raw.position)) {
                continue;
            }
            let options = &this.options;
            let scratch = &mut this.scratch;
            let result = py.detach(|| decode_batch::<OwnedRecords>(&raw, options, scratch, None));
            match result {
                Ok(header) => {
                    return Ok(Some(Batch {
                        input: this.input.clone(),
                        header,
                        options: this.options.clone(),
                        error: None,
                    }))
                }
                Err(e) if this.options.on_error == OnError::Raise => return Err(to_py(py, &e)),
                Err(e) if this.keep => {
                    let error = Some(to_py(py, &e).into_value(py).into_any());
                    return Ok(Some(Batch {
                        input: this.input.clone(),
                        header: fallback_header(&raw),
                        options: this.options.clone(),
                        error,
                    }));
                }
                Err(_) => continue,
            }
        }
    }

    /// Where the walk is (after the last batch yielded, or where it ended).
    #[getter]
    fn position(&self) -> usize {
        self.position
    }

    /// Bytes after the last complete batch once the walk has ended (an
    /// incomplete tail, or everything from a broken frame on); 0 before.
    #[getter]
    fn trailing_bytes(&self) -> usize {
        match &self.end {
            Some(WalkEnd::Truncated { len, .. }) => *len,
            Some(WalkEnd::Broken(e)) => self.input.as_slice().len() - e.batch_position,
            _ => 0,
        }
    }

    /// None while walking; then "clean", "truncated" or "broken".
    #[getter]
    fn end(&self) -> Option<&'static str> {
        self.end.as_ref().map(|e| match e {
            WalkEnd::Clean => "clean",
            WalkEnd::Truncated { .. } => "truncated",
            WalkEnd::Broken(_) => "broken",
        })
    }

    /// Why the walk ended early on broken framing (as an exception), else None.
    #[getter]
    fn end_error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        match &self.end {
            Some(WalkEnd::Broken(e)) => Some(to_py(py, e).into_value(py).into_any()),
            _ => None,
        }
    }
}

/// Iterate the batches of `data` (see `kafkabatch.iter_batches`).
#[pyfunction]
#[pyo3(signature = (data, *, validate_crc=true, on_error="raise", max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, start=0, isolation="read_uncommitted", aborted_transactions=None, hide_open_transactions=None))]
#[allow(clippy::too_many_arguments)]
fn iter_batches(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    validate_crc: bool,
    on_error: &str,
    max_decompressed_size: usize,
    start: usize,
    isolation: &str,
    aborted_transactions: Option<Vec<(i64, i64)>>,
    hide_open_transactions: Option<bool>,
) -> PyResult<BatchIterator> {
    let (options, mode) = super::options(
        validate_crc,
        true,
        on_error,
        max_decompressed_size,
        isolation,
        aborted_transactions,
        hide_open_transactions,
    )?;
    let input = Input::new(data)?;
    let bytes = input.as_slice();
    if start > bytes.len() {
        return Err(PyValueError::new_err(format!(
            "start {start} is past the end of the data ({} bytes)",
            bytes.len()
        )));
    }
    let hidden = match &options.isolation {
        Isolation::ReadUncommitted => None,
        Isolation::ReadCommitted { aborted, hide_open } => {
            Some(py.detach(|| hidden_batches(bytes, start, aborted.as_deref(), *hide_open, &options)))
        }
    };
    Ok(BatchIterator {
        input: Arc::new(input),
        options,
        keep: mode == "keep",
        position: start,
        scratch: Vec::new(),
        end: None,
        hidden,
    })
}

/// The byte ranges of `data` (complete batches from its start) whose batch
/// headers leave open a record in the bounds (offsets `[start_offset,
/// end_offset)`, timestamps in microseconds `[start_ts_us, end_ts_us)`),
/// adjacent ones merged, and the bytes left out (see `kafkabatch::prune`).
#[pyfunction]
#[pyo3(signature = (data, *, start_offset=None, end_offset=None, start_ts_us=None, end_ts_us=None, keep_control=false))]
fn kept_ranges(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    start_ts_us: Option<i64>,
    end_ts_us: Option<i64>,
    keep_control: bool,
) -> PyResult<(Vec<(usize, usize)>, usize)> {
    let input = Input::new(data)?;
    let bytes = input.as_slice();
    let bounds = HeaderBounds {
        start_offset,
        end_offset,
        start_ts_us,
        end_ts_us,
    };
    Ok(py.detach(|| kafkabatch::prune::kept_ranges(bytes, &bounds, keep_control)))
}

/// Which of `n` rows are in the bounds, from the value buffers of their
/// `offset` and `timestamp` columns (`n` values each from the start of
/// the buffers): a bitmap for a boolean Arrow array, and how many are.
#[pyfunction]
#[pyo3(signature = (offsets, timestamps, n, *, start_offset=None, end_offset=None, start_ts_us=None, end_ts_us=None))]
#[allow(clippy::too_many_arguments)] // the four bounds, as kept_ranges takes them
fn row_mask(
    py: Python<'_>,
    offsets: &Bound<'_, PyAny>,
    timestamps: &Bound<'_, PyAny>,
    n: usize,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    start_ts_us: Option<i64>,
    end_ts_us: Option<i64>,
) -> PyResult<(Py<PyBytes>, usize)> {
    let (offsets, timestamps) = (Input::new(offsets)?, Input::new(timestamps)?);
    let bounds = HeaderBounds {
        start_offset,
        end_offset,
        start_ts_us,
        end_ts_us,
    };
    let (a, b) = (offsets.as_slice(), timestamps.as_slice());
    let (bits, kept) = py
        .detach(|| kafkabatch::prune::row_mask(a, b, n, &bounds))
        .ok_or_else(|| PyValueError::new_err(format!("row_mask: the buffers hold fewer than {n} values")))?;
    Ok((PyBytes::new(py, &bits).unbind(), kept))
}

/// One step of the read_committed pre-pass (see `kafkabatch::txn::transaction_pass`):
/// the transactions `open` (`(producer_id, first_offset)`) after walking
/// `data`'s headers, and those an ABORT marker in `data` ended, as
/// `(producer_id, first_offset, marker_offset)`.
#[pyfunction]
#[pyo3(signature = (data, open, *, start_offset=None, end_offset=None, max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE))]
fn transaction_pass(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    open: Vec<(i64, i64)>,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    max_decompressed_size: usize,
) -> PyResult<TransactionPass> {
    let input = Input::new(data)?;
    let bytes = input.as_slice();
    let options = DecodeOptions {
        max_decompressed_size,
        ..Default::default()
    };
    let mut open: std::collections::BTreeMap<i64, i64> = open.into_iter().collect();
    let ended =
        py.detach(|| kafkabatch::decode::transaction_pass(bytes, &mut open, start_offset, end_offset, &options));
    Ok((
        open.into_iter().collect(),
        ended
            .into_iter()
            .map(|t| (t.producer_id, t.first_offset, t.marker_offset))
            .collect(),
    ))
}

type TransactionPass = (Vec<(i64, i64)>, Vec<(i64, i64, i64)>);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Record>()?;
    m.add_class::<ControlRecord>()?;
    m.add_class::<Batch>()?;
    m.add_class::<BatchIterator>()?;
    m.add_function(wrap_pyfunction!(iter_batches, m)?)?;
    m.add_function(wrap_pyfunction!(kept_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(row_mask, m)?)?;
    m.add_function(wrap_pyfunction!(transaction_pass, m)?)?;
    Ok(())
}
