//! gzip codec (RFC 1952), read the way Java's `GZIPInputStream` reads it:
//!
//! - concatenated members are all read, one after the other;
//! - after a complete member, bytes that do not parse as a gzip header are
//!   ignored (Java's `readTrailer` treats a bad next header as the end of the
//!   stream). A next member with a good header but a bad body is an error;
//! - every member's CRC-32 and length are checked (by flate2).
//!
//! Output is read straight into `out` and capped at the limit: the buffer
//! never grows past `limit` bytes, and reading stops as soon as one more byte
//! would pass it, so a bomb costs at most `limit` bytes of work and memory.
//! The last member's ISIZE field sizes the buffer, as a claim: clamped to the
//! limit and to what deflate can encode in the payload, and only reserved:
//! memory is zeroed (touched) as output arrives, so a lying trailer on a
//! garbage payload costs nothing.
//!
//! Writing: one member at `level` (Kafka's `compression.gzip.level`: 1..=9, or
//! -1 / `None` for the Deflater default, 6).

use super::CodecError;
use flate2::bufread::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::{self, Read, Write};

const CODEC: &str = "gzip";

/// Deflate's maximum expansion (258-byte matches in ~2 bits each) is about
/// 1032:1; a size hint past this ratio is certainly a lie.
const MAX_RATIO: usize = 1032;
/// Smallest buffer growth step.
const MIN_GROW: usize = 32 * 1024;
/// Kafka's default level (`Deflater.DEFAULT_COMPRESSION`).
const DEFAULT_LEVEL: u32 = 6;

fn invalid(message: impl Into<String>) -> CodecError {
    CodecError::Invalid {
        codec: CODEC,
        message: message.into(),
    }
}

/// Why reading a member stopped early.
enum Stop {
    TooLarge,
    Io(io::Error),
}

/// The output buffer: `out[..filled]` is data, `out[filled..]` zeroed room.
/// `out.len()` never passes `start + limit`.
struct Sink<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    filled: usize,
    limit: usize,
}

impl Sink<'_> {
    fn cap_max(&self) -> usize {
        self.start.saturating_add(self.limit)
    }

    /// Reserves capacity for `out` to reach `len` (clamped) without touching
    /// it. The ISIZE hint is only a claim: zeroing (and so committing) that
    /// much memory up front let a garbage payload of n bytes cost up to
    /// 1032·n bytes of work and memory before its first invalid byte was
    /// read (found by the hostile-input tests). Reserved room is
    /// zeroed step by step as output arrives (`read_all`).
    fn reserve_room(&mut self, len: usize) {
        let len = len.min(self.cap_max());
        if len > self.out.len() {
            self.out.reserve_exact(len - self.out.len());
        }
    }

    /// Zero-extends `out` to `len` (clamped), reserving exactly.
    fn extend_room(&mut self, len: usize) {
        let len = len.min(self.cap_max());
        if len > self.out.len() {
            self.out.reserve_exact(len - self.out.len());
            self.out.resize(len, 0);
        }
    }

    /// Reads `reader` to its end into `out`.
    fn read_all<R: Read>(&mut self, reader: &mut R) -> Result<(), Stop> {
        loop {
            if self.filled == self.out.len() {
                // Reserved but untouched room (from the hint): zero the next
                // step of it, doubling, never past the capacity or the cap.
                let reserved = self.out.capacity().min(self.cap_max());
                if reserved > self.out.len() {
                    let step = (self.filled - self.start).max(MIN_GROW);
                    let len = self.filled.saturating_add(step).min(reserved);
                    self.out.resize(len, 0);
                    continue;
                }
                // No room left: probe for more before growing, so an exact
                // size hint costs no growth (and EOF here is the common case).
                let mut probe = [0u8; 64];
                let n = read_some(reader, &mut probe)?;
                if n == 0 {
                    return Ok(());
                }
                if n > self.cap_max() - self.filled {
                    return Err(Stop::TooLarge);
                }
                let grow = (self.filled - self.start).max(MIN_GROW);
                self.extend_room(self.filled.saturating_add(grow));
                self.out[self.filled..self.filled + n].copy_from_slice(&probe[..n]);
                self.filled += n;
                continue;
            }
            let n = read_some(reader, &mut self.out[self.filled..])?;
            if n == 0 {
                return Ok(());
            }
            self.filled += n;
        }
    }
}

fn read_some<R: Read>(reader: &mut R, buf: &mut [u8]) -> Result<usize, Stop> {
    loop {
        match reader.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Stop::Io(e)),
        }
    }
}

/// Decompress every gzip member of `payload`, appending to `out` (at most
/// `limit` bytes). On error `out` keeps only the bytes decoded so far.
pub fn decompress(payload: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let start = out.len();
    let mut sink = Sink {
        start,
        filled: start,
        limit,
        out,
    };
    let result = read_members(payload, &mut sink);
    let filled = sink.filled;
    out.truncate(filled);
    result
}

fn read_members(payload: &[u8], sink: &mut Sink<'_>) -> Result<(), CodecError> {
    // The last member's ISIZE (length mod 2^32), as a clamped hint.
    if let Some(tail) = payload.len().checked_sub(4).and_then(|at| payload.get(at..)) {
        let claimed = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
        let hint = claimed.min(payload.len().saturating_mul(MAX_RATIO));
        sink.reserve_room(sink.start.saturating_add(hint));
    }

    let mut decoder = GzDecoder::new(payload);
    let mut first = true;
    loop {
        match sink.read_all(&mut decoder) {
            Ok(()) => {}
            Err(Stop::TooLarge) => {
                return Err(CodecError::TooLarge {
                    codec: CODEC,
                    limit: sink.limit,
                })
            }
            // Not a gzip header after a complete member: the end, as in Java.
            Err(Stop::Io(_)) if !first && decoder.header().is_none() => return Ok(()),
            Err(Stop::Io(e)) => return Err(invalid(e.to_string())),
        }
        // The member is complete (CRC and length checked); the reader has
        // been advanced exactly past its trailer.
        let rest = *decoder.get_ref();
        if rest.is_empty() {
            return Ok(());
        }
        decoder.reset(rest);
        first = false;
    }
}

/// Compress `input` as one gzip member, appending to `out`.
pub fn compress(input: &[u8], level: Option<i32>, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let level = match level {
        None | Some(-1) => DEFAULT_LEVEL,
        Some(level @ 1..=9) => level as u32,
        Some(other) => return Err(invalid(format!("compression level {other} is not -1 or in 1..=9"))),
    };
    // A guess at the output size, so the Vec rarely regrows.
    out.reserve(input.len() / 2 + 64);
    let mut encoder = GzEncoder::new(out, Compression::new(level));
    encoder.write_all(input).map_err(|e| invalid(e.to_string()))?;
    encoder.finish().map_err(|e| invalid(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::test_support::*;
    use proptest::prelude::*;

    fn dec(payload: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
        into_vec(|out| decompress(payload, limit, out))
    }

    fn comp(input: &[u8], level: Option<i32>) -> Vec<u8> {
        into_vec(|out| compress(input, level, out)).unwrap()
    }

    // JDK 17 `GZIPOutputStream` of `repeated(150000)`.
    const JAVA_GZIP: &str = concat!(
        "1f8b08000000000000ffedd03b0e83300c00d0ab70885e28505011b4419089d3b725a9f8ac5ddf00b2e3d8b1deb8deaa",
        "f1f34d614e7deae3abaac7d80c877c8fd625ddab21744328ffeda00ea97954dd1c9e6de9cdf175e2dc3671fef59724c5",
        "a96ff298fd7aa97db7da2af952ee3b34e43076ddd2a653f534fbf4dc75725ebd9c9e26eddbe47c2b8eac58b162c58a15",
        "2b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac",
        "58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162",
        "c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a15",
        "2b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac",
        "58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162",
        "c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a15",
        "2b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac",
        "58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162",
        "c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a15",
        "2b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac",
        "58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162",
        "c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a15",
        "2b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac",
        "58b162c58a152b56ac58b162c58a152b56ac58b162f587d51b1f34cb03f0490200",
    );
    // GNU gzip 1.12 `gzip repeated150k` (FNAME set, level 6).
    const CLI_GZIP_WITH_NAME: &str = concat!(
        "1f8b08087f60026b000372657065617465643135306b00edd03b0e83300c00d0ab70885e28505011b4419089d3b725a9",
        "f8ac5ddf00b2e3d8b1deb8deaaf1f34d614e7deae3abaac7d80c877c8fd625ddab21744328ffeda00ea97954dd1c9e6d",
        "e9cdf175e2dc3671fef59724c5a96ff298fd7aa97db7da2af952ee3b34e43076ddd2a653f534fbf4dc75725ebd9c9e26",
        "eddbe47c2b8eac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a",
        "152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56",
        "ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b1",
        "62c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a",
        "152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56",
        "ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b1",
        "62c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a",
        "152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56",
        "ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b1",
        "62c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a",
        "152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56",
        "ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b1",
        "62c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a",
        "152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162c58a152b56ac58b162f587d51b1f34cb03f0490200",
    );

    #[test]
    fn reads_java_and_gnu_gzip_output() {
        assert_eq!(dec(&unhex(JAVA_GZIP), MIB).unwrap(), repeated(150_000));
        assert_eq!(dec(&unhex(CLI_GZIP_WITH_NAME), MIB).unwrap(), repeated(150_000));
    }

    #[test]
    fn round_trips_at_every_level() {
        let inputs = round_trip_inputs();
        for input in &inputs {
            for level in [None, Some(-1), Some(1), Some(6), Some(9)] {
                let gz = comp(input, level);
                assert_eq!(
                    &dec(&gz, input.len()).unwrap(),
                    input,
                    "len {} level {level:?}",
                    input.len()
                );
            }
        }
        // The default is level 6, as in Kafka.
        let input = sample(100_000, 3);
        assert_eq!(comp(&input, None), comp(&input, Some(6)));
        assert_ne!(comp(&input, Some(1)), comp(&input, Some(6)));
    }

    #[test]
    fn bad_levels_are_refused() {
        for level in [0, 10, -2, i32::MIN, i32::MAX] {
            let mut out = Vec::new();
            assert!(matches!(
                compress(b"abc", Some(level), &mut out),
                Err(CodecError::Invalid { codec: "gzip", .. })
            ));
        }
    }

    #[test]
    fn concatenated_members_are_all_read() {
        let (a, b, c) = (sample(200_000, 4), sample(10, 5), noise(50_000, 6));
        let mut gz = comp(&a, Some(1));
        gz.extend_from_slice(&comp(b"", None));
        gz.extend_from_slice(&comp(&b, Some(9)));
        gz.extend_from_slice(&comp(&c, None));
        let all: Vec<u8> = [a, b, c].concat();
        assert_eq!(dec(&gz, all.len()).unwrap(), all);
        assert!(matches!(
            dec(&gz, all.len() - 1),
            Err(CodecError::TooLarge { codec: "gzip", .. })
        ));
    }

    #[test]
    fn trailing_bytes_after_a_member_are_ignored_like_java() {
        let input = sample(30_000, 7);
        let gz = comp(&input, None);
        for trailer in [
            &b"\0"[..],
            b"\0\0\0\0\0\0\0\0",
            b"garbage that is no gzip header",
            b"\x1f\x8b",
            b"\x1f\x8b\x07\0",
        ] {
            let mut padded = gz.clone();
            padded.extend_from_slice(trailer);
            assert_eq!(dec(&padded, MIB).unwrap(), input, "trailer {trailer:?}");
        }
        // A second member with a good header and a bad body is an error.
        let mut bad_second = gz.clone();
        let mut second = comp(&input, None);
        second[20] ^= 0xFF;
        bad_second.extend_from_slice(&second);
        assert!(is_invalid(&dec(&bad_second, MIB), "gzip"));
    }

    #[test]
    fn bad_payloads_are_invalid() {
        assert!(is_invalid(&dec(b"", MIB), "gzip"));
        assert!(is_invalid(&dec(b"not gzip at all", MIB), "gzip"));
        let input = sample(20_000, 8);
        let gz = comp(&input, None);
        // Wrong CRC, wrong ISIZE.
        for at in [gz.len() - 8, gz.len() - 1] {
            let mut bad = gz.clone();
            bad[at] ^= 1;
            assert!(is_invalid(&dec(&bad, MIB), "gzip"), "byte {at}");
        }
        for cut in (0..gz.len()).step_by(13).chain(gz.len() - 8..gz.len()) {
            assert!(is_invalid(&dec(&gz[..cut], MIB), "gzip"), "cut at {cut}");
        }
        let mut x = 0x1234_5678u32;
        for _ in 0..300 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let mut bad = gz.clone();
            let at = (x as usize >> 8) % gz.len();
            bad[at] ^= (x as u8) | 1;
            let _ = dec(&bad, MIB); // any result but a panic
        }
    }

    /// One gzip member holding `mib` MiB of zeros, built cheaply: after a full
    /// flush the deflate state is reset, so the deflate bytes of one 1 MiB
    /// segment of zeros can be repeated.
    fn zero_bomb(mib: usize) -> Vec<u8> {
        use flate2::{Compress, FlushCompress};
        let zeros = vec![0u8; MIB];
        let mut deflate = Compress::new(Compression::new(9), false);
        let mut segment = |input: &[u8], flush| {
            let mut out = Vec::with_capacity(64 * 1024);
            deflate.compress_vec(input, &mut out, flush).unwrap();
            out
        };
        let first = segment(&zeros, FlushCompress::Full);
        let next = segment(&zeros, FlushCompress::Full);
        let end = segment(&[], FlushCompress::Finish);
        let mut crc = crc32fast::Hasher::new();
        for _ in 0..mib {
            crc.update(&zeros);
        }
        let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        gz.extend_from_slice(&first);
        for _ in 1..mib {
            gz.extend_from_slice(&next);
        }
        gz.extend_from_slice(&end);
        gz.extend_from_slice(&crc.finalize().to_le_bytes());
        gz.extend_from_slice(&((mib * MIB) as u32).to_le_bytes());
        gz
    }

    #[test]
    fn bomb_is_refused_quickly_in_bounded_memory() {
        let bomb = zero_bomb(64);
        assert!(bomb.len() < 128 * 1024);
        // The construction makes valid members (checked on a smaller one).
        assert_eq!(dec(&zero_bomb(3), 3 * MIB).unwrap(), vec![0; 3 * MIB]);
        let t = std::time::Instant::now();
        let mut out = Vec::new();
        assert_eq!(
            decompress(&bomb, MIB, &mut out),
            Err(CodecError::TooLarge {
                codec: "gzip",
                limit: MIB
            })
        );
        assert!(out.capacity() <= MIB, "allocated {}", out.capacity());
        assert!(t.elapsed().as_secs() < 5);
        // A lying ISIZE (4 GiB - 1) does not allocate either.
        let mut liar = comp(&sample(1000, 9), None);
        let n = liar.len();
        liar[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut out = Vec::new();
        assert!(decompress(&liar, usize::MAX, &mut out).is_err());
        assert!(out.capacity() <= liar.len() * MAX_RATIO);
    }

    #[test]
    fn size_hint_is_reserved_not_zeroed() {
        // A gzip header, garbage, and a trailer claiming 4 GiB: the claim is
        // clamped to 1032 x 100 KB (~100 MiB) and must not be zeroed up front.
        let mut payload = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        payload.extend(noise(100_000, 7));
        payload.extend([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        let mut out = Vec::new();
        let mut sink = Sink {
            out: &mut out,
            start: 0,
            filled: 0,
            limit: 256 << 20,
        };
        assert!(read_members(&payload, &mut sink).is_err());
        assert!(
            sink.out.len() <= sink.filled + 2 * MIN_GROW,
            "zeroed {} bytes for {} of output",
            sink.out.len(),
            sink.filled
        );
        // An honest hint still sizes the buffer once: no reallocation.
        let data = sample(3 << 20, 3);
        let packed = comp(&data, None);
        let mut out = Vec::new();
        decompress(&packed, 64 << 20, &mut out).expect("valid");
        assert_eq!(out, data);
        assert_eq!(out.capacity(), data.len(), "sized once from the hint");
    }

    #[test]
    fn limit_exactly_reached_is_fine() {
        let input = sample(100_000, 10);
        let gz = comp(&input, None);
        assert_eq!(dec(&gz, input.len()).unwrap(), input);
        assert!(matches!(dec(&gz, input.len() - 1), Err(CodecError::TooLarge { .. })));
        assert!(matches!(dec(&gz, 0), Err(CodecError::TooLarge { .. })));
        assert_eq!(dec(&comp(b"", None), 0).unwrap(), b"");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn prop_round_trip(input in proptest::collection::vec(any::<u8>(), 0..100_000), level in 1i32..=9) {
            let gz = comp(&input, Some(level));
            prop_assert_eq!(dec(&gz, input.len()).unwrap(), input);
        }

        #[test]
        fn prop_garbage_never_panics(body in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
            gz.extend_from_slice(&body);
            let _ = dec(&gz, 1 << 16);
        }
    }
}
