//! Typed values on the JVM source: `valueFormat=json` with a Spark DDL
//! `valueSchema` (Spark parses the DDL on the Java side; the read schema's
//! `value` field, in Spark's Arrow form, is the type the core parses the
//! JSON into, with the Python source's `onValueError` and error texts).
//! The other value options are refused until the core resolves them.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};
use kafkabatch::values::{parse_column, OnValueError, ValueFormat};

use crate::{Failure, SOURCE};

/// The value options this source takes so far (lower-cased, as the core keeps them).
const TAKEN: &[&str] = &["valueformat", "valueschema", "onvalueerror"];

/// How `value` is parsed: `None` when the options leave it binary. Refuses
/// the value options the JVM source does not take yet.
pub(crate) fn value_options(given: &BTreeMap<String, String>) -> Result<Option<OnValueError>, Failure> {
    if given.is_empty() {
        return Ok(None);
    }
    let format = given.get("valueformat").map(|f| f.trim().to_lowercase());
    let json = format.as_deref() == Some("json") && given.contains_key("valueschema");
    let others: Vec<&String> = given.keys().filter(|k| !TAKEN.contains(&k.as_str())).collect();
    if !json || !others.is_empty() {
        return Err(Failure::Options(format!(
            "{SOURCE} takes valueFormat=json with a Spark DDL valueSchema (and onValueError) only so far, \
             not keyFormat, Avro, Protobuf or schemaRegistry: use format('kafka-log-python') (the Python source) for them"
        )));
    }
    let on_error = given.get("onvalueerror").map(|v| v.trim().to_lowercase());
    match on_error.as_deref() {
        None | Some("raise") | Some("failfast") => Ok(Some(OnValueError::Raise)),
        Some("null") | Some("permissive") => Ok(Some(OnValueError::Null)),
        Some(_) => Err(Failure::Options(format!(
            "onValueError must be raise or null, not {:?}",
            given.get("onvalueerror").map(String::as_str).unwrap_or_default()
        ))),
    }
}

/// Parses the `value` column of the core's batches into the read schema's type.
#[derive(Clone)]
pub(crate) struct Values {
    format: ValueFormat,
    on_error: OnValueError,
    field: Arc<Field>,
}

impl Values {
    /// JSON values of the type of `target`'s `value` field.
    pub(crate) fn json(target: &Schema, on_error: OnValueError) -> Result<Self, Failure> {
        let field = target
            .field_with_name("value")
            .map_err(|_| Failure::Core("the read schema has no value column to type".into()))?;
        let format = ValueFormat::json(field.data_type().clone(), false)
            .map_err(|e| Failure::Options(format!("valueSchema: {e}")))?;
        Ok(Values {
            format,
            on_error,
            field: Arc::new(field.clone()),
        })
    }

    /// `batch` with its `value` column parsed.
    pub(crate) fn parse(&self, batch: RecordBatch) -> Result<RecordBatch, Failure> {
        let Ok(at) = batch.schema().index_of("value") else {
            return Ok(batch); // not read (pruned)
        };
        let pieces = parse_column(&self.format, &[batch.column(at).clone()], self.on_error, 1)
            .map_err(|e| Failure::Core(located(&batch, e.row, &e.reason)))?;
        let parsed: ArrayRef = match pieces.as_slice() {
            [one] => one.clone(),
            many => {
                let parts: Vec<&dyn Array> = many.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&parts)
                    .map_err(|e| Failure::Core(format!("joining parsed values: {e}")))?
            }
        };
        let mut fields: Vec<Arc<Field>> = batch.schema().fields().iter().cloned().collect();
        fields[at] = Arc::new(Field::new(
            "value",
            parsed.data_type().clone(),
            self.field.is_nullable(),
        ));
        let mut columns = batch.columns().to_vec();
        columns[at] = parsed;
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| Failure::Core(format!("a batch of parsed values: {e}")))
    }
}

/// The Python source's words for a value that does not parse: `value at offset 91 of events-3: why`.
fn located(batch: &RecordBatch, row: usize, reason: &str) -> String {
    let column = |name: &str| batch.column_by_name(name).filter(|c| row < c.len() && c.is_valid(row));
    let where_ = match column("offset") {
        Some(offsets) => {
            let mut text = format!("offset {}", offsets.as_primitive::<Int64Type>().value(row));
            if let (Some(topic), Some(partition)) = (column("topic"), column("partition")) {
                text += &format!(
                    " of {}-{}",
                    topic.as_string::<i32>().value(row),
                    partition.as_primitive::<Int32Type>().value(row)
                );
            }
            text
        }
        None => format!("row {row}"),
    };
    format!("value at {where_}: {reason}")
}
