//! Typed values on the JVM source: the core decides
//! ([`kafkabatch::values::spec`]: `valueFormat`, `valueSchema`, `keyFormat`,
//! `schemaRegistry`, … with the Python source's checks and texts), the Java
//! side only maps types.
//!
//! On the driver, `readColumns` resolves the options once (a registry is asked
//! there) and hands Java an Arrow IPC schema of the typed columns, each in the
//! Arrow type Spark reads (`ArrowUtils.fromArrowField` makes its Spark type); a
//! JSON column typed by Spark text (DDL, StructType JSON) has the text in its
//! field's metadata, for Spark to read. The resolved specs travel in the schema's
//! metadata, and from Java back in the options under [`RESOLVED`], to the
//! executors, which parse with exactly those specs and never ask the registry.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema};
use jni::objects::{JByteArray, JClass, JString};
use jni::EnvUnowned;
use serde_json::Value;

use kafkabatch::kmsg::appended::Internal;
use kafkabatch::scan::options::ScanOptions;
use kafkabatch::scan::ScanReader;
use kafkabatch::values::headers::with_header_frames;
use kafkabatch::values::spec::{spark_value_columns, ColumnSpec, Kind};
use kafkabatch::values::{parse_column, ValueFormat};
use kafkabatch::vocabulary::{in_words, Words};

use crate::{entry, options_of, scan_of, Failure};

/// The option (set by the Java side, never by users) carrying the driver's resolved specs to the executors.
pub(crate) const RESOLVED: &str = "kafkabatch.resolvedValues";

/// The schema metadata key of the resolved specs (`readColumns`).
const SPECS_KEY: &str = "kafkabatch.values";

/// The field metadata key of a Spark-typed JSON column's schema text.
const SPARK_SCHEMA_KEY: &str = "kafkabatch.sparkSchema";

/// What the driver resolved, for the readers: the typed columns' specs and `internalTopic`
/// (JSON `{"values": [spec, ...], "internal": {...} or null}`).
#[derive(Default)]
pub(crate) struct Resolved {
    pub(crate) values: Vec<ColumnSpec>,
    pub(crate) internal: Option<Internal>,
}

impl Resolved {
    fn to_json(&self) -> Result<String, Failure> {
        let bad = |e: serde_json::Error| Failure::Core(format!("value specs to JSON: {e}"));
        let values = serde_json::to_value(&self.values).map_err(bad)?;
        let internal = serde_json::to_value(&self.internal).map_err(bad)?;
        Ok(serde_json::json!({ "values": values, "internal": internal }).to_string())
    }

    fn from_json(text: &str) -> Result<Resolved, serde_json::Error> {
        let mut value: Value = serde_json::from_str(text)?;
        let mut take = |key: &str| value.get_mut(key).map(Value::take).unwrap_or(Value::Null);
        let values = take("values");
        let internal = take("internal");
        Ok(Resolved {
            values: if values.is_null() {
                Vec::new()
            } else {
                serde_json::from_value(values)?
            },
            internal: serde_json::from_value(internal)?,
        })
    }
}

/// `given` without [`RESOLVED`], and what it carried.
pub(crate) fn take_resolved(given: &mut BTreeMap<String, String>) -> Result<Option<Resolved>, Failure> {
    let Some(key) = given.keys().find(|k| k.eq_ignore_ascii_case(RESOLVED)).cloned() else {
        return Ok(None);
    };
    let text = given.remove(&key).unwrap_or_default();
    Resolved::from_json(&text)
        .map(Some)
        .map_err(|e| Failure::Core(format!("the resolved value specs from the JVM are malformed: {e}")))
}

/// The specs of a read: those resolved on the driver, else resolved here from
/// the options (`topics`: the topics read, whose registry subjects count).
pub(crate) fn specs_of(
    options: &ScanOptions,
    resolved: Option<Vec<ColumnSpec>>,
    topics: &[String],
    sample: &mut dyn FnMut(&str) -> Vec<ArrayRef>,
) -> Result<Vec<ColumnSpec>, Failure> {
    match resolved {
        Some(specs) => Ok(specs),
        None => spark_value_columns(&options.value_options, topics, sample)
            .map_err(|e| Failure::Options(in_words(&e, Words::Spark))),
    }
}

/// No values to sample (an executor without the driver's specs: the frames of the values it reads are unknown).
pub(crate) fn no_sample(_column: &str) -> Vec<ArrayRef> {
    Vec::new()
}

/// The typed columns and the columns `internalTopic` adds as an Arrow IPC stream (schema only), what
/// was resolved in its metadata; `None` when there are none.
fn columns_message(
    specs: Vec<ColumnSpec>,
    internal: Option<(Internal, Vec<Field>)>,
) -> Result<Option<Vec<u8>>, Failure> {
    if specs.is_empty() && internal.is_none() {
        return Ok(None);
    }
    let mut fields = Vec::new();
    for spec in &specs {
        let field = match spec
            .spark_type()
            .map_err(|e| Failure::Options(in_words(&e, Words::Spark)))?
        {
            Some(data_type) => Field::new(&spec.column, data_type, true),
            None => {
                let Kind::Json { spark: Some(text), .. } = &spec.kind else {
                    return Err(Failure::Core(format!("{}: no type", spec.column)));
                };
                Field::new(&spec.column, DataType::Null, true)
                    .with_metadata(HashMap::from([(SPARK_SCHEMA_KEY.to_string(), text.clone())]))
            }
        };
        fields.push(field);
    }
    let internal = internal.map(|(internal, added)| {
        fields.extend(added); // appended to the source schema (the core's columns are never among them)
        internal
    });
    let specs = Resolved {
        values: specs,
        internal,
    }
    .to_json()?;
    let schema = Schema::new(fields).with_metadata(HashMap::from([(SPECS_KEY.to_string(), specs)]));
    let ipc = |e: arrow_schema::ArrowError| Failure::Core(format!("writing Arrow IPC: {e}"));
    let mut writer = StreamWriter::try_new(Vec::new(), &schema).map_err(ipc)?;
    writer.finish().map_err(ipc)?;
    Ok(Some(writer.into_inner().map_err(ipc)?))
}

/// `byte[] readColumns(String optionsJson)`: checks the options as `checkOptions` does, then resolves
/// the typed columns (asking a registry): an Arrow IPC schema of them, or null when the options type none.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_readColumns<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    options: JString<'local>,
) -> JByteArray<'local> {
    entry(&mut env, |env| {
        let options = options_of(&options.try_to_string(env)?)?;
        // internalTopic, resolved here (its definitions read on the driver), checked first as in the Python source
        let internal = options.internal().map_err(|e| Failure::Options(e.0))?;
        let (topics, firsts) = if options.batch_error().is_some() {
            // a stream's start (latest): the topics are those the read names, if any
            options.tiered_key_pairs().map_err(|e| Failure::Options(e.0))?;
            (options.topic.iter().cloned().collect(), Vec::new())
        } else {
            let plan = scan_of(&options)?.plan()?;
            options
                .check_named_partitions(plan.partitions.iter().map(|p| (p.topic.as_str(), p.partition)))
                .map_err(|e| Failure::Options(e.0))?;
            let mut topics: Vec<String> = Vec::new();
            let mut firsts = Vec::new(); // each topic's first split, sampled for Protobuf frames
            for partition in &plan.partitions {
                if !topics.contains(&partition.topic) {
                    topics.push(partition.topic.clone());
                    firsts.extend(partition.splits.first().cloned());
                }
            }
            (topics, firsts)
        };
        // a stream's start refuses a batch scan: nothing is sampled then
        let scan = if firsts.is_empty() {
            None
        } else {
            Some(scan_of(&options)?)
        };
        let mut sample = |column: &str| -> Vec<ArrayRef> {
            let mut out = Vec::new();
            let Some(scan) = &scan else { return out };
            for split in &firsts {
                // a split that does not read is passed over: the scan reports it
                let Ok(context) = scan.context() else { break };
                let first = ScanReader::new(vec![split.clone()], context).next();
                if let Some(Ok(batch)) = first {
                    let Some(values) = batch.column_by_name(column) else {
                        continue;
                    };
                    // values whose schema ids are in their headers: sampled with the frames they stand for
                    let framed = batch.column_by_name("headers").and_then(|headers| {
                        with_header_frames(values.as_ref(), headers.as_ref(), column, &BTreeMap::new())
                            .ok()
                            .flatten()
                    });
                    out.push(framed.unwrap_or_else(|| values.clone()));
                }
            }
            out
        };
        let specs = specs_of(&options, None, &topics, &mut sample)?;
        let internal = match internal {
            Some(internal) => {
                let added = crate::internal::spark_fields(&internal, &topics)?;
                (!added.is_empty()).then_some((internal, added))
            }
            None => None,
        };
        match columns_message(specs, internal)? {
            Some(bytes) => Ok(env.byte_array_from_slice(&bytes)?),
            None => Ok(JByteArray::null()),
        }
    })
}

/// One typed column's parser.
#[derive(Clone)]
struct Column {
    name: String,
    format: ValueFormat,
    spec: ColumnSpec,
    /// Not in the read schema (pruned): parsed only so a bad value fails the read, as in the Python source.
    check_only: bool,
}

/// The typed columns whose bad values fail a read (`onValueError=raise`): they are parsed even
/// when the query does not select them, and no aggregate is answered from headers.
pub(crate) fn raising(specs: &[ColumnSpec]) -> Vec<&str> {
    specs
        .iter()
        .filter(|s| !s.null_on_error)
        .map(|s| s.column.as_str())
        .collect()
}

/// Parses the typed columns of the core's batches into the read schema's types.
#[derive(Clone)]
pub(crate) struct Values {
    columns: Vec<Column>,
}

impl Values {
    /// The parsers of `specs` for the columns `target` (the read schema in Spark's Arrow form) reads;
    /// `None` when it reads none of them.
    pub(crate) fn new(specs: &[ColumnSpec], target: &Schema) -> Result<Option<Self>, Failure> {
        let mut columns = Vec::new();
        for spec in specs {
            let field = target.field_with_name(&spec.column).ok();
            if field.is_none() && (spec.null_on_error || matches!(spec.kind, Kind::Json { spark: Some(_), .. })) {
                // pruned, and no bad value can fail the read (or its Spark type is not at hand)
                continue;
            }
            let spark = field
                .filter(|_| matches!(spec.kind, Kind::Json { .. }))
                .map(|f| f.data_type());
            let format = spec
                .value_format(spark)
                .map_err(|e| Failure::Options(in_words(&format!("{}_schema: {e}", spec.column), Words::Spark)))?;
            columns.push(Column {
                name: spec.column.clone(),
                format,
                spec: spec.clone(),
                check_only: field.is_none(),
            });
        }
        Ok((!columns.is_empty()).then_some(Values { columns }))
    }

    /// `batch` with its typed columns parsed (the hand-off casts them to Spark's types).
    pub(crate) fn parse(&self, batch: RecordBatch) -> Result<RecordBatch, Failure> {
        let mut fields: Vec<Arc<Field>> = batch.schema().fields().iter().cloned().collect();
        let mut columns = batch.columns().to_vec();
        for column in &self.columns {
            let Ok(at) = batch.schema().index_of(&column.name) else {
                continue;
            };
            let mut values = batch.column(at).clone();
            if column.spec.confluent() {
                // schema ids in the records' headers: the prefix they stand for, before the Confluent parser
                if let Some(headers) = batch.column_by_name("headers") {
                    let framed = with_header_frames(values.as_ref(), headers.as_ref(), &column.name, &BTreeMap::new())
                        .map_err(|e| Failure::Core(format!("{}: {e}", column.name)))?;
                    values = framed.unwrap_or(values);
                }
            }
            let pieces = parse_column(&column.format, std::slice::from_ref(&values), column.spec.on_error(), 1)
                .map_err(|e| {
                    let value = values
                        .as_binary_opt::<i32>()
                        .filter(|v| e.row < v.len() && v.is_valid(e.row))
                        .map(|v| v.value(e.row));
                    let hint = column.spec.framing_hint(value).unwrap_or_default();
                    let text = located(&batch, &column.name, e.row, &e.reason) + &hint;
                    Failure::Core(in_words(&text, Words::Spark))
                })?;
            let parsed: ArrayRef = match pieces.as_slice() {
                [one] => one.clone(),
                many => {
                    let parts: Vec<&dyn Array> = many.iter().map(|a| a.as_ref()).collect();
                    arrow_select::concat::concat(&parts)
                        .map_err(|e| Failure::Core(format!("joining parsed values: {e}")))?
                }
            };
            if column.check_only {
                continue;
            }
            fields[at] = Arc::new(Field::new(&column.name, parsed.data_type().clone(), true));
            columns[at] = parsed;
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| Failure::Core(format!("a batch of parsed values: {e}")))
    }
}

/// The resolved specs in a scan spec's options (see [`RESOLVED`]).
pub(crate) fn resolved_in_spec(spec: &str) -> Result<Option<Vec<ColumnSpec>>, Failure> {
    Ok(all_resolved_in_spec(spec)?.map(|r| r.values))
}

/// What the driver resolved, from a scan spec's options (see [`RESOLVED`]).
pub(crate) fn all_resolved_in_spec(spec: &str) -> Result<Option<Resolved>, Failure> {
    let spec: Value = serde_json::from_str(spec).map_err(|e| Failure::Core(format!("a scan spec: {e}")))?;
    let Some(Value::Object(options)) = spec.get("options") else {
        return Ok(None);
    };
    let mut given: BTreeMap<String, String> = options
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    take_resolved(&mut given)
}

/// The Python source's words for a value that does not parse: `value at offset 91 of events-3: why`.
fn located(batch: &RecordBatch, column: &str, row: usize, reason: &str) -> String {
    let at = |name: &str| batch.column_by_name(name).filter(|c| row < c.len() && c.is_valid(row));
    let where_ = match at("offset") {
        Some(offsets) => {
            let mut text = format!("offset {}", offsets.as_primitive::<Int64Type>().value(row));
            if let (Some(topic), Some(partition)) = (at("topic"), at("partition")) {
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
    format!("{column} at {where_}: {reason}")
}
