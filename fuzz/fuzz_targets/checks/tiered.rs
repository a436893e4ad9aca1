//! The tiered-storage reader on arbitrary manifests and objects: a segment
//! manifest (its JSON fields, both chunk-index forms, the packed sizes of a
//! `variable` one), then the `.log` object's chunks undone through the
//! transform, whole and by range, and the `.indexes` slices it names.
//!
//! Input: a selector byte, then
//! - bit 1 clear: a 2-byte little-endian length, that many bytes of manifest
//!   text, and the object's bytes;
//! - bit 1 set: the manifest's fields as bytes (see [`Fields`]), written as
//!   the plugin's JSON (the packed sizes zstd'd and base64'd), then the
//!   object's bytes.
//!
//! Bit 0 encrypts with a fixed data key and AAD (seeds seal chunks with them),
//! bit 2 turns compression on for a structured manifest.
//!
//! Beyond "no panic":
//! - a chunk index never describes more than `MAX_CHUNKS` chunks;
//! - the chunks a read lists tile its bytes, in order, each within the cap;
//! - a read that succeeds gives exactly the original bytes its chunks hold
//!   (a whole object of the index's transformed size gives the whole
//!   original file): nothing dropped without an error;
//! - a ranged read gives the same bytes as the whole read at that place;
//! - an index slice undone has its size less the IV and tag;
//! - no single allocation is larger than [`ALLOCATION_CAP`] (the target
//!   counts them with [`Counting`], its global allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use kafkabatch::tiered::chunk_index::{ChunkIndex, MAX_CHUNKS};
use kafkabatch::tiered::transform::chunks_of;
use kafkabatch::tiered::{detransform_chunks, detransform_index, parse_manifest, IndexKind, Transform};

/// The data key and AAD of encrypted inputs (the seeds are sealed with them).
pub const KEY: [u8; 32] = [7; 32];
pub const AAD: &[u8] = b"kafkabatch fuzz aad";
/// Each chunk's original size may be at most this (`max_decompressed_size`).
pub const CHUNK_CAP: usize = 256 << 10;
/// Reads asking for more original bytes than this are not made (as a
/// caller reading in windows would not).
pub const READ_CAP: u64 = 8 << 20;
/// The largest allocation any step may make: the packed-size and start
/// tables of `MAX_CHUNKS` chunks, or a read of `READ_CAP` bytes.
pub const ALLOCATION_CAP: usize = 64 << 20;

/// The largest allocation asked for since [`reset`].
static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// A global allocator that notes the largest request (the fuzz target
/// installs it; the regression replay under `cargo test` does not, and its
/// allocation check then passes trivially).
pub struct Counting;

// SAFETY: every call is passed to `System` unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn reset() {
    LARGEST.store(0, Ordering::Relaxed);
}

fn check_allocations(step: &str) {
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest <= ALLOCATION_CAP,
        "{step} allocated {largest} bytes at once, past {ALLOCATION_CAP}"
    );
}

/// A manifest's fields, read off the input.
struct Fields<'a> {
    variable: bool,
    original_chunk_size: i64,
    original_file_size: i64,
    transformed_chunk_size: i64,
    final_transformed_chunk_size: i64,
    packed: &'a [u8],
    slices: [(i64, i64); 5],
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        head
    }
    fn int(&mut self, n: usize) -> i64 {
        let mut be = [0u8; 8];
        let bytes = self.take(n);
        be[8 - bytes.len()..].copy_from_slice(bytes);
        // Sign from the top byte of a 4-byte field, so negatives show up.
        let v = i64::from_be_bytes(be);
        if n == 4 {
            i64::from(v as u32 as i32)
        } else {
            v
        }
    }
}

impl<'a> Fields<'a> {
    fn read(r: &mut Reader<'a>) -> Self {
        let variable = r.take(1).first().is_some_and(|b| b & 1 == 1);
        let original_chunk_size = r.int(4);
        let original_file_size = r.int(4);
        let transformed_chunk_size = r.int(4);
        let final_transformed_chunk_size = r.int(4);
        let n = r.int(1) as usize;
        let packed = r.take(n);
        let mut slices = [(0, 0); 5];
        for s in &mut slices {
            *s = (r.int(2), r.int(2));
        }
        Fields {
            variable,
            original_chunk_size,
            original_file_size,
            transformed_chunk_size,
            final_transformed_chunk_size,
            packed,
            slices,
        }
    }

    fn json(&self, compression: bool, encrypted: bool) -> String {
        let chunk_index = if self.variable {
            let packed = zstd::bulk::compress(self.packed, 1).expect("zstd compresses");
            serde_json::json!({
                "type": "variable",
                "originalChunkSize": self.original_chunk_size,
                "originalFileSize": self.original_file_size,
                "transformedChunks": base64::engine::general_purpose::STANDARD.encode(packed),
            })
        } else {
            serde_json::json!({
                "type": "fixed",
                "originalChunkSize": self.original_chunk_size,
                "originalFileSize": self.original_file_size,
                "transformedChunkSize": self.transformed_chunk_size,
                "finalTransformedChunkSize": self.final_transformed_chunk_size,
            })
        };
        let slice = |i: usize| serde_json::json!({"position": self.slices[i].0, "size": self.slices[i].1});
        let mut manifest = serde_json::json!({
            "version": "1",
            "chunkIndex": chunk_index,
            "segmentIndexes": {
                "offset": slice(0), "timestamp": slice(1), "producerSnapshot": slice(2),
                "leaderEpoch": slice(3), "transaction": slice(4),
            },
            "compression": compression,
        });
        if encrypted {
            manifest["encryption"] = serde_json::json!({"dataKey": "k:AAAA", "aad": "AAAA"});
        }
        manifest.to_string()
    }
}

/// The manifest text and the object's bytes of an input.
pub fn split(input: &[u8]) -> (u8, String, Vec<u8>) {
    let mut r = Reader(input);
    let selector = r.int(1) as u8;
    let text = if selector & 2 == 0 {
        let n = r.take(2);
        let n = n.iter().rev().fold(0usize, |acc, b| acc << 8 | usize::from(*b));
        String::from_utf8_lossy(r.take(n)).into_owned()
    } else {
        Fields::read(&mut r).json(selector & 4 != 0, selector & 1 != 0)
    };
    (selector, text, r.0.to_vec())
}

pub fn check(input: &[u8]) {
    let (selector, text, object) = split(input);
    reset();
    let parsed = parse_manifest(text.as_bytes());
    check_allocations("parse_manifest");
    let manifest = match parsed {
        Ok(m) => m,
        Err(e) => {
            assert!(!e.reason.is_empty());
            return;
        }
    };
    let index = &manifest.chunk_index;
    assert!(index.count() <= MAX_CHUNKS, "{} chunks", index.count());
    let encrypted = manifest.encryption.is_some() || selector & 1 != 0;
    let transform = Transform::new(manifest.compression, encrypted.then_some((&KEY[..], AAD))).expect("a 32-byte key");
    let whole = read(&object, index, 0, &transform);
    if let Some(Ok(bytes)) = &whole {
        if object.len() as u64 == index.transformed_size() {
            assert_eq!(bytes.len() as u64, index.original_size(), "a whole read lost bytes");
        }
    }
    // A ranged read, from two bytes of the input.
    let pick = |at: usize| u64::from(input.get(at).copied().unwrap_or(0));
    let size = index.original_size().max(1);
    let (start, end) = (pick(1) * size / 256, (pick(2) + 1) * size / 256);
    let (first, last) = index.chunks_for(start, end);
    reset();
    let range = index.transformed_range(first, last);
    let original = index.original_range(first, last);
    check_allocations("chunks_for");
    if let (Ok((a, b)), Ok((o_start, o_end))) = (range, original) {
        if b <= object.len() as u64 && a <= b {
            if let Some(Ok(bytes)) = read(&object[a as usize..b as usize], index, first, &transform) {
                assert_eq!(bytes.len() as u64, o_end - o_start, "a ranged read lost bytes");
                if let Some(Ok(all)) = &whole {
                    if let Some(same) = all.get(o_start as usize..o_end as usize) {
                        assert_eq!(bytes, same, "ranged and whole reads differ");
                    }
                }
            }
        }
    }
    for kind in ["offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction"] {
        let Some(slice) = IndexKind::from_name(kind).and_then(|k| manifest.indexes.get(k)) else {
            continue;
        };
        let Some(bytes) = object.get(slice.position as usize..(slice.position + slice.size) as usize) else {
            continue;
        };
        reset();
        let undone = detransform_index(bytes, &transform);
        check_allocations("detransform_index");
        if let Ok(out) = undone {
            let overhead = if transform.encrypted() { 28 } else { 0 };
            assert_eq!(out.len() as u64 + overhead, slice.size, "{kind}");
        }
    }
}

/// The original bytes of the chunks from `first` that `data` holds: `None`
/// when they are more than a read may ask for.
fn read(
    data: &[u8],
    index: &ChunkIndex,
    first: usize,
    transform: &Transform,
) -> Option<Result<Vec<u8>, kafkabatch::tiered::TieredError>> {
    reset();
    let listed = chunks_of(data, index, first, transform, CHUNK_CAP);
    check_allocations("chunks_of");
    let chunks = match listed {
        Ok(chunks) => chunks,
        Err(e) => return Some(Err(e)),
    };
    let start = chunks.first().map_or(0, |c| c.transformed_position);
    let mut at = start;
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.index, first + i, "chunks in order");
        assert_eq!(c.transformed_position, at, "chunks tile the bytes");
        assert!(c.original_size <= CHUNK_CAP as u64);
        at += c.transformed_size;
    }
    assert_eq!(at - start, data.len() as u64, "the chunks hold exactly the bytes read");
    let total: u64 = chunks.iter().map(|c| c.original_size).sum();
    if total > READ_CAP {
        return None;
    }
    reset();
    let out = detransform_chunks(data, index, first, transform, CHUNK_CAP, 1);
    check_allocations("detransform_chunks");
    if let Ok(bytes) = &out {
        assert_eq!(bytes.len() as u64, total, "the chunks' original sizes");
    }
    Some(out)
}
