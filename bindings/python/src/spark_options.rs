//! The `kafka-log` Spark source's options, parsed by the core
//! (`kafkabatch::scan::options`) so the Python and JVM sources take the same
//! names and say the same errors.

use kafkabatch::vocabulary::{in_words, Words};
use std::collections::BTreeMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use kafkabatch::scan::options::{
    check_option_names, OffsetsSpec, ScanOptions, DEFAULT_MAX_BYTES_PER_PARTITION, DEFAULT_MAX_RECORDS_PER_BATCH,
    KNOWN_OPTIONS, VALUE_OPTIONS,
};
use kafkabatch::scan::pushdown::{filter_of, Literal, NameValue, Op, Predicate};
use kafkabatch::scan::tasks::{estimate_work, pack, OPEN_COST_BYTES};
use kafkabatch::scan::ScanIsolation;

use super::input::Input;

fn offsets<'py>(py: Python<'py>, map: &BTreeMap<(String, i64), i64>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for ((topic, partition), offset) in map {
        d.set_item(
            PyTuple::new(
                py,
                [
                    topic.into_pyobject(py)?.into_any(),
                    partition.into_pyobject(py)?.into_any(),
                ],
            )?,
            offset,
        )?;
    }
    Ok(d)
}

fn parse(options: Vec<(String, String)>) -> PyResult<ScanOptions> {
    ScanOptions::parse(options).map_err(|e| PyValueError::new_err(e.0))
}

/// Parse the `kafka-log` source's options (`(name, value)` pairs, names in
/// any case) into a dict of their checked values (see the stub).
#[pyfunction]
fn _spark_options<'py>(py: Python<'py>, options: Vec<(String, String)>) -> PyResult<Bound<'py, PyDict>> {
    let o = parse(options)?;
    let d = PyDict::new(py);
    d.set_item("paths", &o.paths)?;
    d.set_item("path_glob_filter", &o.path_glob_filter)?;
    d.set_item("topic", &o.topic)?;
    d.set_item("partition", o.partition)?;
    d.set_item("tiered_keys", &o.tiered_keys)?;
    d.set_item(
        "isolation",
        match o.isolation {
            ScanIsolation::ReadUncommitted => "read_uncommitted",
            ScanIsolation::ReadCommitted => "read_committed",
        },
    )?;
    d.set_item("validate_crc", o.validate_crc)?;
    d.set_item("include_control", o.include_control)?;
    d.set_item("mode", o.mode.as_str())?;
    d.set_item("max_records_per_batch", o.max_records_per_batch)?;
    d.set_item("max_bytes_per_partition", o.max_bytes_per_partition)?;
    d.set_item("min_partitions", o.min_partitions)?;
    d.set_item("max_decompressed_size", o.max_decompressed_size)?;
    d.set_item("threads", o.threads)?;
    let spec = match &o.starting_spec {
        OffsetsSpec::Earliest => "earliest".into_pyobject(py)?.into_any(),
        OffsetsSpec::Latest => "latest".into_pyobject(py)?.into_any(),
        OffsetsSpec::Offsets(map) => offsets(py, map)?.into_any(),
    };
    d.set_item("starting_spec", spec)?;
    d.set_item("batch_error", o.batch_error())?;
    d.set_item("starting_offsets", offsets(py, &o.starting_offsets)?)?;
    d.set_item("ending_offsets", offsets(py, &o.ending_offsets)?)?;
    d.set_item("has_ending", o.has_ending)?;
    d.set_item("max_offsets_per_trigger", o.max_offsets_per_trigger)?;
    d.set_item("max_bytes_per_trigger", o.max_bytes_per_trigger)?;
    d.set_item("fail_on_data_loss", o.fail_on_data_loss)?;
    d.set_item("starting_timestamp", o.starting_timestamp_us)?;
    d.set_item("ending_timestamp", o.ending_timestamp_us)?;
    d.set_item("value_options", &o.value_options)?;
    d.set_item("internal_topic", &o.internal_topic)?;
    d.set_item("definitions", &o.definitions)?;
    d.set_item("without_hadoop_error", o.without_hadoop_error())?;
    Ok(d)
}

/// Refuse `startingOffsets`/`endingOffsets` naming topic-partitions not in `found`.
#[pyfunction]
fn _spark_check_named_partitions(options: Vec<(String, String)>, found: Vec<(String, i64)>) -> PyResult<()> {
    parse(options)?
        .check_named_partitions(found.iter().map(|(t, p)| (t.as_str(), *p)))
        .map_err(|e| PyValueError::new_err(e.0))
}

/// Refuse the first of `names` not in `known` (case-insensitive), suggesting the closest.
#[pyfunction]
fn _spark_check_option_names(names: Vec<String>, known: Vec<String>) -> PyResult<()> {
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    check_option_names(&names, &known).map_err(|e| PyValueError::new_err(e.0))
}

/// `message` with the option names in Python's words said in `words` (`"cli"` or `"spark"`).
#[pyfunction]
fn _in_words(message: &str, words: &str) -> PyResult<String> {
    let words = match words {
        "cli" => Words::Cli,
        "spark" => Words::Spark,
        other => {
            return Err(PyValueError::new_err(format!(
                "words must be 'cli' or 'spark', not {other:?}"
            )))
        }
    };
    Ok(in_words(message, words))
}

/// What decoding bytes `[start, end)` of a segment costs Spark downstream, in
/// bytes (`kafkabatch::scan::tasks::estimate_work`); `data` holds those bytes.
#[pyfunction]
fn _spark_estimate_work(py: Python<'_>, data: &Bound<'_, PyAny>, start: u64, end: u64) -> PyResult<u64> {
    let input = Input::new(data)?;
    let bytes = input.as_slice();
    Ok(py.detach(|| {
        let header = |pos: u64| {
            let at = usize::try_from(pos.checked_sub(start)?).ok()?;
            let rest = bytes.get(at..)?;
            Some(rest[..rest.len().min(V2_HEADER_BYTES)].to_vec())
        };
        estimate_work(header, start, end)
    }))
}

/// The bytes of a v2 batch header through its records count (what `estimate_work` reads at each batch).
const V2_HEADER_BYTES: usize = 61;

/// Consecutive splits packed into balanced tasks (`kafkabatch::scan::tasks::pack`):
/// `(first, end)` split indices of each task, from each split's wire bytes and estimated work.
#[pyfunction]
fn _spark_pack(wire: Vec<u64>, work: Vec<u64>, max_bytes: u64, min_partitions: u64) -> Vec<(usize, usize)> {
    pack(&wire, &work, max_bytes, min_partitions)
        .into_iter()
        .map(|r| (r.start, r.end))
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SPARK_OPTIONS", PyTuple::new(m.py(), KNOWN_OPTIONS)?)?;
    m.add("SPARK_VALUE_OPTIONS", PyTuple::new(m.py(), VALUE_OPTIONS)?)?;
    m.add("SPARK_DEFAULT_MAX_BYTES_PER_PARTITION", DEFAULT_MAX_BYTES_PER_PARTITION)?;
    m.add("SPARK_DEFAULT_MAX_RECORDS_PER_BATCH", DEFAULT_MAX_RECORDS_PER_BATCH)?;
    m.add("SPARK_OPEN_COST_BYTES", OPEN_COST_BYTES)?;
    m.add_function(wrap_pyfunction!(_spark_estimate_work, m)?)?;
    m.add_function(wrap_pyfunction!(_spark_pack, m)?)?;
    m.add_function(wrap_pyfunction!(_spark_options, m)?)?;
    m.add_function(wrap_pyfunction!(_spark_check_named_partitions, m)?)?;
    m.add_function(wrap_pyfunction!(_spark_check_option_names, m)?)?;
    m.add_function(wrap_pyfunction!(_in_words, m)?)?;
    register_pushdown(m)
}

fn op_of(text: &str) -> Option<Op> {
    Some(match text {
        "==" => Op::Eq,
        "!=" => Op::Ne,
        "<" => Op::Lt,
        "<=" => Op::Le,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "in" => Op::In,
        "not in" => Op::NotIn,
        "startswith" => Op::StartsWith,
        "endswith" => Op::EndsWith,
        "contains" => Op::Contains,
        _ => return None,
    })
}

fn op_text(op: Op) -> &'static str {
    match op {
        Op::Eq => "==",
        Op::Ne => "!=",
        Op::Lt => "<",
        Op::Le => "<=",
        Op::Gt => ">",
        Op::Ge => ">=",
        Op::In => "in",
        Op::NotIn => "not in",
        Op::StartsWith => "startswith",
        Op::EndsWith => "endswith",
        Op::Contains => "contains",
    }
}

/// A literal as `(kind, value)`: `int`, `str`, `timestamp_us`, `bool`, `null`, `other`.
fn literal_of(kind: &str, value: &Bound<'_, PyAny>) -> PyResult<Literal> {
    Ok(match kind {
        "int" => value.extract::<i64>().map_or(Literal::Other, Literal::Int),
        "str" => Literal::Str(value.extract()?),
        "timestamp_us" => Literal::TimestampUs(value.extract()?),
        "bool" => Literal::Bool(value.extract()?),
        "null" => Literal::Null,
        _ => Literal::Other,
    })
}

/// One Spark filter (`column`, `op` — a comparison, `isnull` or `isnotnull` —,
/// typed literals, under a `NOT` or not) as the core's predicate.
pub(crate) fn predicate_of(
    column: String,
    op: &str,
    literals: &[(String, Bound<'_, PyAny>)],
    negated: bool,
) -> PyResult<Predicate> {
    let literals = literals
        .iter()
        .map(|(kind, value)| literal_of(kind, value))
        .collect::<PyResult<Vec<_>>>()?;
    let predicate = match op {
        "isnull" => Predicate::IsNull { column },
        "isnotnull" => Predicate::IsNotNull { column },
        "in" => Predicate::In {
            column,
            values: literals,
        },
        other => match (op_of(other), literals.as_slice()) {
            (Some(op), [value]) => Predicate::Compare {
                column,
                op,
                value: value.clone(),
            },
            _ => Predicate::Other,
        },
    };
    Ok(if negated {
        Predicate::Not(Box::new(predicate))
    } else {
        predicate
    })
}

/// One Spark filter (see [`predicate_of`]) as the core's pushdown rules take
/// it: a dict of the `RecordFilter` fields and `exact`; `ValueError` when it
/// is not pushable (internal: see the stub).
#[pyfunction]
fn _pushdown_filter<'py>(
    py: Python<'py>,
    column: String,
    op: &str,
    literals: Vec<(String, Bound<'py, PyAny>)>,
    negated: bool,
) -> PyResult<Bound<'py, PyDict>> {
    // the operator as pushed (NOT of a comparison on a never-null column is its opposite)
    let pushed_op = op_of(op).and_then(|o| if negated { o.negated() } else { Some(o) });
    let predicate = predicate_of(column, op, &literals, negated)?;
    let (filter, exact) = filter_of(&predicate).map_err(|e| PyValueError::new_err(e.0))?;
    let d = PyDict::new(py);
    let mut names = Vec::new();
    for p in &filter.names {
        let values = PyList::empty(py);
        for v in &p.values {
            match v {
                NameValue::Topic(t) => values.append(t)?,
                NameValue::Partition(n) => values.append(n)?,
            }
        }
        names.push((p.column.as_str(), op_text(p.op), values));
    }
    d.set_item("names", names)?;
    d.set_item("start_offset", filter.start_offset)?;
    d.set_item("end_offset", filter.end_offset)?;
    d.set_item("start_ts", filter.start_ts_us)?;
    d.set_item("end_ts", filter.end_ts_us)?;
    d.set_item("nothing", filter.nothing)?;
    d.set_item("exact", exact)?;
    d.set_item("op", pushed_op.map(op_text))?;
    Ok(d)
}

pub fn register_pushdown(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_pushdown_filter, m)?)
}
