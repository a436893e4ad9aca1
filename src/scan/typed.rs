//! Typed columns parsed by the reader: each decoded chunk's `value` (or
//! `key`) column parsed by the core's value parsers
//! ([`crate::values::ValueFormat`]) as the chunk is cut, so the raw column of
//! a window is never held whole beside its parsed form; rows a bounded read
//! filters out are never parsed.
//!
//! A chunk whose values fail (under [`OnValueError::Raise`]) is left as it
//! was while decoding; the read then parses the chunks left in order, and
//! the first bad value is reported with its offset, topic and partition
//! ([`BadValue`]), in the words of the Python package's `ValueDecodeError`.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::plan::ScanError;
use crate::values::headers::with_header_frames;
use crate::values::spec::registry_framing_hint;
use crate::values::{parse_column, OnValueError, ValueFormat};

/// How one column of the records is parsed.
#[derive(Clone)]
pub struct TypedColumn {
    /// `value` or `key`.
    pub column: String,
    pub format: Arc<ValueFormat>,
    pub on_error: OnValueError,
    /// Confluent-framed values: schema ids in the records' headers stand for
    /// a prefix (GUIDs by the local ids given here, see
    /// [`crate::values::headers`]); `None` for values read as they are.
    pub header_frames: Option<BTreeMap<[u8; 16], u32>>,
    /// The parsed column's type.
    data_type: DataType,
}

impl std::fmt::Debug for TypedColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedColumn")
            .field("column", &self.column)
            .field("data_type", &self.data_type)
            .field("on_error", &self.on_error)
            .finish_non_exhaustive()
    }
}

impl TypedColumn {
    /// `column` parsed as `format`.
    pub fn new(
        column: &str,
        format: Arc<ValueFormat>,
        on_error: OnValueError,
        header_frames: Option<BTreeMap<[u8; 16], u32>>,
    ) -> Result<Self, String> {
        if !matches!(column, "value" | "key") {
            return Err(format!("only the value and key columns are parsed, not {column:?}"));
        }
        let data_type = format.data_type()?;
        Ok(TypedColumn {
            column: column.to_string(),
            format,
            on_error,
            header_frames,
            data_type,
        })
    }

    /// The values of `batch`'s column to parse (with the prefixes their
    /// headers stand for), and the column's index; `None` when `batch` has no
    /// such column (not read).
    fn values_of(&self, batch: &RecordBatch) -> Result<Option<(usize, ArrayRef)>, ScanError> {
        let Ok(at) = batch.schema().index_of(&self.column) else {
            return Ok(None);
        };
        let values = batch.column(at).clone();
        if let (Some(guid_ids), Some(headers)) = (&self.header_frames, batch.column_by_name("headers")) {
            let framed = with_header_frames(values.as_ref(), headers.as_ref(), &self.column, guid_ids)
                .map_err(ScanError::Options)?;
            return Ok(Some((at, framed.unwrap_or(values))));
        }
        Ok(Some((at, values)))
    }
}

/// A value (or key) that could not be parsed: the record's place and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue {
    pub column: String,
    /// Its row in the chunk parsed.
    pub row: usize,
    pub reason: String,
    pub topic: Option<String>,
    pub partition: Option<i32>,
    pub offset: Option<i64>,
    /// What the value looks like when that explains the failure (plain Avro
    /// values that look Schema Registry framed), or empty.
    pub hint: String,
}

impl std::fmt::Display for BadValue {
    /// `value at offset 91 of events-3: why`, as the Python package says it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = match (self.offset, &self.topic, self.partition) {
            (Some(offset), Some(topic), Some(partition)) => format!("offset {offset} of {topic}-{partition}"),
            (Some(offset), _, _) => format!("offset {offset}"),
            _ => format!("row {}", self.row),
        };
        write!(f, "{} at {at}: {}{}", self.column, self.reason, self.hint)
    }
}

/// `batch` with its columns of `columns` parsed (`threads` as
/// [`parse_column`] takes them); the first bad value fails it.
pub(crate) fn parse_batch(
    columns: &[TypedColumn],
    batch: RecordBatch,
    threads: usize,
) -> Result<RecordBatch, ScanError> {
    let mut out = batch;
    for typed in columns {
        let Some((at, values)) = typed.values_of(&out)? else {
            continue;
        };
        let parsed = catch_unwind(AssertUnwindSafe(|| {
            parse_column(&typed.format, std::slice::from_ref(&values), typed.on_error, threads)
        }))
        .map_err(|_| ScanError::Options(format!("{}: the value parser failed", typed.column)))?;
        let pieces = parsed.map_err(|e| bad_value(typed, &out, &values, e.row, e.reason))?;
        let parsed: ArrayRef = match pieces.as_slice() {
            [one] => one.clone(),
            [] => arrow_array::new_empty_array(&typed.data_type),
            many => {
                let parts: Vec<&dyn Array> = many.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&parts)
                    .map_err(|e| ScanError::Options(format!("joining parsed values: {e}")))?
            }
        };
        out = with_column(&out, at, &typed.column, parsed)?;
    }
    Ok(out)
}

/// `chunk` with its columns of `columns` parsed, as a decode cuts it (see
/// [`crate::decode::ChunkStep`]); a chunk whose values fail (or whose parse
/// panics) comes back with that column as it was, and sets `failed`: the
/// read then parses what is left with [`parse_batch`], which names the first
/// bad record. Once `failed` is set, later chunks are left as they are.
pub(crate) fn parse_while_decoding(columns: &[TypedColumn], chunk: RecordBatch, failed: &AtomicBool) -> RecordBatch {
    let mut out = chunk;
    for typed in columns {
        if failed.load(Relaxed) {
            return out;
        }
        let step = catch_unwind(AssertUnwindSafe(|| {
            let Ok(Some((at, values))) = typed.values_of(&out) else {
                return None;
            };
            let parsed = typed.format.parse(values.as_ref(), 0, typed.on_error).ok()?;
            with_column(&out, at, &typed.column, parsed).ok()
        }));
        match step {
            Ok(Some(parsed)) => out = parsed,
            _ => failed.store(true, Relaxed),
        }
    }
    out
}

/// `batch` with column `at` (named `name`) replaced by `array`.
fn with_column(batch: &RecordBatch, at: usize, name: &str, array: ArrayRef) -> Result<RecordBatch, ScanError> {
    let mut fields: Vec<Arc<Field>> = batch.schema().fields().iter().cloned().collect();
    fields[at] = Arc::new(Field::new(name, array.data_type().clone(), true));
    let mut arrays = batch.columns().to_vec();
    arrays[at] = array;
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| ScanError::Options(format!("a batch of parsed values: {e}")))
}

/// The failure of row `row` of `batch` (whose `typed.column` values are `values`).
fn bad_value(typed: &TypedColumn, batch: &RecordBatch, values: &ArrayRef, row: usize, reason: String) -> ScanError {
    let at = |name: &str| batch.column_by_name(name).filter(|c| row < c.len() && c.is_valid(row));
    let plain_avro = matches!(*typed.format, ValueFormat::Avro { framed: false, .. });
    let value = values
        .as_binary_opt::<i32>()
        .filter(|v| row < v.len() && v.is_valid(row))
        .map(|v| v.value(row));
    let hint = if plain_avro {
        registry_framing_hint(value).unwrap_or_default()
    } else {
        String::new()
    };
    ScanError::Value(Box::new(BadValue {
        column: typed.column.clone(),
        row,
        reason,
        topic: at("topic").and_then(|c| c.as_string_opt::<i32>().map(|t| t.value(row).to_string())),
        partition: at("partition").and_then(|c| c.as_primitive_opt::<Int32Type>().map(|p| p.value(row))),
        offset: at("offset").and_then(|c| c.as_primitive_opt::<Int64Type>().map(|o| o.value(row))),
        hint,
    }))
}
