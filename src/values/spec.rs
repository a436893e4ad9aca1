//! The `kafka-log` Spark source's value options (`valueFormat`,
//! `valueSchema`, `keyFormat`, `schemaRegistry`, …, lower-cased as
//! [`crate::scan::options::ScanOptions`] keeps them) → how each typed column
//! is parsed ([`ColumnSpec`]), with every schema in hand, and the Arrow type
//! Spark gets for it ([`spark_ready`]).
//!
//! The same decisions and the same error texts as the Python source's
//! `kafkabatch.spark.values.value_columns` (Python's keyword names: a front end
//! says them in its own with [`crate::vocabulary::in_words`]). A registry named
//! by URL is asked here, on the driver, once: a [`ColumnSpec`] serialises to
//! JSON and travels to the executors, which never need the network.

use std::collections::BTreeMap;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, Fields, TimeUnit};
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::protobuf::{frames_of, ProtoSource, Protobuf, SchemaFiles, MAX_RECURSION};
use super::registry::{Reference, SchemaRegistry, BASIC_AUTH, BEARER_TOKEN};
use super::{OnValueError, ValueFormat};

/// The value formats, in the order error texts list them.
pub const FORMATS: &[&str] = &["binary", "string", "json", "avro", "protobuf"];

/// Imports every Protobuf compiler knows; registries never hold them.
const WELL_KNOWN: &str = "google/protobuf/";

/// How deep a JSON Schema document is followed (deeper parts are kept as JSON text).
const MAX_JSON_SCHEMA_DEPTH: usize = 64;

/// One Protobuf schema file: its import name, kind (`proto`, `descriptor`,
/// `descriptor_set`) and bytes (base64 in JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtoFile {
    pub name: String,
    pub kind: String,
    #[serde(with = "base64_bytes")]
    pub bytes: Vec<u8>,
}

mod base64_bytes {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

/// How one column's values are read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "format", rename_all = "snake_case")]
pub enum Kind {
    /// UTF-8 text, checked.
    String,
    /// JSON documents. `document`: the `valueSchema` when it is a JSON Schema
    /// or an Avro record schema (the core gives its type); `None`: a Spark type
    /// (DDL, StructType JSON) the front end reads, its Arrow form the type parsed
    /// into. `confluent`: behind the registry's prefix.
    Json {
        document: Option<String>,
        spark: Option<String>,
        confluent: bool,
    },
    /// Plain Avro datums of `reader` (no `writers`), or Confluent-framed ones
    /// whose writer schemas are `writers`, read as `reader` (default: the newest).
    Avro {
        reader: Option<String>,
        writers: Option<Vec<(u32, String)>>,
    },
    /// Plain messages of `message` from `files`, or Confluent-framed ones whose
    /// writer schemas (and references) are `writers`.
    Protobuf {
        files: Option<Vec<ProtoFile>>,
        writers: Option<Vec<(u32, Vec<ProtoFile>)>>,
        message: String,
    },
}

/// How one column (`value` or `key`) is parsed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnSpec {
    pub column: String,
    /// `onValueError=null`: a bad value becomes null.
    pub null_on_error: bool,
    #[serde(flatten)]
    pub kind: Kind,
}

impl ColumnSpec {
    /// Whether the values carry Confluent's framing (a registry's schema ids, in their prefix or in the
    /// records' schema-id headers: see [`super::headers`]).
    pub fn confluent(&self) -> bool {
        match &self.kind {
            Kind::String => false,
            Kind::Json { confluent, .. } => *confluent,
            Kind::Avro { writers, .. } => writers.is_some(),
            Kind::Protobuf { writers, .. } => writers.is_some(),
        }
    }

    /// What a bad value does.
    pub fn on_error(&self) -> OnValueError {
        if self.null_on_error {
            OnValueError::Null
        } else {
            OnValueError::Raise
        }
    }

    /// The core's parser; `spark` is the Arrow type of a Spark-typed JSON
    /// column (the front end's reading of the Spark schema text).
    pub fn value_format(&self, spark: Option<&DataType>) -> Result<ValueFormat, String> {
        match &self.kind {
            Kind::String => Ok(ValueFormat::Utf8),
            Kind::Json {
                document, confluent, ..
            } => {
                let data_type = match (spark, document) {
                    (Some(t), _) => t.clone(),
                    (None, Some(document)) => spark_ready(&json_document_type(document)?)?,
                    (None, None) => {
                        return Err(format!("{}: the Spark type of the JSON values is missing", self.column))
                    }
                };
                ValueFormat::json(data_type, *confluent)
            }
            Kind::Avro { reader, writers: None } => {
                ValueFormat::avro_plain(reader.as_deref().ok_or("plain Avro values need a schema")?)
            }
            Kind::Avro {
                reader,
                writers: Some(writers),
            } => ValueFormat::avro_confluent(writers, reader.as_deref()),
            Kind::Protobuf {
                files: Some(files),
                message,
                ..
            } => Protobuf::plain(&schema_files(files)?, message, MAX_RECURSION).map(ValueFormat::Protobuf),
            Kind::Protobuf {
                writers: Some(writers),
                message,
                ..
            } => {
                let writers = writers
                    .iter()
                    .map(|(id, files)| Ok((*id, schema_files(files)?)))
                    .collect::<Result<Vec<_>, String>>()?;
                Protobuf::confluent(&writers, Some(message), &[], MAX_RECURSION).map(ValueFormat::Protobuf)
            }
            Kind::Protobuf { .. } => Err("Protobuf values need files or writer schemas".into()),
        }
    }

    /// The hint added to a failure of plain Avro on a value that looks Schema
    /// Registry framed (magic byte 0, then a plausible schema id), in Python's words.
    pub fn framing_hint(&self, value: Option<&[u8]>) -> Option<String> {
        if !matches!(self.kind, Kind::Avro { writers: None, .. }) {
            return None;
        }
        registry_framing_hint(value)
    }

    /// The Arrow type Spark gets for the column ([`spark_ready`]), or `None`
    /// for a Spark-typed JSON column (the front end reads its Spark type).
    pub fn spark_type(&self) -> Result<Option<DataType>, String> {
        if let Kind::Json { document: None, .. } = self.kind {
            return Ok(None);
        }
        spark_ready(&self.value_format(None)?.data_type()?).map(Some)
    }
}

/// The hint added to a failure of plain Avro on `value` when it looks Schema
/// Registry framed (magic byte 0, then a plausible schema id), in Python's words.
pub fn registry_framing_hint(value: Option<&[u8]>) -> Option<String> {
    let value = value.filter(|v| v.len() >= 6 && v[0] == 0)?;
    let schema_id = u32::from_be_bytes([value[1], value[2], value[3], value[4]]);
    // registries count ids up from 1
    (1..1 << 24).contains(&schema_id).then(|| {
        format!("; these values look Schema Registry framed (magic 0, schema id {schema_id}); pass schema_registry")
    })
}

fn schema_files(files: &[ProtoFile]) -> Result<SchemaFiles, String> {
    files
        .iter()
        .map(|f| {
            let source = match f.kind.as_str() {
                "proto" => ProtoSource::Text(String::from_utf8_lossy(&f.bytes).into_owned()),
                "descriptor" => ProtoSource::Descriptor(f.bytes.clone()),
                "descriptor_set" => ProtoSource::Set(f.bytes.clone()),
                other => return Err(format!("unknown Protobuf file kind {other:?}")),
            };
            Ok((f.name.clone(), source))
        })
        .collect()
}

/// `'text'` as Python's `repr` of a string writes it.
fn repr(text: &str) -> String {
    crate::scan::naming::quote(text)
}

/// The `schemaRegistry` option.
enum Registry {
    /// A URL (with its credentials).
    Url(std::sync::Arc<SchemaRegistry>),
    /// `{schema id: schema}` (a JSON object, or the file `kafkabatch generate` writes).
    Schemas(BTreeMap<u32, String>),
}

/// The text of a registry entry: a string as it is, anything else as JSON.
fn schema_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn schemas_of(document: &Value, what: &str) -> Result<BTreeMap<u32, String>, String> {
    let Value::Object(map) = document else {
        return Err(format!(
            "schema_registry {what}: expected a JSON object of schema id -> schema"
        ));
    };
    map.iter()
        .map(|(k, v)| {
            let id = k
                .trim()
                .parse::<u32>()
                .map_err(|_| format!("schema_registry {what}: {} is not a schema id", repr(k)))?;
            Ok((id, schema_text(v)))
        })
        .collect()
}

/// Whether `text` names a JSON file of `{schema id: schema}` (a path ending in `.json`, not a URL).
fn is_registry_file(text: &str) -> bool {
    !text.is_empty() && !text.contains("://") && text.trim().to_lowercase().ends_with(".json")
}

fn registry_option(options: &BTreeMap<String, String>) -> Result<Option<Registry>, String> {
    let Some(text) = options
        .get("schemaregistry")
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
    else {
        return Ok(None);
    };
    if is_registry_file(text) {
        let document =
            std::fs::read_to_string(text).map_err(|_| format!("schema_registry {}: file not found", repr(text)))?;
        let document: Value =
            serde_json::from_str(&document).map_err(|e| format!("schema_registry {}: not JSON ({e})", repr(text)))?;
        return schemas_of(&document, &repr(text)).map(|s| Some(Registry::Schemas(s)));
    }
    if text.starts_with('{') {
        let document: Value =
            serde_json::from_str(text).map_err(|e| format!("schema_registry: not a JSON object ({e})"))?;
        return schemas_of(&document, "").map(|s| Some(Registry::Schemas(s)));
    }
    let auth = |name: &str| {
        options
            .get(&format!("schemaregistry.{name}"))
            .filter(|v| !v.is_empty())
            .map(String::as_str)
    };
    Ok(Some(Registry::Url(SchemaRegistry::shared(
        text,
        auth(BASIC_AUTH),
        auth(BEARER_TOKEN),
    )?)))
}

/// Whether `document` is a JSON Schema document.
fn is_json_schema(document: &serde_json::Map<String, Value>) -> bool {
    document.contains_key("$schema")
        || document.contains_key("properties")
        || document.get("type").and_then(Value::as_str) == Some("object")
}

/// The Arrow type of JSON values `document` describes: an Avro record schema
/// (Arrow's Avro mapping) or a JSON Schema ([`json_schema_to_arrow`]).
fn json_document_type(document: &str) -> Result<DataType, String> {
    let parsed: Value = serde_json::from_str(document).map_err(|e| format!("value_schema: not JSON ({e})"))?;
    if parsed.get("type").and_then(Value::as_str) == Some("record") {
        return ValueFormat::avro_plain(document)?.data_type();
    }
    Ok(json_schema_to_arrow(&parsed))
}

/// The Arrow type of values a JSON Schema describes: objects with
/// `properties` → struct, `additionalProperties` alone → map, arrays → list,
/// `integer` → int64, `number` → float64, `string` (`date-time` → timestamp,
/// `date` → date32), `["T", "null"]` → T. Anything else is kept as JSON text.
/// (The Python package's `json_schema_to_arrow`.)
pub fn json_schema_to_arrow(document: &Value) -> DataType {
    let mut definitions = serde_json::Map::new();
    for key in ["definitions", "$defs"] {
        if let Some(Value::Object(defs)) = document.get(key) {
            definitions.extend(defs.clone());
        }
    }
    convert(document, &definitions, 0)
}

fn convert(node: &Value, definitions: &serde_json::Map<String, Value>, depth: usize) -> DataType {
    let Value::Object(node) = node else {
        return DataType::Utf8;
    };
    if depth > MAX_JSON_SCHEMA_DEPTH {
        return DataType::Utf8;
    }
    if let Some(Value::String(r)) = node.get("$ref") {
        if let Some(name) = r.strip_prefix("#/definitions/").or_else(|| r.strip_prefix("#/$defs/")) {
            let name = r.rsplit('/').next().unwrap_or(name);
            return convert(definitions.get(name).unwrap_or(&Value::Null), definitions, depth + 1);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(members) = node.get(key) {
            let members: Vec<&Value> = members
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            return match members.as_slice() {
                [one] => convert(one, definitions, depth + 1),
                _ => DataType::Utf8,
            };
        }
    }
    let mut kinds: Vec<&str> = match node.get("type") {
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(k)) => vec![k.as_str()],
        _ => Vec::new(),
    };
    kinds.retain(|k| *k != "null");
    if kinds.is_empty() && node.contains_key("properties") {
        kinds = vec!["object"];
    }
    let [kind] = kinds.as_slice() else {
        return DataType::Utf8;
    };
    match *kind {
        "object" => {
            if let Some(Value::Object(properties)) = node.get("properties") {
                if !properties.is_empty() {
                    let fields: Vec<Field> = properties
                        .iter()
                        .map(|(name, sub)| Field::new(name, convert(sub, definitions, depth + 1), true))
                        .collect();
                    return DataType::Struct(fields.into());
                }
            }
            if let Some(extra @ Value::Object(_)) = node.get("additionalProperties") {
                return map_of(DataType::Utf8, convert(extra, definitions, depth + 1));
            }
            DataType::Utf8
        }
        "array" => DataType::new_list(
            convert(
                node.get("items").unwrap_or(&Value::Object(Default::default())),
                definitions,
                depth + 1,
            ),
            true,
        ),
        "string" => match node.get("format").and_then(Value::as_str) {
            Some("date-time") => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            Some("date") => DataType::Date32,
            _ => DataType::Utf8,
        },
        "integer" => DataType::Int64,
        "number" => DataType::Float64,
        "boolean" => DataType::Boolean,
        _ => DataType::Utf8,
    }
}

/// A map of `key` to `value` (pyarrow's field names: `entries`, `key`, `value`).
fn map_of(key: DataType, value: DataType) -> DataType {
    let entries = Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("key", key, false),
            Field::new("value", value, true),
        ])),
        false,
    );
    DataType::Map(entries.into(), false)
}

/// `data_type` with every part Spark can't take replaced by one it can
/// (the Python source's `spark_ready`): dictionaries decoded, fixed and large
/// binary → binary, large/view strings → string, timestamps → microseconds
/// (with UTC when zoned, and without a zone as UTC too: Spark reads them in
/// its session zone as the Python source does), times → int64, unsigned
/// integers to the next signed width (uint64 → decimal(20, 0)); a union is an error.
pub fn spark_ready(data_type: &DataType) -> Result<DataType, String> {
    Ok(match data_type {
        DataType::Dictionary(_, value) => spark_ready(value)?,
        DataType::FixedSizeBinary(_) | DataType::LargeBinary | DataType::BinaryView => DataType::Binary,
        DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::Timestamp(_, _) => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        DataType::Time32(_) | DataType::Time64(_) => DataType::Int64,
        DataType::UInt8 | DataType::UInt16 => DataType::Int32,
        DataType::UInt32 => DataType::Int64,
        DataType::UInt64 => DataType::Decimal128(20, 0),
        DataType::Struct(fields) => DataType::Struct(
            fields
                .iter()
                .map(|f| Ok(Field::new(f.name(), spark_ready(f.data_type())?, true)))
                .collect::<Result<Vec<_>, String>>()?
                .into(),
        ),
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(format!("a map whose entries are not a struct: {data_type}"));
            };
            map_of(spark_ready(kv[0].data_type())?, spark_ready(kv[1].data_type())?)
        }
        DataType::List(item) | DataType::LargeList(item) | DataType::ListView(item) | DataType::LargeListView(item) => {
            DataType::new_list(spark_ready(item.data_type())?, true)
        }
        DataType::Union(_, _) => {
            return Err(format!(
                "Spark has no union type for {data_type}: give a reader schema whose unions are \
                 [\"null\", T] (or read the values with kafkabatch.parse_values in Python)"
            ))
        }
        other => other.clone(),
    })
}

/// The Protobuf schema the options name for `column`: `(files, message)`.
fn protobuf_option(
    options: &BTreeMap<String, String>,
    column: &str,
) -> Result<(Option<Vec<ProtoFile>>, Option<String>), String> {
    let message = options.get(&format!("{column}message"));
    let descriptor_set = options.get(&format!("{column}descriptorset"));
    let text = options.get(&format!("{column}schema"));
    let message_name = |m: &str| m.trim().trim_start_matches('.').to_string();
    if let (Some(text), None) = (text, message) {
        if is_message_name(text.trim()) {
            return Ok((None, Some(message_name(text))));
        }
    }
    if (descriptor_set.is_some() || text.is_some()) && message.is_none() {
        return Err(format!(
            "{column}Format=protobuf with a schema needs {column}Message (the message's full name)"
        ));
    }
    let read = |path: &str| std::fs::read(path).map_err(|e| format!("{column}Schema: cannot read {}: {e}", repr(path)));
    let files = if let Some(path) = descriptor_set {
        Some(vec![ProtoFile {
            name: "descriptor_set".into(),
            kind: "descriptor_set".into(),
            bytes: std::fs::read(path)
                .map_err(|e| format!("{column}DescriptorSet: cannot read {}: {e}", repr(path)))?,
        }])
    } else if let Some(text) = text {
        let (name, bytes) = if text.trim().ends_with(".proto") {
            let path = text.trim();
            let name = std::path::Path::new(path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "schema.proto".into());
            (name, read(path)?)
        } else {
            ("schema.proto".to_string(), text.as_bytes().to_vec())
        };
        Some(vec![ProtoFile {
            name,
            kind: "proto".into(),
            bytes,
        }])
    } else {
        None
    };
    Ok((files, message.map(|m| message_name(m))))
}

/// `[.]a.b.C`: a message's full name.
fn is_message_name(text: &str) -> bool {
    let text = text.strip_prefix('.').unwrap_or(text);
    !text.is_empty()
        && text.split('.').all(|part| {
            let mut chars = part.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// A registry's schema as a Protobuf file: `.proto` text, or the base64
/// `FileDescriptorProto` confluent-kafka's Python serializer registers.
fn registered_file(name: &str, text: &str) -> ProtoFile {
    let base64ish = !text.contains(';')
        && !text.contains('{')
        && !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c) || c.is_whitespace());
    if base64ish {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(compact) {
            return ProtoFile {
                name: name.into(),
                kind: "descriptor".into(),
                bytes,
            };
        }
    }
    ProtoFile {
        name: name.into(),
        kind: "proto".into(),
        bytes: text.as_bytes().to_vec(),
    }
}

/// A registered schema and every schema it references (by subject and
/// version), the schema first; a work list, not recursion.
fn registry_files(registry: &SchemaRegistry, schema: &str, refs: &[Reference]) -> Result<Vec<ProtoFile>, String> {
    let mut files: Vec<ProtoFile> = Vec::new();
    let mut todo: Vec<(String, String, Vec<Reference>)> = vec![("schema.proto".into(), schema.into(), refs.to_vec())];
    while let Some((name, text, refs)) = todo.pop() {
        if files.iter().any(|f| f.name == name) || files.len() > 4096 {
            continue;
        }
        files.push(registered_file(&name, &text));
        for r in refs {
            if r.name.starts_with(WELL_KNOWN) || files.iter().any(|f| f.name == r.name) {
                continue;
            }
            let (_, text, refs) = registry.version_entry(&r.subject, r.version).map_err(|e| e.message)?;
            todo.push((r.name, text, refs));
        }
    }
    Ok(files)
}

/// The typed columns Spark's (lower-cased) options ask for, in the order
/// `value`, `key`; `topics`: the topics the read lists (a registry's subjects
/// are `<topic>-<column>`). Errors in Python's keyword names.
/// `sample(column)`: a few of the column's values (the first of each topic's
/// log), whose Confluent frames name the Protobuf message when the options don't.
pub fn spark_value_columns(
    options: &BTreeMap<String, String>,
    topics: &[String],
    sample: &mut dyn FnMut(&str) -> Vec<ArrayRef>,
) -> Result<Vec<ColumnSpec>, String> {
    let mut registry: Option<Option<Registry>> = None;
    let on_error = options
        .get("onvalueerror")
        .map(|v| v.trim().to_lowercase())
        .unwrap_or_else(|| "raise".into());
    let on_error = match on_error.as_str() {
        "failfast" => "raise".to_string(),
        "permissive" => "null".to_string(),
        _ => on_error,
    };
    let mut out = Vec::new();
    for column in ["value", "key"] {
        let format = options.get(&format!("{column}format")).map(|f| f.trim().to_lowercase());
        let schema = options.get(&format!("{column}schema"));
        if matches!(format.as_deref(), None | Some("") | Some("binary")) && schema.is_none() {
            continue;
        }
        if registry.is_none() {
            registry = Some(registry_option(options)?);
        }
        let registry = registry.as_ref().and_then(Option::as_ref);
        let format = format.unwrap_or_else(|| "binary".into());
        if !FORMATS.contains(&format.as_str()) {
            return Err(format!(
                "{column}_format must be one of {}, not {}",
                FORMATS.join(", "),
                repr(&format)
            ));
        }
        if on_error != "raise" && on_error != "null" {
            return Err(format!(
                "on_value_error must be 'raise' or 'null', not {}",
                repr(&on_error)
            ));
        }
        let null_on_error = on_error == "null";
        let subjects: Vec<String> = topics.iter().map(|t| format!("{t}-{column}")).collect();
        let kind = match format.as_str() {
            "binary" => {
                return Err(format!(
                    "{column}_schema needs a typed {column}_format ('json', 'avro' or 'protobuf')"
                ))
            }
            "string" => Kind::String,
            "json" => json_kind(column, schema, registry)?,
            "avro" => avro_kind(column, schema, registry, &subjects)?,
            _ => protobuf_kind(column, options, registry, &subjects, sample)?,
        };
        out.push(ColumnSpec {
            column: column.into(),
            null_on_error,
            kind,
        });
    }
    Ok(out)
}

fn json_kind(column: &str, schema: Option<&String>, registry: Option<&Registry>) -> Result<Kind, String> {
    let Some(text) = schema else {
        return Err(format!(
            "{column}_format='json' needs {column}_schema (a pyarrow struct type or schema)"
        ));
    };
    let trimmed = text.trim();
    let document = trimmed
        .starts_with('{')
        .then(|| serde_json::from_str::<Value>(trimmed).ok())
        .flatten()
        .filter(|d| {
            d.get("type").and_then(Value::as_str) == Some("record")
                || d.get("properties").is_some()
                || d.get("$schema").is_some()
        })
        .map(|_| trimmed.to_string());
    if let Some(Registry::Url(registry)) = registry {
        registry.check().map_err(|e| e.message)?; // unreachable: fail before any work
    }
    let spark = match document {
        Some(_) => None,
        // `.option("valueSchema", StructType(...))` in PySpark passes the type's repr
        None if is_repr(trimmed) => Some(repr_to_ddl(trimmed)?),
        None => Some(text.clone()),
    };
    let kind = Kind::Json {
        spark,
        document,
        confluent: registry.is_some(),
    };
    if let Kind::Json {
        document: Some(document),
        ..
    } = &kind
    {
        spark_ready(&json_document_type(document)?)?;
    }
    Ok(kind)
}

/// Whether `text` is a PySpark type's repr (`StructType([StructField('a', LongType(), True)])`).
fn is_repr(text: &str) -> bool {
    let name_end = text.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(text.len());
    name_end > 4 && text[..name_end].ends_with("Type") && text[name_end..].starts_with('(')
}

/// A PySpark type's repr as Spark DDL (read as PySpark's `ast` reading does:
/// type constructors and literals only), nesting at most [`MAX_JSON_SCHEMA_DEPTH`] deep.
fn repr_to_ddl(text: &str) -> Result<String, String> {
    let bad = |why: &str| format!("not a Spark type: {} ({why})", repr(text));
    let mut tokens: Vec<String> = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if "()[],={}:".contains(c) {
            tokens.push(c.to_string());
            i += 1;
        } else if c == '\'' || c == '"' {
            let mut j = i + 1;
            let mut out = String::new();
            while j < chars.len() && chars[j] != c {
                if chars[j] == '\\' && j + 1 < chars.len() {
                    j += 1;
                }
                out.push(chars[j]);
                j += 1;
            }
            if j >= chars.len() {
                return Err(bad("an unterminated string"));
            }
            tokens.push(format!("'{out}"));
            i = j + 1;
        } else if c.is_alphanumeric() || c == '_' || c == '-' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '-') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else {
            return Err(bad(&format!("unexpected {c:?}")));
        }
    }
    let mut at = 0;
    let ddl = repr_type(&tokens, &mut at, 0).map_err(|why| bad(&why))?;
    if at != tokens.len() {
        return Err(bad("text after the type"));
    }
    Ok(ddl)
}

fn take<'t>(tokens: &'t [String], at: &mut usize) -> Result<&'t str, String> {
    let token = tokens.get(*at).ok_or("it ends early")?;
    *at += 1;
    Ok(token)
}

fn expect(tokens: &[String], at: &mut usize, want: &str) -> Result<(), String> {
    let got = take(tokens, at)?;
    if got == want {
        Ok(())
    } else {
        Err(format!("expected {want}, found {got}"))
    }
}

/// Skips `, name=`-free trailing arguments (nullability, metadata) up to the closing `)`.
fn skip_to_close(tokens: &[String], at: &mut usize) -> Result<(), String> {
    let mut depth = 0usize;
    loop {
        match take(tokens, at)? {
            "(" | "[" | "{" => depth += 1,
            ")" if depth == 0 => return Ok(()),
            ")" | "]" | "}" => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
}

fn repr_type(tokens: &[String], at: &mut usize, depth: usize) -> Result<String, String> {
    if depth > MAX_JSON_SCHEMA_DEPTH {
        return Err(format!("types nest more than {MAX_JSON_SCHEMA_DEPTH} deep"));
    }
    let name = take(tokens, at)?.to_string();
    expect(tokens, at, "(")?;
    let simple = match name.as_str() {
        "StringType" | "VarcharType" | "CharType" => Some("string"),
        "BinaryType" => Some("binary"),
        "BooleanType" => Some("boolean"),
        "ByteType" => Some("tinyint"),
        "ShortType" => Some("smallint"),
        "IntegerType" => Some("int"),
        "LongType" => Some("bigint"),
        "FloatType" => Some("float"),
        "DoubleType" => Some("double"),
        "DateType" => Some("date"),
        "TimestampType" => Some("timestamp"),
        "TimestampNTZType" => Some("timestamp_ntz"),
        _ => None,
    };
    if let Some(simple) = simple {
        skip_to_close(tokens, at)?;
        return Ok(simple.to_string());
    }
    match name.as_str() {
        "DecimalType" => {
            let mut numbers = Vec::new();
            loop {
                match take(tokens, at)? {
                    ")" => break,
                    "," | "=" | "precision" | "scale" => {}
                    n => numbers.push(n.parse::<u32>().map_err(|_| format!("a decimal's {n}"))?),
                }
            }
            let (p, s) = (
                numbers.first().copied().unwrap_or(10),
                numbers.get(1).copied().unwrap_or(0),
            );
            Ok(format!("decimal({p},{s})"))
        }
        "ArrayType" => {
            let element = repr_type(tokens, at, depth + 1)?;
            skip_to_close(tokens, at)?;
            Ok(format!("array<{element}>"))
        }
        "MapType" => {
            let key = repr_type(tokens, at, depth + 1)?;
            expect(tokens, at, ",")?;
            let value = repr_type(tokens, at, depth + 1)?;
            skip_to_close(tokens, at)?;
            Ok(format!("map<{key},{value}>"))
        }
        "StructType" => {
            let mut fields = Vec::new();
            if tokens.get(*at).map(String::as_str) == Some("fields") {
                *at += 1;
                expect(tokens, at, "=")?;
            }
            if tokens.get(*at).map(String::as_str) == Some("[") {
                *at += 1;
                while tokens.get(*at).map(String::as_str) != Some("]") {
                    expect(tokens, at, "StructField")?;
                    expect(tokens, at, "(")?;
                    let field = take(tokens, at)?;
                    let Some(field) = field.strip_prefix('\'') else {
                        return Err(format!("a field name {field}"));
                    };
                    let field = field.replace('`', "``");
                    expect(tokens, at, ",")?;
                    let data_type = repr_type(tokens, at, depth + 1)?;
                    skip_to_close(tokens, at)?;
                    fields.push(format!("`{field}`: {data_type}"));
                    if tokens.get(*at).map(String::as_str) == Some(",") {
                        *at += 1;
                    }
                }
                *at += 1;
            }
            expect(tokens, at, ")")?;
            Ok(format!("struct<{}>", fields.join(", ")))
        }
        other => Err(format!("unknown type {other}")),
    }
}

/// Whether `text` is a JSON Schema document (not an Avro schema).
fn is_json_schema_text(text: &str) -> bool {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(d)) => d.get("type").and_then(Value::as_str) != Some("record") && is_json_schema(&d),
        _ => false,
    }
}

fn avro_kind(
    column: &str,
    schema: Option<&String>,
    registry: Option<&Registry>,
    subjects: &[String],
) -> Result<Kind, String> {
    let mut reader = schema.cloned();
    if reader.as_deref().is_some_and(is_json_schema_text) {
        return Err(format!(
            "{column}_schema is a JSON Schema, not an Avro schema: JSON values are read with \
             {column}_format='json' and this schema"
        ));
    }
    let writers: BTreeMap<u32, String> = match registry {
        None => {
            if reader.is_none() {
                return Err(format!(
                    "{column}_format='avro' needs {column}_schema (the writer schema) or schema_registry \
                     (for Confluent-framed values)"
                ));
            }
            let kind = Kind::Avro { reader, writers: None };
            ColumnSpec {
                column: column.into(),
                null_on_error: false,
                kind: kind.clone(),
            }
            .value_format(None)?;
            return Ok(kind);
        }
        Some(Registry::Schemas(schemas)) => schemas.clone(),
        Some(Registry::Url(registry)) => {
            let known = registry.subjects().map_err(|e| e.message)?;
            let subjects: Vec<&String> = subjects.iter().filter(|s| known.contains(*s)).collect();
            let mut writers = BTreeMap::new();
            for subject in &subjects {
                writers.extend(registry.subject_schemas(subject).map_err(|e| e.message)?);
            }
            if let [one] = subjects.as_slice() {
                let latest = registry.latest(one).map_err(|e| e.message)?.1;
                reader = reader.or(Some(latest));
            }
            writers
        }
    };
    if writers.is_empty() {
        return Err(format!(
            "no writer schemas for {column}: the registry has none for these topics"
        ));
    }
    let kind = Kind::Avro {
        reader,
        writers: Some(writers.into_iter().collect()),
    };
    ColumnSpec {
        column: column.into(),
        null_on_error: false,
        kind: kind.clone(),
    }
    .value_format(None)?;
    Ok(kind)
}

fn protobuf_kind(
    column: &str,
    options: &BTreeMap<String, String>,
    registry: Option<&Registry>,
    subjects: &[String],
    sample: &mut dyn FnMut(&str) -> Vec<ArrayRef>,
) -> Result<Kind, String> {
    let (files, message) = protobuf_option(options, column)?;
    let writers: BTreeMap<u32, Vec<ProtoFile>> = match registry {
        None => {
            let (Some(files), Some(message)) = (files, message) else {
                return Err(format!(
                    "{column}_format='protobuf' needs {column}_schema (a generated message class, or a dict with \
                     'message' and 'descriptor_set' or 'proto') or schema_registry (for Confluent-framed values)"
                ));
            };
            Protobuf::plain(&schema_files(&files)?, &message, MAX_RECURSION)?;
            return Ok(Kind::Protobuf {
                files: Some(files),
                writers: None,
                message,
            });
        }
        Some(Registry::Schemas(schemas)) => schemas
            .iter()
            .map(|(id, text)| (*id, vec![registered_file("schema.proto", text)]))
            .collect(),
        Some(Registry::Url(registry)) => {
            let known = registry.subjects().map_err(|e| e.message)?;
            let mut writers = BTreeMap::new();
            for subject in subjects.iter().filter(|s| known.contains(*s)) {
                for (id, text, refs) in registry.subject_entries(subject).map_err(|e| e.message)? {
                    writers.insert(id, registry_files(registry, &text, &refs)?);
                }
            }
            writers
        }
    };
    if writers.is_empty() {
        let listed: Vec<String> = subjects.iter().map(|s| repr(s)).collect();
        return Err(format!(
            "no writer schemas for {column}: the registry has none for the subjects [{}]",
            listed.join(", ")
        ));
    }
    let compiled: Vec<(u32, SchemaFiles)> = writers
        .iter()
        .map(|(id, files)| Ok((*id, schema_files(files)?)))
        .collect::<Result<_, String>>()?;
    let mut frames: Vec<(u32, Vec<i32>)> = Vec::new();
    if message.is_none() {
        for values in sample(column) {
            for frame in frames_of(values.as_ref())? {
                if !frames.contains(&frame) {
                    frames.push(frame);
                }
            }
        }
    }
    let message = Protobuf::confluent(&compiled, message.as_deref(), &frames, MAX_RECURSION)?
        .message_name()
        .to_string();
    Ok(Kind::Protobuf {
        files: None,
        writers: Some(writers.into_iter().collect()),
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_lowercase(), v.to_string())).collect()
    }

    fn error(pairs: &[(&str, &str)]) -> String {
        spark_value_columns(&options(pairs), &["orders".into()], &mut |_| Vec::new()).unwrap_err()
    }

    const ORDER: &str = r#"{"type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "string"}, {"name": "n", "type": ["null", "long"]},
        {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}"#;

    #[test]
    fn the_python_sources_errors() {
        assert_eq!(
            error(&[("valueFormat", "json")]),
            "value_format='json' needs value_schema (a pyarrow struct type or schema)"
        );
        assert_eq!(
            error(&[("valueFormat", "xml")]),
            "value_format must be one of binary, string, json, avro, protobuf, not 'xml'"
        );
        assert_eq!(
            error(&[("keySchema", "a int")]),
            "key_schema needs a typed key_format ('json', 'avro' or 'protobuf')"
        );
        assert_eq!(
            error(&[("valueFormat", "string"), ("onValueError", "skip")]),
            "on_value_error must be 'raise' or 'null', not 'skip'"
        );
        assert!(error(&[("valueFormat", "avro")]).starts_with("value_format='avro' needs value_schema"));
        assert!(error(&[("valueFormat", "protobuf")]).starts_with("value_format='protobuf' needs value_schema"));
        assert_eq!(
            error(&[("valueFormat", "protobuf"), ("valueSchema", "syntax = \"proto3\";")]),
            "valueFormat=protobuf with a schema needs valueMessage (the message's full name)"
        );
        assert!(error(&[
            ("valueFormat", "avro"),
            (
                "valueSchema",
                r#"{"type": "object", "properties": {"a": {"type": "integer"}}}"#
            )
        ])
        .starts_with("value_schema is a JSON Schema, not an Avro schema"));
        assert_eq!(
            error(&[("valueFormat", "avro"), ("schemaRegistry", "{}")]),
            "no writer schemas for value: the registry has none for these topics"
        );
        assert!(error(&[("valueFormat", "avro"), ("schemaRegistry", "registry:8081")])
            .starts_with("schema registry URL must be http(s)://host[:port], not 'registry:8081'"));
        assert_eq!(
            error(&[("valueFormat", "avro"), ("schemaRegistry", "/nowhere/registry.json")]),
            "schema_registry '/nowhere/registry.json': file not found"
        );
    }

    #[test]
    fn avro_types_are_spark_ready_and_specs_travel_as_json() {
        let given = options(&[("valueFormat", "avro"), ("valueSchema", ORDER), ("keyFormat", "string")]);
        let specs = spark_value_columns(&given, &[], &mut |_| Vec::new()).unwrap();
        assert_eq!(specs.len(), 2);
        let value = specs[0].spark_type().unwrap().unwrap();
        let DataType::Struct(fields) = &value else {
            panic!("{value}")
        };
        assert_eq!(fields[0].data_type(), &DataType::Utf8);
        assert_eq!(fields[1].data_type(), &DataType::Int64);
        assert_eq!(fields[2].data_type(), &DataType::Utf8, "an enum's symbols");
        assert_eq!(
            fields[3].data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        assert_eq!(specs[1].spark_type().unwrap(), Some(DataType::Utf8));
        let json = serde_json::to_string(&specs).unwrap();
        let back: Vec<ColumnSpec> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, specs);
    }

    #[test]
    fn a_registry_of_schemas_by_id_frames_the_values() {
        let given = options(&[
            ("valueFormat", "avro"),
            ("schemaRegistry", &format!("{{\"7\": {ORDER}}}")),
        ]);
        let specs = spark_value_columns(&given, &[], &mut |_| Vec::new()).unwrap();
        let Kind::Avro {
            reader: None,
            writers: Some(w),
        } = &specs[0].kind
        else {
            panic!("{specs:?}")
        };
        assert_eq!(w[0].0, 7);
        assert!(specs[0].spark_type().unwrap().is_some());
    }

    #[test]
    fn json_schema_documents_and_spark_text() {
        let doc = r#"{"type": "object", "properties": {"id": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "at": {"type": "string", "format": "date-time"}, "m": {"additionalProperties": {"type": "number"}}}}"#;
        let specs = spark_value_columns(
            &options(&[("valueFormat", "json"), ("valueSchema", doc)]),
            &[],
            &mut |_| Vec::new(),
        )
        .unwrap();
        let t = specs[0].spark_type().unwrap().unwrap();
        assert_eq!(
            t.to_string(),
            spark_ready(&json_schema_to_arrow(&serde_json::from_str(doc).unwrap()))
                .unwrap()
                .to_string()
        );
        let specs = spark_value_columns(
            &options(&[("valueFormat", "json"), ("valueSchema", "a int")]),
            &[],
            &mut |_| Vec::new(),
        )
        .unwrap();
        assert_eq!(specs[0].spark_type().unwrap(), None);
        assert!(matches!(&specs[0].kind, Kind::Json { spark: Some(s), .. } if s == "a int"));
    }

    #[test]
    fn a_struct_types_repr_is_read_as_ddl() {
        let text = "StructType([StructField('order_id', StringType(), True), StructField('items', \
            ArrayType(StructType([StructField('sku', StringType(), True), StructField('n', LongType(), True)]), True), \
            True), StructField('m', MapType(StringType(), DecimalType(12, 2), True), False)])";
        assert_eq!(
            repr_to_ddl(text).unwrap(),
            "struct<`order_id`: string, `items`: array<struct<`sku`: string, `n`: bigint>>, `m`: map<string,decimal(12,2)>>"
        );
        assert!(repr_to_ddl("StructType([StructField('a', Nope(), True)])")
            .unwrap_err()
            .contains("unknown type Nope"));
        let deep = format!("{}StringType(){}", "ArrayType(".repeat(100), ", True)".repeat(100));
        assert!(repr_to_ddl(&deep).unwrap_err().contains("nest more than"));
    }

    #[test]
    fn spark_ready_widens_what_spark_lacks() {
        assert_eq!(spark_ready(&DataType::UInt64).unwrap(), DataType::Decimal128(20, 0));
        assert_eq!(spark_ready(&DataType::UInt32).unwrap(), DataType::Int64);
        assert_eq!(
            spark_ready(&DataType::Timestamp(TimeUnit::Millisecond, None)).unwrap(),
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        let union = DataType::Union(arrow_schema::UnionFields::empty(), arrow_schema::UnionMode::Dense);
        assert!(spark_ready(&union).unwrap_err().starts_with("Spark has no union type"));
    }
}
