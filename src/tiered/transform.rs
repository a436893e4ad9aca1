//! Transformed chunks back to the segment's bytes.
//!
//! Each chunk is undone on its own: with encryption, AES-256-GCM over
//! IV(12) ‖ ciphertext ‖ tag(16) with the manifest's AAD; then, with
//! compression, one zstd frame. Chunks are independent, so several are
//! undone at once across cores (the crate's `run_beside` helper threads),
//! each straight into its place in the output: an encrypted chunk is
//! decrypted in place there, a compressed one decompressed there.
//!
//! Limits: a chunk may inflate to the size its chunk index gives it and no
//! further, and never past `max_decompressed_size`; the bytes it produces
//! must match that size exactly. One call undoes at most
//! [`MAX_DECOMPRESSED_SIZE_LIMIT`] bytes, so a manifest's sizes never make
//! an allocation past the configured limits.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};

use super::chunk_index::{Chunk, ChunkIndex};
use super::TieredError;
use crate::decode::MAX_DECOMPRESSED_SIZE_LIMIT;

/// GCM's IV, as the plugin writes it in front of each chunk.
pub const IV_SIZE: usize = 12;
/// GCM's tag, after the ciphertext.
pub const TAG_SIZE: usize = 16;
/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Below this many original bytes, one thread does the work.
const PARALLEL_MIN: u64 = 512 << 10;

/// An encrypted piece's IV, ciphertext and tag.
type Sealed<'a> = (&'a [u8], &'a [u8], &'a [u8]);

/// How a segment's chunks were transformed.
#[derive(Clone)]
pub struct Transform {
    pub compression: bool,
    cipher: Option<(Aes256Gcm, Vec<u8>)>,
}

impl std::fmt::Debug for Transform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transform")
            .field("compression", &self.compression)
            .field("encrypted", &self.cipher.is_some())
            .finish()
    }
}

fn tag_failure(chunk: Option<usize>) -> TieredError {
    TieredError::chunk(
        chunk,
        "the AES-GCM tag does not match (altered bytes, or a data key or AAD of another segment)",
    )
}

impl Transform {
    /// `data_key` (unwrapped) and `aad` when the segment is encrypted.
    pub fn new(compression: bool, encryption: Option<(&[u8], &[u8])>) -> Result<Self, TieredError> {
        let cipher = match encryption {
            None => None,
            Some((key, aad)) => {
                let cipher = Aes256Gcm::new_from_slice(key).map_err(|_| {
                    TieredError::key(format!(
                        "the unwrapped data key has {} bytes, not the 32 of an AES-256 key",
                        key.len()
                    ))
                })?;
                Some((cipher, aad.to_vec()))
            }
        };
        Ok(Transform { compression, cipher })
    }

    pub fn encrypted(&self) -> bool {
        self.cipher.is_some()
    }

    /// Nothing to undo: the object's bytes are the segment's.
    pub fn is_identity(&self) -> bool {
        !self.compression && self.cipher.is_none()
    }

    /// Bytes a transformed piece has beyond its plaintext (IV and tag).
    fn overhead(&self) -> u64 {
        if self.cipher.is_some() {
            (IV_SIZE + TAG_SIZE) as u64
        } else {
            0
        }
    }

    /// Split an encrypted piece into IV, ciphertext and tag.
    fn sealed(data: &[u8], chunk: Option<usize>) -> Result<Sealed<'_>, TieredError> {
        if data.len() < IV_SIZE + TAG_SIZE {
            return Err(TieredError::chunk(
                chunk,
                format!(
                    "{} bytes cannot hold a {IV_SIZE}-byte IV and a {TAG_SIZE}-byte GCM tag",
                    data.len()
                ),
            ));
        }
        let (iv, rest) = data.split_at(IV_SIZE);
        let (ciphertext, tag) = rest.split_at(rest.len() - TAG_SIZE);
        Ok((iv, ciphertext, tag))
    }

    /// Decrypt `data` into `out` (exactly its ciphertext's length).
    fn decrypt_into(&self, data: &[u8], out: &mut [u8], chunk: Option<usize>) -> Result<(), TieredError> {
        let Some((cipher, aad)) = &self.cipher else {
            out.copy_from_slice(data);
            return Ok(());
        };
        let (iv, ciphertext, tag) = Self::sealed(data, chunk)?;
        out.copy_from_slice(ciphertext);
        cipher
            .decrypt_in_place_detached(Nonce::from_slice(iv), aad, out, Tag::from_slice(tag))
            .map_err(|_| tag_failure(chunk))
    }

    /// Undo one chunk into `out`, which has the chunk's original size.
    /// `scratch` holds a decrypted, still compressed chunk.
    fn chunk_into(&self, data: &[u8], chunk: &Chunk, out: &mut [u8], scratch: &mut Vec<u8>) -> Result<(), TieredError> {
        let index = Some(chunk.index);
        if !self.compression {
            if data.len() as u64 != out.len() as u64 + self.overhead() {
                return Err(TieredError::chunk(
                    index,
                    format!(
                        "{} bytes cannot hold the {} bytes the chunk index gives it",
                        data.len(),
                        out.len()
                    ),
                ));
            }
            return self.decrypt_into(data, out, index);
        }
        let frame = if self.cipher.is_some() {
            let ciphertext = Self::sealed(data, index)?.1;
            scratch.clear();
            scratch.resize(ciphertext.len(), 0);
            self.decrypt_into(data, scratch, index)?;
            scratch.as_slice()
        } else {
            data
        };
        crate::compression::zstd::decompress_exact(frame, out).map_err(|e| {
            if let crate::compression::CodecError::TooLarge { .. } = e {
                // The bound is the chunk's own size in the index, not a configured cap.
                return TieredError::chunk(
                    index,
                    format!(
                        "the zstd frame inflates past the {} bytes the chunk index gives the chunk",
                        chunk.original_size
                    ),
                );
            }
            // Without a cipher, bytes that are no zstd frame at all are most
            // likely ciphertext: the manifest and the object disagree.
            let hint = if self.cipher.is_none() && !frame.starts_with(&ZSTD_MAGIC) {
                "; the bytes are not a zstd frame: an encrypted object read with a manifest \
                 that has lost its encryption block?"
            } else {
                ""
            };
            TieredError::chunk(
                index,
                format!("{e} (the chunk index gives it {} bytes){hint}", chunk.original_size),
            )
        })
    }
}

/// The chunks `first..` that `data` holds, checked: whole chunks, each of
/// an original size within `max_decompressed_size`, their total within
/// [`MAX_DECOMPRESSED_SIZE_LIMIT`].
pub fn chunks_of(
    data: &[u8],
    index: &ChunkIndex,
    first: usize,
    transform: &Transform,
    max_decompressed_size: usize,
) -> Result<Vec<Chunk>, TieredError> {
    chunks_within(
        data,
        index,
        first,
        transform,
        max_decompressed_size,
        "max_decompressed_size",
    )
}

/// [`chunks_of`], the per-chunk cap named `cap_name` in errors (the caller's
/// word for it: a Python keyword, a CLI flag, a Spark option).
pub fn chunks_within(
    data: &[u8],
    index: &ChunkIndex,
    first: usize,
    transform: &Transform,
    max_decompressed_size: usize,
    cap_name: &str,
) -> Result<Vec<Chunk>, TieredError> {
    let count = index.count();
    if first > count {
        return Err(TieredError::truncated(format!(
            "chunk {first} is past the segment's {count} chunks"
        )));
    }
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut covered = 0u64;
    let mut total = 0u64;
    let data_len = data.len() as u64;
    while covered < data_len {
        let Some(chunk) = index.chunk(first + chunks.len()) else {
            return Err(TieredError::truncated(format!(
                "{data_len} bytes from chunk {first} run {} bytes past the segment's last chunk",
                data_len - covered
            )));
        };
        if covered + chunk.transformed_size > data_len {
            return Err(TieredError::truncated(format!(
                "chunk {} needs {} bytes at object byte {}, {} are there",
                chunk.index,
                chunk.transformed_size,
                chunk.transformed_position,
                data_len - covered
            )));
        }
        if !transform.compression && chunk.transformed_size != chunk.original_size + transform.overhead() {
            return Err(TieredError::chunk(
                Some(chunk.index),
                format!(
                    "the chunk index gives it {} bytes stored in {}, which cannot be without compression",
                    chunk.original_size, chunk.transformed_size
                ),
            ));
        }
        // A chunk stored in no bytes holds nothing: without this, a run of
        // them would be listed up to the index's count.
        if chunk.transformed_size == 0 && chunk.original_size > 0 {
            return Err(TieredError::chunk(
                Some(chunk.index),
                format!(
                    "the chunk index gives it {} bytes stored in 0 bytes",
                    chunk.original_size
                ),
            ));
        }
        if chunk.original_size > max_decompressed_size as u64 {
            return Err(TieredError::chunk(
                Some(chunk.index),
                format!(
                    "the chunk index gives it {} bytes, past the {max_decompressed_size}-byte cap on a chunk ({cap_name})",
                    chunk.original_size
                ),
            ));
        }
        covered += chunk.transformed_size;
        total += chunk.original_size;
        chunks.push(chunk);
        if chunk.transformed_size == 0 && covered == data_len {
            break;
        }
    }
    if total > MAX_DECOMPRESSED_SIZE_LIMIT as u64 {
        return Err(TieredError::truncated(format!(
            "chunks {first}..{} hold {total} bytes, more than one call undoes ({MAX_DECOMPRESSED_SIZE_LIMIT}); ask for fewer",
            first + chunks.len()
        )));
    }
    Ok(chunks)
}

/// Undo `chunks` (from [`chunks_of`]; `data` holds their transformed bytes
/// from the first one's position) into `out`, exactly their original size.
/// `threads`: 0 for one per core.
pub fn detransform_into(
    data: &[u8],
    chunks: &[Chunk],
    transform: &Transform,
    threads: usize,
    out: &mut [u8],
) -> Result<(), TieredError> {
    match undo_chunks(data, chunks, transform, threads, out, true)?
        .into_iter()
        .next()
    {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// [`detransform_into`], every chunk tried: the failures, in chunk order
/// (the room of a failed chunk is left zeroed; the others are undone).
/// One bad chunk costs only its own bytes.
pub fn detransform_each_into(
    data: &[u8],
    chunks: &[Chunk],
    transform: &Transform,
    threads: usize,
    out: &mut [u8],
) -> Result<Vec<TieredError>, TieredError> {
    undo_chunks(data, chunks, transform, threads, out, false)
}

/// Undo `chunks` into `out`; the chunk failures (only the first when
/// `stop_at_first`), sorted by chunk. `Err` when the arguments disagree.
fn undo_chunks(
    data: &[u8],
    chunks: &[Chunk],
    transform: &Transform,
    threads: usize,
    out: &mut [u8],
    stop_at_first: bool,
) -> Result<Vec<TieredError>, TieredError> {
    let total: u64 = chunks.iter().map(|c| c.original_size).sum();
    if out.len() as u64 != total {
        return Err(TieredError::truncated(format!(
            "{} bytes of room for {total} bytes of chunks",
            out.len()
        )));
    }
    let Some(start) = chunks.first().map(|c| c.transformed_position) else {
        return Ok(Vec::new());
    };
    let piece = |c: &Chunk| {
        let at = (c.transformed_position - start) as usize;
        &data[at..at + c.transformed_size as usize]
    };
    // Each chunk's place in `out`.
    let mut slots: Vec<Mutex<&mut [u8]>> = Vec::with_capacity(chunks.len());
    let mut rest = out;
    for c in chunks {
        let (here, after) = rest.split_at_mut(c.original_size as usize);
        slots.push(Mutex::new(here));
        rest = after;
    }
    let cores = if threads == 0 {
        crate::parallel::cores()
    } else {
        threads
    };
    let helpers = if total < PARALLEL_MIN {
        0
    } else {
        cores.min(chunks.len()).saturating_sub(1)
    };
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let errors: Mutex<Vec<TieredError>> = Mutex::new(Vec::new());
    let work = || {
        let mut scratch = Vec::new();
        loop {
            if stop_at_first && failed.load(Ordering::Relaxed) {
                break;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            let (Some(c), Some(slot)) = (chunks.get(i), slots.get(i)) else {
                break;
            };
            let Ok(mut place) = slot.lock() else {
                break;
            };
            if let Err(e) = transform.chunk_into(piece(c), c, &mut place, &mut scratch) {
                failed.store(true, Ordering::Relaxed);
                place.fill(0);
                if let Ok(mut kept) = errors.lock() {
                    kept.push(e);
                }
            }
        }
    };
    if !crate::parallel::run_beside(helpers, &work) {
        return Err(TieredError::chunk(None, "a worker thread panicked"));
    }
    let Ok(mut errors) = errors.into_inner() else {
        return Err(TieredError::chunk(None, "a worker thread panicked"));
    };
    // Chunks are claimed in order: the first failing one leads.
    errors.sort_by_key(|e| e.chunk);
    if stop_at_first {
        errors.truncate(1);
    }
    Ok(errors)
}

/// Undo chunks `first..first + n` of a segment, given `data`: exactly the
/// transformed bytes of those chunks (a ranged read of the `.log` object),
/// `n` being as many chunks as `data` holds. Returns the original bytes.
///
/// `threads`: 0 for one per core.
pub fn detransform_chunks(
    data: &[u8],
    index: &ChunkIndex,
    first: usize,
    transform: &Transform,
    max_decompressed_size: usize,
    threads: usize,
) -> Result<Vec<u8>, TieredError> {
    let chunks = chunks_of(data, index, first, transform, max_decompressed_size)?;
    let total: u64 = chunks.iter().map(|c| c.original_size).sum();
    let mut out = vec![0u8; total as usize];
    detransform_into(data, &chunks, transform, threads, &mut out)?;
    Ok(out)
}

/// Undo one index of the `.indexes` object (`data`: its slice). Indexes are
/// encrypted alone and never compressed.
pub fn detransform_index(data: &[u8], transform: &Transform) -> Result<Vec<u8>, TieredError> {
    let size = if transform.encrypted() {
        Transform::sealed(data, None)?.1.len()
    } else {
        data.len()
    };
    let mut out = vec![0u8; size];
    transform.decrypt_into(data, &mut out, None)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes_gcm::aead::Aead;

    const KEY: [u8; 32] = [7; 32];
    const AAD: &[u8] = b"additional data";

    /// Transform as the plugin does: zstd with the content size, then
    /// IV ‖ ciphertext ‖ tag.
    fn transform_chunks(original: &[u8], chunk_size: usize, compress: bool, encrypt: bool) -> (Vec<u8>, Vec<u32>) {
        let cipher = Aes256Gcm::new_from_slice(&KEY).unwrap();
        let mut out = Vec::new();
        let mut sizes = Vec::new();
        for (i, chunk) in original.chunks(chunk_size).enumerate() {
            let mut bytes = chunk.to_vec();
            if compress {
                bytes = zstd::bulk::compress(&bytes, 3).unwrap();
            }
            if encrypt {
                let iv = [i as u8; 12];
                let sealed = cipher
                    .encrypt(Nonce::from_slice(&iv), aes_gcm::aead::Payload { msg: &bytes, aad: AAD })
                    .unwrap();
                bytes = [iv.as_slice(), &sealed].concat();
            }
            sizes.push(bytes.len() as u32);
            out.extend_from_slice(&bytes);
        }
        (out, sizes)
    }

    fn original(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 / 13) as u8).collect()
    }

    #[test]
    fn round_trips_every_mode_and_range() {
        let data = original(10_000);
        for (compress, encrypt) in [(false, false), (true, false), (false, true), (true, true)] {
            let (object, sizes) = transform_chunks(&data, 999, compress, encrypt);
            let index = ChunkIndex::from_sizes(999, data.len() as u64, &sizes).unwrap();
            let t = Transform::new(compress, encrypt.then_some((KEY.as_slice(), AAD))).unwrap();
            for threads in [1, 2, 3] {
                assert_eq!(
                    detransform_chunks(&object, &index, 0, &t, 1 << 20, threads).unwrap(),
                    data
                );
                let (a, b) = index.transformed_range(3, 7).unwrap();
                let got = detransform_chunks(&object[a as usize..b as usize], &index, 3, &t, 1 << 20, threads).unwrap();
                assert_eq!(got, &data[3 * 999..7 * 999]);
            }
        }
    }

    #[test]
    fn each_chunk_on_its_own() {
        let data = original(2 << 20);
        let (mut object, sizes) = transform_chunks(&data, 64 << 10, true, true);
        let index = ChunkIndex::from_sizes(64 << 10, data.len() as u64, &sizes).unwrap();
        let t = Transform::new(true, Some((KEY.as_slice(), AAD))).unwrap();
        for bad in [5usize, 20] {
            let c = index.chunk(bad).unwrap();
            object[c.transformed_position as usize + 30] ^= 1;
        }
        for threads in [1, 2] {
            let chunks = chunks_of(&object, &index, 0, &t, 1 << 20).unwrap();
            let mut out = vec![1u8; data.len()];
            let errors = detransform_each_into(&object, &chunks, &t, threads, &mut out).unwrap();
            assert_eq!(
                errors.iter().map(|e| e.chunk).collect::<Vec<_>>(),
                vec![Some(5), Some(20)]
            );
            for c in &chunks {
                let (a, b) = (
                    c.original_position as usize,
                    (c.original_position + c.original_size) as usize,
                );
                if c.index == 5 || c.index == 20 {
                    assert!(out[a..b].iter().all(|&x| x == 0));
                } else {
                    assert_eq!(out[a..b], data[a..b], "chunk {}", c.index);
                }
            }
        }
    }

    #[test]
    fn parallel_path_finds_the_first_bad_chunk() {
        let data = original(4 << 20);
        let (mut object, sizes) = transform_chunks(&data, 64 << 10, true, true);
        let index = ChunkIndex::from_sizes(64 << 10, data.len() as u64, &sizes).unwrap();
        let t = Transform::new(true, Some((KEY.as_slice(), AAD))).unwrap();
        assert_eq!(detransform_chunks(&object, &index, 0, &t, 1 << 20, 2).unwrap(), data);
        let c = index.chunk(40).unwrap();
        object[c.transformed_position as usize + 20] ^= 1;
        let err = detransform_chunks(&object, &index, 0, &t, 1 << 20, 2).unwrap_err();
        assert_eq!(err.chunk, Some(40));
        assert!(
            err.to_string().contains("chunk 40: the AES-GCM tag does not match"),
            "{err}"
        );
    }

    #[test]
    fn bad_input() {
        let data = original(5000);
        let (object, sizes) = transform_chunks(&data, 1000, true, true);
        let index = ChunkIndex::from_sizes(1000, 5000, &sizes).unwrap();
        let good = Transform::new(true, Some((KEY.as_slice(), AAD))).unwrap();
        // Truncated object.
        let err = detransform_chunks(&object[..object.len() - 1], &index, 0, &good, 1 << 20, 1).unwrap_err();
        assert_eq!(err.kind, crate::tiered::TieredErrorKind::Truncated);
        // Another key, another AAD.
        let other = Transform::new(true, Some(([8u8; 32].as_slice(), AAD))).unwrap();
        assert_eq!(
            detransform_chunks(&object, &index, 0, &other, 1 << 20, 1)
                .unwrap_err()
                .chunk,
            Some(0)
        );
        let other = Transform::new(true, Some((KEY.as_slice(), b"x".as_slice()))).unwrap();
        assert!(detransform_chunks(&object, &index, 0, &other, 1 << 20, 1).is_err());
        // A chunk that inflates past what the index gives it (a bomb).
        let bomb = zstd::bulk::compress(&vec![0u8; 1 << 20], 3).unwrap();
        let index = ChunkIndex::from_sizes(1000, 1000, &[bomb.len() as u32]).unwrap();
        let plain = Transform::new(true, None).unwrap();
        let err = detransform_chunks(&bomb, &index, 0, &plain, 1 << 20, 1).unwrap_err();
        assert!(
            err.to_string()
                .contains("inflates past the 1000 bytes the chunk index gives"),
            "{err}"
        );
        assert!(!err.to_string().contains("max_decompressed_size"), "{err}");
        // A chunk index that claims more than the cap allows: refused before anything is allocated.
        let index = ChunkIndex::from_sizes(1 << 30, 1 << 30, &[bomb.len() as u32]).unwrap();
        let err = detransform_chunks(&bomb, &index, 0, &plain, 1 << 20, 1).unwrap_err();
        assert!(err.to_string().contains("past the 1048576-byte cap"), "{err}");
        // Fixed sizes that cannot be without compression.
        let index = ChunkIndex::fixed(100, 100, 90, 90).unwrap();
        let none = Transform::new(false, None).unwrap();
        assert!(detransform_chunks(&[0u8; 90], &index, 0, &none, 1 << 20, 1).is_err());
        // A short key.
        assert!(Transform::new(false, Some(([1u8; 10].as_slice(), AAD))).is_err());
        // Encrypted chunks read as compressed ones (a manifest without its encryption block): a hint.
        let (object, sizes) = transform_chunks(&data, 1000, true, true);
        let index = ChunkIndex::from_sizes(1000, 5000, &sizes).unwrap();
        let err = detransform_chunks(&object, &index, 0, &plain, 1 << 20, 1).unwrap_err();
        assert!(err.to_string().contains("lost its encryption block"), "{err}");
    }
}
