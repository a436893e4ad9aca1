//! The segment manifest (`.rsm-manifest`), JSON version 1, as the plugin's
//! `SegmentManifestV1` writes it:
//!
//! ```json
//! {"version":"1",
//!  "chunkIndex":{"type":"fixed","originalChunkSize":100,"originalFileSize":1000,
//!                "transformedChunkSize":110,"finalTransformedChunkSize":110},
//!  "segmentIndexes":{"offset":{"position":0,"size":1},"timestamp":{...},
//!                    "producerSnapshot":{...},"leaderEpoch":{...},"transaction":null},
//!  "compression":false,
//!  "encryption":{"dataKey":"<key pair id>:<base64 RSA-wrapped key>","aad":"<base64>"},
//!  "remoteLogSegmentMetadata":{...}}
//! ```
//!
//! `encryption` is absent without encryption; `transaction` is null when the
//! segment had no transaction index. `remoteLogSegmentMetadata` (the
//! broker's view: topic, partition, offsets, max timestamp) is informative;
//! it is read when present and well-formed, and ignored otherwise.

use serde::Deserialize;
use serde_json::Value;

use super::chunk_index::{ChunkIndex, BASE64};
use super::TieredError;
use base64::Engine;

/// A parsed, checked manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub chunk_index: ChunkIndex,
    pub indexes: SegmentIndexes,
    /// Chunks are zstd frames.
    pub compression: bool,
    pub encryption: Option<Encryption>,
    pub segment: SegmentMeta,
}

/// The segment's AES data key, still wrapped, and the AAD of every chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encryption {
    /// The id of the RSA key pair that wrapped the data key.
    pub key_id: String,
    pub wrapped_key: Vec<u8>,
    pub aad: Vec<u8>,
}

/// Where one index lies in the `.indexes` object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexSlice {
    pub position: u64,
    pub size: u64,
}

/// The indexes in the `.indexes` object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentIndexes {
    pub offset: IndexSlice,
    pub timestamp: IndexSlice,
    pub producer_snapshot: IndexSlice,
    pub leader_epoch: IndexSlice,
    pub transaction: Option<IndexSlice>,
}

/// The indexes a segment carries, by their manifest names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    Offset,
    Timestamp,
    ProducerSnapshot,
    LeaderEpoch,
    Transaction,
}

impl IndexKind {
    /// From the manifest's field name (`offset`, `timestamp`,
    /// `producerSnapshot`, `leaderEpoch`, `transaction`).
    pub fn from_name(name: &str) -> Option<IndexKind> {
        Some(match name {
            "offset" => IndexKind::Offset,
            "timestamp" => IndexKind::Timestamp,
            "producerSnapshot" => IndexKind::ProducerSnapshot,
            "leaderEpoch" => IndexKind::LeaderEpoch,
            "transaction" => IndexKind::Transaction,
            _ => return None,
        })
    }

    /// The manifest's field name.
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Offset => "offset",
            IndexKind::Timestamp => "timestamp",
            IndexKind::ProducerSnapshot => "producerSnapshot",
            IndexKind::LeaderEpoch => "leaderEpoch",
            IndexKind::Transaction => "transaction",
        }
    }
}

impl SegmentIndexes {
    pub fn get(&self, kind: IndexKind) -> Option<IndexSlice> {
        match kind {
            IndexKind::Offset => Some(self.offset),
            IndexKind::Timestamp => Some(self.timestamp),
            IndexKind::ProducerSnapshot => Some(self.producer_snapshot),
            IndexKind::LeaderEpoch => Some(self.leader_epoch),
            IndexKind::Transaction => self.transaction,
        }
    }
}

/// What the manifest's `remoteLogSegmentMetadata` says, where it says it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentMeta {
    pub topic: Option<String>,
    pub partition: Option<i32>,
    pub topic_id: Option<String>,
    pub segment_id: Option<String>,
    pub start_offset: Option<i64>,
    pub end_offset: Option<i64>,
    pub max_timestamp_ms: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V1 {
    chunk_index: RawChunkIndex,
    segment_indexes: RawIndexes,
    compression: bool,
    #[serde(default)]
    encryption: Option<RawEncryption>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum RawChunkIndex {
    #[serde(rename_all = "camelCase")]
    Fixed {
        original_chunk_size: i64,
        original_file_size: i64,
        transformed_chunk_size: i64,
        final_transformed_chunk_size: i64,
    },
    #[serde(rename_all = "camelCase")]
    Variable {
        original_chunk_size: i64,
        original_file_size: i64,
        transformed_chunks: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawIndexes {
    offset: RawSlice,
    timestamp: RawSlice,
    producer_snapshot: RawSlice,
    leader_epoch: RawSlice,
    #[serde(default)]
    transaction: Option<RawSlice>,
}

#[derive(Deserialize)]
struct RawSlice {
    position: i64,
    size: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEncryption {
    data_key: String,
    aad: String,
}

fn slice(raw: &RawSlice, name: &str) -> Result<IndexSlice, TieredError> {
    let ok = |v: i64| (0..=i64::from(i32::MAX)).contains(&v);
    if !ok(raw.position) || !ok(raw.size) {
        return Err(TieredError::manifest(format!(
            "segmentIndexes.{name} has position {} and size {}: not non-negative 32-bit integers",
            raw.position, raw.size
        )));
    }
    Ok(IndexSlice {
        position: raw.position as u64,
        size: raw.size as u64,
    })
}

/// The wrapped data key: `<key pair id>:<base64>`, exactly one colon.
fn data_key(text: &str) -> Result<(String, Vec<u8>), TieredError> {
    let bad = || TieredError::manifest("encryption.dataKey is not '<key pair id>:<base64 wrapped key>'");
    let (id, key) = text.split_once(':').ok_or_else(bad)?;
    if key.contains(':') || id.trim().is_empty() {
        return Err(bad());
    }
    let key = BASE64.decode(key).map_err(|_| bad())?;
    if key.is_empty() {
        return Err(bad());
    }
    Ok((id.to_string(), key))
}

fn segment_meta(value: Option<&Value>) -> SegmentMeta {
    let Some(meta) = value else {
        return SegmentMeta::default();
    };
    let id = meta.get("remoteLogSegmentId");
    let tip = id.and_then(|id| id.get("topicIdPartition"));
    let tp = tip.and_then(|t| t.get("topicPartition"));
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    SegmentMeta {
        topic: text(tp.and_then(|t| t.get("topic"))),
        partition: tp
            .and_then(|t| t.get("partition"))
            .and_then(Value::as_i64)
            .and_then(|p| i32::try_from(p).ok()),
        topic_id: text(tip.and_then(|t| t.get("topicId"))),
        segment_id: text(id.and_then(|id| id.get("id"))),
        start_offset: meta.get("startOffset").and_then(Value::as_i64),
        end_offset: meta.get("endOffset").and_then(Value::as_i64),
        max_timestamp_ms: meta.get("maxTimestampMs").and_then(Value::as_i64),
    }
}

impl Manifest {
    /// Without compression a chunk is stored as its own bytes (plus the IV
    /// and tag when encrypted): the chunk index must say so for every chunk,
    /// or the manifest contradicts itself (an `originalFileSize` that is off,
    /// a `transformedChunkSize` of 0, an encrypted object described by a
    /// manifest without its `encryption` block). Checked before a segment's
    /// bytes are read (a plain segment's bytes are read as they are, so
    /// nothing later would notice); parsing alone does not check it.
    pub fn check_chunk_sizes(&self) -> Result<(), TieredError> {
        if self.compression {
            return Ok(());
        }
        check_uncompressed_sizes(&self.chunk_index, self.encryption.is_some())
    }
}

fn check_uncompressed_sizes(index: &ChunkIndex, encrypted: bool) -> Result<(), TieredError> {
    let overhead = if encrypted { overhead_of_encryption() } else { 0 };
    let count = index.count();
    // A fixed index has two sizes: the first chunk's and the last's; a
    // variable one (unusual without compression) lists every chunk.
    let to_check: Vec<usize> = match index {
        ChunkIndex::Fixed { .. } => [0, count.saturating_sub(1)]
            .into_iter()
            .filter(|&i| i < count)
            .collect(),
        ChunkIndex::Variable { .. } => (0..count).collect(),
    };
    for i in to_check {
        let Some(chunk) = index.chunk(i) else { break };
        if chunk.transformed_size != chunk.original_size + overhead {
            let stored = if encrypted {
                "encrypted without compression, each chunk is stored in its size plus 28 bytes (IV and tag)"
            } else {
                "without compression or encryption, each chunk is stored as it is"
            };
            let mut reason = format!(
                "the chunk index is inconsistent: chunk {i} holds {} original bytes (originalChunkSize {}, \
                 originalFileSize {}) but is stored in {} bytes; {stored}",
                chunk.original_size,
                index.original_chunk_size(),
                index.original_size(),
                chunk.transformed_size
            );
            if !encrypted && chunk.transformed_size == chunk.original_size + overhead_of_encryption() {
                reason.push_str(
                    " (28 bytes more, as AES-GCM adds: an encrypted object read with a manifest \
                     that has lost its encryption block?)",
                );
            }
            return Err(TieredError::manifest(reason));
        }
    }
    Ok(())
}

fn overhead_of_encryption() -> u64 {
    (super::transform::IV_SIZE + super::transform::TAG_SIZE) as u64
}

/// The packed chunk sizes inflate to at most the plugin's own limit
/// ([`MAX_PACKED_SIZES`](super::chunk_index::MAX_PACKED_SIZES)), not to
/// `max_decompressed_size`: say so in the error.
fn packed_cap(e: TieredError) -> TieredError {
    let blamed = "cap (max_decompressed_size)";
    if !e.reason.contains(blamed) {
        return e;
    }
    let reason = e.reason.replace(
        blamed,
        "cap on the packed chunk sizes (the plugin's own limit on a chunk index)",
    );
    TieredError { reason, ..e }
}

/// Parse a manifest's bytes (UTF-8 JSON). Errors say what is wrong in the
/// manifest's own vocabulary.
pub fn parse_manifest(text: &[u8]) -> Result<Manifest, TieredError> {
    let value: Value =
        serde_json::from_slice(text).map_err(|e| TieredError::manifest(format!("not valid JSON: {e}")))?;
    let Some(object) = value.as_object() else {
        return Err(TieredError::manifest("not a JSON object"));
    };
    match object.get("version") {
        Some(Value::String(v)) if v == "1" => {}
        Some(Value::Number(v)) if v.as_i64() == Some(1) => {}
        Some(other) => {
            return Err(TieredError::manifest(format!(
                "version {other} is not supported (kafkabatch reads version 1)"
            )))
        }
        None => return Err(TieredError::manifest("no \"version\" field")),
    }
    let v1: V1 = serde_json::from_value(value.clone()).map_err(|e| TieredError::manifest(e.to_string()))?;
    let chunk_index = match v1.chunk_index {
        RawChunkIndex::Fixed {
            original_chunk_size,
            original_file_size,
            transformed_chunk_size,
            final_transformed_chunk_size,
        } => ChunkIndex::fixed(
            original_chunk_size,
            original_file_size,
            transformed_chunk_size,
            final_transformed_chunk_size,
        )?,
        RawChunkIndex::Variable {
            original_chunk_size,
            original_file_size,
            transformed_chunks,
        } => ChunkIndex::variable(original_chunk_size, original_file_size, &transformed_chunks).map_err(packed_cap)?,
    };
    let raw = &v1.segment_indexes;
    let indexes = SegmentIndexes {
        offset: slice(&raw.offset, "offset")?,
        timestamp: slice(&raw.timestamp, "timestamp")?,
        producer_snapshot: slice(&raw.producer_snapshot, "producerSnapshot")?,
        leader_epoch: slice(&raw.leader_epoch, "leaderEpoch")?,
        transaction: raw.transaction.as_ref().map(|t| slice(t, "transaction")).transpose()?,
    };
    let encryption = match v1.encryption {
        None => None,
        Some(raw) => {
            let (key_id, wrapped_key) = data_key(&raw.data_key)?;
            let aad = BASE64
                .decode(&raw.aad)
                .map_err(|_| TieredError::manifest("encryption.aad is not base64"))?;
            Some(Encryption {
                key_id,
                wrapped_key,
                aad,
            })
        }
    };
    Ok(Manifest {
        chunk_index,
        indexes,
        compression: v1.compression,
        encryption,
        segment: segment_meta(object.get("remoteLogSegmentMetadata")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SegmentManifestV1SerdeTest.REMOTE_LOG_SEGMENT_METADATA_JSON`.
    const RLSM: &str = "{\"remoteLogSegmentId\":{\"topicIdPartition\":{\"topicId\":\"lZ6vvmajTWKDBUTV6SQAtQ\",\"topicPartition\":{\"topic\":\"topic1\",\"partition\":42}},\"id\":\"adh9f8BMS4anaUnD8KWfWg\"},\"startOffset\":0,\"endOffset\":1000,\"maxTimestampMs\":1000000000,\"brokerId\":2,\"eventTimestampMs\":2000000000,\"segmentLeaderEpochs\":{\"0\":100,\"1\":200,\"2\":300}}";

    fn plugin_json(encryption: &str, transaction: &str) -> String {
        // `SegmentManifestV1SerdeTest`'s strings, built the same way.
        format!(
            "{{\"version\":\"1\",\"chunkIndex\":{{\"type\":\"fixed\",\"originalChunkSize\":100,\"originalFileSize\":1000,\"transformedChunkSize\":110,\"finalTransformedChunkSize\":110}},\"segmentIndexes\":{{\"offset\":{{\"position\":0,\"size\":1}},\"timestamp\":{{\"position\":1,\"size\":1}},\"producerSnapshot\":{{\"position\":2,\"size\":1}},\"leaderEpoch\":{{\"position\":3,\"size\":1}},\"transaction\":{transaction}}},\"compression\":false{encryption},\"remoteLogSegmentMetadata\":{RLSM}}}"
        )
    }

    #[test]
    fn plugin_manifest_without_encryption() {
        let m = parse_manifest(plugin_json("", "{\"position\":4,\"size\":1}").as_bytes()).unwrap();
        assert_eq!(m.chunk_index, ChunkIndex::fixed(100, 1000, 110, 110).unwrap());
        assert_eq!(m.chunk_index.count(), 10);
        assert!(!m.compression);
        assert!(m.encryption.is_none());
        assert_eq!(m.indexes.leader_epoch, IndexSlice { position: 3, size: 1 });
        assert_eq!(m.indexes.transaction, Some(IndexSlice { position: 4, size: 1 }));
        assert_eq!(m.segment.topic.as_deref(), Some("topic1"));
        assert_eq!(m.segment.partition, Some(42));
        assert_eq!(m.segment.topic_id.as_deref(), Some("lZ6vvmajTWKDBUTV6SQAtQ"));
        assert_eq!(m.segment.segment_id.as_deref(), Some("adh9f8BMS4anaUnD8KWfWg"));
        assert_eq!((m.segment.start_offset, m.segment.end_offset), (Some(0), Some(1000)));
        assert_eq!(m.segment.max_timestamp_ms, Some(1_000_000_000));
    }

    #[test]
    fn plugin_manifest_without_txn_index() {
        let m = parse_manifest(plugin_json("", "null").as_bytes()).unwrap();
        assert_eq!(m.indexes.transaction, None);
    }

    #[test]
    fn plugin_manifest_with_encryption() {
        // The plugin's string has the (variable) dataKey removed; put one back.
        let enc = ",\"encryption\":{\"aad\":\"CgsMDQ==\",\"dataKey\":\"encryption-key-id:AAECAw==\"}";
        let m = parse_manifest(plugin_json(enc, "null").as_bytes()).unwrap();
        let e = m.encryption.unwrap();
        assert_eq!(e.aad, vec![10, 11, 12, 13]);
        assert_eq!(e.key_id, "encryption-key-id");
        assert_eq!(e.wrapped_key, vec![0, 1, 2, 3]);
        // Without the key, as in the plugin's test string: a clear error.
        let bare = ",\"encryption\":{\"aad\":\"CgsMDQ==\"}";
        let err = parse_manifest(plugin_json(bare, "null").as_bytes()).unwrap_err();
        assert!(err.to_string().contains("dataKey"), "{err}");
    }

    #[test]
    fn uncompressed_sizes_must_agree() {
        // The plugin's manifest has 100-byte chunks stored in 110: not possible without compression.
        let check = |text: String| parse_manifest(text.as_bytes()).and_then(|m| m.check_chunk_sizes());
        let err = check(plugin_json("", "null")).unwrap_err();
        assert!(err.to_string().contains("chunk index is inconsistent"), "{err}");
        let fixed = |ocs: u64, ofs: u64, tcs: u64, fin: u64, enc: &str| {
            plugin_json(enc, "null").replace(
                "\"originalChunkSize\":100,\"originalFileSize\":1000,\"transformedChunkSize\":110,\"finalTransformedChunkSize\":110",
                &format!("\"originalChunkSize\":{ocs},\"originalFileSize\":{ofs},\"transformedChunkSize\":{tcs},\"finalTransformedChunkSize\":{fin}"),
            )
        };
        assert!(check(fixed(100, 950, 100, 50, "")).is_ok());
        // originalFileSize short, or long, or transformedChunkSize 0.
        for (ofs, tcs) in [(900, 100), (1000, 100), (1900, 100), (950, 0)] {
            let err = check(fixed(100, ofs, tcs, 50, "")).unwrap_err();
            assert_eq!(err.kind, crate::tiered::TieredErrorKind::Manifest, "{ofs} {tcs}");
        }
        let enc = ",\"encryption\":{\"aad\":\"CgsMDQ==\",\"dataKey\":\"k:AAECAw==\"}";
        assert!(check(fixed(100, 950, 128, 78, enc)).is_ok());
        // Encrypted sizes, the encryption block lost: a hint.
        let err = check(fixed(100, 950, 128, 78, "")).unwrap_err();
        assert!(err.to_string().contains("lost its encryption block"), "{err}");
    }

    #[test]
    fn a_packed_size_list_past_the_plugin_limit_is_named() {
        use base64::Engine;
        // 11 MiB of zeros as the packed sizes, zstd'd and base64'd.
        let packed = zstd::bulk::compress(&vec![0u8; 11 << 20], 3).unwrap();
        let text = plugin_json("", "null").replace(
            "{\"type\":\"fixed\",\"originalChunkSize\":100,\"originalFileSize\":1000,\"transformedChunkSize\":110,\"finalTransformedChunkSize\":110}",
            &format!(
                "{{\"type\":\"variable\",\"originalChunkSize\":100,\"originalFileSize\":1000,\"transformedChunks\":\"{}\"}}",
                BASE64.encode(packed)
            ),
        );
        let err = parse_manifest(text.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("cap on the packed chunk sizes"), "{err}");
        assert!(!err.to_string().contains("max_decompressed_size"), "{err}");
    }

    #[test]
    fn bad_manifests() {
        let cases: &[(&str, &str)] = &[
            ("{", "not valid JSON"),
            ("[]", "not a JSON object"),
            ("{}", "no \"version\""),
            ("{\"version\":\"2\"}", "version \"2\" is not supported"),
            ("{\"version\":\"1\"}", "missing field `chunkIndex`"),
            (
                "{\"version\":\"1\",\"chunkIndex\":{\"type\":\"odd\"}}",
                "unknown variant `odd`",
            ),
        ];
        for (text, want) in cases {
            let err = parse_manifest(text.as_bytes()).unwrap_err();
            assert_eq!(err.kind, crate::tiered::TieredErrorKind::Manifest);
            assert!(err.to_string().contains(want), "{text}: {err}");
        }
        let bad_key = ",\"encryption\":{\"aad\":\"CgsMDQ==\",\"dataKey\":\"a:b:c\"}";
        assert!(parse_manifest(plugin_json(bad_key, "null").as_bytes()).is_err());
        let negative = plugin_json("", "{\"position\":-4,\"size\":1}");
        assert!(parse_manifest(negative.as_bytes()).is_err());
    }
}
