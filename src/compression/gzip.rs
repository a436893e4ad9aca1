//! gzip codec (RFC 1952), read the way Java's `GZIPInputStream` reads it:
//!
//! - concatenated members are all read, one after the other;
//! - after a complete member, bytes that do not parse as a gzip header are
//!   ignored (Java's `readTrailer` treats a bad next header as the end of the
//!   stream). A next member with a good header but a bad body is an error;
//! - every member's CRC-32 and length are checked.
//!
//! The first member is inflated by libdeflate when the stream's last ISIZE
//! field can size its output (the payload is always whole in memory, so a
//! one-shot decoder fits), over twice as fast as flate2. libdeflate checks the
//! CRC-32 and ISIZE and says where the member ends; the members after it,
//! and every stream libdeflate does not accept whole (bad data, an ISIZE that
//! lies, a first member larger than the last one's ISIZE, a header CRC-16
//! libdeflate would skip), go through flate2 (zlib-rs) from the start, so
//! results and errors are flate2's. libdeflate accepts a little more than
//! zlib where no deflate encoder writes anything (length symbols 286-287,
//! distance symbols 30-31, more than 286/30 code lengths, an incomplete code
//! of one 1-bit codeword or none): such a member still needs a matching
//! CRC-32 to be accepted.
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
use libdeflate_sys::{
    libdeflate_alloc_decompressor, libdeflate_decompressor, libdeflate_free_decompressor,
    libdeflate_gzip_decompress_ex, libdeflate_result_LIBDEFLATE_SUCCESS,
};
use std::io::{self, Read, Write};
use std::mem::MaybeUninit;
use std::ptr::NonNull;

const CODEC: &str = "gzip";

/// Deflate's maximum expansion (258-byte matches in ~2 bits each) is about
/// 1032:1; a size hint past this ratio is certainly a lie.
const MAX_RATIO: usize = 1032;
/// Smallest buffer growth step.
const MIN_GROW: usize = 32 * 1024;
/// Kafka's default level (`Deflater.DEFAULT_COMPRESSION`).
const DEFAULT_LEVEL: u32 = 6;
/// A gzip header (10 bytes) and trailer (8): no shorter payload is a member.
const MIN_MEMBER: usize = 18;
/// Header flag: a CRC-16 of the header follows it. flate2 checks it and
/// libdeflate skips it, so such members are left to flate2.
const FHCRC: u8 = 0x02;

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

/// A libdeflate decompressor (its decode tables), reused call after call on
/// one thread.
struct Inflater(NonNull<libdeflate_decompressor>);

impl Inflater {
    fn new() -> Option<Inflater> {
        // SAFETY: allocates a decompressor of its own; null when out of memory.
        NonNull::new(unsafe { libdeflate_alloc_decompressor() }).map(Inflater)
    }

    /// The gzip member at the start of `input`, inflated into `room`:
    /// `(bytes of input it took, bytes of room it filled)`, or `None` when
    /// libdeflate refuses it (bad data, CRC-32 or ISIZE mismatch, too little
    /// room). On `None`, `room` may hold anything.
    fn member(&self, input: &[u8], room: &mut [MaybeUninit<u8>]) -> Option<(usize, usize)> {
        let (mut taken, mut filled) = (0usize, 0usize);
        // SAFETY: libdeflate's decoders are for untrusted input: this one
        // reads at most `input.len()` bytes of `input`, writes at most
        // `room.len()` bytes to `room` (never reading them back before
        // writing them), and stores both counts through the two pointers. The
        // decompressor is this thread's own, used by one call at a time.
        let result = unsafe {
            libdeflate_gzip_decompress_ex(
                self.0.as_ptr(),
                input.as_ptr().cast(),
                input.len(),
                room.as_mut_ptr().cast(),
                room.len(),
                &mut taken,
                &mut filled,
            )
        };
        (result == libdeflate_result_LIBDEFLATE_SUCCESS && taken <= input.len() && filled <= room.len())
            .then_some((taken, filled))
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        // SAFETY: allocated by `libdeflate_alloc_decompressor`, freed once.
        unsafe { libdeflate_free_decompressor(self.0.as_ptr()) }
    }
}

thread_local! {
    static INFLATER: Option<Inflater> = Inflater::new();
}

/// Decompress every gzip member of `payload`, appending to `out` (at most
/// `limit` bytes). On error `out` keeps only the bytes decoded so far.
pub fn decompress(payload: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    decompress_with(payload, limit, out, true)
}

/// [`decompress`], with or without libdeflate's go at the first member
/// (without: flate2 alone, the reference the tests compare with).
fn decompress_with(payload: &[u8], limit: usize, out: &mut Vec<u8>, fast: bool) -> Result<(), CodecError> {
    let start = out.len();
    let mut sink = Sink {
        start,
        filled: start,
        limit,
        out,
    };
    let result = read_members(payload, &mut sink, fast);
    let filled = sink.filled;
    out.truncate(filled);
    result
}

fn read_members(payload: &[u8], sink: &mut Sink<'_>, fast: bool) -> Result<(), CodecError> {
    let mut input = payload;
    let mut first = true;
    // The last member's ISIZE (length mod 2^32), as a clamped hint.
    if let Some(tail) = payload.len().checked_sub(4).and_then(|at| payload.get(at..)) {
        let claimed = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
        let hint = claimed.min(payload.len().saturating_mul(MAX_RATIO));
        sink.reserve_room(sink.start.saturating_add(hint));
        if let Some(taken) = fast.then(|| first_member(payload, claimed, sink)).flatten() {
            // A complete member, checked: the rest is read as after any
            // member flate2 completes.
            input = &payload[taken..];
            if input.is_empty() {
                return Ok(());
            }
            first = false;
        }
    }

    let mut decoder = GzDecoder::new(input);
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

/// The first member of `payload` inflated by libdeflate into room for
/// `claimed` bytes (the last member's ISIZE): the bytes of `payload` it took,
/// or `None`, with `out`'s length unchanged, when libdeflate cannot answer
/// (flate2 then reads the whole payload). The claim must be within the limit and
/// what deflate can encode in the payload before any room is reserved.
fn first_member(payload: &[u8], claimed: usize, sink: &mut Sink<'_>) -> Option<usize> {
    if payload.len() < MIN_MEMBER
        || payload[3] & FHCRC != 0
        || claimed > sink.limit
        || claimed > payload.len().saturating_mul(MAX_RATIO)
    {
        return None;
    }
    debug_assert_eq!(sink.out.len(), sink.filled);
    sink.out.truncate(sink.filled);
    sink.out.reserve_exact(claimed);
    let room = sink.out.spare_capacity_mut().get_mut(..claimed)?;
    let (taken, filled) = INFLATER
        .try_with(|inflater| inflater.as_ref()?.member(payload, room))
        .ok()??;
    // SAFETY: libdeflate wrote the first `filled` bytes of the spare
    // capacity (`filled <= claimed`, checked in `member`).
    unsafe { sink.out.set_len(sink.filled + filled) };
    sink.filled += filled;
    Some(taken)
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
        assert!(read_members(&payload, &mut sink, true).is_err());
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

    /// flate2 alone: how every payload read before libdeflate took the
    /// first member, the reference for results and errors.
    fn reference(payload: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
        into_vec(|out| decompress_with(payload, limit, out, false))
    }

    /// The same result or error (to the message) as flate2 alone, at a
    /// roomy limit, the exact output size and one byte short of it.
    fn same_as_flate2(payload: &[u8], what: &str) {
        let roomy = dec(payload, 64 * MIB);
        assert_eq!(roomy, reference(payload, 64 * MIB), "{what}");
        if let Ok(data) = &roomy {
            assert_eq!(
                dec(payload, data.len()),
                reference(payload, data.len()),
                "{what}, exact limit"
            );
            if let Some(short) = data.len().checked_sub(1) {
                assert_eq!(
                    dec(payload, short),
                    reference(payload, short),
                    "{what}, limit one short"
                );
            }
        }
    }

    /// Bytes of `payload` libdeflate took as its first member (None: flate2
    /// reads it all), into a fresh buffer at a roomy limit.
    fn libdeflate_takes(payload: &[u8]) -> Option<usize> {
        let mut out = Vec::new();
        let mut sink = Sink {
            out: &mut out,
            start: 0,
            filled: 0,
            limit: 64 * MIB,
        };
        let claimed = u32::from_le_bytes(payload[payload.len() - 4..].try_into().unwrap()) as usize;
        first_member(payload, claimed, &mut sink)
    }

    /// One gzip member by libdeflate's own compressor at `level` (1..=12;
    /// 10-12 are its near-optimal parsing, unlike any zlib level).
    fn libdeflate_gzip(input: &[u8], level: i32) -> Vec<u8> {
        use libdeflate_sys::*;
        // SAFETY: a compressor of our own, freed below; `gz` has the room
        // libdeflate's bound asks for, and it writes at most that much.
        unsafe {
            let compressor = libdeflate_alloc_compressor(level);
            assert!(!compressor.is_null());
            let mut gz = vec![0u8; libdeflate_gzip_compress_bound(compressor, input.len())];
            let n = libdeflate_gzip_compress(
                compressor,
                input.as_ptr().cast(),
                input.len(),
                gz.as_mut_ptr().cast(),
                gz.len(),
            );
            libdeflate_free_compressor(compressor);
            assert!(n > 0);
            gz.truncate(n);
            gz
        }
    }

    fn set_isize(gz: &mut [u8], isize: u32) {
        let n = gz.len();
        gz[n - 4..].copy_from_slice(&isize.to_le_bytes());
    }

    #[test]
    fn libdeflate_reads_other_writers_as_flate2_does() {
        // JDK's GZIPOutputStream and GNU gzip (a file name in the header).
        for fixture in [JAVA_GZIP, CLI_GZIP_WITH_NAME] {
            let gz = unhex(fixture);
            assert_eq!(libdeflate_takes(&gz), Some(gz.len()), "libdeflate reads it");
            same_as_flate2(&gz, "fixture");
        }
        // flate2 at every level, libdeflate's compressor at its levels.
        for input in &round_trip_inputs() {
            for level in 1..=9 {
                let gz = comp(input, Some(level));
                assert_eq!(libdeflate_takes(&gz), Some(gz.len()));
                same_as_flate2(&gz, &format!("flate2 level {level}, {} bytes", input.len()));
            }
            for level in [1, 6, 9, 12] {
                let gz = libdeflate_gzip(input, level);
                assert_eq!(dec(&gz, input.len()).unwrap(), *input);
                same_as_flate2(&gz, &format!("libdeflate level {level}, {} bytes", input.len()));
            }
        }
    }

    #[test]
    fn libdeflate_reads_the_fuzz_corpus_as_flate2_does() {
        // kafka-python's gzip_encode, Python's gzip.compress (two members
        // each), v2 batch payloads, and the fuzzer's mutations of them.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decompress_gzip");
        let (mut files, mut fast) = (0, 0);
        for entry in std::fs::read_dir(&dir).expect("fuzz/corpus/decompress_gzip") {
            let path = entry.unwrap().path();
            let payload = std::fs::read(&path).unwrap();
            let roomy = dec(&payload, MIB);
            assert_eq!(roomy, reference(&payload, MIB), "{}", path.display());
            if let Ok(data) = &roomy {
                assert_eq!(dec(&payload, data.len()), reference(&payload, data.len()));
            }
            files += 1;
            fast += usize::from(payload.len() >= 4 && libdeflate_takes(&payload).is_some());
        }
        assert!(files > 100, "{files} corpus files");
        assert!(fast > 20, "libdeflate read the first member of only {fast} files");
    }

    #[test]
    fn concatenated_members_match_flate2() {
        let (big, small) = (sample(200_000, 11), sample(1_000, 12));
        let cases: [(&str, Vec<Vec<u8>>); 5] = [
            // The first member fits the last one's ISIZE: libdeflate reads it.
            ("small then big", vec![comp(&small, None), comp(&big, Some(9))]),
            // It does not: flate2 reads everything.
            ("big then small", vec![comp(&big, Some(1)), comp(&small, None)]),
            ("same twice", vec![comp(&small, None), comp(&small, None)]),
            ("empty then data", vec![comp(b"", None), comp(&small, None)]),
            (
                "python-like three",
                vec![libdeflate_gzip(&small, 6), comp(&big, None), libdeflate_gzip(&big, 12)],
            ),
        ];
        for (what, members) in cases {
            let gz = members.concat();
            let expected: usize = members.iter().map(|m| m.len()).sum();
            assert_eq!(gz.len(), expected);
            same_as_flate2(&gz, what);
            assert!(dec(&gz, 64 * MIB).is_ok(), "{what}");
            // Trailing bytes, a bad last member, a cut last member.
            let mut padded = gz.clone();
            padded.extend_from_slice(b"\0\0\0\0 not gzip");
            same_as_flate2(&padded, &format!("{what} + garbage"));
            let mut bad_last = gz.clone();
            let n = bad_last.len();
            bad_last[n - 8] ^= 1;
            same_as_flate2(&bad_last, &format!("{what}, last CRC flipped"));
            same_as_flate2(&gz[..n - 3], &format!("{what}, last member cut"));
        }
        let (one, two) = (comp(&small, None), comp(&big, None));
        assert_eq!(libdeflate_takes(&[one.clone(), two].concat()), Some(one.len()));
    }

    #[test]
    fn lying_isize_and_damage_match_flate2() {
        let input = sample(50_000, 13);
        let gz = comp(&input, None);
        let n = input.len() as u32;
        for isize in [n + 1, n + 4096, 2 * n, n - 1, n / 2, 1, 0, u32::MAX] {
            let mut liar = gz.clone();
            set_isize(&mut liar, isize);
            assert_eq!(libdeflate_takes(&liar), None, "ISIZE {isize}");
            assert!(is_invalid(&dec(&liar, 64 * MIB), "gzip"), "ISIZE {isize}");
            same_as_flate2(&liar, &format!("ISIZE {isize}"));
        }
        for at in [3, 4, 9, 10, 20, gz.len() / 2, gz.len() - 8, gz.len() - 5] {
            let mut bad = gz.clone();
            bad[at] ^= 0x01;
            same_as_flate2(&bad, &format!("bit flipped at {at}"));
        }
        for cut in (0..gz.len()).step_by(97).chain(gz.len() - 9..gz.len()) {
            same_as_flate2(&gz[..cut], &format!("cut at {cut}"));
        }
        // Empty input: zero ISIZE and a zero-byte room.
        same_as_flate2(&comp(b"", None), "empty member");
        assert_eq!(libdeflate_takes(&comp(b"", None)), Some(comp(b"", None).len()));
    }

    /// `gz` with a header CRC-16 (FHCRC) inserted after its 10-byte header.
    fn with_header_crc(gz: &[u8], flip: bool) -> Vec<u8> {
        let mut header = gz[..10].to_vec();
        header[3] |= FHCRC;
        let crc16 = (crc32fast::hash(&header) as u16) ^ u16::from(flip);
        [&header[..], &crc16.to_le_bytes(), &gz[10..]].concat()
    }

    #[test]
    fn header_crc_is_left_to_flate2() {
        let input = sample(10_000, 14);
        let gz = comp(&input, None);
        let good = with_header_crc(&gz, false);
        assert_eq!(libdeflate_takes(&good), None);
        assert_eq!(dec(&good, MIB).unwrap(), input);
        same_as_flate2(&good, "good header CRC");
        // libdeflate would skip it; flate2 refuses it.
        let bad = with_header_crc(&gz, true);
        assert!(is_invalid(&dec(&bad, MIB), "gzip"));
        same_as_flate2(&bad, "bad header CRC");
    }

    #[test]
    fn limit_is_checked_before_any_room_is_reserved() {
        // ISIZE within the ratio but past the limit: libdeflate is not asked
        // and no room past the limit is reserved; the limit error is flate2's.
        let input = sample(300_000, 15);
        let gz = comp(&input, None);
        for limit in [0, 1, 1000, input.len() - 1] {
            let mut out = Vec::new();
            assert_eq!(
                decompress(&gz, limit, &mut out),
                Err(CodecError::TooLarge { codec: "gzip", limit })
            );
            assert!(out.capacity() <= limit.max(MIN_GROW), "{limit}: {}", out.capacity());
            assert_eq!(dec(&gz, limit), reference(&gz, limit));
        }
        // A buffer reused after a bigger payload keeps its room and its
        // earlier bytes are not mistaken for output.
        let mut out = vec![0xAA; 1 << 20];
        out.truncate(7);
        decompress(&gz, MIB, &mut out).unwrap();
        assert_eq!(&out[..7], &[0xAA; 7]);
        assert_eq!(&out[7..], &input[..]);
        // Through the dispatcher's reused scratch buffer.
        let mut scratch = vec![0x5A; 70_000];
        let n =
            crate::compression::decompress_reusing(crate::compression::Codec::Gzip, &gz, 1, MIB, &mut scratch).unwrap();
        assert_eq!(&scratch[..n], &input[..]);
    }

    /// A fixed-Huffman deflate stream (LSB-first bits, codes MSB-first).
    struct Bits(Vec<u8>, u32);

    impl Bits {
        fn put(&mut self, value: u32, n: u32) {
            for i in 0..n {
                if self.1.is_multiple_of(8) {
                    self.0.push(0);
                }
                let bit = ((value >> i) & 1) as u8;
                *self.0.last_mut().unwrap() |= bit << (self.1 % 8);
                self.1 += 1;
            }
        }

        fn code(&mut self, code: u32, n: u32) {
            for i in (0..n).rev() {
                self.put((code >> i) & 1, 1);
            }
        }
    }

    #[test]
    fn libdeflate_accepts_a_length_symbol_zlib_reserves() {
        // A fixed block: literal 'a', length symbol 286 (reserved by RFC
        // 1951; libdeflate reads it as 258), distance 1, end of block, with
        // the CRC-32 and ISIZE of the 259 bytes libdeflate makes of it.
        let mut bits = Bits(Vec::new(), 0);
        bits.put(1, 1); // BFINAL
        bits.put(1, 2); // fixed Huffman
        bits.code(0x30 + u32::from(b'a'), 8);
        bits.code(0xC0 + (286 - 280), 8);
        bits.code(0, 5); // distance symbol 0: 1
        bits.code(0, 7); // end of block
        let data = vec![b'a'; 259];
        let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        gz.extend_from_slice(&bits.0);
        gz.extend_from_slice(&crc32fast::hash(&data).to_le_bytes());
        gz.extend_from_slice(&(data.len() as u32).to_le_bytes());
        // zlib (flate2) refuses it, as Java's GZIPInputStream does; libdeflate
        // reads it. No deflate encoder writes symbol 286, and the member's
        // CRC-32 must still match: the one known difference (module docs).
        assert!(is_invalid(&reference(&gz, MIB), "gzip"));
        assert_eq!(dec(&gz, MIB).unwrap(), data);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn prop_round_trip(input in proptest::collection::vec(any::<u8>(), 0..100_000), level in 1i32..=9) {
            let gz = comp(&input, Some(level));
            prop_assert_eq!(dec(&gz, input.len()).unwrap(), input);
        }

        #[test]
        fn prop_damaged_members_match_flate2(len in 0usize..20_000, seed in any::<u32>(), flips in proptest::collection::vec((any::<usize>(), 1u8..), 1..4)) {
            let mut gz = comp(&sample(len, seed), None);
            for (at, mask) in flips {
                let at = at % gz.len();
                gz[at] ^= mask;
            }
            prop_assert_eq!(dec(&gz, MIB), reference(&gz, MIB));
        }

        #[test]
        fn prop_garbage_never_panics(body in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
            gz.extend_from_slice(&body);
            let _ = dec(&gz, 1 << 16);
        }
    }
}
