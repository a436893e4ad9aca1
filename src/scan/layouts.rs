//! The three layouts: a broker's log dir (`<topic>-<partition>/<offset>.log`),
//! Aiven's tiered-storage bucket (`{topic}-{topicId}/{partition}/{offset}-{segmentId}.log`
//! with its `.rsm-manifest`) and Kafka's LocalTieredStorage
//! (`{topic}-{partition}-{topicId}/{offset}-{segmentId}.log`).
//!
//! A topic id is 22 characters of URL-safe base64 and may itself hold `-`
//! followed by digits, so folder names are parsed from the id's fixed length,
//! never by their last dash.
//!
//! ```
//! use kafkabatch::scan::layouts::{remote_name, Layout};
//! let n = remote_name("t/orders-Ab3-12defghijklmnopqrs/3/00000000000000000100-tqimKeZwStOEOwRzT3L5oQ.log").unwrap();
//! assert_eq!((n.layout, n.topic.as_deref(), n.partition, n.topic_id.as_deref()), (Some(Layout::Aiven), Some("orders"), Some(3), Some("Ab3-12defghijklmnopqrs")));
//! ```

use std::collections::HashMap;
use std::sync::Mutex;

use super::naming::{all_digits, digits_value, is_kafka_id, parts, text, without_query};

/// Where a segment comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    /// A broker's log dir.
    Broker,
    /// Kafka's LocalTieredStorage.
    LocalTiered,
    /// Aiven's tiered-storage plugin.
    Aiven,
}

impl Layout {
    /// The name the Python package and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Broker => "broker",
            Layout::LocalTiered => "local-tiered",
            Layout::Aiven => "aiven",
        }
    }

    /// The overlap rule's preference at equal offsets (lower first).
    pub fn rank(self) -> u8 {
        match self {
            Layout::Broker => 0,
            Layout::LocalTiered => 1,
            Layout::Aiven => 2,
        }
    }
}

/// What a remote segment's names say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteName {
    /// `None` when the folders fit no layout.
    pub layout: Option<Layout>,
    pub topic: Option<String>,
    pub partition: Option<i64>,
    pub topic_id: Option<String>,
    pub segment_id: String,
    pub base_offset: i64,
    /// `log`, `indexes` or `rsm-manifest`.
    pub suffix: String,
}

/// `(offset, segment id, suffix)` of `<offset>-<segment id>.{log,indexes,rsm-manifest}`.
fn remote_file(name: &str) -> Option<(i64, &str, &str)> {
    let name = name.strip_suffix('\n').unwrap_or(name);
    let dash = name.find('-')?;
    let offset = digits_value(&name[..dash])?;
    let rest = &name[dash + 1..];
    if rest.len() < 23 || !is_kafka_id(rest.get(..22)?) || rest.as_bytes()[22] != b'.' {
        return None;
    }
    let suffix = &rest[23..];
    matches!(suffix, "log" | "indexes" | "rsm-manifest").then(|| (offset, &rest[..22], suffix))
}

/// `(topic, topic id)` of an Aiven topic folder `{topic}-{topicId}`.
fn aiven_topic_folder(name: &str) -> Option<(&str, &str)> {
    let name = name.strip_suffix('\n').unwrap_or(name);
    if name.len() < 24 || !name.is_char_boundary(name.len() - 22) {
        return None;
    }
    let (head, id) = name.split_at(name.len() - 22);
    let topic = head.strip_suffix('-')?;
    (is_kafka_id(id) && !topic.is_empty() && !topic.contains('\n')).then_some((topic, id))
}

/// `(topic, partition, topic id)` of a LocalTieredStorage folder `{topic}-{partition}-{topicId}`.
fn local_tiered_folder(name: &str) -> Option<(&str, i64, &str)> {
    let (head, id) = aiven_topic_folder(name)?;
    let dash = head.rfind('-')?;
    let (topic, partition) = (&head[..dash], &head[dash + 1..]);
    (!topic.is_empty()).then_some(())?;
    Some((topic, digits_value(partition)?, id))
}

/// A partition folder of Aiven's layout: digits (a `$` also before one final newline).
fn is_partition_folder(name: &str) -> bool {
    all_digits(name.strip_suffix('\n').unwrap_or(name))
}

/// The remote-segment facts in `path`'s names, or `None` for a name that is not
/// `<offset>-<segment id>.{log,indexes,rsm-manifest}`.
pub fn remote_name(path: &str) -> Option<RemoteName> {
    let parts = parts(path);
    let (offset, segment_id, suffix) = remote_file(parts.last()?)?;
    let parent = if parts.len() >= 2 { parts[parts.len() - 2] } else { "" };
    let grand = if parts.len() >= 3 { parts[parts.len() - 3] } else { "" };
    let named = |layout, topic: &str, partition, topic_id: &str| RemoteName {
        layout: Some(layout),
        topic: Some(topic.to_string()),
        partition: Some(partition),
        topic_id: Some(topic_id.to_string()),
        segment_id: segment_id.to_string(),
        base_offset: offset,
        suffix: suffix.to_string(),
    };
    if let (true, Some((topic, topic_id))) = (is_partition_folder(parent), aiven_topic_folder(grand)) {
        if let Some(partition) = digits_value(parent.strip_suffix('\n').unwrap_or(parent)) {
            return Some(named(Layout::Aiven, topic, partition, topic_id));
        }
    }
    if suffix == "log" {
        if let Some((topic, partition, topic_id)) = local_tiered_folder(parent) {
            return Some(named(Layout::LocalTiered, topic, partition, topic_id));
        }
    }
    Some(RemoteName {
        layout: None,
        topic: None,
        partition: None,
        topic_id: None,
        segment_id: segment_id.to_string(),
        base_offset: offset,
        suffix: suffix.to_string(),
    })
}

/// Why a remote segment's object whose folders fit no layout can't be read.
pub fn layout_reason(path: &str) -> String {
    let parts = parts(path);
    let folder = if parts.len() >= 2 { parts[parts.len() - 2] } else { "" };
    let hint = parts.len() >= 3 && aiven_topic_folder(parts[parts.len() - 3]).is_some() && !is_partition_folder(folder);
    text::layout(hint.then_some(folder))
}

/// Whether `path` names an Aiven manifest.
pub fn is_manifest(path: &str) -> bool {
    without_query(path).ends_with(text::MANIFEST)
}

/// The object beside `path` (same stem) with another suffix (`.rsm-manifest`, `.indexes`...).
pub fn sibling(path: &str, suffix: &str) -> String {
    let base = without_query(path);
    let query = &path[base.len()..];
    // Python's base[:base.rfind(".")]: without a dot, all but the last character.
    let stem = match base.rfind('.') {
        Some(at) => &base[..at],
        None => base.char_indices().last().map_or("", |(at, _)| &base[..at]),
    };
    format!("{stem}{suffix}{query}")
}

/// What listing takes from a manifest without keys (each `None` when it can't say).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestFacts {
    pub original_size: Option<u64>,
    pub end_offset: Option<i64>,
    pub topic: Option<String>,
    pub partition: Option<i64>,
}

/// A manifest's facts from its JSON text: `chunkIndex.originalFileSize` (a
/// non-negative integer, else nothing is known), `remoteLogSegmentMetadata.endOffset`
/// and its `remoteLogSegmentId.topicIdPartition.topicPartition` `topic`/`partition`.
pub fn manifest_facts_of(bytes: &[u8]) -> ManifestFacts {
    use serde_json::Value;
    let Ok(manifest) = serde_json::from_slice::<Value>(bytes) else {
        return ManifestFacts::default();
    };
    let Some(object) = manifest.as_object() else {
        return ManifestFacts::default();
    };
    let Some(size) = object
        .get("chunkIndex")
        .and_then(|c| c.as_object()?.get("originalFileSize")?.as_u64())
    else {
        return ManifestFacts::default();
    };
    // Python's `x or {}`: a missing, null, false, 0, "" or empty value reads as an empty object;
    // any other non-object is an error that leaves nothing known.
    fn object_or_empty(value: Option<&Value>) -> Option<Option<&serde_json::Map<String, Value>>> {
        match value {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Some(None),
            Some(Value::Number(n)) if n.as_f64() == Some(0.0) => Some(None),
            Some(Value::String(s)) if s.is_empty() => Some(None),
            Some(Value::Array(a)) if a.is_empty() => Some(None),
            Some(Value::Object(o)) => Some(if o.is_empty() { None } else { Some(o) }),
            Some(_) => None,
        }
    }
    let Some(meta) = object_or_empty(object.get("remoteLogSegmentMetadata")) else {
        return ManifestFacts::default();
    };
    let end = meta.and_then(|m| m.get("endOffset")).and_then(Value::as_i64);
    let mut tp = None;
    let mut level = meta;
    for key in ["remoteLogSegmentId", "topicIdPartition", "topicPartition"] {
        let Some(next) = object_or_empty(level.and_then(|m| m.get(key))) else {
            return ManifestFacts::default();
        };
        level = next;
        tp = next;
    }
    let topic = tp
        .and_then(|t| t.get("topic"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    let partition = tp.and_then(|t| t.get("partition")).and_then(Value::as_i64);
    ManifestFacts {
        original_size: Some(size),
        end_offset: end,
        topic: topic.map(str::to_string),
        partition,
    }
}

/// Facts of manifests read whole before, by location (a manifest is written once; a stream lists
/// again at each trigger). Only manifests that said their size are kept.
static FACTS: Mutex<Option<HashMap<String, ManifestFacts>>> = Mutex::new(None);

/// The facts of the manifest at `path`, read with `read` (whole) unless known.
pub fn manifest_facts(path: &str, read: impl FnOnce() -> Option<Vec<u8>>) -> ManifestFacts {
    if let Some(known) = FACTS.lock().ok().and_then(|cache| cache.as_ref()?.get(path).cloned()) {
        return known;
    }
    let Some(bytes) = read() else {
        return ManifestFacts::default();
    };
    let facts = manifest_facts_of(&bytes);
    if facts.original_size.is_some() {
        if let Ok(mut cache) = FACTS.lock() {
            let cache = cache.get_or_insert_with(HashMap::new);
            if cache.len() > 8192 {
                cache.clear();
            }
            cache.insert(path.to_string(), facts.clone());
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "tqimKeZwStOEOwRzT3L5oQ";

    #[test]
    fn layouts_from_names() {
        let n = remote_name(&format!(
            "b/p/my-topic-7-Ab3-12defghijklmnop-12/12/00000000000000000042-{ID}.rsm-manifest"
        ))
        .unwrap();
        assert_eq!(n.layout, Some(Layout::Aiven));
        assert_eq!(
            (n.topic.as_deref(), n.partition, n.topic_id.as_deref()),
            (Some("my-topic-7"), Some(12), Some("Ab3-12defghijklmnop-12"))
        );
        let n = remote_name(&format!("x/my-topic-7-3-Ab3-12defghijklmnop-12/42-{ID}.log")).unwrap();
        assert_eq!(
            (n.layout, n.topic.as_deref(), n.partition),
            (Some(Layout::LocalTiered), Some("my-topic-7"), Some(3))
        );
        assert_eq!(remote_name("orders-0/00000000000000000000.log"), None);
        let n = remote_name(&format!("s3://b/odd/folders/42-{ID}.log?x=1")).unwrap();
        assert_eq!((n.layout, n.base_offset, n.suffix.as_str()), (None, 42, "log"));
        // LocalTieredStorage keeps only .log files under that name.
        assert_eq!(
            remote_name(&format!("orders-3-Ab3-12defghijklmnopqrst/100-{ID}.indexes"))
                .unwrap()
                .layout,
            None
        );
    }

    #[test]
    fn layout_reason_hints_at_the_partition_folder() {
        assert!(layout_reason(&format!("orders-Ab3-12defghijklmnopqrs/x/1-{ID}.log"))
            .contains("(the partition folder 'x' is not a number): Aiven"));
        assert!(!layout_reason(&format!("a/b/1-{ID}.log")).contains("partition folder"));
    }

    #[test]
    fn siblings_keep_the_query() {
        assert_eq!(
            sibling("s3://b/0-x.log?endpoint_override=a.b", ".rsm-manifest"),
            "s3://b/0-x.rsm-manifest?endpoint_override=a.b"
        );
        assert!(is_manifest("s3://b/0-x.rsm-manifest?q=1"));
    }

    #[test]
    fn facts_only_from_a_size() {
        let full = br#"{"chunkIndex":{"originalFileSize":120},"remoteLogSegmentMetadata":{"endOffset":9,
            "remoteLogSegmentId":{"topicIdPartition":{"topicPartition":{"topic":"orders","partition":2}}}}}"#;
        assert_eq!(
            manifest_facts_of(full),
            ManifestFacts {
                original_size: Some(120),
                end_offset: Some(9),
                topic: Some("orders".into()),
                partition: Some(2)
            }
        );
        assert_eq!(
            manifest_facts_of(br#"{"chunkIndex":{"originalFileSize":-1}}"#),
            ManifestFacts::default()
        );
        assert_eq!(
            manifest_facts_of(br#"{"chunkIndex":{"originalFileSize":5}}"#).original_size,
            Some(5)
        );
        assert_eq!(
            manifest_facts_of(br#"{"chunkIndex":{"originalFileSize":5},"remoteLogSegmentMetadata":[1]}"#),
            ManifestFacts::default()
        );
        assert_eq!(manifest_facts_of(b"not json"), ManifestFacts::default());
    }
}
