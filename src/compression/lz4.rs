//! lz4 codec: the LZ4 *frame* format (magic `0x184D2204`), as Kafka's
//! `KafkaLZ4BlockInputStream` / `KafkaLZ4BlockOutputStream` read and write it.
//!
//! The frame layer is written here on top of block codecs, so blocks
//! decompress straight into `out`: liblz4's (`lz4-sys`) decodes independent
//! blocks, the ones Kafka writes, as the reference and the faster of the two;
//! `lz4_flex::block` decodes linked blocks, names what is wrong with a block
//! liblz4 refused, and compresses (its own frame module is not enabled).
//!
//! Reading (spec: lz4_Frame_format.md):
//! - independent and linked blocks (a linked block may reference the previous
//!   64 KiB of the frame's output), uncompressed blocks (high bit of the size),
//!   optional block checksums and content checksum (xxh32, both verified),
//!   optional content size (a claim: only used to reserve, clamped to the
//!   limit, and checked against the real output once the frame ends);
//! - the header checksum is verified for magic 1/2. For magic 0 it is ignored
//!   altogether, as Kafka does: Kafka 0.8-0.9 computed it over the magic number
//!   plus the descriptor (KAFKA-3160), and other old writers got it right;
//! - exactly one frame is read, as Kafka's `KafkaLZ4BlockInputStream` does:
//!   the payload must start with the frame magic number (a skippable frame
//!   first is refused, as Kafka refuses it) and whatever follows the frame's
//!   end mark (a second frame, padding, garbage) is ignored. Multi-frame
//!   readers (python-lz4's `decompress` of concatenated frames, liblz4's
//!   `LZ4F_decompress` in a loop) would return more; Kafka is the reference;
//! - preset dictionaries (FLG bit 0) are refused, as Kafka refuses them.
//!
//! Writing: one frame, independent blocks of at most 64 KiB (BD = 0x40), no
//! block or content checksums, no content size, blocks that do not shrink
//! stored uncompressed; exactly Kafka's `KafkaLZ4BlockOutputStream` layout.

use super::CodecError;
use lz4_flex::block::{self as lz4_block, DecompressError};

const CODEC: &str = "lz4";

/// Frame magic number (read and written little-endian).
const FRAME_MAGIC: u32 = 0x184D_2204;
/// Skippable frames: `0x184D2A50..=0x184D2A5F`.
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
const SKIPPABLE_MASK: u32 = 0xFFFF_FFF0;
/// High bit of a block size: the block is stored uncompressed.
const UNCOMPRESSED_BIT: u32 = 0x8000_0000;
/// Linked blocks may reference at most this much previous output.
const WINDOW: usize = 64 * 1024;

// FLG bits.
const FLG_VERSION_MASK: u8 = 0b1100_0000;
const FLG_VERSION_01: u8 = 0b0100_0000;
const FLG_BLOCK_INDEPENDENT: u8 = 0b0010_0000;
const FLG_BLOCK_CHECKSUM: u8 = 0b0001_0000;
const FLG_CONTENT_SIZE: u8 = 0b0000_1000;
const FLG_CONTENT_CHECKSUM: u8 = 0b0000_0100;
const FLG_RESERVED: u8 = 0b0000_0010;
const FLG_DICT_ID: u8 = 0b0000_0001;

// BD bits.
const BD_RESERVED: u8 = 0b1000_1111;

/// What Kafka writes: FLG = version 01 + independent blocks; BD = 64 KiB blocks.
const WRITE_FLG: u8 = FLG_VERSION_01 | FLG_BLOCK_INDEPENDENT;
const WRITE_BD: u8 = 0x40;
const WRITE_BLOCK_SIZE: usize = 64 * 1024;

fn invalid(message: impl Into<String>) -> CodecError {
    CodecError::Invalid {
        codec: CODEC,
        message: message.into(),
    }
}

fn too_large(limit: usize) -> CodecError {
    CodecError::TooLarge { codec: CODEC, limit }
}

fn read_u32_le(buf: &[u8], pos: usize) -> Option<u32> {
    let bytes = buf.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

fn read_u64_le(buf: &[u8], pos: usize) -> Option<u64> {
    let bytes = buf.get(pos..pos.checked_add(8)?)?;
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes);
    Some(u64::from_le_bytes(word))
}

/// The frame header checksum byte: second byte of xxh32 of `bytes`.
fn header_checksum(bytes: &[u8]) -> u8 {
    (xxh32(bytes, 0) >> 8) as u8
}

/// Decompress the first frame of `payload`, appending to `out` (at most
/// `limit` bytes). On error `out` keeps only the bytes decoded so far.
pub fn decompress(payload: &[u8], magic0: bool, limit: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    decompress_first_frame(payload, magic0, limit, out).map(|_frame_len| ())
}

/// [`decompress`], returning how many bytes of `payload` the frame took
/// (what follows it is ignored).
pub fn decompress_first_frame(
    payload: &[u8],
    magic0: bool,
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    let start = out.len();
    let mut sink = Sink {
        start,
        filled: start,
        limit,
        out,
        in_room: false,
    };
    let result = frame(payload, magic0, &mut sink);
    // `out` may hold zeroed room past `filled`; drop it, on success or not.
    let filled = sink.filled;
    out.truncate(filled);
    result
}

/// Decompress the first frame of `payload` into the start of `out`,
/// returning how many bytes it decoded: `out[..n]`. `out` keeps its length,
/// and what it held past `n` (bytes of earlier frames) is left there as
/// room: block decoders write only into initialized bytes, so a buffer
/// reused frame after frame this way is zeroed once, not once per frame,
/// and each block decodes in place (batches are mostly one block, the
/// frame's last, which [`decompress`] decodes into a scratch buffer and
/// copies, to avoid zeroing a whole block's room for it). A buffer that
/// never held anything (`Vec::new()`, a one-off read) is not taken to be
/// reused: a short last block still goes through the scratch buffer, and
/// `out` ends at `n`.
pub fn decompress_in_room(payload: &[u8], magic0: bool, limit: usize, out: &mut Vec<u8>) -> Result<usize, CodecError> {
    let mut sink = Sink {
        start: 0,
        filled: 0,
        limit,
        out,
        in_room: true,
    };
    frame(payload, magic0, &mut sink)?;
    Ok(sink.filled)
}

/// The frame at the start of `payload`, into `sink`; the position past it.
fn frame(payload: &[u8], magic0: bool, sink: &mut Sink<'_>) -> Result<usize, CodecError> {
    match read_u32_le(payload, 0) {
        None => Err(invalid("payload too short for an lz4 frame")),
        Some(FRAME_MAGIC) => decompress_frame(payload, 0, magic0, sink),
        Some(magic) if magic & SKIPPABLE_MASK == SKIPPABLE_MAGIC => Err(invalid(format!(
            "skippable frame {magic:#010x} where Kafka expects an lz4 frame"
        ))),
        Some(magic) => Err(invalid(format!("bad frame magic number {magic:#010x}"))),
    }
}

/// Decodes the frame whose magic number is at `frame_pos`; returns the
/// position just past it.
fn decompress_frame(payload: &[u8], frame_pos: usize, magic0: bool, sink: &mut Sink<'_>) -> Result<usize, CodecError> {
    let desc_pos = frame_pos + 4;
    let (flg, bd) = match payload.get(desc_pos..desc_pos + 2) {
        Some(&[flg, bd]) => (flg, bd),
        _ => return Err(invalid("truncated frame descriptor")),
    };
    if flg & FLG_VERSION_MASK != FLG_VERSION_01 {
        return Err(invalid(format!("unsupported frame version {}", flg >> 6)));
    }
    if flg & FLG_RESERVED != 0 || bd & BD_RESERVED != 0 {
        return Err(invalid("reserved frame descriptor bits are set"));
    }
    if flg & FLG_DICT_ID != 0 {
        return Err(invalid("frames with a preset dictionary are not supported"));
    }
    let block_max: usize = match (bd >> 4) & 0x7 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        other => return Err(invalid(format!("invalid block maximum size code {other}"))),
    };
    let independent = flg & FLG_BLOCK_INDEPENDENT != 0;
    let block_checksums = flg & FLG_BLOCK_CHECKSUM != 0;

    let mut pos = desc_pos + 2;
    let content_size = if flg & FLG_CONTENT_SIZE != 0 {
        let size = read_u64_le(payload, pos).ok_or_else(|| invalid("truncated frame descriptor"))?;
        pos += 8;
        Some(size)
    } else {
        None
    };
    let hc = *payload.get(pos).ok_or_else(|| invalid("truncated frame descriptor"))?;
    // magic 0: never checked (KAFKA-3160), see the module docs.
    if !magic0 && hc != header_checksum(&payload[desc_pos..pos]) {
        return Err(invalid("frame header checksum mismatch"));
    }
    pos += 1;

    let frame_start = sink.filled;
    if let Some(size) = content_size {
        // A claim: a frame this large cannot fit (and is invalid otherwise).
        if size > sink.room() as u64 {
            return Err(too_large(sink.limit));
        }
        // Reserve for it, plus the last block's room, but never trust the
        // claim past what the payload could encode (≤ 255 bytes per byte).
        let claim = size.min(payload.len() as u64 * 256) as usize;
        sink.reserve_for(sink.filled.saturating_add(claim).saturating_add(block_max));
    }

    loop {
        let word = read_u32_le(payload, pos).ok_or_else(|| invalid("truncated block size"))?;
        pos += 4;
        if word == 0 {
            break; // EndMark
        }
        let size = (word & !UNCOMPRESSED_BIT) as usize;
        if size > block_max {
            return Err(invalid(format!(
                "block of {size} bytes exceeds the frame's {block_max}-byte maximum"
            )));
        }
        let data = payload.get(pos..pos + size).ok_or_else(|| invalid("truncated block"))?;
        pos += size;
        if block_checksums {
            let sum = read_u32_le(payload, pos).ok_or_else(|| invalid("truncated block checksum"))?;
            pos += 4;
            if sum != xxh32(data, 0) {
                return Err(invalid("block checksum mismatch"));
            }
        }
        if word & UNCOMPRESSED_BIT != 0 {
            sink.append(data)?;
        } else {
            let dict_start = if independent {
                sink.filled
            } else {
                sink.filled.saturating_sub(WINDOW).max(frame_start)
            };
            let last = read_u32_le(payload, pos) == Some(0);
            sink.decompress_block(data, dict_start, block_max, last)?;
        }
    }

    let content = &sink.out[frame_start..sink.filled];
    if flg & FLG_CONTENT_CHECKSUM != 0 {
        let sum = read_u32_le(payload, pos).ok_or_else(|| invalid("truncated content checksum"))?;
        pos += 4;
        if sum != xxh32(content, 0) {
            return Err(invalid("content checksum mismatch"));
        }
    }
    if let Some(size) = content_size {
        if size != content.len() as u64 {
            return Err(invalid(format!(
                "frame declares {size} bytes of content but holds {}",
                content.len()
            )));
        }
    }
    Ok(pos)
}

/// The output buffer. `out[..filled]` is decoded data; `out[filled..]` is
/// zeroed room kept between blocks, so each byte is zeroed at most once.
/// `out` never grows past `start + limit` bytes.
struct Sink<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    filled: usize,
    limit: usize,
    /// Blocks decode in place once `out` has held bytes: its room outlives
    /// the call (see [`decompress_in_room`]), so zeroing it is paid once.
    in_room: bool,
}

impl Sink<'_> {
    /// Output bytes still allowed.
    fn room(&self) -> usize {
        self.limit - (self.filled - self.start)
    }

    /// Makes the capacity at least `want`, clamped to `start + limit`;
    /// grows geometrically but never past `start + limit`.
    fn reserve_for(&mut self, want: usize) {
        let cap_max = self.start.saturating_add(self.limit);
        let want = want.min(cap_max);
        if want > self.out.capacity() {
            let doubled = self
                .start
                .saturating_add((self.filled - self.start).max(WINDOW).saturating_mul(2));
            let target = want.max(doubled.min(cap_max));
            self.out.reserve_exact(target - self.out.len());
        }
    }

    /// Makes `out.len() >= end` (zero-filling new room).
    fn ensure_len(&mut self, end: usize) {
        if end > self.out.len() {
            self.reserve_for(end);
            self.out.resize(end, 0);
        }
    }

    /// Appends decoded bytes (a stored block, or a block decoded elsewhere).
    fn append(&mut self, data: &[u8]) -> Result<(), CodecError> {
        if data.len() > self.room() {
            return Err(too_large(self.limit));
        }
        let end = self.filled + data.len();
        self.reserve_for(end);
        // Overwrite room already zeroed, append the rest (no zeroing needed).
        let overlap = (self.out.len() - self.filled).min(data.len());
        self.out[self.filled..self.filled + overlap].copy_from_slice(&data[..overlap]);
        self.out.extend_from_slice(&data[overlap..]);
        self.filled = end;
        Ok(())
    }

    /// Decompresses one block after `out[dict_start..filled]` (empty for
    /// independent blocks, else the previous ≤ 64 KiB of this frame).
    ///
    /// The block's size is unknown until it is decoded, so it gets the
    /// frame's whole maximum block size as room. Blocks before the last fill
    /// it (writers only cut the last one short), but for the last block that
    /// room would mostly be zeroed for nothing: a 16 KiB batch would zero
    /// 64 KiB. So the last block goes to a per-thread scratch buffer (zeroed
    /// once per thread) and is copied from there, which costs less.
    fn decompress_block(
        &mut self,
        data: &[u8],
        dict_start: usize,
        block_max: usize,
        last: bool,
    ) -> Result<(), CodecError> {
        let room = block_max.min(self.room());
        let filled = self.filled;
        let kept = self.in_room && self.out.capacity() > 0;
        if last && !kept && self.out.len() - filled < room && room <= SCRATCH_MAX {
            let decoded = SCRATCH.with(|cell| {
                let mut scratch = cell.try_borrow_mut().ok()?;
                if scratch.len() < room {
                    scratch.resize(room, 0);
                }
                let result = decode(
                    data,
                    &mut scratch[..room],
                    &self.out[dict_start..filled],
                    block_max,
                    self.limit,
                );
                Some(result.and_then(|n| self.append(&scratch[..n])))
            });
            // `None`: the scratch buffer is busy (re-entered); decode in place.
            if let Some(result) = decoded {
                return result;
            }
        }
        self.ensure_len(filled + room);
        let (before, after) = self.out.split_at_mut(filled);
        let n = decode(data, &mut after[..room], &before[dict_start..], block_max, self.limit)?;
        self.filled += n;
        Ok(())
    }
}

/// Room past which the last block is decoded in place rather than in the
/// scratch buffer (which stays allocated per thread): 256 KiB blocks.
const SCRATCH_MAX: usize = 256 * 1024;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Decodes one block into `dst` after `dict` (the previous output of the
/// frame, empty for independent blocks). `dst` is the room left: the frame's
/// maximum block size or, if smaller, what the limit allows.
fn decode(data: &[u8], dst: &mut [u8], dict: &[u8], block_max: usize, limit: usize) -> Result<usize, CodecError> {
    if dict.is_empty() {
        if let Some(n) = reference_decode(data, dst) {
            return Ok(n);
        }
    }
    // Linked blocks, and blocks liblz4 refused: lz4_flex says why.
    let room = dst.len();
    let result = if dict.is_empty() {
        lz4_block::decompress_into(data, dst)
    } else {
        lz4_block::decompress_into_with_dict(data, dst, dict)
    };
    result.map_err(|e| match e {
        // The room was cut short by the limit: the block inflates past it.
        DecompressError::OutputTooSmall { .. } if room < block_max => too_large(limit),
        DecompressError::OutputTooSmall { .. } => {
            invalid(format!("block inflates past the frame's {block_max}-byte maximum"))
        }
        e => invalid(format!("corrupt block: {e}")),
    })
}

/// An independent block decoded by liblz4's `LZ4_decompress_safe` into
/// `dst`: how many bytes, or `None` if it failed (or a size doesn't fit a
/// C `int`). The reference decoder, and Kafka's through lz4-java; on the
/// bench's JSON batches it decodes ~15 % faster than lz4_flex.
fn reference_decode(data: &[u8], dst: &mut [u8]) -> Option<usize> {
    let (src_len, dst_len) = (i32::try_from(data.len()).ok()?, i32::try_from(dst.len()).ok()?);
    // SAFETY: `LZ4_decompress_safe` is liblz4's decoder for untrusted input:
    // it reads at most `src_len` bytes from `data` and writes at most
    // `dst_len` bytes to `dst`, whatever the bytes say, and returns a
    // negative number when the block is malformed or doesn't fit.
    let n = unsafe { lz4_sys::LZ4_decompress_safe(data.as_ptr().cast(), dst.as_mut_ptr().cast(), src_len, dst_len) };
    usize::try_from(n).ok()
}

/// Compress `input` into one LZ4 frame the way Kafka's
/// `KafkaLZ4BlockOutputStream` does, appending to `out`.
///
/// `level`: Kafka's `compression.lz4.level` range is 1..=17; lz4_flex has a
/// single (fast) level, so a valid level is accepted and has no effect.
/// `magic0`: write the KAFKA-3160 header checksum (over magic + descriptor)
/// that Kafka 0.8/0.9 readers of magic-0 message sets expect.
pub fn compress(input: &[u8], magic0: bool, level: Option<i32>, out: &mut Vec<u8>) -> Result<(), CodecError> {
    if let Some(level) = level {
        if !(1..=17).contains(&level) {
            return Err(invalid(format!("compression level {level} is outside 1..=17")));
        }
    }
    let blocks = input.len().div_ceil(WRITE_BLOCK_SIZE);
    // Header (7) + block sizes + end mark; data grows by at most a little.
    out.reserve(7 + 4 * blocks + 4 + input.len());

    let magic = FRAME_MAGIC.to_le_bytes();
    let descriptor = [WRITE_FLG, WRITE_BD];
    let hc = if magic0 {
        header_checksum(&[magic[0], magic[1], magic[2], magic[3], WRITE_FLG, WRITE_BD])
    } else {
        header_checksum(&descriptor)
    };
    out.extend_from_slice(&magic);
    out.extend_from_slice(&descriptor);
    out.push(hc);

    for block in input.chunks(WRITE_BLOCK_SIZE) {
        let size_pos = out.len();
        let data_pos = size_pos + 4;
        out.resize(data_pos + lz4_block::get_maximum_output_size(block.len()), 0);
        let n = lz4_block::compress_into(block, &mut out[data_pos..])
            .map_err(|e| invalid(format!("compression failed: {e}")))?;
        if n < block.len() {
            out.truncate(data_pos + n);
            // n < 64 KiB: fits in u32 without the high bit.
            out[size_pos..data_pos].copy_from_slice(&(n as u32).to_le_bytes());
        } else {
            // Does not shrink: store it, as Kafka does.
            out.truncate(size_pos);
            out.extend_from_slice(&(block.len() as u32 | UNCOMPRESSED_BIT).to_le_bytes());
            out.extend_from_slice(block);
        }
    }
    out.extend_from_slice(&0u32.to_le_bytes()); // EndMark
    Ok(())
}

// xxh32 (XXH32 of the xxHash spec), one-shot. lz4_flex only exposes it
// through its `frame` feature (via twox-hash), which is not enabled.
const PRIME32_1: u32 = 0x9E37_79B1;
const PRIME32_2: u32 = 0x85EB_CA77;
const PRIME32_3: u32 = 0xC2B2_AE3D;
const PRIME32_4: u32 = 0x27D4_EB2F;
const PRIME32_5: u32 = 0x1656_67B1;

#[inline(always)]
fn xxh32_round(acc: u32, lane: u32) -> u32 {
    acc.wrapping_add(lane.wrapping_mul(PRIME32_2))
        .rotate_left(13)
        .wrapping_mul(PRIME32_1)
}

#[inline(always)]
fn le32(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// XXH32 of `data` with `seed`.
pub(crate) fn xxh32(data: &[u8], seed: u32) -> u32 {
    let mut stripes = data.chunks_exact(16);
    let mut h = if data.len() >= 16 {
        let mut v1 = seed.wrapping_add(PRIME32_1).wrapping_add(PRIME32_2);
        let mut v2 = seed.wrapping_add(PRIME32_2);
        let mut v3 = seed;
        let mut v4 = seed.wrapping_sub(PRIME32_1);
        for stripe in &mut stripes {
            v1 = xxh32_round(v1, le32(&stripe[0..4]));
            v2 = xxh32_round(v2, le32(&stripe[4..8]));
            v3 = xxh32_round(v3, le32(&stripe[8..12]));
            v4 = xxh32_round(v4, le32(&stripe[12..16]));
        }
        v1.rotate_left(1)
            .wrapping_add(v2.rotate_left(7))
            .wrapping_add(v3.rotate_left(12))
            .wrapping_add(v4.rotate_left(18))
    } else {
        seed.wrapping_add(PRIME32_5)
    };
    h = h.wrapping_add(data.len() as u32);

    let tail = stripes.remainder();
    let mut words = tail.chunks_exact(4);
    for word in &mut words {
        h = h
            .wrapping_add(le32(word).wrapping_mul(PRIME32_3))
            .rotate_left(17)
            .wrapping_mul(PRIME32_4);
    }
    for &byte in words.remainder() {
        h = h
            .wrapping_add(u32::from(byte).wrapping_mul(PRIME32_5))
            .rotate_left(11)
            .wrapping_mul(PRIME32_1);
    }

    h ^= h >> 15;
    h = h.wrapping_mul(PRIME32_2);
    h ^= h >> 13;
    h = h.wrapping_mul(PRIME32_3);
    h ^= h >> 16;
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::test_support::*;
    use proptest::prelude::*;

    fn dec(payload: &[u8], magic0: bool, limit: usize) -> Result<Vec<u8>, CodecError> {
        into_vec(|out| decompress(payload, magic0, limit, out))
    }

    fn comp(input: &[u8], magic0: bool) -> Vec<u8> {
        into_vec(|out| compress(input, magic0, None, out)).unwrap()
    }

    /// A frame header with the given FLG/BD and optional content size; the
    /// header checksum is the standard one.
    fn header(flg: u8, bd: u8, content_size: Option<u64>) -> Vec<u8> {
        let mut h = FRAME_MAGIC.to_le_bytes().to_vec();
        h.push(flg);
        h.push(bd);
        if let Some(size) = content_size {
            h.extend_from_slice(&size.to_le_bytes());
        }
        let hc = header_checksum(&h[4..]);
        h.push(hc);
        h
    }

    fn push_block(frame: &mut Vec<u8>, data: &[u8], uncompressed: bool, checksum: bool) {
        let word = data.len() as u32 | if uncompressed { UNCOMPRESSED_BIT } else { 0 };
        frame.extend_from_slice(&word.to_le_bytes());
        frame.extend_from_slice(data);
        if checksum {
            frame.extend_from_slice(&xxh32(data, 0).to_le_bytes());
        }
    }

    // lz4 1.9.4 CLI: `lz4 -BD -B4 -BX --content-size` (linked 64 KiB blocks,
    // block checksums, content size, content checksum) of `repeated(150000)`.
    const CLI_LINKED: &str = concat!(
        "04224d185c40f049020000000000e9a8010000406c7a34200400f700706172746974696f6e20626c6f636b1000060a00",
        "a37a737464206b61666b610600011100b36261746368206672616d653c00020c00063800025200547265636f72400003",
        "0d0052746f7069634700062f00031c00009a00011a00022500027800020c00071700636f66667365749000021e000340",
        "00020d00023700031300030700055a0002bb00031600094a00068e00024100011d000f2c01ffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffbb50207a737464d0e64e441901000007eafe0308ff051eff0841ff020c000f78ffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffbb506666736574fd960f5900010000f301206b61666b6120706172746974696f6e1000c76f666673656c7a",
        "34206c7a341d0057626c6f636b1000063700437a7374643c00025200011100b36261746368206672616d653c00020c00",
        "063800021600547265636f724000030d0052746f7069634700062f00031c00326c7a341a00022500027200020c000131",
        "00020b0001c50013749600021300034000020d00023700031300030700055a0002bb00031600094a00068e0002410001",
        "1d000f2c01ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffd8506f66667365d6117cd5000000000ea378c4",
    );
    // `lz4 -BI -B4` (independent 64 KiB blocks, content checksum) of the same.
    const CLI_INDEP: &str = concat!(
        "04224d186440a701020000406c7a34200400f700706172746974696f6e20626c6f636b1000060a00a37a737464206b61",
        "666b610600011100b36261746368206672616d653c00020c00063800025200547265636f724000030d0052746f706963",
        "4700062f00031c00009600011a00022500027800020c00071700636f66667365749000021e00034000020d0002370003",
        "1300030700055a0002bb00031600094a00068e00024100011d00003800000400061d0002da00061000060a0001a30002",
        "3c00020600011100027100022001023c00020c00063800021600039300023a00030d0002d000014700062f00031c0000",
        "9600011a00022500023800020c0007170001c5000f2c01ffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff550207a737464c0010000",
        "f31720706172746974696f6e207265636f7264206c7a34207a73746420746f706963206b61666b610c00071700696f66",
        "667365741e00034000083700031300030700055a005462617463687000094a00068e00027800011d0000380000040006",
        "1d0057626c6f636bbb00061a0001a300023c00020600011100027100536672616d653c00020c0006380002160003a900",
        "023a00030d0002d000014700062f00031c00009600011a00022500023800020c0007170001c5000f2c01ffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffff7e50666673657457010000f301206b61666b6120706172746974696f6e1000906f666673656c7a",
        "34200400061d0057626c6f636b2d00061a00437a7374643c00025200011100b36261746368206672616d653c00020c00",
        "063800021600547265636f724000030d0052746f7069634700062f00031c00009600011a00022500027200020c000717",
        "0001c50013749600021e00034000020d00023700031300030700055a0002bb00031600094a00068e00024100011d0000",
        "3800000400061d0002da00061000060a0001a300023c00020600011100027100022001023c00020c0006380002160003",
        "9300023a00030d0002d000014700062f00031c00009600011a00022500023800020c0007170001c5000f2c01ffffffff",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffffffffffffffffffffffffffffffffffff13506f66667365000000000ea378c4",
    );

    #[test]
    fn xxh32_known_vectors() {
        assert_eq!(xxh32(b"", 0), 0x02CC_5D05);
        assert_eq!(xxh32(b"a", 0), 0x550D_7456);
        assert_eq!(xxh32(b"abc", 0), 0x32D1_53FF);
        assert_eq!(xxh32(b"Nobody inspects the spammish repetition", 0), 0xE229_3B2F);
    }

    #[test]
    fn cli_linked_frame_with_checksums_and_content_size() {
        let frame = unhex(CLI_LINKED);
        assert_eq!(frame[4], 0x5C, "fixture: linked, block+content checksums, content size");
        assert_eq!(dec(&frame, false, MIB).unwrap(), repeated(150_000));
        assert_eq!(dec(&frame, true, MIB).unwrap(), repeated(150_000));
    }

    #[test]
    fn cli_independent_frame() {
        let frame = unhex(CLI_INDEP);
        assert_eq!(frame[4], 0x64, "fixture: independent, content checksum");
        assert_eq!(dec(&frame, false, MIB).unwrap(), repeated(150_000));
    }

    #[test]
    fn round_trips() {
        let inputs = [
            Vec::new(),
            b"x".to_vec(),
            sample(1000, 1),
            sample(64 * 1024, 2),
            sample(64 * 1024 + 1, 3),
            sample(300_000, 4),
            noise(200_000, 5),
            vec![0u8; 1_000_000],
        ];
        for input in &inputs {
            for magic0 in [false, true] {
                let frame = comp(input, magic0);
                assert_eq!(&dec(&frame, magic0, input.len()).unwrap(), input, "len {}", input.len());
            }
        }
    }

    #[test]
    fn a_buffer_reused_frame_after_frame_decodes_each_as_a_fresh_one() {
        let frames = [
            unhex(CLI_LINKED),
            comp(&sample(300, 31), false),
            comp(&sample(200_000, 32), false),
            unhex(CLI_INDEP),
            comp(&[], false),
            comp(&noise(70_000, 33), false),
            comp(&sample(20, 34), false),
        ];
        let mut room = Vec::new();
        for frame in frames.iter().chain(frames.iter().rev()) {
            let want = dec(frame, false, MIB).unwrap();
            let n = decompress_in_room(frame, false, MIB, &mut room).unwrap();
            assert_eq!(&room[..n], &want[..]);
            assert!(room.len() >= n);
        }
        // Errors stay errors, and the buffer still serves the next frame.
        let big = comp(&sample(200_000, 35), false);
        assert!(matches!(
            decompress_in_room(&big, false, 100_000, &mut room),
            Err(CodecError::TooLarge { .. })
        ));
        let mut corrupt = big.clone();
        corrupt.truncate(corrupt.len() / 2);
        assert!(decompress_in_room(&corrupt, false, MIB, &mut room).is_err());
        let n = decompress_in_room(&frames[1], false, MIB, &mut room).unwrap();
        assert_eq!(&room[..n], &sample(300, 31)[..]);
        // A fresh buffer (a one-off read) gets no block of zeroed room.
        let mut fresh = Vec::new();
        assert_eq!(decompress_in_room(&frames[1], false, MIB, &mut fresh), Ok(300));
        assert_eq!(fresh, sample(300, 31));
    }

    #[test]
    fn written_frame_is_kafkas_layout() {
        let frame = comp(&sample(200_000, 7), false);
        // Magic, FLG = v01 + independent blocks, BD = 64 KiB; the well-known HC.
        assert_eq!(&frame[..7], &[0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82]);
        assert_eq!(&frame[frame.len() - 4..], &[0, 0, 0, 0]);
        // Empty input: header and end mark only.
        assert_eq!(comp(b"", false), [0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82, 0, 0, 0, 0]);
        // Each block holds at most 64 KiB (4 blocks for 200 000 bytes).
        let mut pos = 7;
        let mut blocks = 0;
        loop {
            let word = read_u32_le(&frame, pos).unwrap();
            pos += 4;
            if word == 0 {
                break;
            }
            pos += (word & !UNCOMPRESSED_BIT) as usize;
            blocks += 1;
        }
        assert_eq!((blocks, pos), (4, frame.len()));
    }

    #[test]
    fn incompressible_blocks_are_stored() {
        let input = noise(100_000, 9);
        let frame = comp(&input, false);
        let first = read_u32_le(&frame, 7).unwrap();
        assert_eq!(first, UNCOMPRESSED_BIT | 65536);
        assert_eq!(&frame[11..11 + 65536], &input[..65536]);
        assert_eq!(dec(&frame, false, MIB).unwrap(), input);
    }

    #[test]
    fn magic0_writes_and_accepts_the_kafka_3160_checksum() {
        let input = sample(100_000, 11);
        let broken = comp(&input, true);
        let standard = comp(&input, false);
        let magic_and_descriptor = [0x04, 0x22, 0x4D, 0x18, 0x60, 0x40];
        assert_eq!(broken[6], header_checksum(&magic_and_descriptor));
        assert_ne!(broken[6], standard[6]);
        assert_eq!(&broken[7..], &standard[7..]);
        // magic 0 accepts both the broken and the standard checksum, and any other.
        assert_eq!(dec(&broken, true, MIB).unwrap(), input);
        assert_eq!(dec(&standard, true, MIB).unwrap(), input);
        let mut garbled = standard.clone();
        garbled[6] ^= 0x5A;
        assert_eq!(dec(&garbled, true, MIB).unwrap(), input);
        // magic 1/2 verify it.
        assert!(is_invalid(&dec(&broken, false, MIB), "lz4"));
        assert!(is_invalid(&dec(&garbled, false, MIB), "lz4"));
    }

    #[test]
    fn hand_built_linked_frame() {
        // Three 64 KiB blocks, each compressed against the previous 64 KiB.
        let input = sample(3 * 65536 - 1000, 13);
        let mut frame = header(FLG_VERSION_01, 0x40, None);
        for (i, block) in input.chunks(65536).enumerate() {
            let dict = if i == 0 {
                &[][..]
            } else {
                &input[(i - 1) * 65536..i * 65536]
            };
            push_block(&mut frame, &lz4_block::compress_with_dict(block, dict), false, false);
        }
        frame.extend_from_slice(&[0; 4]);
        assert_eq!(dec(&frame, false, MIB).unwrap(), input);
        // The blocks do reference each other: read as independent, they fail.
        let mut independent = frame.clone();
        independent[4] |= FLG_BLOCK_INDEPENDENT;
        independent[6] = header_checksum(&independent[4..6]);
        assert!(is_invalid(&dec(&independent, false, MIB), "lz4"));
    }

    #[test]
    fn uncompressed_and_mixed_blocks_with_block_checksums_and_content_size() {
        let a = sample(50_000, 17);
        let b = noise(30_000, 18);
        let c = sample(65_536, 19);
        let mut all = a.clone();
        all.extend_from_slice(&b);
        all.extend_from_slice(&c);
        let flg = FLG_VERSION_01 | FLG_BLOCK_INDEPENDENT | FLG_BLOCK_CHECKSUM | FLG_CONTENT_SIZE | FLG_CONTENT_CHECKSUM;
        let mut frame = header(flg, 0x40, Some(all.len() as u64));
        push_block(&mut frame, &a, true, true);
        push_block(&mut frame, &b, true, true);
        push_block(&mut frame, &lz4_block::compress(&c), false, true);
        push_block(&mut frame, &[], true, true); // an empty stored block
        frame.extend_from_slice(&[0; 4]);
        frame.extend_from_slice(&xxh32(&all, 0).to_le_bytes());
        assert_eq!(dec(&frame, false, all.len()).unwrap(), all);
        assert!(is_too_large(&dec(&frame, false, all.len() - 1), "lz4"));

        // A bad block checksum, content checksum or content size is refused.
        let mut bad_block = frame.clone();
        let first_checksum = 15 + 4 + a.len(); // header (with content size) + size word + data
        bad_block[first_checksum] ^= 1;
        assert!(is_invalid(&dec(&bad_block, false, MIB), "lz4"));
        let mut bad_content = frame.clone();
        let last = bad_content.len() - 1;
        bad_content[last] ^= 1;
        assert!(is_invalid(&dec(&bad_content, false, MIB), "lz4"));
        let mut wrong_size = header(flg, 0x40, Some(all.len() as u64 + 1));
        wrong_size.extend_from_slice(&frame[15..]);
        assert!(is_invalid(&dec(&wrong_size, false, MIB), "lz4"));
    }

    #[test]
    fn content_size_claim_past_limit_is_too_large_without_work() {
        let mut frame = header(
            FLG_VERSION_01 | FLG_BLOCK_INDEPENDENT | FLG_CONTENT_SIZE,
            0x40,
            Some(u64::MAX),
        );
        frame.extend_from_slice(&[0; 4]);
        assert!(is_too_large(&dec(&frame, false, MIB), "lz4"));
        // With no effective limit the claim is still not trusted for allocation.
        assert!(is_invalid(&dec(&frame, false, usize::MAX), "lz4"));
    }

    #[test]
    fn only_the_first_frame_is_read_like_kafka() {
        // KafkaLZ4BlockInputStream reads one frame and stops at its end mark.
        let a = sample(70_000, 21);
        let b = sample(10_000, 22);
        let first = comp(&a, false);
        let mut payload = first.clone();
        payload.extend_from_slice(&comp(&b, false));
        assert_eq!(dec(&payload, false, MIB).unwrap(), a);
        // Whatever follows the first frame is ignored: garbage, a skippable
        // frame, a truncated second frame.
        for tail in [
            &b"\x00\x01garbage"[..],
            &[0x53, 0x2A, 0x4D, 0x18, 5, 0, 0, 0, 1, 2, 3, 4, 5],
            &FRAME_MAGIC.to_le_bytes(),
        ] {
            let mut trailing = first.clone();
            trailing.extend_from_slice(tail);
            assert_eq!(dec(&trailing, false, MIB).unwrap(), a);
        }
        // A skippable frame first is refused, as Kafka refuses any other magic.
        let mut skippable_first = 0x184D_2A53u32.to_le_bytes().to_vec();
        skippable_first.extend_from_slice(&5u32.to_le_bytes());
        skippable_first.extend_from_slice(b"hello");
        skippable_first.extend_from_slice(&first);
        assert!(is_invalid(&dec(&skippable_first, false, MIB), "lz4"));
        // The limit counts the first frame only.
        assert!(is_too_large(&dec(&payload, false, a.len() - 1), "lz4"));
        assert_eq!(dec(&payload, false, a.len()).unwrap(), a);
    }

    #[test]
    fn bomb_is_refused_quickly() {
        // 64 MiB of zeros: 1024 copies of one compressed 64 KiB zero block.
        let block = lz4_block::compress(&[0u8; 65536]);
        let mut frame = header(FLG_VERSION_01 | FLG_BLOCK_INDEPENDENT, 0x40, None);
        for _ in 0..1024 {
            push_block(&mut frame, &block, false, false);
        }
        frame.extend_from_slice(&[0; 4]);
        assert!(frame.len() < 400_000);
        let t = std::time::Instant::now();
        let mut out = Vec::new();
        let r = decompress(&frame, false, MIB, &mut out);
        assert_eq!(
            r,
            Err(CodecError::TooLarge {
                codec: "lz4",
                limit: MIB
            })
        );
        assert!(out.capacity() <= MIB, "allocated {}", out.capacity());
        assert!(t.elapsed().as_secs() < 5);
    }

    #[test]
    fn bad_headers_are_invalid() {
        let good = comp(&sample(1000, 23), false);
        let cases: [(usize, u8); 5] = [
            (4, 0x20 | 0x80), // version 10
            (4, 0x62),        // reserved FLG bit
            (4, 0x61),        // dictionary id
            (5, 0x30),        // block max code 3
            (5, 0x41),        // reserved BD bit
        ];
        for (at, value) in cases {
            let mut frame = good.clone();
            frame[at] = value;
            frame[6] = header_checksum(&frame[4..6]);
            assert!(is_invalid(&dec(&frame, false, MIB), "lz4"), "byte {at} = {value:#x}");
        }
        assert!(is_invalid(&dec(b"", false, MIB), "lz4"));
        assert!(is_invalid(&dec(b"\x04\x22\x4d", false, MIB), "lz4"));
        assert!(is_invalid(&dec(b"not lz4 at all", false, MIB), "lz4"));
    }

    #[test]
    fn truncations_and_corruptions_are_errors_not_panics() {
        let input = sample(70_000, 25);
        for frame in [comp(&input, false), unhex(CLI_LINKED)] {
            for cut in (0..frame.len()).step_by(11).chain(frame.len() - 8..frame.len()) {
                assert!(is_invalid(&dec(&frame[..cut], false, MIB), "lz4"), "cut at {cut}");
            }
            let mut x = 0x9E37_79B9u32;
            for _ in 0..300 {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let mut bad = frame.clone();
                let at = 7 + (x as usize >> 8) % (frame.len() - 7);
                bad[at] ^= (x as u8) | 1;
                let _ = dec(&bad, false, MIB); // any result but a panic
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn prop_round_trip(input in proptest::collection::vec(any::<u8>(), 0..200_000), magic0 in any::<bool>()) {
            let frame = comp(&input, magic0);
            prop_assert_eq!(dec(&frame, magic0, input.len()).unwrap(), input);
        }

        #[test]
        fn prop_garbage_after_header_never_panics(body in proptest::collection::vec(any::<u8>(), 0..2000), flg in any::<u8>()) {
            let mut frame = header(FLG_VERSION_01 | (flg & 0x3C), 0x40, None);
            frame.extend_from_slice(&body);
            let _ = dec(&frame, false, 1 << 16);
        }
    }
}
