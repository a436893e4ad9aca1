//! Writing a segment as Aiven's plugin stores it, for sample buckets
//! (`kafkabatch generate --tiered aiven`): the reverse of [`transform`],
//! [`chunk_index`] and [`key`](super::key).
//!
//! Each chunk of `chunk_size` original bytes is compressed (a zstd frame
//! with its content size, level 3, as the plugin's `ZstdCompressCtx`) and/or
//! encrypted (AES-256-GCM, stored as IV(12) ‖ ciphertext ‖ tag(16), the
//! segment's AAD); the `variable` chunk index lists the transformed sizes
//! packed by the plugin's `ChunkSizesBinaryCodec`, zstd'd; the data key is
//! wrapped with the key pair's public key (OAEP, SHA3-512 for the hash and
//! MGF1, empty label). Every random byte (key pair, data keys, AADs, IVs)
//! comes from a ChaCha20 stream seeded by the caller, so the same seed
//! writes the same bucket: these buckets are samples, and their key pair is
//! for reading the sample only.
//!
//! [`transform`]: super::transform
//! [`chunk_index`]: super::chunk_index

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rsa::pkcs8::{DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use rsa::{Oaep, RsaPrivateKey, RsaPublicKey};

use super::TieredError;

/// Bytes of an AES-GCM IV, as the plugin writes them.
const IV_SIZE: usize = 12;
/// Bytes of a data key (AES-256) and of an AAD.
const KEY_SIZE: usize = 32;
/// The plugin's zstd level (`ZstdCompressCtx` default).
const ZSTD_LEVEL: i32 = 3;

/// A seeded source of the random bytes a bucket needs.
pub struct SampleRng(ChaCha20Rng);

impl SampleRng {
    pub fn new(seed: u64) -> Self {
        SampleRng(ChaCha20Rng::seed_from_u64(seed))
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        self.0.fill_bytes(&mut out);
        out
    }

    /// An RSA key pair of `bits` bits: the private key in PKCS#8 PEM (what
    /// the plugin reads), the public key in SubjectPublicKeyInfo PEM.
    pub fn key_pair(&mut self, bits: usize) -> Result<(String, String), TieredError> {
        let key = RsaPrivateKey::new(&mut self.0, bits)
            .map_err(|e| TieredError::key(format!("can't make a {bits}-bit RSA key pair: {e}")))?;
        let private = key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| TieredError::key(format!("can't write the private key as PEM: {e}")))?;
        let public = key
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| TieredError::key(format!("can't write the public key as PEM: {e}")))?;
        Ok((private.to_string(), public))
    }
}

/// A segment's encryption: a fresh data key and AAD, and the data key
/// wrapped with the key pair's public key.
pub struct SegmentKey {
    cipher: Aes256Gcm,
    pub aad: Vec<u8>,
    pub wrapped: Vec<u8>,
}

impl SegmentKey {
    /// A new data key and AAD for one segment, the key wrapped with
    /// `public_pem` (SubjectPublicKeyInfo PEM).
    pub fn new(rng: &mut SampleRng, public_pem: &str) -> Result<Self, TieredError> {
        let public = RsaPublicKey::from_public_key_pem(public_pem.trim())
            .map_err(|e| TieredError::key(format!("not an RSA public key in PEM: {e}")))?;
        let data_key = rng.bytes(KEY_SIZE);
        let aad = rng.bytes(KEY_SIZE);
        let wrapped = public
            .encrypt(&mut rng.0, Oaep::new::<sha3::Sha3_512>(), &data_key)
            .map_err(|e| TieredError::key(format!("can't wrap the data key: {e}")))?;
        let cipher = Aes256Gcm::new_from_slice(&data_key).map_err(|_| TieredError::key("bad data key length"))?;
        Ok(SegmentKey { cipher, aad, wrapped })
    }

    /// `plain` sealed as the plugin stores it: IV ‖ ciphertext ‖ tag.
    pub fn seal(&self, rng: &mut SampleRng, plain: &[u8]) -> Result<Vec<u8>, TieredError> {
        let iv = rng.bytes(IV_SIZE);
        let mut out = iv.clone();
        let mut body = plain.to_vec();
        let tag = self
            .cipher
            .encrypt_in_place_detached(Nonce::from_slice(&iv), &self.aad, &mut body)
            .map_err(|_| TieredError::chunk(None, "AES-GCM refused the chunk"))?;
        out.extend_from_slice(&body);
        out.extend_from_slice(&tag);
        Ok(out)
    }
}

/// A zstd frame of `data` with its content size, as the plugin writes one.
pub fn zstd_frame(data: &[u8]) -> Result<Vec<u8>, TieredError> {
    zstd::bulk::compress(data, ZSTD_LEVEL).map_err(|e| TieredError::chunk(None, format!("zstd: {e}")))
}

/// The segment's `.log` object: `original` cut into chunks of `chunk_size`
/// bytes, each compressed and/or sealed; and the transformed size of each.
pub fn transform_chunks(
    original: &[u8],
    chunk_size: usize,
    compress: bool,
    key: Option<&SegmentKey>,
    rng: &mut SampleRng,
) -> Result<(Vec<u8>, Vec<u32>), TieredError> {
    if chunk_size == 0 {
        return Err(TieredError::chunk(None, "the chunk size must be at least 1 byte"));
    }
    let mut out = Vec::with_capacity(original.len());
    let mut sizes = Vec::with_capacity(original.len().div_ceil(chunk_size));
    for (i, chunk) in original.chunks(chunk_size).enumerate() {
        let compressed;
        let mut piece: &[u8] = chunk;
        if compress {
            compressed = zstd_frame(chunk).map_err(|e| TieredError::chunk(Some(i), e.reason))?;
            piece = &compressed;
        }
        let sealed;
        if let Some(key) = key {
            sealed = key.seal(rng, piece)?;
            piece = &sealed;
        }
        let size = u32::try_from(piece.len()).map_err(|_| TieredError::chunk(Some(i), "a chunk of 4 GiB or more"))?;
        sizes.push(size);
        out.extend_from_slice(piece);
    }
    Ok((out, sizes))
}

/// The plugin's `ChunkSizesBinaryCodec.encode`: the count, then (for two or
/// more) the smallest of all but the last, the byte width of the largest
/// difference from it, each difference in that width, and the last size.
pub fn pack_sizes(sizes: &[u32]) -> Vec<u8> {
    let mut out = (sizes.len() as u32).to_be_bytes().to_vec();
    match sizes {
        [] => {}
        [only] => out.extend_from_slice(&only.to_be_bytes()),
        [head @ .., last] => {
            let base = head.iter().copied().min().unwrap_or(0);
            let width = head
                .iter()
                .map(|v| match v - base {
                    0..=0xFF => 1,
                    0x100..=0xFFFF => 2,
                    0x1_0000..=0xFF_FFFF => 3,
                    _ => 4,
                })
                .max()
                .unwrap_or(1);
            out.extend_from_slice(&base.to_be_bytes());
            out.push(width as u8);
            for v in head {
                out.extend_from_slice(&(v - base).to_be_bytes()[4 - width..]);
            }
            out.extend_from_slice(&last.to_be_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiered::chunk_index::decode_sizes;
    use crate::tiered::transform::{detransform_chunks, Transform};
    use crate::tiered::ChunkIndex;
    use crate::tiered::{parse_private_key, unwrap_data_key};

    const TEST_KEY_PKCS8: &str = include_str!("testdata/key-pkcs8.pem");

    #[test]
    fn packed_sizes_decode_back() {
        for sizes in [vec![], vec![7], vec![100, 90, 70_000, 5], vec![1 << 30, 3, 3, 9]] {
            assert_eq!(decode_sizes(&pack_sizes(&sizes), sizes.len()).unwrap(), sizes);
        }
    }

    #[test]
    fn sealed_chunks_are_undone_by_the_reader() {
        let key = parse_private_key(TEST_KEY_PKCS8).unwrap();
        let public = key.to_public_key().to_public_key_pem(LineEnding::LF).unwrap();
        let mut rng = SampleRng::new(7);
        let segment_key = SegmentKey::new(&mut rng, &public).unwrap();
        let data_key = unwrap_data_key(&key, &segment_key.wrapped).unwrap();
        let original: Vec<u8> = (0..10_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let (bytes, sizes) = transform_chunks(&original, 4096, true, Some(&segment_key), &mut rng).unwrap();
        assert_eq!(sizes.iter().map(|&s| s as usize).sum::<usize>(), bytes.len());
        let transform = Transform::new(true, Some((&data_key, &segment_key.aad))).unwrap();
        let index = ChunkIndex::from_sizes(4096, original.len() as u64, &sizes).unwrap();
        let back = detransform_chunks(&bytes, &index, 0, &transform, 1 << 20, 1).unwrap();
        assert_eq!(back, original);
    }
}
