//! The `internalTopic` option of the Spark sources: which topics' records are
//! decoded ([`Internal`]), the columns appended to the Kafka source schema for
//! them ([`Internal::added_schema`]) and those columns decoded for one batch of
//! records ([`Internal::append`]), the raw `key` and `value` kept.
//!
//! A resolved option serialises (serde) with the text of every definition file
//! it was given, so a reader far from the folder decodes with the same
//! definitions as the planner that read it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, BinaryViewArray, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use serde::{Deserialize, Serialize};

use super::{decode_internal, Definitions, Kind, NullRows, Payloads};
use crate::scan::naming::quote;
use crate::scan::options::closest;

/// Kafka's topic names for the kinds (how `auto` recognises a topic).
const INTERNAL_TOPICS: [(&str, Kind); 5] = [
    ("__consumer_offsets", Kind::ConsumerOffsets),
    ("__transaction_state", Kind::TransactionState),
    ("__share_group_state", Kind::ShareGroupState),
    ("__cluster_metadata", Kind::ClusterMetadata),
    ("__remote_log_metadata", Kind::RemoteLogMetadata),
];

/// A resolved `internalTopic`: the kind of every topic read, or a topic → kind map.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Internal {
    /// Every topic is of this kind (`internalTopic` a kind); `None`: by `topics`.
    kind: Option<String>,
    /// The kind of each decoded topic (`auto`, and a JSON object's topics).
    topics: BTreeMap<String, String>,
    /// The texts of the definition files of option `definitions` (in file name order).
    definitions: Vec<String>,
}

/// A kind as the option names it: a kind, a topic name of Kafka's, the topic name without `__`, or `none`.
fn kind_named(value: &str, what: &str) -> Result<Option<Kind>, String> {
    let name = value.trim().to_lowercase().replace('-', "_");
    if name == "none" {
        return Ok(None);
    }
    if let Some(kind) = Kind::parse(&name).filter(|k| Kind::TOPICS.contains(k)) {
        return Ok(Some(kind));
    }
    let topic = |n: &str| INTERNAL_TOPICS.iter().find(|(t, _)| *t == n).map(|(_, k)| *k);
    if let Some(kind) = topic(&name).or_else(|| topic(&format!("__{name}"))) {
        return Ok(Some(kind));
    }
    let kinds: Vec<&str> = Kind::TOPICS.iter().map(|k| k.name()).collect();
    let choices = ["auto", "none"].into_iter().chain(kinds.iter().copied());
    let hint = closest(&name, choices).map_or(String::new(), |c| format!("; did you mean {}?", quote(c)));
    Err(format!(
        "unknown {what} {}: use 'auto', 'none' or one of {}{hint}",
        quote(value),
        kinds.join(", ")
    ))
}

/// The definitions shipped with the project, loaded once.
fn builtin() -> &'static Arc<Definitions> {
    static BUILTIN: OnceLock<Arc<Definitions>> = OnceLock::new();
    BUILTIN.get_or_init(|| Arc::new(Definitions::builtin()))
}

impl Internal {
    /// Option `internalTopic` (`auto`, `none`, a kind, or a JSON object `{topic: kind}`) with
    /// `definitions` (a folder of Kafka's `*.json` message definitions, read here), checked with
    /// the Python source's texts; `None` when nothing is decoded.
    pub fn from_options(option: &str, definitions: Option<&str>) -> Result<Option<Internal>, String> {
        let texts = match definitions {
            Some(dir) => {
                Some(definition_texts(Path::new(dir)).map_err(|e| format!("kafka-log option 'definitions': {e}"))?)
            }
            None => None,
        };
        let in_option = |e: String| format!("kafka-log option 'internalTopic': {e}");
        let text = option.trim();
        let mut resolved = if text.starts_with('{') {
            let parsed: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| format!("kafka-log option 'internalTopic': not a JSON object of topic: kind ({e})"))?;
            let serde_json::Value::Object(map) = &parsed else {
                return Err(in_option(format!("internal must be a str, not {}", json_type(&parsed))));
            };
            let mut topics: BTreeMap<String, String> = INTERNAL_TOPICS
                .iter()
                .map(|(t, k)| (t.to_string(), k.name().to_string()))
                .collect();
            for (topic, kind) in map {
                let what = format!("internal kind for topic {}", quote(topic));
                let serde_json::Value::String(kind) = kind else {
                    return Err(in_option(format!("{what} must be a str, not {}", json_type(kind))));
                };
                match kind_named(kind, &what).map_err(in_option)? {
                    Some(kind) => topics.insert(topic.clone(), kind.name().to_string()),
                    None => topics.remove(topic),
                };
            }
            Internal {
                kind: None,
                topics,
                definitions: Vec::new(),
            }
        } else if text.eq_ignore_ascii_case("auto") {
            Internal {
                kind: None,
                topics: INTERNAL_TOPICS
                    .iter()
                    .map(|(t, k)| (t.to_string(), k.name().to_string()))
                    .collect(),
                definitions: Vec::new(),
            }
        } else {
            match kind_named(text, "internal").map_err(in_option)? {
                None => return Ok(None),
                Some(kind) => Internal {
                    kind: Some(kind.name().to_string()),
                    topics: BTreeMap::new(),
                    definitions: Vec::new(),
                },
            }
        };
        resolved.definitions = texts.unwrap_or_default().into_iter().map(|(_, text)| text).collect();
        Ok(Some(resolved))
    }

    /// The kind of `topic`'s records, or `None` when it is not decoded.
    pub fn kind_for(&self, topic: Option<&str>) -> Option<Kind> {
        let name = match &self.kind {
            Some(kind) => kind,
            None => self.topics.get(topic?)?,
        };
        Kind::parse(name)
    }

    /// The definitions decoded with: the shipped ones, and the option's files over them.
    pub fn definitions(&self) -> Result<Arc<Definitions>, String> {
        if self.definitions.is_empty() {
            return Ok(Arc::clone(builtin()));
        }
        let mut defs = Definitions::clone(builtin());
        for text in &self.definitions {
            defs.add(text)
                .map_err(|e| format!("kafka-log option 'definitions': {e}"))?;
        }
        Ok(Arc::new(defs))
    }

    /// The columns appended for the records of `topics`, in Arrow's types as the decoder builds them
    /// (a union over their kinds: the shared columns first, each kind's struct columns, then
    /// `error`); `None` when none of the topics is decoded.
    pub fn added_schema<'a>(&self, defs: &Definitions, topics: impl IntoIterator<Item = &'a str>) -> Option<SchemaRef> {
        let kinds: BTreeSet<&'static str> = topics
            .into_iter()
            .filter_map(|t| self.kind_for(Some(t)))
            .map(Kind::name)
            .collect();
        if kinds.is_empty() {
            return None;
        }
        let mut fields: Vec<Arc<Field>> = Vec::new();
        let mut tail: Vec<Arc<Field>> = Vec::new();
        for kind in kinds.into_iter().filter_map(Kind::parse) {
            let schema = decode_internal(defs, kind, &NullRows(0), &NullRows(0), None, false).schema();
            for field in schema.fields() {
                let into = if field.name() == "error" {
                    &mut tail
                } else {
                    &mut fields
                };
                if !into.iter().any(|f| f.name() == field.name()) {
                    into.push(field.clone());
                }
            }
        }
        fields.extend(tail);
        Some(Arc::new(Schema::new(Fields::from(fields))))
    }

    /// `batch` (records of one kind of topic, with its `key`, `value` and `topic` columns) with the
    /// columns of `added` appended, decoded (null where a topic is not decoded or a column is another
    /// kind's).
    pub fn append(&self, defs: &Definitions, batch: &RecordBatch, added: &Schema) -> Result<RecordBatch, String> {
        let rows = batch.num_rows();
        let topics = topics_of(batch)?;
        let kinds: BTreeSet<Option<&'static str>> = if topics.is_empty() {
            BTreeSet::from([self.kind_for(None).map(Kind::name)])
        } else {
            topics.iter().map(|t| self.kind_for(Some(t)).map(Kind::name)).collect()
        };
        if kinds.len() > 1 {
            let names: Vec<&str> = topics.iter().map(String::as_str).collect();
            return Err(format!(
                "internal: one table holds topics of several kinds ({})",
                names.join(", ")
            ));
        }
        let decoded = match kinds.into_iter().next().flatten().and_then(Kind::parse) {
            None => None,
            Some(kind) => {
                let keys = column(batch, "key")?;
                let values = column(batch, "value")?;
                let control = control_mask(kind, keys.as_ref());
                let table = with_payloads(keys.as_ref(), |k| {
                    with_payloads(values.as_ref(), |v| {
                        decode_internal(defs, kind, k, v, control.as_deref(), false)
                    })
                })??;
                if table.num_rows() != rows {
                    return Err(format!(
                        "internal: the decoder gave {} rows for {rows}",
                        table.num_rows()
                    ));
                }
                Some(table)
            }
        };
        let mut fields: Vec<Arc<Field>> = batch.schema().fields().iter().cloned().collect();
        let mut columns = batch.columns().to_vec();
        for field in added.fields() {
            let array = match decoded.as_ref().and_then(|t| t.column_by_name(field.name())) {
                Some(a) if a.data_type() == field.data_type() => a.clone(),
                Some(a) => arrow_cast::cast(a, field.data_type())
                    .map_err(|e| format!("internal: column {}: {e}", field.name()))?,
                None => new_null_array(field.data_type(), rows),
            };
            fields.push(Arc::new(Field::new(field.name(), field.data_type().clone(), true)));
            columns.push(array);
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|e| format!("internal: {e}"))
    }
}

/// A JSON value's type in Python's words (`internal kind for topic 'x' must be a str, not int`).
fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "NoneType",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(n) if n.is_f64() => "float",
        serde_json::Value::Number(_) => "int",
        serde_json::Value::String(_) => "str",
        serde_json::Value::Array(_) => "list",
        serde_json::Value::Object(_) => "dict",
    }
}

/// The texts of a folder's `*.json` files, in file name order (the order [`Definitions::with_dir`] adds
/// them), each checked to load (here, where the option was given, not first on an executor).
fn definition_texts(dir: &Path) -> Result<Vec<(std::path::PathBuf, String)>, String> {
    if !dir.is_dir() {
        return Err(format!(
            "no folder {} (a folder of Kafka's *.json message definitions)",
            quote(&dir.display().to_string())
        ));
    }
    let paths = super::defs::definition_files(dir)?;
    let mut defs = Definitions::clone(builtin());
    let mut texts = Vec::with_capacity(paths.len());
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        defs.add(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        texts.push((path, text));
    }
    Ok(texts)
}

/// The distinct topics of a batch's `topic` column.
fn topics_of(batch: &RecordBatch) -> Result<Vec<String>, String> {
    let topic = column(batch, "topic")?;
    let topic = arrow_cast::cast(&topic, &DataType::Utf8).map_err(|e| format!("internal: topic column: {e}"))?;
    let topic = topic.as_string::<i32>();
    let mut out: BTreeSet<&str> = BTreeSet::new();
    for t in topic.iter().flatten() {
        // a batch holds one topic in practice: the set stays at one entry
        out.insert(t);
    }
    Ok(out.into_iter().map(str::to_string).collect())
}

fn column(batch: &RecordBatch, name: &str) -> Result<ArrayRef, String> {
    batch
        .column_by_name(name)
        .cloned()
        .ok_or_else(|| format!("internal: the batch has no {name} column to decode"))
}

/// `f` over the rows of a binary column, whatever its binary type (read in place).
fn with_payloads<T>(array: &dyn Array, f: impl FnOnce(&dyn PayloadsDyn) -> T) -> Result<T, String> {
    if let Some(a) = array.as_binary_opt::<i32>() {
        Ok(f(a))
    } else if let Some(a) = array.as_binary_opt::<i64>() {
        Ok(f(a))
    } else if let Some(a) = array.as_any().downcast_ref::<BinaryViewArray>() {
        Ok(f(a))
    } else if array.null_count() == array.len() {
        Ok(f(&NullRows(array.len())))
    } else {
        Err(format!(
            "internal: key and value must be binary, not {}",
            array.data_type()
        ))
    }
}

/// [`Payloads`] behind a reference (the decoder is generic; the column types are known only at run time).
trait PayloadsDyn {
    fn rows(&self) -> usize;
    fn row(&self, i: usize) -> Option<&[u8]>;
}

impl<P: Payloads + ?Sized> PayloadsDyn for P {
    fn rows(&self) -> usize {
        Payloads::rows(self)
    }
    fn row(&self, i: usize) -> Option<&[u8]> {
        Payloads::row(self, i)
    }
}

impl Payloads for dyn PayloadsDyn + '_ {
    fn rows(&self) -> usize {
        PayloadsDyn::rows(self)
    }
    #[inline]
    fn row(&self, i: usize) -> Option<&[u8]> {
        PayloadsDyn::row(self, i)
    }
}

/// Which rows are control records, judged by their keys: in `__cluster_metadata` a keyed row (metadata
/// records have no key, KRaft control records have one); in `__consumer_offsets` and
/// `__share_group_state` a transaction marker's key (4 bytes, version 0, type 0 or 1), shorter than any
/// record key there.
fn control_mask(kind: Kind, keys: &dyn Array) -> Option<Vec<bool>> {
    match kind {
        Kind::ClusterMetadata => Some((0..keys.len()).map(|i| keys.is_valid(i)).collect()),
        Kind::ConsumerOffsets | Kind::ShareGroupState => {
            let marker = |key: Option<&[u8]>| matches!(key, Some([0, 0, 0, 0] | [0, 0, 0, 1]));
            let mask: Vec<bool> = with_payloads(keys, |k| (0..k.rows()).map(|i| marker(k.row(i))).collect()).ok()?;
            mask.contains(&true).then_some(mask)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BinaryArray, StringArray};

    #[test]
    fn kinds_by_name_with_the_python_sources_errors() {
        let auto = Internal::from_options("auto", None).unwrap().unwrap();
        assert_eq!(auto.kind_for(Some("__consumer_offsets")), Some(Kind::ConsumerOffsets));
        assert_eq!(auto.kind_for(Some("orders")), None);
        assert_eq!(Internal::from_options(" None ", None).unwrap(), None);
        let one = Internal::from_options("consumer-offsets", None).unwrap().unwrap();
        assert_eq!(one.kind_for(Some("anything")), Some(Kind::ConsumerOffsets));
        let by_topic = Internal::from_options("transaction_state", None).unwrap().unwrap();
        assert_eq!(by_topic.kind_for(None), Some(Kind::TransactionState));
        let mapped = Internal::from_options(
            r#"{"mirror.offsets": "__consumer_offsets", "__cluster_metadata": "none"}"#,
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(mapped.kind_for(Some("mirror.offsets")), Some(Kind::ConsumerOffsets));
        assert_eq!(mapped.kind_for(Some("__cluster_metadata")), None);
        assert_eq!(
            mapped.kind_for(Some("__transaction_state")),
            Some(Kind::TransactionState)
        );
        // the texts of kafkabatch.spark.internal.internal_option (recorded from the Python source)
        assert_eq!(
            Internal::from_options("cluster_metdata", None).unwrap_err(),
            "kafka-log option 'internalTopic': unknown internal 'cluster_metdata': use 'auto', 'none' or one of \
             consumer_offsets, transaction_state, share_group_state, cluster_metadata, remote_log_metadata; \
             did you mean 'cluster_metadata'?"
        );
        assert_eq!(
            Internal::from_options(r#"{"t": 3}"#, None).unwrap_err(),
            "kafka-log option 'internalTopic': internal kind for topic 't' must be a str, not int"
        );
        assert!(Internal::from_options("{nope", None)
            .unwrap_err()
            .starts_with("kafka-log option 'internalTopic': not a JSON object of topic: kind ("));
        assert_eq!(
            Internal::from_options("auto", Some("/no/such/folder")).unwrap_err(),
            "kafka-log option 'definitions': no folder '/no/such/folder' (a folder of Kafka's *.json message definitions)"
        );
    }

    #[test]
    fn resolved_options_travel_with_their_definitions() {
        let dir = std::env::temp_dir().join(format!("kafkabatch-appended-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = super::super::builtin::FILES
            .iter()
            .find(|(_, t)| t.contains("\"OffsetCommitValue\""))
            .map(|(_, t)| t.to_string())
            .unwrap();
        std::fs::write(dir.join("OffsetCommitValue.json"), &text).unwrap();
        std::fs::write(dir.join("notes.txt"), "not a definition").unwrap();
        let internal = Internal::from_options("auto", dir.to_str()).unwrap().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let travelled: Internal = serde_json::from_str(&serde_json::to_string(&internal).unwrap()).unwrap();
        assert_eq!(travelled, internal);
        assert_eq!(travelled.definitions, vec![text]);
        assert!(travelled.definitions().is_ok());
    }

    #[test]
    fn appended_columns_are_nulls_for_other_topics_and_decoded_for_theirs() {
        let internal = Internal::from_options("auto", None).unwrap().unwrap();
        let defs = internal.definitions().unwrap();
        let added = internal.added_schema(&defs, ["__consumer_offsets", "orders"]).unwrap();
        let names: Vec<&str> = added.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names.first(), Some(&"record_type"));
        assert_eq!(names.last(), Some(&"error"));
        assert!(names.contains(&"offset_commit"));
        assert!(internal.added_schema(&defs, ["orders"]).is_none());
        let batch = |topic: &str, key: Option<&[u8]>| {
            RecordBatch::try_from_iter([
                ("key", Arc::new(BinaryArray::from(vec![key])) as ArrayRef),
                ("value", Arc::new(BinaryArray::from(vec![None::<&[u8]>])) as ArrayRef),
                ("topic", Arc::new(StringArray::from(vec![topic])) as ArrayRef),
            ])
            .unwrap()
        };
        let other = internal.append(&defs, &batch("orders", Some(b"k")), &added).unwrap();
        assert_eq!(other.num_columns(), 3 + added.fields().len());
        assert!(other.columns()[3..].iter().all(|c| c.is_null(0)));
        // a transaction marker's key in __consumer_offsets: a control record, not a decode error
        let marker = internal
            .append(&defs, &batch("__consumer_offsets", Some(&[0, 0, 0, 1])), &added)
            .unwrap();
        assert!(marker.column_by_name("error").unwrap().is_null(0));
        let bad = internal
            .append(&defs, &batch("__consumer_offsets", Some(&[0, 9])), &added)
            .unwrap();
        assert!(bad.column_by_name("error").unwrap().is_valid(0));
    }
}
