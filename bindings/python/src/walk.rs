//! One walk over a segment's batch headers (`kafkabatch::scan::walk`), for
//! the planning in `kafkabatch.log`: windows, kept ranges and the transaction
//! pass of a read all come from the one walk; and the index files and the
//! checked seeks with them (`kafkabatch::scan::index`, `kafkabatch::scan::seek`).

use std::collections::BTreeMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::input::Input;
use kafkabatch::decode::{DecodeOptions, DEFAULT_MAX_DECOMPRESSED_SIZE};
use kafkabatch::prune::HeaderBounds;
use kafkabatch::scan::index::{offset_index_used, time_index_used};
use kafkabatch::scan::seek::{IndexFile, SeekBounds};
use kafkabatch::scan::walk::{walk, Walk};

/// The batches of a buffer from a start position, walked once by header.
#[pyclass(module = "kafkabatch._kafkabatch", frozen)]
pub struct SegmentWalk {
    walk: Walk,
}

/// Walk the batch headers of `data` from byte `start` (a batch boundary).
#[pyfunction]
#[pyo3(signature = (data, start=0))]
fn walk_batches(py: Python<'_>, data: &Bound<'_, PyAny>, start: usize) -> PyResult<SegmentWalk> {
    let input = Input::new(data)?;
    let bytes = input.as_slice();
    if start > bytes.len() {
        return Err(PyValueError::new_err(format!(
            "start {start} is past the end of the data ({} bytes)",
            bytes.len()
        )));
    }
    Ok(SegmentWalk {
        walk: py.detach(|| walk(bytes, start)),
    })
}

fn bounds(
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    start_ts_us: Option<i64>,
    end_ts_us: Option<i64>,
) -> HeaderBounds {
    HeaderBounds {
        start_offset,
        end_offset,
        start_ts_us,
        end_ts_us,
    }
}

type TransactionPass = (Vec<(i64, i64)>, Vec<(i64, i64, i64)>);

#[pymethods]
impl SegmentWalk {
    /// Where the walk began.
    #[getter]
    fn start(&self) -> usize {
        self.walk.start
    }

    /// The end of the last complete batch.
    #[getter]
    fn valid_end(&self) -> usize {
        self.walk.valid_end
    }

    fn __len__(&self) -> usize {
        self.walk.batches.len()
    }

    /// Every batch's header facts as columns (lists of ints): `position`,
    /// `size`, `magic`, `attributes`, `base_offset`, `last_offset`,
    /// `max_timestamp`, `record_count` (-1 for a legacy wrapper),
    /// `producer_id`, `producer_epoch`.
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let b = &self.walk.batches;
        let out = PyDict::new(py);
        out.set_item("position", b.iter().map(|f| f.position).collect::<Vec<_>>())?;
        out.set_item("size", b.iter().map(|f| f.size).collect::<Vec<_>>())?;
        out.set_item("magic", b.iter().map(|f| f.magic).collect::<Vec<_>>())?;
        out.set_item("attributes", b.iter().map(|f| f.attributes).collect::<Vec<_>>())?;
        out.set_item("base_offset", b.iter().map(|f| f.base_offset).collect::<Vec<_>>())?;
        out.set_item("last_offset", b.iter().map(|f| f.last_offset).collect::<Vec<_>>())?;
        out.set_item("max_timestamp", b.iter().map(|f| f.max_timestamp).collect::<Vec<_>>())?;
        out.set_item("record_count", b.iter().map(|f| f.record_count).collect::<Vec<_>>())?;
        out.set_item("producer_id", b.iter().map(|f| f.producer_id).collect::<Vec<_>>())?;
        out.set_item("producer_epoch", b.iter().map(|f| f.producer_epoch).collect::<Vec<_>>())?;
        Ok(out)
    }

    /// The ranges of `[a, b)` whose batches could hold a record in the
    /// bounds, and the bytes left out (see `crate::prune`); None when `a` is
    /// not a batch start of this walk.
    #[pyo3(signature = (a, b, *, start_offset=None, end_offset=None, start_ts_us=None, end_ts_us=None, keep_control=false))]
    #[allow(clippy::too_many_arguments)] // the four bounds, as kept_ranges takes them
    fn kept_ranges(
        &self,
        a: usize,
        b: usize,
        start_offset: Option<i64>,
        end_offset: Option<i64>,
        start_ts_us: Option<i64>,
        end_ts_us: Option<i64>,
        keep_control: bool,
    ) -> Option<(Vec<(usize, usize)>, usize)> {
        let bounds = bounds(start_offset, end_offset, start_ts_us, end_ts_us);
        self.walk.kept_ranges(a, b, &bounds, keep_control)
    }

    /// `[a, b)` without its leading and trailing batches that can't hold a
    /// record in the bounds (`(b, b)` when none can); None when `a` is not a
    /// batch start of this walk.
    #[pyo3(signature = (a, b, *, start_offset=None, end_offset=None, start_ts_us=None, end_ts_us=None, keep_control=false))]
    #[allow(clippy::too_many_arguments)]
    fn narrow(
        &self,
        a: usize,
        b: usize,
        start_offset: Option<i64>,
        end_offset: Option<i64>,
        start_ts_us: Option<i64>,
        end_ts_us: Option<i64>,
        keep_control: bool,
    ) -> Option<(usize, usize)> {
        let bounds = bounds(start_offset, end_offset, start_ts_us, end_ts_us);
        self.walk.narrow(a, b, &bounds, keep_control)
    }

    /// The byte windows `(start, end, last)` of `[a, b)` a read decodes,
    /// about `chunk` bytes each, cut by the offset bounds (legacy wrappers'
    /// inner offsets read from `data`, the walked buffer); None when `a` is
    /// not a batch start of this walk.
    #[pyo3(signature = (data, a, b, chunk, *, start_offset=None, end_offset=None))]
    #[allow(clippy::too_many_arguments)]
    fn windows(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        a: usize,
        b: usize,
        chunk: usize,
        start_offset: Option<i64>,
        end_offset: Option<i64>,
    ) -> PyResult<Option<Vec<(usize, usize, bool)>>> {
        let input = Input::new(data)?;
        let bytes = input.as_slice();
        Ok(py.detach(|| self.walk.windows(bytes, a, b, chunk, start_offset, end_offset)))
    }

    /// One step of the read_committed pre-pass over the batches in `[a, b)`
    /// (see `transaction_pass`): the transactions still open after them and
    /// those an ABORT marker ended, as `(producer_id, first_offset,
    /// marker_offset)`; None when `a` is not a batch start of this walk.
    #[pyo3(signature = (data, a, b, open, *, start_offset=None, end_offset=None, max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE))]
    #[allow(clippy::too_many_arguments)]
    fn transaction_pass(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        a: usize,
        b: usize,
        open: Vec<(i64, i64)>,
        start_offset: Option<i64>,
        end_offset: Option<i64>,
        max_decompressed_size: usize,
    ) -> PyResult<Option<TransactionPass>> {
        let input = Input::new(data)?;
        let bytes = input.as_slice();
        let options = DecodeOptions {
            max_decompressed_size,
            ..Default::default()
        };
        let mut open: BTreeMap<i64, i64> = open.into_iter().collect();
        let ended = py.detach(|| {
            self.walk
                .transaction_pass(bytes, a..b, &mut open, start_offset, end_offset, &options)
        });
        Ok(ended.map(|ended| {
            (
                open.into_iter().collect(),
                ended
                    .into_iter()
                    .map(|t| (t.producer_id, t.first_offset, t.marker_offset))
                    .collect(),
            )
        }))
    }
}

/// `(offsets, positions)` of a `.index` file's bytes by Kafka's rules (see
/// `kafkabatch::scan::index::offset_index_entries`); ValueError saying why
/// when a broker could not have written them.
#[pyfunction]
fn offset_index_entries(data: &Bound<'_, PyAny>, base_offset: i64) -> PyResult<(Vec<i64>, Vec<i64>)> {
    let input = Input::new(data)?;
    kafkabatch::scan::index::offset_index_entries(input.as_slice(), base_offset)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// How many whole entries of an index file's bytes are in use, before the
/// preallocated zero tail: `kind` is "offset" (`.index`) or "time" (`.timeindex`).
#[pyfunction]
fn index_entries_used(data: &Bound<'_, PyAny>, kind: &str) -> PyResult<usize> {
    let input = Input::new(data)?;
    match kind {
        "offset" => Ok(offset_index_used(input.as_slice())),
        "time" => Ok(time_index_used(input.as_slice())),
        _ => Err(PyValueError::new_err(format!(
            "kind must be 'offset' or 'time', not {kind:?}"
        ))),
    }
}

/// The byte range `(start, end)` of a segment's bytes `log` worth reading
/// for the bounds, from its `.index` and `.timeindex` bytes (None: no such
/// file) checked against the log, and None; or `(0, None, reason)` when the
/// indexes can't be trusted (see `kafkabatch::scan::seek`).
#[pyfunction]
#[pyo3(signature = (log, base_offset, index_name, index, time_index_name, time_index, *, start_offset=None, end_offset=None, start_timestamp_ms=None))]
#[allow(clippy::too_many_arguments)]
fn seek_range(
    py: Python<'_>,
    log: &Bound<'_, PyAny>,
    base_offset: i64,
    index_name: &str,
    index: Option<&Bound<'_, PyAny>>,
    time_index_name: &str,
    time_index: Option<&Bound<'_, PyAny>>,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    start_timestamp_ms: Option<i64>,
) -> PyResult<(usize, Option<usize>, Option<String>)> {
    let log = Input::new(log)?;
    let index = index.map(Input::new).transpose()?;
    let time_index = time_index.map(Input::new).transpose()?;
    let bounds = SeekBounds {
        start_offset,
        end_offset,
        start_timestamp_ms,
    };
    let index = IndexFile {
        name: index_name,
        data: index.as_ref().map(Input::as_slice),
    };
    let time_index = IndexFile {
        name: time_index_name,
        data: time_index.as_ref().map(Input::as_slice),
    };
    let log = log.as_slice();
    let found = py.detach(|| kafkabatch::scan::seek::seek_range(log, base_offset, index, time_index, bounds));
    Ok(match found {
        Ok((start, end)) => (start, end, None),
        Err(bad) => (0, None, Some(bad.0)),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SegmentWalk>()?;
    m.add_function(wrap_pyfunction!(walk_batches, m)?)?;
    m.add_function(wrap_pyfunction!(offset_index_entries, m)?)?;
    m.add_function(wrap_pyfunction!(index_entries_used, m)?)?;
    m.add_function(wrap_pyfunction!(seek_range, m)?)?;
    Ok(())
}
