//! zstd codec.
//!
//! Reading: any sequence of zstd frames (and skippable frames), with or
//! without a content size in their headers (Java's `ZstdOutputStream`, which
//! Kafka's producer uses, writes none). Bytes after the last frame are an
//! error, as in zstd-jni. An empty payload is `Invalid` (a zstd frame is never
//! empty).
//!
//! Two paths, one decompression context per thread (reset before each use):
//! - **one-shot** (the usual case): the frame and block headers give an upper
//!   bound of the output (the content size where declared, else the sizes of
//!   raw/RLE blocks plus the maximum block size for each compressed block, like
//!   the experimental `ZSTD_decompressBound`). When that bound fits in the
//!   limit, the whole payload decompresses in one call straight into `out`,
//!   sized to the bound — no intermediate buffer, nothing past the limit;
//! - **streaming** otherwise (a bound past the limit, or unparsable headers):
//!   output goes straight into `out` in growing slices, never past
//!   `limit + 1` bytes, and stops as soon as output passes the limit. It also
//!   produces the definitive error for a payload the one-shot call refused.
//!
//! The streaming window keeps zstd's default maximum (`windowLog` 27), which
//! bounds a frame's memory. Legacy (pre-v0.8) frames are not supported.
//!
//! Writing: one frame (with its content size) at `level`, default 3 as in Kafka.

use super::CodecError;
use std::cell::RefCell;
use std::io::Cursor;
use zstd::zstd_safe::{self, CCtx, CParameter, DCtx, InBuffer, OutBuffer, ResetDirective};

const CODEC: &str = "zstd";
/// Kafka's `compression.zstd.level` default (zstd's own default too).
const DEFAULT_LEVEL: i32 = 3;

const FRAME_MAGIC: u32 = 0xFD2F_B528;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
const SKIPPABLE_MASK: u32 = 0xFFFF_FFF0;
/// Largest block content (`ZSTD_BLOCKSIZE_MAX`).
const BLOCK_MAX: u64 = 128 * 1024;
/// Smallest streaming growth step.
const MIN_GROW: usize = 64 * 1024;

fn invalid(message: impl Into<String>) -> CodecError {
    CodecError::Invalid {
        codec: CODEC,
        message: message.into(),
    }
}

fn zstd_error(code: zstd_safe::ErrorCode) -> CodecError {
    invalid(zstd_safe::get_error_name(code))
}

thread_local! {
    static DCTX: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
    static CCTX: RefCell<Option<CCtx<'static>>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's decompression context, freshly reset.
fn with_dctx<T>(f: impl FnOnce(&mut DCtx<'static>) -> Result<T, CodecError>) -> Result<T, CodecError> {
    DCTX.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            // Re-entered (not expected): use a context of our own.
            let mut own = DCtx::try_create().ok_or_else(|| invalid("cannot allocate a decompression context"))?;
            return f(&mut own);
        };
        if slot.is_none() {
            *slot = DCtx::try_create();
        }
        let Some(dctx) = slot.as_mut() else {
            return Err(invalid("cannot allocate a decompression context"));
        };
        // Drops any half-read frame and a poisoned state from an earlier error.
        dctx.reset(ResetDirective::SessionOnly).map_err(zstd_error)?;
        f(dctx)
    })
}

/// Decompress every frame of `payload`, appending to `out` (at most `limit`
/// bytes). On error `out` is left as it was.
pub fn decompress(payload: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    if payload.is_empty() {
        return Err(invalid("empty payload"));
    }
    let start = out.len();
    let result = with_dctx(|dctx| {
        if let Some(bound) = content_bound(payload) {
            if bound <= limit as u64 {
                // bound ≤ limit, so it fits in usize.
                out.reserve_exact(bound as usize);
                // Writes at out[start..] (the cursor), into spare capacity.
                let mut cursor = Cursor::new(&mut *out);
                cursor.set_position(start as u64);
                match dctx.decompress(&mut cursor, payload) {
                    Ok(n) if n <= limit => return Ok(()),
                    // Cannot happen (the bound holds); refuse all the same.
                    Ok(_) => return Err(CodecError::TooLarge { codec: CODEC, limit }),
                    // Let streaming give the definitive answer.
                    Err(_) => {
                        out.truncate(start);
                        dctx.reset(ResetDirective::SessionOnly).map_err(zstd_error)?;
                    }
                }
            }
        }
        stream(dctx, payload, limit, out)
    });
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Decompress every frame of `payload` into exactly `out`, whose length is
/// the size expected: more output is an error found without writing past
/// `out` (zstd refuses a too-small destination), less is an error too.
pub fn decompress_exact(payload: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
    if payload.is_empty() {
        return Err(invalid("empty payload"));
    }
    let expected = out.len();
    with_dctx(|dctx| match dctx.decompress(out, payload) {
        Ok(n) if n == expected => Ok(()),
        Ok(n) => Err(invalid(format!("{n} bytes where {expected} were expected"))),
        Err(code) if zstd_safe::get_error_name(code).contains("too small") => Err(CodecError::TooLarge {
            codec: CODEC,
            limit: expected,
        }),
        Err(code) => Err(zstd_error(code)),
    })
}

/// Streaming decompression into `out`, never past `limit + 1` bytes.
fn stream(dctx: &mut DCtx<'_>, payload: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let start = out.len();
    // One byte past the limit: output reaching it is too large.
    let hard_end = start.saturating_add(limit).saturating_add(1);
    let mut filled = start;
    let mut input = InBuffer::around(payload);
    let mut next_grow = payload.len().saturating_mul(4).max(MIN_GROW);
    loop {
        if filled == out.len() {
            if filled >= hard_end {
                out.truncate(filled);
                return Err(CodecError::TooLarge { codec: CODEC, limit });
            }
            let new_len = filled.saturating_add(next_grow).min(hard_end);
            out.reserve_exact(new_len - out.len());
            out.resize(new_len, 0);
            next_grow = (new_len - start).max(MIN_GROW);
        }
        let in_before = input.pos();
        let mut output = OutBuffer::around(&mut out[filled..]);
        let hint = dctx.decompress_stream(&mut output, &mut input).map_err(zstd_error)?;
        let written = output.pos();
        filled += written;
        if hint == 0 {
            // A frame is complete and flushed.
            if filled - start > limit {
                out.truncate(filled);
                return Err(CodecError::TooLarge { codec: CODEC, limit });
            }
            if input.pos() == payload.len() {
                out.truncate(filled);
                return Ok(());
            }
            // Another frame follows: start it afresh.
            dctx.reset(ResetDirective::SessionOnly).map_err(zstd_error)?;
        } else if written == 0 && input.pos() == in_before {
            // There was output room and input left to offer (or none at all):
            // no progress means the input ends mid-frame.
            return Err(invalid(if input.pos() == payload.len() {
                "truncated frame"
            } else {
                "decompression made no progress"
            }));
        }
    }
}

fn read_le(buf: &[u8], pos: usize, len: usize) -> Option<u64> {
    let bytes = buf.get(pos..pos.checked_add(len)?)?;
    Some(bytes.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

/// An upper bound of the decompressed size of all frames in `payload`, read
/// from frame and block headers; `None` if the headers are not what they
/// should be (the decompressor then reports why).
fn content_bound(payload: &[u8]) -> Option<u64> {
    let mut pos = 0usize;
    let mut total = 0u64;
    while pos < payload.len() {
        let magic = read_le(payload, pos, 4)? as u32;
        if magic & SKIPPABLE_MASK == SKIPPABLE_MAGIC {
            let size = read_le(payload, pos + 4, 4)? as usize;
            pos = pos.checked_add(8)?.checked_add(size)?;
            continue;
        }
        if magic != FRAME_MAGIC {
            return None;
        }
        let fhd = *payload.get(pos + 4)?;
        let single_segment = fhd & 0x20 != 0;
        if fhd & 0x08 != 0 {
            return None; // reserved bit
        }
        let mut p = pos + 5;
        let window = if single_segment {
            None
        } else {
            let wd = *payload.get(p)?;
            p += 1;
            let base = 1u64 << (10 + (wd >> 3));
            Some(base + (base / 8) * u64::from(wd & 7))
        };
        p += [0, 1, 2, 4][usize::from(fhd & 3)]; // dictionary id
        let fcs_len = match fhd >> 6 {
            0 => usize::from(single_segment),
            1 => 2,
            2 => 4,
            _ => 8,
        };
        let content_size = match fcs_len {
            0 => None,
            2 => Some(read_le(payload, p, 2)? + 256),
            n => Some(read_le(payload, p, n)?),
        };
        p += fcs_len;
        let block_max = window.or(content_size)?.min(BLOCK_MAX);

        let mut frame_bound = 0u64;
        loop {
            let header = read_le(payload, p, 3)?;
            p += 3;
            let size = (header >> 3) as usize;
            match (header >> 1) & 3 {
                0 => {
                    frame_bound += size as u64; // raw
                    p = p.checked_add(size)?;
                }
                1 => {
                    frame_bound += size as u64; // RLE
                    p += 1;
                }
                2 => {
                    frame_bound += block_max; // compressed
                    p = p.checked_add(size)?;
                }
                _ => return None,
            }
            if p > payload.len() {
                return None;
            }
            if header & 1 != 0 {
                break; // last block
            }
        }
        if fhd & 0x04 != 0 {
            p += 4; // content checksum
        }
        // A declared content size is exact (zstd checks it).
        total = total.checked_add(content_size.map_or(frame_bound, |size| size.min(frame_bound)))?;
        pos = p;
    }
    (pos == payload.len()).then_some(total)
}

/// Compress `input` as one zstd frame, appending to `out`. `level`: any zstd
/// level (Kafka's `compression.zstd.level` range), default 3.
pub fn compress(input: &[u8], level: Option<i32>, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let level = level.unwrap_or(DEFAULT_LEVEL);
    if !zstd::compression_level_range().contains(&level) {
        return Err(invalid(format!(
            "compression level {level} is outside {:?}",
            zstd::compression_level_range()
        )));
    }
    let start = out.len();
    out.reserve(zstd_safe::compress_bound(input.len()));
    // One compression context per thread: creating one per batch (its tables
    // are megabytes) cost more than compressing a typical batch.
    CCTX.with(|cell| {
        let mut own = None;
        let mut slot = cell.try_borrow_mut().ok();
        let cctx = match slot.as_deref_mut() {
            Some(Some(cctx)) => cctx,
            Some(empty) => {
                empty.insert(CCtx::try_create().ok_or_else(|| invalid("cannot allocate a compression context"))?)
            }
            // Re-entered (not expected): use a context of our own.
            None => own.insert(CCtx::try_create().ok_or_else(|| invalid("cannot allocate a compression context"))?),
        };
        cctx.reset(ResetDirective::SessionOnly).map_err(zstd_error)?;
        cctx.set_parameter(CParameter::CompressionLevel(level))
            .map_err(zstd_error)?;
        let mut cursor = Cursor::new(&mut *out);
        cursor.set_position(start as u64);
        cctx.compress2(&mut cursor, input).map_err(zstd_error)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::test_support::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn dec(payload: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
        into_vec(|out| decompress(payload, limit, out))
    }

    fn comp(input: &[u8], level: Option<i32>) -> Vec<u8> {
        into_vec(|out| compress(input, level, out)).unwrap()
    }

    /// A frame written by the streaming encoder, which declares no content size.
    fn streamed(input: &[u8], level: i32) -> Vec<u8> {
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), level).unwrap();
        for piece in input.chunks(10_000) {
            encoder.write_all(piece).unwrap();
        }
        encoder.finish().unwrap()
    }

    fn has_content_size(frame: &[u8]) -> bool {
        zstd_safe::get_frame_content_size(frame).unwrap().is_some()
    }

    // zstd-jni 1.5.7 `ZstdOutputStream` (level 3; no content size, as Kafka producers write) of `repeated(150000)`.
    const JAVA_ZSTD: &str = concat!(
        "28b52ffd00585c0400f4036c7a34206c7a3420706172746974696f6e20626c6f636b7a737464206b61666b6162617463",
        "68206672616d657265636f72746f7069636c7a346f66667365741d00d1fe2f2b035001440c88d8064d389093c1f70374",
        "81801c077ce100419d7219409581ad06203540cf313f3348dd400943617218906885476cb5e16580afd269b690e2b005",
        "8213cf2645000008200100ecc90e84",
    );
    // zstd 1.5.4 CLI `zstd -19 --check` (content size and checksum) of the same.
    const CLI_ZSTD: &str = concat!(
        "28b52ffda4f0490200c4030082030c11c0b701c653b6855a3689486fab8a4e01e34794c9a787df7cd858acb3c6dd826d",
        "da96384a7b4c4219d6ebdb4e8144021ea0a0a3a6d41c101081b26e3dd1fe2f65109e8d916dcd9334fa18ba66d9e3f703",
        "04b8cabc6177a0a37b6484c790ec561c40224359a5f9c4e333900648c73665f02616f8014d0000000100edc9bcffae81",
        "9c763e82",
    );

    #[test]
    fn reads_java_and_cli_output() {
        let java = unhex(JAVA_ZSTD);
        assert!(!has_content_size(&java));
        assert_eq!(dec(&java, MIB).unwrap(), repeated(150_000));
        let cli = unhex(CLI_ZSTD);
        assert!(has_content_size(&cli));
        assert_eq!(dec(&cli, MIB).unwrap(), repeated(150_000));
        // Both take the one-shot path within a 1 MiB limit.
        let bound = content_bound(&java).unwrap();
        assert!((150_000..150_000 + BLOCK_MAX).contains(&bound), "{bound}");
        assert_eq!(content_bound(&cli), Some(150_000));
    }

    #[test]
    fn round_trips() {
        let inputs = round_trip_inputs();
        for input in &inputs {
            for level in [None, Some(1), Some(-5)] {
                let frame = comp(input, level);
                assert!(has_content_size(&frame));
                assert_eq!(
                    &dec(&frame, input.len()).unwrap(),
                    input,
                    "len {} level {level:?}",
                    input.len()
                );
            }
            let frame = streamed(input, 3);
            assert_eq!(
                &dec(&frame, input.len()).unwrap(),
                input,
                "streamed, len {}",
                input.len()
            );
        }
        let small = sample(5000, 3);
        for level in [0, 19, 22, zstd_safe::min_c_level()] {
            assert_eq!(dec(&comp(&small, Some(level)), MIB).unwrap(), small, "level {level}");
        }
    }

    #[test]
    fn default_level_is_3_and_bad_levels_are_refused() {
        let input = sample(50_000, 4);
        assert_eq!(comp(&input, None), comp(&input, Some(3)));
        for level in [23, i32::MAX, i32::MIN] {
            assert!(compress(b"abc", Some(level), &mut Vec::new()).is_err(), "level {level}");
        }
    }

    #[test]
    fn frame_without_content_size() {
        let input = sample(300_000, 5);
        let frame = streamed(&input, 3);
        assert!(!has_content_size(&frame));
        assert_eq!(dec(&frame, input.len()).unwrap(), input);
        assert!(is_too_large(&dec(&frame, input.len() - 1), "zstd"));
        // A bound past the limit with content that fits: the streaming path.
        let small = sample(10_000, 6);
        let frame = streamed(&small, 3);
        assert!(content_bound(&frame).unwrap() > 20_000);
        assert_eq!(dec(&frame, 20_000).unwrap(), small);
        assert_eq!(dec(&frame, small.len()).unwrap(), small);
        assert!(is_too_large(&dec(&frame, small.len() - 1), "zstd"));
    }

    #[test]
    fn frames_back_to_back_and_skippable_frames() {
        let (a, b, c) = (sample(200_000, 7), noise(1000, 8), sample(50, 9));
        let mut payload = comp(&a, None);
        payload.extend_from_slice(&streamed(&b, 1));
        payload.extend_from_slice(&0x184D_2A5Eu32.to_le_bytes());
        payload.extend_from_slice(&3u32.to_le_bytes());
        payload.extend_from_slice(b"abc");
        payload.extend_from_slice(&comp(&c, Some(19)));
        let all: Vec<u8> = [a, b, c].concat();
        assert_eq!(dec(&payload, all.len()).unwrap(), all);
        assert!(content_bound(&payload).unwrap() >= all.len() as u64);
        // Also through the streaming path.
        let mut out = Vec::new();
        stream(&mut DCtx::create(), &payload, all.len(), &mut out).unwrap();
        assert_eq!(out, all);
        assert!(is_too_large(&dec(&payload, all.len() - 1), "zstd"));
    }

    #[test]
    fn appends_after_existing_bytes() {
        let input = sample(70_000, 10);
        for frame in [comp(&input, None), streamed(&input, 3)] {
            for limit in [input.len(), MIB] {
                let mut out = b"prefix".to_vec();
                decompress(&frame, limit, &mut out).unwrap();
                assert_eq!(&out[..6], b"prefix");
                assert_eq!(&out[6..], &input[..]);
            }
            let mut out = b"prefix".to_vec();
            assert!(decompress(&frame, input.len() - 1, &mut out).is_err());
            assert_eq!(out, b"prefix");
        }
        let mut out = b"prefix".to_vec();
        compress(&input, None, &mut out).unwrap();
        assert_eq!(&out[..6], b"prefix");
        assert_eq!(dec(&out[6..], MIB).unwrap(), input);
    }

    #[test]
    fn bomb_is_refused_quickly_in_bounded_memory() {
        // 64 MiB of zeros, written in 1 MiB pieces (no content size).
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        let zeros = vec![0u8; MIB];
        for _ in 0..64 {
            encoder.write_all(&zeros).unwrap();
        }
        let bomb = encoder.finish().unwrap();
        assert!(bomb.len() < 64 * 1024);
        // ... and one declaring its 64 MiB.
        let mut declared = zstd::bulk::Compressor::new(3).unwrap();
        let declared = declared.compress(&vec![0u8; 64 * MIB]).unwrap();
        for bomb in [bomb, declared] {
            let t = std::time::Instant::now();
            let mut out = Vec::new();
            assert_eq!(
                decompress(&bomb, MIB, &mut out),
                Err(CodecError::TooLarge {
                    codec: "zstd",
                    limit: MIB
                })
            );
            assert!(out.capacity() <= MIB + 1, "allocated {}", out.capacity());
            assert!(t.elapsed().as_secs() < 5);
        }
    }

    #[test]
    fn bad_payloads_are_invalid() {
        assert!(is_invalid(&dec(b"", MIB), "zstd"));
        assert!(is_invalid(&dec(b"not zstd", MIB), "zstd"));
        let input = sample(100_000, 11);
        for frame in [comp(&input, None), streamed(&input, 3), unhex(CLI_ZSTD)] {
            let mut trailing = frame.clone();
            trailing.extend_from_slice(b"\0\0\0\0garbage");
            assert!(is_invalid(&dec(&trailing, MIB), "zstd"));
            for cut in (0..frame.len()).step_by(7).chain(frame.len() - 4..frame.len()) {
                assert!(is_invalid(&dec(&frame[..cut], MIB), "zstd"), "cut at {cut}");
            }
            let mut x = 0x0BAD_F00Du32;
            for _ in 0..300 {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let mut bad = frame.clone();
                let at = (x as usize >> 8) % frame.len();
                bad[at] ^= (x as u8) | 1;
                let _ = dec(&bad, MIB); // any result but a panic
            }
        }
        // The CLI frame's checksum is checked.
        let mut bad = unhex(CLI_ZSTD);
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(is_invalid(&dec(&bad, MIB), "zstd"));
        // A context left mid-frame by an error is reset for the next payload.
        assert!(dec(&comp(&input, None)[..500], MIB).is_err());
        assert_eq!(dec(&streamed(&input, 3), MIB).unwrap(), input);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn prop_round_trip(input in proptest::collection::vec(any::<u8>(), 0..100_000), level in -5i32..=9, declared in any::<bool>()) {
            let frame = if declared { comp(&input, Some(level)) } else { streamed(&input, level) };
            prop_assert!(content_bound(&frame).unwrap() >= input.len() as u64);
            prop_assert_eq!(dec(&frame, input.len()).unwrap(), input);
        }

        #[test]
        fn prop_garbage_never_panics(body in proptest::collection::vec(any::<u8>(), 0..2000), fhd in any::<u8>()) {
            let mut frame = FRAME_MAGIC.to_le_bytes().to_vec();
            frame.push(fhd);
            frame.extend_from_slice(&body);
            let _ = dec(&frame, 1 << 16);
        }
    }
}
