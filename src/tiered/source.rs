//! A remote segment's original bytes, read chunk by chunk through any
//! [`Storage`]: only the chunks a read needs are fetched (one ranged read per
//! run of missing chunks), undone, and kept (the most recent, up to 64 MiB),
//! so the header peeks and windows of a scan fetch each chunk once.
//!
//! A chunk that fails to undo (a GCM tag, a zstd frame) costs only the reads
//! that touch it: it is remembered as bad, the chunks fetched with it are kept.
//!
//! ```
//! use std::sync::Arc;
//! use kafkabatch::storage::{Entry, Location, Storage, StorageError};
//! use kafkabatch::tiered::source::TieredSource;
//! use kafkabatch::tiered::{parse_manifest, Transform};
//!
//! // A segment of 10 bytes stored as-is in chunks of 4 (no compression, no encryption).
//! #[derive(Debug)]
//! struct Bucket(Vec<u8>);
//! impl Storage for Bucket {
//!     fn list(&self, _: &Location, _: bool) -> Result<Vec<Entry>, StorageError> { Ok(vec![]) }
//!     fn size(&self, _: &Location) -> Result<Option<u64>, StorageError> { Ok(Some(self.0.len() as u64)) }
//!     fn read_range(&self, _: &Location, r: std::ops::Range<u64>) -> Result<arrow_buffer::Buffer, StorageError> {
//!         Ok(arrow_buffer::Buffer::from(&self.0[r.start as usize..r.end as usize]))
//!     }
//! }
//! let manifest = parse_manifest(br#"{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":4,
//!     "originalFileSize":10,"transformedChunkSize":4,"finalTransformedChunkSize":2},
//!     "segmentIndexes":{"offset":{"position":0,"size":0},"timestamp":{"position":0,"size":0},
//!     "producerSnapshot":{"position":0,"size":0},"leaderEpoch":{"position":0,"size":0}},
//!     "compression":false}"#).unwrap();
//! let transform = Transform::new(false, None).unwrap();
//! let storage = Arc::new(Bucket(b"0123456789".to_vec()));
//! let mut source = TieredSource::open(storage, Location::new("b/0.log"), Arc::new(manifest), transform, 1 << 20, "max_decompressed_size").unwrap();
//! assert_eq!(source.read(3, 4).unwrap().as_slice(), b"3456");
//! assert_eq!(source.size(), 10);
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use arrow_buffer::{Buffer, MutableBuffer};

use super::transform::{chunks_within, detransform_each_into, detransform_index};
use super::{IndexKind, Manifest, TieredError, Transform};
use crate::batch::{parse_v2_header, RawBatch, LOG_OVERHEAD};
use crate::legacy::parse_message;
use crate::storage::{Location, Storage, StorageError};

/// Chunks kept undone, in bytes (at least four chunks).
const KEEP_BYTES: u64 = 64 << 20;

/// The size of the batch whose header starts `header` (12 bytes or more):
/// its offset and length fields and `length` bytes; `None` for a negative length.
fn batch_length(header: &[u8]) -> Option<u64> {
    let length = i32::from_be_bytes(header.get(8..12)?.try_into().ok()?);
    u64::try_from(length).ok().map(|l| l + LOG_OVERHEAD as u64)
}

/// Whether `bytes` are one whole batch (any magic) whose stored CRC matches.
fn batch_valid(bytes: &[u8]) -> bool {
    let raw = RawBatch { position: 0, bytes };
    match bytes.get(16) {
        Some(2) => parse_v2_header(&raw).is_ok_and(|h| h.crc_valid && h.size_in_bytes == bytes.len()),
        Some(0 | 1) => parse_message(bytes, true).is_ok(),
        _ => false,
    }
}

/// Why a read of a remote segment failed: a tiered failure of a named object
/// (its manifest, the `.log` object, one chunk), or the storage's own error.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// `object` is the file the failure is about (the `.log` object for chunks).
    #[error("{object}: {error}")]
    Tiered { object: Location, error: TieredError },
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl SourceError {
    fn tiered(object: &Location, error: TieredError) -> Self {
        SourceError::Tiered {
            object: object.clone(),
            error,
        }
    }
}

/// The original bytes of one remote segment (see the module docs).
#[derive(Debug)]
pub struct TieredSource {
    storage: Arc<dyn Storage>,
    log: Location,
    manifest: Arc<Manifest>,
    transform: Transform,
    max_decompressed_size: usize,
    cap_name: String,
    /// Undone chunks by number, and the order they came in (oldest first).
    chunks: BTreeMap<usize, Buffer>,
    order: VecDeque<usize>,
    keep: usize,
    /// Chunks that failed to undo: reading their bytes returns this.
    bad: BTreeMap<usize, TieredError>,
    /// The last window joined across chunks: (start, end, bytes).
    joined: Option<(u64, u64, Buffer)>,
    requested: u64,
}

impl TieredSource {
    /// Open the segment whose `.log` object is `log`, described by `manifest`,
    /// undone by `transform` (its data key already unwrapped). The object's size
    /// is checked against the chunk index before anything is read.
    /// `cap_name` is the caller's word for `max_decompressed_size` in errors.
    pub fn open(
        storage: Arc<dyn Storage>,
        log: Location,
        manifest: Arc<Manifest>,
        transform: Transform,
        max_decompressed_size: usize,
        cap_name: &str,
    ) -> Result<Self, SourceError> {
        manifest.check_chunk_sizes().map_err(|e| SourceError::tiered(&log, e))?;
        let described = manifest.chunk_index.transformed_size();
        let Some(stored) = storage.size(&log)? else {
            return Err(SourceError::tiered(
                &log,
                TieredError::truncated("the segment's .log object is missing (its manifest is there)"),
            ));
        };
        if stored < described {
            return Err(SourceError::tiered(
                &log,
                TieredError::truncated(format!(
                    "the object has {stored} bytes, fewer than the {described} its manifest describes \
                     (a truncated object, or a manifest whose chunk index does not fit it)"
                )),
            ));
        }
        if stored > described {
            return Err(SourceError::tiered(
                &log,
                TieredError::manifest(format!(
                    "the manifest is inconsistent with its object: its chunk index describes {described} bytes, \
                     the object {} has {stored}",
                    log.name()
                )),
            ));
        }
        let chunk_size = manifest.chunk_index.original_chunk_size().max(1);
        let keep = usize::try_from((KEEP_BYTES / chunk_size).max(4)).unwrap_or(4);
        Ok(TieredSource {
            storage,
            log,
            manifest,
            transform,
            max_decompressed_size,
            cap_name: cap_name.to_string(),
            chunks: BTreeMap::new(),
            order: VecDeque::new(),
            keep,
            bad: BTreeMap::new(),
            joined: None,
            requested: 0,
        })
    }

    /// The segment's original size in bytes.
    pub fn size(&self) -> u64 {
        self.manifest.chunk_index.original_size()
    }

    /// Bytes of the `.log` object fetched so far.
    pub fn requested(&self) -> u64 {
        self.requested
    }

    /// The `.log` object's location.
    pub fn location(&self) -> &Location {
        &self.log
    }

    /// The manifest this source reads by.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Chunks found bad so far, by number.
    pub fn bad_chunks(&self) -> impl Iterator<Item = (usize, &TieredError)> {
        self.bad.iter().map(|(i, e)| (*i, e))
    }

    /// Original bytes `(start, end)` of chunk `chunk`.
    pub fn chunk_range(&self, chunk: usize) -> Result<(u64, u64), SourceError> {
        self.manifest
            .chunk_index
            .original_range(chunk, chunk + 1)
            .map_err(|e| SourceError::tiered(&self.log, e))
    }

    /// The original bytes `position..position + length` (cut at the segment's
    /// end; empty past it). A read touching a bad chunk fails with that chunk's error.
    pub fn read(&mut self, position: u64, length: u64) -> Result<Buffer, SourceError> {
        let end = position.saturating_add(length).min(self.size());
        if end <= position {
            return Ok(Buffer::from(Vec::<u8>::new()));
        }
        if self.transform.is_identity() {
            self.requested += end - position;
            return Ok(self.storage.read_range(&self.log, position..end)?);
        }
        if let Some((a, b, joined)) = &self.joined {
            if *a <= position && end <= *b {
                return Ok(joined.slice_with_length((position - a) as usize, (end - position) as usize));
            }
        }
        let index = &self.manifest.chunk_index;
        let (first, last) = index.chunks_for(position, end);
        let missing: Vec<usize> = (first..last)
            .filter(|i| !self.chunks.contains_key(i) && !self.bad.contains_key(i))
            .collect();
        if let (Some(&a), Some(&b)) = (missing.first(), missing.last()) {
            self.fetch(a, b + 1)?;
        }
        if let Some((_, error)) = self.bad.range(first..last).next() {
            return Err(SourceError::tiered(&self.log, error.clone()));
        }
        let start = self.chunk_range(first)?.0;
        let (from, len) = ((position - start) as usize, (end - position) as usize);
        if last - first == 1 {
            return Ok(self.chunks[&first].slice_with_length(from, len));
        }
        // A window across chunks fetched apart: one copy, kept for the reads
        // that follow (a scan finds batch boundaries, then decodes the window).
        let mut joined = MutableBuffer::new(0);
        for i in first..last {
            joined.extend_from_slice(self.chunks[&i].as_slice());
        }
        let joined: Buffer = joined.into();
        let out = joined.slice_with_length(from, len);
        self.joined = Some((start, start + joined.len() as u64, joined));
        Ok(out)
    }

    /// One index of the segment's `.indexes` object (at `indexes`), fetched
    /// as its slice alone and undone; `None` when the manifest lists none.
    pub fn index(&mut self, kind: IndexKind, indexes: &Location) -> Result<Option<Vec<u8>>, SourceError> {
        let Some(slice) = self.manifest.indexes.get(kind).filter(|s| s.size > 0) else {
            return Ok(None);
        };
        let end = slice.position.saturating_add(slice.size);
        let data = match self.storage.read_range(indexes, slice.position..end) {
            Err(StorageError::OutOfRange { .. }) => Buffer::from_vec(Vec::<u8>::new()), // said below
            other => other?,
        };
        if (data.len() as u64) < slice.size {
            return Err(SourceError::tiered(
                indexes,
                TieredError::truncated(format!(
                    "the {} index lies at bytes {}-{end} of the object, which ends before",
                    kind.name(),
                    slice.position
                )),
            ));
        }
        self.requested += slice.size;
        let undone =
            detransform_index(data.as_slice(), &self.transform).map_err(|e| SourceError::tiered(indexes, e))?;
        Ok(Some(undone))
    }

    /// `(base offset, size)` of the batch whose header starts at `position`,
    /// when one fits there (a length within the segment, a known magic).
    pub fn header_at(&mut self, position: u64) -> Option<(i64, u64)> {
        let header = self.read(position, 17).ok()?;
        if header.len() < 17 || header[16] > 2 {
            return None;
        }
        let length = batch_length(&header).filter(|&l| position + l <= self.size())?;
        let base = i64::from_be_bytes(header[..8].try_into().ok()?);
        Some((base, length))
    }

    /// Where the last whole batch walked from `start` (a batch boundary)
    /// ends at or before `limit` (`start` when none fits).
    pub fn whole_batches_end(&mut self, start: u64, limit: u64) -> u64 {
        let mut pos = start;
        while pos + LOG_OVERHEAD as u64 <= limit {
            let Some(length) = self.read(pos, LOG_OVERHEAD as u64).ok().and_then(|h| batch_length(&h)) else {
                break;
            };
            if pos + length > limit {
                break;
            }
            pos += length;
        }
        pos
    }

    /// Whether batches walked from `position` end exactly at `target`, the
    /// first of them whole and valid (its CRC checked).
    pub fn batches_reach(&mut self, position: u64, target: u64) -> bool {
        let (mut pos, mut first) = (position, true);
        while pos < target {
            let Ok(header) = self.read(pos, 17) else {
                return false;
            };
            if header.len() < 17 || header[16] > 2 {
                return false;
            }
            let Some(length) = batch_length(&header).filter(|&l| l >= 17 && pos + l <= target) else {
                return false;
            };
            if first {
                let Ok(bytes) = self.read(pos, length) else {
                    return false;
                };
                if !batch_valid(&bytes) {
                    return false;
                }
                first = false;
            }
            pos += length;
        }
        pos == target
    }

    /// Fetch chunks `first..last` with one ranged read and undo each on its own:
    /// a chunk that fails is remembered as bad, the others kept.
    fn fetch(&mut self, first: usize, last: usize) -> Result<(), SourceError> {
        let log = &self.log;
        let index = &self.manifest.chunk_index;
        let (t_start, t_end) = index
            .transformed_range(first, last)
            .map_err(|e| SourceError::tiered(log, e))?;
        let raw = self.storage.read_range(log, t_start..t_end)?;
        self.requested += t_end - t_start;
        let chunks = chunks_within(
            raw.as_slice(),
            index,
            first,
            &self.transform,
            self.max_decompressed_size,
            &self.cap_name,
        )
        .map_err(|e| SourceError::tiered(log, e))?;
        // Sizes checked by chunks_within (each within the cap, the total within the limit).
        let total: u64 = chunks.iter().map(|c| c.original_size).sum();
        let mut out = MutableBuffer::from_len_zeroed(total as usize);
        let failures = detransform_each_into(raw.as_slice(), &chunks, &self.transform, 0, &mut out[..])
            .map_err(|e| SourceError::tiered(log, e))?;
        for failure in failures {
            if let Some(chunk) = failure.chunk {
                self.bad.insert(chunk, failure);
            }
        }
        let undone: Buffer = out.into();
        let mut at = 0usize;
        for chunk in &chunks {
            let size = chunk.original_size as usize;
            if !self.bad.contains_key(&chunk.index) {
                self.chunks.insert(chunk.index, undone.slice_with_length(at, size));
                self.order.push_back(chunk.index);
            }
            at += size;
        }
        while self.chunks.len() > self.keep {
            let Some(oldest) = self.order.pop_front() else { break };
            self.chunks.remove(&oldest);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Entry;
    use crate::tiered::{parse_manifest, ChunkIndex};
    use std::ops::Range;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// One object in memory; counts the bytes read.
    #[derive(Debug)]
    struct Memory {
        bytes: Vec<u8>,
        read: AtomicU64,
    }

    impl Storage for Memory {
        fn list(&self, _: &Location, _: bool) -> Result<Vec<Entry>, StorageError> {
            Ok(Vec::new())
        }
        fn size(&self, _: &Location) -> Result<Option<u64>, StorageError> {
            Ok(Some(self.bytes.len() as u64))
        }
        fn read_range(&self, location: &Location, r: Range<u64>) -> Result<Buffer, StorageError> {
            if r.end > self.bytes.len() as u64 {
                return Err(StorageError::OutOfRange {
                    location: location.clone(),
                    start: r.start,
                    end: r.end,
                    size: self.bytes.len() as u64,
                });
            }
            self.read.fetch_add(r.end - r.start, Ordering::Relaxed);
            Ok(Buffer::from(&self.bytes[r.start as usize..r.end as usize]))
        }
    }

    fn zstd_chunks(original: &[u8], chunk: usize) -> (Vec<u8>, Vec<u32>) {
        let mut stored = Vec::new();
        let mut sizes = Vec::new();
        for piece in original.chunks(chunk) {
            let frame = zstd::bulk::compress(piece, 3).unwrap();
            sizes.push(frame.len() as u32);
            stored.extend_from_slice(&frame);
        }
        (stored, sizes)
    }

    fn manifest_for(original_len: usize, chunk: usize, sizes: &[u32]) -> Manifest {
        let mut manifest = parse_manifest(
            br#"{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":1,"originalFileSize":0,
            "transformedChunkSize":1,"finalTransformedChunkSize":0},
            "segmentIndexes":{"offset":{"position":0,"size":0},"timestamp":{"position":0,"size":0},
            "producerSnapshot":{"position":0,"size":0},"leaderEpoch":{"position":0,"size":0}},
            "compression":true}"#,
        )
        .unwrap();
        manifest.chunk_index = ChunkIndex::from_sizes(chunk as u64, original_len as u64, sizes).unwrap();
        manifest
    }

    fn source(stored: Vec<u8>, manifest: Manifest) -> (TieredSource, Arc<Memory>) {
        let memory = Arc::new(Memory {
            bytes: stored,
            read: AtomicU64::new(0),
        });
        let transform = Transform::new(true, None).unwrap();
        let source = TieredSource::open(
            memory.clone(),
            Location::new("bucket/t-0/00.log"),
            Arc::new(manifest),
            transform,
            1 << 20,
            "max_decompressed_size",
        )
        .unwrap();
        (source, memory)
    }

    #[test]
    fn reads_across_chunks_fetch_each_chunk_once() {
        let original: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (stored, sizes) = zstd_chunks(&original, 1000);
        let (mut source, memory) = source(stored.clone(), manifest_for(original.len(), 1000, &sizes));
        assert_eq!(source.read(990, 30).unwrap().as_slice(), &original[990..1020]);
        assert_eq!(source.read(1500, 10).unwrap().as_slice(), &original[1500..1510]);
        assert_eq!(source.read(9_990, 100).unwrap().as_slice(), &original[9_990..]);
        assert!(source.read(10_000, 5).unwrap().is_empty());
        let fetched = memory.read.load(Ordering::Relaxed);
        let first_two: u64 = sizes[..2].iter().map(|&s| u64::from(s)).sum();
        assert_eq!(fetched, first_two + u64::from(sizes[9]));
        assert_eq!(source.requested(), fetched);
    }

    #[test]
    fn a_bad_chunk_costs_only_its_reads() {
        let original: Vec<u8> = (0..4_000u32).map(|i| (i % 13) as u8).collect();
        let (mut stored, sizes) = zstd_chunks(&original, 1000);
        // Damage chunk 1's frame (its magic number).
        let at = sizes[0] as usize;
        stored[at] ^= 0xff;
        let (mut source, _) = source(stored, manifest_for(original.len(), 1000, &sizes));
        assert_eq!(source.read(0, 1000).unwrap().as_slice(), &original[..1000]);
        match source.read(1500, 10) {
            Err(SourceError::Tiered { object, error }) => {
                assert_eq!(object.as_str(), "bucket/t-0/00.log");
                assert_eq!(error.chunk, Some(1));
            }
            other => panic!("expected a chunk error, got {other:?}"),
        }
        assert_eq!(source.read(2500, 10).unwrap().as_slice(), &original[2500..2510]);
        assert_eq!(source.bad_chunks().map(|(i, _)| i).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn an_object_of_the_wrong_size_is_named() {
        let original = vec![1u8; 3000];
        let (stored, sizes) = zstd_chunks(&original, 1000);
        let manifest = manifest_for(original.len(), 1000, &sizes);
        let short = stored[..stored.len() - 1].to_vec();
        let memory = Arc::new(Memory {
            bytes: short,
            read: AtomicU64::new(0),
        });
        let err = TieredSource::open(
            memory,
            Location::new("b/00.log"),
            Arc::new(manifest),
            Transform::new(true, None).unwrap(),
            1 << 20,
            "max_decompressed_size",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("b/00.log: the object has"), "{err}");
    }
}
