//! The chunk index of a segment manifest: where each chunk of the original
//! `.log` lies in the transformed object.
//!
//! Two forms, as the plugin writes them (`"type"` in the JSON):
//! - `fixed`: every transformed chunk has `transformedChunkSize` bytes but
//!   the last, which has `finalTransformedChunkSize` (no compression: the
//!   plain or encrypted chunks all have the same size);
//! - `variable`: `transformedChunks` lists every transformed size (with
//!   compression), packed by the codec below, zstd'd (with the content size)
//!   and base64'd.
//!
//! In both, chunk `i` holds original bytes `i * originalChunkSize ..` (the
//! last chunk what remains of `originalFileSize`), and transformed chunks
//! follow each other from position 0.
//!
//! The packed sizes (big-endian): `count: i32`; for `count == 1` the one
//! value as `i32`; for `count > 1`: `base: i32`, `bytesPerValue: u8`, then
//! `count - 1` values of `bytesPerValue` bytes each, stored as `value - base`,
//! then the last value in full as `i32`.

use super::TieredError;
use base64::Engine;

/// Largest packed chunk-size list the plugin writes or reads (its
/// `TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE`).
pub const MAX_PACKED_SIZES: usize = 10 * 1024 * 1024;

/// Most chunks one segment may have: a 2 GiB segment in chunks of 512
/// bytes (the plugin's default chunk is 4 MiB, 512 of them). A manifest
/// claiming more is refused before anything is sized by its count.
pub const MAX_CHUNKS: usize = 1 << 22;

/// The standard base64 alphabet; padding optional, as in Java's decoder.
pub(crate) const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD_PAD_INDIFFERENT;

/// One chunk: its number and where it lies in the original and the
/// transformed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub index: usize,
    pub original_position: u64,
    pub original_size: u64,
    pub transformed_position: u64,
    pub transformed_size: u64,
}

/// A manifest's chunk index, checked: every chunk it describes is consistent
/// with the original file size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkIndex {
    Fixed {
        original_chunk_size: u64,
        original_file_size: u64,
        transformed_chunk_size: u64,
        final_transformed_chunk_size: u64,
        count: usize,
    },
    Variable {
        original_chunk_size: u64,
        original_file_size: u64,
        /// Start of each transformed chunk, plus the end: `count + 1` entries.
        starts: Vec<u64>,
    },
}

/// Chunks of `chunk_size` bytes in a file of `file_size` bytes, at most
/// [`MAX_CHUNKS`].
fn chunk_count(chunk_size: u64, file_size: u64) -> Result<usize, TieredError> {
    let count = file_size.div_ceil(chunk_size);
    if count > MAX_CHUNKS as u64 {
        return Err(TieredError::manifest(format!(
            "originalFileSize {file_size} in chunks of originalChunkSize {chunk_size} makes {count} chunks, \
             more than a segment may have ({MAX_CHUNKS})"
        )));
    }
    Ok(count as usize)
}

fn size(value: i64, name: &str, positive: bool) -> Result<u64, TieredError> {
    let low = i64::from(positive);
    if value < low || value > i64::from(i32::MAX) {
        let want = if positive { "positive" } else { "non-negative" };
        return Err(TieredError::manifest(format!(
            "{name} must be a {want} 32-bit integer, not {value}"
        )));
    }
    Ok(value as u64)
}

impl ChunkIndex {
    /// A `fixed` index from its four JSON fields.
    pub fn fixed(
        original_chunk_size: i64,
        original_file_size: i64,
        transformed_chunk_size: i64,
        final_transformed_chunk_size: i64,
    ) -> Result<Self, TieredError> {
        let original_chunk_size = size(original_chunk_size, "originalChunkSize", true)?;
        let original_file_size = size(original_file_size, "originalFileSize", false)?;
        let transformed_chunk_size = size(transformed_chunk_size, "transformedChunkSize", false)?;
        let final_transformed_chunk_size = size(final_transformed_chunk_size, "finalTransformedChunkSize", false)?;
        let count = chunk_count(original_chunk_size, original_file_size)?;
        // Every chunk holds original bytes, so none is stored in none.
        if (count > 1 && transformed_chunk_size == 0) || (count > 0 && final_transformed_chunk_size == 0) {
            return Err(TieredError::manifest(format!(
                "a chunk of original bytes stored in 0 bytes (transformedChunkSize {transformed_chunk_size}, \
                 finalTransformedChunkSize {final_transformed_chunk_size}, {count} chunks)"
            )));
        }
        Ok(ChunkIndex::Fixed {
            original_chunk_size,
            original_file_size,
            transformed_chunk_size,
            final_transformed_chunk_size,
            count,
        })
    }

    /// A `variable` index from its JSON fields (`transformedChunks` as
    /// stored: base64 of the zstd'd packed sizes).
    pub fn variable(
        original_chunk_size: i64,
        original_file_size: i64,
        transformed_chunks: &str,
    ) -> Result<Self, TieredError> {
        let original_chunk_size = size(original_chunk_size, "originalChunkSize", true)?;
        let original_file_size = size(original_file_size, "originalFileSize", false)?;
        // An empty file is one chunk in a `variable` index.
        let count = chunk_count(original_chunk_size, original_file_size)?.max(1);
        let sizes = decode_transformed_chunks(transformed_chunks, count)?;
        Self::from_sizes(original_chunk_size, original_file_size, &sizes)
    }

    /// A `variable` index from the transformed sizes themselves.
    pub fn from_sizes(original_chunk_size: u64, original_file_size: u64, sizes: &[u32]) -> Result<Self, TieredError> {
        let count = sizes.len() as u64;
        if count == 0 {
            return Err(TieredError::manifest("transformedChunks lists no chunk"));
        }
        chunk_count(original_chunk_size, original_file_size)?;
        if let Some(i) = sizes.iter().position(|&s| s == 0).filter(|_| original_file_size > 0) {
            return Err(TieredError::manifest(format!(
                "transformedChunks gives chunk {i} 0 bytes, but it holds original bytes"
            )));
        }
        // Every chunk but the last is full; the last holds 1..=chunk size
        // bytes (0 only for an empty file in one chunk).
        let before_last = (count - 1).saturating_mul(original_chunk_size);
        let fits = if original_file_size == 0 {
            count == 1
        } else {
            original_file_size > before_last && original_file_size - before_last <= original_chunk_size
        };
        if !fits {
            return Err(TieredError::manifest(format!(
                "transformedChunks lists {count} chunks, but {original_file_size} bytes in chunks of {original_chunk_size} make {}",
                original_file_size.div_ceil(original_chunk_size).max(1)
            )));
        }
        let mut starts = Vec::with_capacity(sizes.len() + 1);
        let mut position = 0u64;
        starts.push(0);
        for &s in sizes {
            position += u64::from(s);
            starts.push(position);
        }
        Ok(ChunkIndex::Variable {
            original_chunk_size,
            original_file_size,
            starts,
        })
    }

    /// Number of chunks (0 for an empty `fixed` file).
    pub fn count(&self) -> usize {
        match self {
            ChunkIndex::Fixed { count, .. } => *count,
            ChunkIndex::Variable { starts, .. } => starts.len() - 1,
        }
    }

    pub fn original_chunk_size(&self) -> u64 {
        match self {
            ChunkIndex::Fixed {
                original_chunk_size, ..
            }
            | ChunkIndex::Variable {
                original_chunk_size, ..
            } => *original_chunk_size,
        }
    }

    /// Size of the original `.log`.
    pub fn original_size(&self) -> u64 {
        match self {
            ChunkIndex::Fixed { original_file_size, .. } | ChunkIndex::Variable { original_file_size, .. } => {
                *original_file_size
            }
        }
    }

    /// Size of the transformed `.log` object the index describes.
    pub fn transformed_size(&self) -> u64 {
        self.transformed_start(self.count())
    }

    /// Where transformed chunk `i` starts (`i == count`: the end).
    fn transformed_start(&self, i: usize) -> u64 {
        match self {
            ChunkIndex::Fixed {
                transformed_chunk_size,
                final_transformed_chunk_size,
                count,
                ..
            } => {
                let full = (i.min(count.saturating_sub(1))) as u64 * transformed_chunk_size;
                if i == *count && *count > 0 {
                    full + final_transformed_chunk_size
                } else {
                    full
                }
            }
            ChunkIndex::Variable { starts, .. } => starts[i.min(starts.len() - 1)],
        }
    }

    /// Chunk `i`, or `None` past the last.
    pub fn chunk(&self, i: usize) -> Option<Chunk> {
        let count = self.count();
        if i >= count {
            return None;
        }
        let chunk_size = self.original_chunk_size();
        let original_position = i as u64 * chunk_size;
        let original_size = if i + 1 == count {
            self.original_size() - original_position
        } else {
            chunk_size
        };
        let transformed_position = self.transformed_start(i);
        Some(Chunk {
            index: i,
            original_position,
            original_size,
            transformed_position,
            transformed_size: self.transformed_start(i + 1) - transformed_position,
        })
    }

    /// The chunks `first..last` holding original bytes `start..end` (an
    /// empty range when `start >= end` or `start` is past the file).
    pub fn chunks_for(&self, start: u64, end: u64) -> (usize, usize) {
        let end = end.min(self.original_size());
        if start >= end {
            let at = if start >= self.original_size() {
                self.count()
            } else {
                (start / self.original_chunk_size()) as usize
            };
            return (at, at);
        }
        let chunk_size = self.original_chunk_size();
        let first = (start / chunk_size) as usize;
        let last = (end.div_ceil(chunk_size) as usize).min(self.count());
        (first, last)
    }

    /// Transformed bytes `start..end` of chunks `first..last`.
    pub fn transformed_range(&self, first: usize, last: usize) -> Result<(u64, u64), TieredError> {
        self.check_range(first, last)?;
        Ok((self.transformed_start(first), self.transformed_start(last)))
    }

    /// Original bytes `start..end` of chunks `first..last`.
    pub fn original_range(&self, first: usize, last: usize) -> Result<(u64, u64), TieredError> {
        self.check_range(first, last)?;
        let chunk_size = self.original_chunk_size();
        let end = (last as u64 * chunk_size).min(self.original_size());
        Ok(((first as u64 * chunk_size).min(end), end))
    }

    fn check_range(&self, first: usize, last: usize) -> Result<(), TieredError> {
        let count = self.count();
        if first > last || last > count {
            return Err(TieredError::truncated(format!(
                "chunks {first}..{last} are not within the segment's {count} chunks"
            )));
        }
        Ok(())
    }
}

/// The transformed sizes of a `variable` index from their stored form:
/// base64, zstd (at most [`MAX_PACKED_SIZES`] bytes), packed; exactly
/// `expected` of them (the chunks the original file size makes).
pub fn decode_transformed_chunks(text: &str, expected: usize) -> Result<Vec<u32>, TieredError> {
    let compressed = BASE64
        .decode(text.trim())
        .map_err(|e| TieredError::manifest(format!("transformedChunks is not base64: {e}")))?;
    let mut packed = Vec::new();
    crate::compression::zstd::decompress(&compressed, MAX_PACKED_SIZES, &mut packed)
        .map_err(|e| TieredError::manifest(format!("transformedChunks: {e}")))?;
    decode_sizes(&packed, expected)
}

/// Unpack the chunk-size codec (see the module docs), `expected` sizes.
/// Every claim is checked before anything is allocated: the count against
/// `expected` (itself at most [`MAX_CHUNKS`]), and the values against the
/// bytes that hold them.
pub fn decode_sizes(packed: &[u8], expected: usize) -> Result<Vec<u32>, TieredError> {
    let bad = |why: String| TieredError::manifest(format!("transformedChunks: {why}"));
    let int_at = |at: usize| -> Result<i32, TieredError> {
        packed
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_be_bytes)
            .ok_or_else(|| {
                bad(format!(
                    "ends at byte {} where a 4-byte integer starts at {at}",
                    packed.len()
                ))
            })
    };
    let non_negative = |v: i64| -> Result<u32, TieredError> {
        u32::try_from(v)
            .ok()
            .filter(|v| *v <= i32::MAX as u32)
            .ok_or_else(|| bad(format!("chunk size {v} is not a non-negative 32-bit integer")))
    };
    let count = int_at(0)?;
    if count < 0 {
        return Err(bad(format!("negative count {count}")));
    }
    if count as usize != expected || expected > MAX_CHUNKS {
        return Err(bad(format!(
            "lists {count} chunks, but originalFileSize in chunks of originalChunkSize makes {expected}"
        )));
    }
    match count {
        0 => Ok(Vec::new()),
        1 => Ok(vec![non_negative(i64::from(int_at(4)?))?]),
        _ => {
            let count = count as usize;
            let base = i64::from(int_at(4)?);
            let width = *packed.get(8).ok_or_else(|| bad("ends before bytesPerValue".into()))? as usize;
            if width > 4 {
                return Err(bad(format!("bytesPerValue {width} is not 0..4")));
            }
            let values_end = (count - 1)
                .checked_mul(width)
                .and_then(|n| n.checked_add(9))
                .filter(|end| end.checked_add(4).is_some_and(|e| e <= packed.len()))
                .ok_or_else(|| {
                    bad(format!(
                        "{count} sizes of {width} bytes do not fit in {} bytes",
                        packed.len()
                    ))
                })?;
            let mut sizes = Vec::with_capacity(count);
            for value in packed[9..values_end].chunks_exact(width.max(1)).take(count - 1) {
                let mut be = [0u8; 4];
                be[4 - width..].copy_from_slice(&value[..width]);
                sizes.push(non_negative(i64::from(u32::from_be_bytes(be)) + base)?);
            }
            // width 0: every value is the base.
            sizes.resize(count - 1, non_negative(base)?);
            sizes.push(non_negative(i64::from(int_at(values_end)?))?);
            Ok(sizes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plugin's `ChunkIndexSerializationTest.ENCODED_CHUNKS`: 10, 20, 30.
    const ENCODED_CHUNKS: &str = "KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe";

    #[test]
    fn plugin_encoded_chunks() {
        assert_eq!(decode_transformed_chunks(ENCODED_CHUNKS, 3).unwrap(), vec![10, 20, 30]);
        let index = ChunkIndex::variable(100, 250, ENCODED_CHUNKS).unwrap();
        let chunks: Vec<Chunk> = (0..index.count()).filter_map(|i| index.chunk(i)).collect();
        let expect = [(0, 0, 100, 0, 10), (1, 100, 100, 10, 20), (2, 200, 50, 30, 30)];
        for (chunk, (i, op, os, tp, ts)) in chunks.iter().zip(expect) {
            assert_eq!((chunk.index, chunk.original_position, chunk.original_size), (i, op, os));
            assert_eq!((chunk.transformed_position, chunk.transformed_size), (tp, ts));
        }
        assert_eq!(chunks.len(), 3);
        assert_eq!(index.transformed_size(), 60);
    }

    #[test]
    fn plugin_fixed_index() {
        // ChunkIndexSerializationTest.FIXED_SIZE_CHUNK_INDEX_JSON
        let index = ChunkIndex::fixed(100, 250, 110, 30).unwrap();
        let got: Vec<_> = (0..index.count())
            .filter_map(|i| index.chunk(i))
            .map(|c| {
                (
                    c.index,
                    c.original_position,
                    c.original_size,
                    c.transformed_position,
                    c.transformed_size,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![(0, 0, 100, 0, 110), (1, 100, 100, 110, 110), (2, 200, 50, 220, 30)]
        );
        assert_eq!(index.transformed_size(), 250);
        assert_eq!(index.chunks_for(150, 201), (1, 3));
        assert_eq!(index.transformed_range(1, 3).unwrap(), (110, 250));
        assert_eq!(index.original_range(1, 3).unwrap(), (100, 250));
        assert_eq!(index.chunks_for(0, 100), (0, 1));
        assert_eq!(index.chunks_for(260, 300), (3, 3));
        assert!(index.transformed_range(2, 4).is_err());
    }

    // Values and byte widths from the plugin's `ChunkSizesBinaryCodecTest`,
    // packed as its encoder does (`tiered::write::pack_sizes`).
    use crate::tiered::write::pack_sizes as pack;

    #[test]
    fn codec_round_trips() {
        let max = i32::MAX as u32;
        let long: Vec<u32> = (0..(max - 2000)).step_by(1_000_000).collect();
        let cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![213],
            vec![max],
            vec![0, 1000, 2, 44002, 369],
            vec![max, max - 1, max - 2, 10],
            vec![1, 2, 3, max],
            vec![1, 0xFF + 10, 0xFF + 20, max],
            vec![1, 0xFFFF + 10, 0xFFFF + 20, max],
            vec![1, 0xFF_FFFF + 10, 0xFF_FFFF + 20, max],
            long,
        ];
        for values in cases {
            assert_eq!(decode_sizes(&pack(&values), values.len()).unwrap(), values);
        }
    }

    #[test]
    fn hostile_packed_sizes() {
        // A count far past the bytes.
        let mut p = pack(&[1, 2, 3]);
        p[0..4].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode_sizes(&p, 3).is_err());
        // Negative count, bad width, truncation, value overflow.
        assert!(decode_sizes(&(-1i32).to_be_bytes(), 1).is_err());
        let mut p = pack(&[1, 2, 3]);
        p[8] = 5;
        assert!(decode_sizes(&p, 3).is_err());
        let p = pack(&[1, 2, 3]);
        for cut in 0..p.len() {
            assert!(decode_sizes(&p[..cut], 3).is_err(), "cut {cut}");
        }
        // A count other than the file's chunks.
        assert!(decode_sizes(&p, 2).is_err());
        assert!(decode_sizes(&p, 4).is_err());
        let mut p = pack(&[0, 0x00FF_FFFF, 3]);
        p[4..8].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode_sizes(&p, 3).is_err());
        assert!(decode_transformed_chunks("not base64!", 1).is_err());
        assert!(decode_transformed_chunks("AAAA", 1).is_err());
    }

    /// The 13 packed bytes `count = 2^31 - 1, base, bytesPerValue = 0, last`:
    /// no bytes per value, so the bytes can't bound the count; before the
    /// count was checked against the file's chunks they made 8 GiB of room.
    fn count_without_bytes(count: i32) -> Vec<u8> {
        let mut p = count.to_be_bytes().to_vec();
        p.extend_from_slice(&100i32.to_be_bytes());
        p.push(0);
        p.extend_from_slice(&100i32.to_be_bytes());
        assert_eq!(p.len(), 13);
        p
    }

    #[test]
    fn a_count_the_bytes_cannot_bound_is_checked_before_room_is_made() {
        for count in [i32::MAX, 400_000_000, MAX_CHUNKS as i32 + 1] {
            let p = count_without_bytes(count);
            let err = decode_sizes(&p, 3).unwrap_err().to_string();
            assert!(err.contains(&format!("lists {count} chunks")), "{err}");
            // The file's own claim past the cap is refused as well.
            assert!(decode_sizes(&p, count as usize).is_err());
            // Through the manifest's stored form too.
            let stored = BASE64.encode(zstd::bulk::compress(&p, 3).unwrap());
            assert!(ChunkIndex::variable(1, i64::from(count), &stored).is_err());
            assert!(ChunkIndex::variable(100, 250, &stored).is_err());
        }
        // Width 0 with the right count: every size but the last is the base.
        assert_eq!(decode_sizes(&count_without_bytes(4), 4).unwrap(), vec![100; 4]);
    }

    #[test]
    fn inconsistent_indexes() {
        assert!(ChunkIndex::fixed(0, 10, 1, 1).is_err());
        assert!(ChunkIndex::fixed(10, -1, 1, 1).is_err());
        assert!(ChunkIndex::fixed(10, 1 << 40, 1, 1).is_err());
        // Three sizes for a file of one chunk, one for a file of three.
        assert!(ChunkIndex::from_sizes(100, 50, &[1, 2, 3]).is_err());
        assert!(ChunkIndex::from_sizes(100, 250, &[1]).is_err());
        assert!(ChunkIndex::from_sizes(100, 250, &[]).is_err());
        // A chunk of original bytes stored in none (found by the tiered
        // fuzz target: a whole read of the empty object gave no bytes and no error).
        assert!(ChunkIndex::fixed(671_088_640, 100_663_296, 50_331_648, 0).is_err());
        assert!(ChunkIndex::fixed(100, 250, 0, 30).is_err());
        assert!(ChunkIndex::fixed(100, 0, 0, 0).is_ok());
        assert!(ChunkIndex::from_sizes(100, 250, &[10, 0, 30]).is_err());
        assert!(ChunkIndex::from_sizes(100, 0, &[0]).is_ok());
        // More chunks than a segment may have, either form.
        assert!(ChunkIndex::fixed(1, i32::MAX as i64, 30, 30).is_err());
        assert!(ChunkIndex::from_sizes(1, MAX_CHUNKS as u64 + 1, &[1; 1]).is_err());
        let index = ChunkIndex::fixed(512, i32::MAX as i64, 30, 30).unwrap();
        assert_eq!(index.count(), MAX_CHUNKS);
    }
}
