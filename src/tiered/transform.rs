//! Transformed chunks back to the segment's bytes.
//!
//! Each chunk is undone on its own: with encryption, AES-256-GCM over
//! IV(12) ‖ ciphertext ‖ tag(16) with the manifest's AAD; then, with
//! compression, one zstd frame. Chunks are independent, so several are
//! undone at once across cores (the crate's `run_beside` helper threads).
//!
//! Limits: a chunk may inflate to the size its chunk index gives it and no
//! further (and never past `max_decompressed_size`); the bytes it produces
//! must match that size exactly. Output is allocated chunk by chunk as
//! chunks are undone, never from the manifest's totals alone.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};

use super::chunk_index::{Chunk, ChunkIndex};
use super::TieredError;

/// GCM's IV, as the plugin writes it in front of each chunk.
pub const IV_SIZE: usize = 12;
/// GCM's tag, after the ciphertext.
pub const TAG_SIZE: usize = 16;
/// Below this many original bytes, one thread does the work.
const PARALLEL_MIN: u64 = 512 << 10;

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

    /// Decrypt one encrypted piece (a chunk or an index).
    fn decrypt(&self, data: &[u8], chunk: Option<usize>) -> Result<Vec<u8>, TieredError> {
        let Some((cipher, aad)) = &self.cipher else {
            return Ok(data.to_vec());
        };
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
        let mut plain = ciphertext.to_vec();
        cipher
            .decrypt_in_place_detached(Nonce::from_slice(iv), aad, &mut plain, Tag::from_slice(tag))
            .map_err(|_| {
                TieredError::chunk(
                    chunk,
                    "the AES-GCM tag does not match (altered bytes, or a data key or AAD of another segment)",
                )
            })?;
        Ok(plain)
    }

    /// Undo one chunk whose original size the index gives.
    pub fn chunk(&self, data: &[u8], chunk: &Chunk, max_decompressed_size: usize) -> Result<Vec<u8>, TieredError> {
        let plain = self.decrypt(data, Some(chunk.index))?;
        let out = if self.compression {
            let limit = usize::try_from(chunk.original_size)
                .unwrap_or(usize::MAX)
                .min(max_decompressed_size);
            let mut out = Vec::new();
            crate::compression::zstd::decompress(&plain, limit, &mut out).map_err(|e| {
                TieredError::chunk(
                    Some(chunk.index),
                    format!("{e} (the chunk index gives it {} bytes)", chunk.original_size),
                )
            })?;
            out
        } else {
            plain
        };
        if out.len() as u64 != chunk.original_size {
            return Err(TieredError::chunk(
                Some(chunk.index),
                format!(
                    "holds {} bytes, the chunk index gives it {}",
                    out.len(),
                    chunk.original_size
                ),
            ));
        }
        Ok(out)
    }
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
    let count = index.count();
    if first > count {
        return Err(TieredError::truncated(format!(
            "chunk {first} is past the segment's {count} chunks"
        )));
    }
    let (start, _) = index.transformed_range(first, first)?;
    // The chunks `data` covers: each must be there whole.
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut covered = 0u64;
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
        debug_assert_eq!(chunk.transformed_position, start + covered);
        covered += chunk.transformed_size;
        chunks.push(chunk);
        if chunk.transformed_size == 0 && covered == data_len {
            break;
        }
    }
    if transform.is_identity() {
        return Ok(data.to_vec());
    }
    let piece = |c: &Chunk| {
        let at = (c.transformed_position - start) as usize;
        &data[at..at + c.transformed_size as usize]
    };
    let original: u64 = chunks.iter().map(|c| c.original_size).sum();
    let cores = if threads == 0 { crate::decode::cores() } else { threads };
    let helpers = if original < PARALLEL_MIN {
        0
    } else {
        cores.min(chunks.len()).saturating_sub(1)
    };
    if helpers == 0 {
        let mut out = Vec::new();
        for c in &chunks {
            let bytes = transform.chunk(piece(c), c, max_decompressed_size)?;
            if out.is_empty() {
                out = bytes;
            } else {
                out.extend_from_slice(&bytes);
            }
        }
        return Ok(out);
    }
    let slots: Vec<OnceLock<Result<Vec<u8>, TieredError>>> = (0..chunks.len()).map(|_| OnceLock::new()).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let work = || loop {
        if failed.load(Ordering::Relaxed) {
            break;
        }
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(c) = chunks.get(i) else { break };
        let result = transform.chunk(piece(c), c, max_decompressed_size);
        if result.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        let _ = slots[i].set(result);
    };
    if !crate::parallel::run_beside(helpers, &work) {
        return Err(TieredError::chunk(None, "a worker thread panicked"));
    }
    // Chunks are claimed in order, so every chunk before a failed one was
    // undone: the first error in order is the first failing chunk.
    let mut out: Vec<u8> = Vec::new();
    let mut results = Vec::with_capacity(slots.len());
    for slot in slots {
        match slot.into_inner() {
            Some(Ok(bytes)) => results.push(bytes),
            Some(Err(e)) => return Err(e),
            None => break,
        }
    }
    let total: usize = results.iter().map(Vec::len).sum();
    out.reserve_exact(total);
    for bytes in &results {
        out.extend_from_slice(bytes);
    }
    Ok(out)
}

/// Undo one index of the `.indexes` object (`data`: its slice). Indexes are
/// encrypted alone and never compressed.
pub fn detransform_index(data: &[u8], transform: &Transform) -> Result<Vec<u8>, TieredError> {
    transform.decrypt(data, None)
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
        assert!(err.to_string().contains("cap"), "{err}");
        // A short key.
        assert!(Transform::new(false, Some(([1u8; 10].as_slice(), AAD))).is_err());
    }
}
