//! Tiered storage: Kafka segments as a RemoteStorageManager plugin stores
//! them in an object store.
//!
//! Aiven's `tiered-storage-for-apache-kafka` plugin cuts a segment's `.log`
//! into chunks of `originalChunkSize` bytes and transforms each chunk on its
//! own: zstd (a frame with its content size), then AES-256-GCM (the chunk is
//! stored as IV(12) ‖ ciphertext ‖ tag(16), with the manifest's AAD). The
//! segment's indexes are concatenated into one `.indexes` object, each one
//! encrypted alone and never compressed. A JSON manifest (`.rsm-manifest`,
//! version 1) says how: the chunk index (`fixed` sizes, or `variable` sizes
//! packed, zstd'd and base64'd), the indexes' positions and sizes, whether
//! chunks are compressed, and the AES data key wrapped with the user's RSA
//! key pair (OAEP with SHA3-512 for both the hash and MGF1, empty label).
//!
//! - [`manifest`]: the manifest, parsed with clear errors;
//! - [`chunk_index`]: both chunk-index forms and the packed sizes' codec;
//! - [`key`]: RSA private keys from PEM and the data key's unwrapping;
//! - [`transform`]: chunks back to segment bytes, in parallel;
//! - [`source`]: a remote segment's bytes read chunk by chunk through any storage;
//! - [`mod@write`]: segments stored as the plugin stores them (sample buckets).
//!
//! Sizes in a manifest are claims: nothing is allocated from them before
//! they are checked against the bytes at hand and the configured limits.

pub mod chunk_index;
pub mod key;
pub mod manifest;
pub mod source;
pub mod transform;
pub mod write;

use std::fmt;

pub use chunk_index::{Chunk, ChunkIndex};
pub use key::{parse_private_key, transform_for, unwrap_data_key};
pub use manifest::{parse_manifest, Encryption, IndexKind, IndexSlice, Manifest, SegmentIndexes, SegmentMeta};
pub use transform::{detransform_chunks, detransform_index, Transform};

/// What kind of failure a [`TieredError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TieredErrorKind {
    /// The manifest is not JSON, not version 1, or contradicts itself.
    Manifest,
    /// No key pair with the manifest's id, a key that is not an RSA private
    /// key, or one that does not unwrap the data key.
    Key,
    /// A chunk (or index slice) fails its GCM tag or does not decompress.
    Chunk,
    /// Fewer bytes than the manifest places there.
    Truncated,
}

impl TieredErrorKind {
    /// The kind's name, as Python sees it.
    pub fn name(self) -> &'static str {
        match self {
            TieredErrorKind::Manifest => "manifest",
            TieredErrorKind::Key => "key",
            TieredErrorKind::Chunk => "chunk",
            TieredErrorKind::Truncated => "truncated",
        }
    }
}

/// A tiered-storage failure: which kind, which chunk (when one), and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TieredError {
    pub kind: TieredErrorKind,
    /// The chunk's number in the segment, for chunk failures.
    pub chunk: Option<usize>,
    pub reason: String,
}

impl fmt::Display for TieredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.chunk) {
            (TieredErrorKind::Manifest, _) => write!(f, "bad segment manifest: {}", self.reason),
            (_, Some(chunk)) => write!(f, "chunk {chunk}: {}", self.reason),
            _ => f.write_str(&self.reason),
        }
    }
}

impl TieredError {
    pub fn manifest(reason: impl Into<String>) -> Self {
        TieredError {
            kind: TieredErrorKind::Manifest,
            chunk: None,
            reason: reason.into(),
        }
    }

    pub fn key(reason: impl Into<String>) -> Self {
        TieredError {
            kind: TieredErrorKind::Key,
            chunk: None,
            reason: reason.into(),
        }
    }

    pub fn chunk(chunk: Option<usize>, reason: impl Into<String>) -> Self {
        TieredError {
            kind: TieredErrorKind::Chunk,
            chunk,
            reason: reason.into(),
        }
    }

    pub fn truncated(reason: impl Into<String>) -> Self {
        TieredError {
            kind: TieredErrorKind::Truncated,
            chunk: None,
            reason: reason.into(),
        }
    }
}
