//! snappy codec, in the two forms Kafka payloads come in:
//!
//! - a **raw snappy block** (librdkafka, kafka-python and most non-Java
//!   clients): a varint uncompressed length, then the compressed data;
//! - the **xerial framing** of snappy-java's `SnappyOutputStream` (Java
//!   producers): the 8-byte magic `0x82 "SNAPPY" 0x00`, a 4-byte version and a
//!   4-byte minimum compatible version (both ignored: some writers put them
//!   little-endian), then blocks of `[i32 big-endian length][raw snappy block]`.
//!
//! The xerial magic decides, like snappy-java's `SnappyInputStream`, which
//! also reads a payload without the magic as one raw block.
//!
//! Reading follows snappy-java where it is lenient: a second xerial header
//! between blocks (concatenated streams) is skipped, and 1-3 bytes after the
//! last block (too few for a length) are ignored. An empty payload is
//! `Invalid` ("Cannot decompress empty stream" in snappy-java), and so is an
//! empty xerial block. A header with no blocks is an empty output.
//!
//! Every uncompressed length is a claim: it is checked against the limit
//! (summed over all blocks, before anything is decompressed) and against the
//! most snappy can encode (a 3-byte copy yields at most 64 bytes), then the
//! output is sized once and each block decompresses in place.

use super::CodecError;
use snap::raw::{decompress_len, max_compress_len, Decoder, Encoder};

const CODEC: &str = "snappy";

/// `0x82 "SNAPPY" 0x00`, the start of snappy-java's stream header.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Magic, version, minimum compatible version.
const XERIAL_HEADER_LEN: usize = 16;
/// snappy-java's `SnappyCodec.DEFAULT_VERSION` and `MINIMUM_COMPATIBLE_VERSION`.
const XERIAL_VERSION: u32 = 1;
const XERIAL_COMPAT_VERSION: u32 = 1;
/// snappy-java's `SnappyOutputStream` default block size.
const XERIAL_BLOCK_SIZE: usize = 32 * 1024;
/// No snappy block inflates by more than this: the densest element, a 3-byte
/// copy, yields 64 bytes (the varint header only makes it less dense).
const MAX_RATIO: usize = 22;

fn invalid(message: impl Into<String>) -> CodecError {
    CodecError::Invalid {
        codec: CODEC,
        message: message.into(),
    }
}

fn too_large(limit: usize) -> CodecError {
    CodecError::TooLarge { codec: CODEC, limit }
}

/// The uncompressed length a raw block claims, once it is known to fit in
/// `room` and to be something snappy can encode in `block.len()` bytes.
fn claimed_len(block: &[u8], room: usize, limit: usize) -> Result<usize, CodecError> {
    if block.is_empty() {
        return Err(invalid("empty block"));
    }
    let len = decompress_len(block).map_err(|e| invalid(e.to_string()))?;
    if len > room {
        return Err(too_large(limit));
    }
    if len > block.len().saturating_mul(MAX_RATIO) {
        return Err(invalid(format!("a {}-byte block cannot hold {len} bytes", block.len())));
    }
    Ok(len)
}

/// Decompress a raw or xerial-framed snappy payload, appending to `out` (at
/// most `limit` bytes). On error `out` is left as it was.
pub fn decompress(payload: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    if payload.is_empty() {
        return Err(invalid("empty payload"));
    }
    if !payload.starts_with(&XERIAL_MAGIC) {
        let len = claimed_len(payload, limit, limit)?;
        return decompress_blocks(std::iter::once(payload), len, out);
    }

    // Pass 1: check the framing and sum the claims, before any work.
    let mut total = 0usize;
    for block in XerialBlocks::new(payload)? {
        total += claimed_len(block?, limit - total, limit)?;
    }
    // Pass 2: the framing is known good now.
    decompress_blocks(XerialBlocks::new(payload)?.map_while(Result::ok), total, out)
}

/// Sizes `out` for `total` bytes once, then decompresses each block in place.
fn decompress_blocks<'a>(
    blocks: impl Iterator<Item = &'a [u8]>,
    total: usize,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    let start = out.len();
    out.reserve_exact(total);
    out.resize(start + total, 0);
    let mut decoder = Decoder::new();
    let mut pos = start;
    for block in blocks {
        match decoder.decompress(block, &mut out[pos..]) {
            Ok(n) => pos += n,
            Err(e) => {
                out.truncate(start);
                return Err(invalid(e.to_string()));
            }
        }
    }
    // Each block wrote exactly its claimed length (snap checks), so pos is
    // start + total; truncate anyway rather than trust that.
    out.truncate(pos);
    Ok(())
}

/// The raw blocks of a xerial stream (which starts with the magic).
struct XerialBlocks<'a> {
    rest: &'a [u8],
}

impl<'a> XerialBlocks<'a> {
    fn new(payload: &'a [u8]) -> Result<Self, CodecError> {
        match payload.get(XERIAL_HEADER_LEN..) {
            Some(rest) => Ok(XerialBlocks { rest }),
            None => Err(invalid("truncated xerial header")),
        }
    }
}

impl<'a> Iterator for XerialBlocks<'a> {
    type Item = Result<&'a [u8], CodecError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            // Fewer than 4 bytes left: the end (snappy-java ignores 1-3 bytes).
            let word: [u8; 4] = self.rest.get(..4)?.try_into().ok()?;
            if word == XERIAL_MAGIC[..4] {
                // A concatenated stream: skip its header.
                if !self.rest.starts_with(&XERIAL_MAGIC) || self.rest.len() < XERIAL_HEADER_LEN {
                    self.rest = &[];
                    return Some(Err(invalid("bad xerial header between blocks")));
                }
                self.rest = &self.rest[XERIAL_HEADER_LEN..];
                continue;
            }
            let len = i32::from_be_bytes(word);
            let block = usize::try_from(len).ok().and_then(|len| self.rest.get(4..4 + len));
            return match block {
                Some(block) => {
                    self.rest = &self.rest[4 + block.len()..];
                    Some(Ok(block))
                }
                None => {
                    self.rest = &[];
                    Some(Err(invalid(format!("bad or truncated xerial block of length {len}"))))
                }
            };
        }
    }
}

/// Compress `input`, appending to `out`: one raw snappy block, or with
/// `xerial` snappy-java's framing (version 1, compatible version 1, both
/// big-endian; 32 KiB blocks), which every Java consumer expects.
pub fn compress(input: &[u8], xerial: bool, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let mut encoder = Encoder::new();
    if !xerial {
        return compress_block(&mut encoder, input, out);
    }
    out.reserve(XERIAL_HEADER_LEN + input.len() + input.len() / 6 + 64);
    out.extend_from_slice(&XERIAL_MAGIC);
    out.extend_from_slice(&XERIAL_VERSION.to_be_bytes());
    out.extend_from_slice(&XERIAL_COMPAT_VERSION.to_be_bytes());
    for block in input.chunks(XERIAL_BLOCK_SIZE) {
        let len_pos = out.len();
        out.extend_from_slice(&[0; 4]);
        compress_block(&mut encoder, block, out)?;
        // A 32 KiB block compresses to far less than 2 GiB.
        let len = (out.len() - len_pos - 4) as u32;
        out[len_pos..len_pos + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

/// Appends `input` as one raw snappy block.
fn compress_block(encoder: &mut Encoder, input: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
    let max = max_compress_len(input.len());
    if max == 0 {
        return Err(invalid(format!(
            "{} bytes is too large for one snappy block",
            input.len()
        )));
    }
    let start = out.len();
    out.resize(start + max, 0);
    match encoder.compress(input, &mut out[start..]) {
        Ok(n) => {
            out.truncate(start + n);
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(invalid(e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::test_support::*;
    use proptest::prelude::*;

    /// Text-like data: the fixtures' first six [`WORDS`] and two of its own.
    fn sample(n: usize, seed: u32) -> Vec<u8> {
        let words = [&WORDS[..6], &[b"snappy", b"xerial"]].concat();
        sample_of(&words, n, seed)
    }

    fn dec(payload: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
        into_vec(|out| decompress(payload, limit, out))
    }

    fn comp(input: &[u8], xerial: bool) -> Vec<u8> {
        into_vec(|out| compress(input, xerial, out)).unwrap()
    }

    fn raw(input: &[u8]) -> Vec<u8> {
        Encoder::new().compress_vec(input).unwrap()
    }

    /// A xerial stream built by hand from `chunks`, with the version fields
    /// written as given.
    fn xerial(version: [u8; 4], compat: [u8; 4], chunks: &[&[u8]]) -> Vec<u8> {
        let mut s = XERIAL_MAGIC.to_vec();
        s.extend_from_slice(&version);
        s.extend_from_slice(&compat);
        for chunk in chunks {
            let block = raw(chunk);
            s.extend_from_slice(&(block.len() as u32).to_be_bytes());
            s.extend_from_slice(&block);
        }
        s
    }

    // snappy-java 1.1.10.8 `SnappyOutputStream` (defaults) of `repeated(33000)`.
    const JAVA_XERIAL: &str = concat!(
        "82534e41505059000000000100000001000006ad8080020c6c7a3420010438706172746974696f6e20626c6f636b1d10",
        "191a247a737464206b61666b610d060511286261746368206672616d650d3c090c19380952107265636f7211400d0d10",
        "746f7069630947192f0d1c0196056109250978090c1d17146f6666736574321e000d40092b09370d130d07155a09bb0d",
        "16324a00198e0941051d01380104191d09da1910190a05a3093c0906051109712920093c090c193809160d93093a0d0d",
        "09d00547192f0d1c0196051a09250938090c1d1705c5fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c",
        "01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c01fe2c013a2c",
        "0100000081e80138746368206672616d6520626c6f636b0d0c20706172746974696f6e0d162c7265636f7264206b6166",
        "6b61110d24746f706963207a7374641d2f00720929086c7a34091a09250938090c0531090b146f6666736574321e000d",
        "400920046b611d6f00723a5a001062617463681116324a0019bd286b61666b61206f66667365",
    );

    #[test]
    fn reads_snappy_java_output() {
        let s = unhex(JAVA_XERIAL);
        assert_eq!(dec(&s, MIB).unwrap(), repeated(33000));
    }

    #[test]
    fn round_trips_raw_and_xerial() {
        let inputs = [
            Vec::new(),
            b"x".to_vec(),
            sample(1000, 1),
            sample(100_000, 2),
            noise(100_000, 3),
            vec![0; 300_000],
        ];
        for input in &inputs {
            for framed in [false, true] {
                let payload = comp(input, framed);
                assert_eq!(payload.starts_with(&XERIAL_MAGIC), framed);
                assert_eq!(
                    &dec(&payload, input.len()).unwrap(),
                    input,
                    "len {} xerial {framed}",
                    input.len()
                );
            }
        }
    }

    #[test]
    fn raw_is_a_plain_snappy_block() {
        let input = sample(5000, 4);
        assert_eq!(comp(&input, false), raw(&input));
        assert_eq!(comp(b"", false), [0]);
        assert_eq!(dec(&[0], 0).unwrap(), b"");
    }

    #[test]
    fn xerial_writes_java_framing() {
        let input = sample(100_000, 5);
        let s = comp(&input, true);
        assert_eq!(&s[..16], b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01");
        // 32 KiB blocks: 4 of them for 100 000 bytes.
        let mut pos = 16;
        let mut sizes = Vec::new();
        while pos < s.len() {
            let len = u32::from_be_bytes(s[pos..pos + 4].try_into().unwrap()) as usize;
            sizes.push(decompress_len(&s[pos + 4..pos + 4 + len]).unwrap());
            pos += 4 + len;
        }
        assert_eq!(sizes, [32768, 32768, 32768, 100_000 - 3 * 32768]);
        // Empty input: the header alone, which reads back as empty.
        assert_eq!(comp(b"", true), &s[..16]);
        assert_eq!(dec(&s[..16], 0).unwrap(), b"");
    }

    #[test]
    fn xerial_version_fields_are_ignored() {
        let (a, b, c) = (sample(32768, 6), noise(1000, 7), sample(20_000, 8));
        let mut all = a.clone();
        all.extend_from_slice(&b);
        all.extend_from_slice(&c);
        for (version, compat) in [
            ([0, 0, 0, 1], [0, 0, 0, 1]), // big-endian, as snappy-java writes
            ([1, 0, 0, 0], [1, 0, 0, 0]), // little-endian, as some writers do
            ([0xFF; 4], [0; 4]),
        ] {
            let s = xerial(version, compat, &[&a, &b, &c]);
            assert_eq!(dec(&s, MIB).unwrap(), all);
        }
    }

    #[test]
    fn xerial_concatenated_streams_and_trailing_bytes() {
        let (a, b) = (sample(40_000, 9), sample(5_000, 10));
        let mut s = comp(&a, true);
        s.extend_from_slice(&comp(&b, true));
        let mut ab = a.clone();
        ab.extend_from_slice(&b);
        assert_eq!(dec(&s, MIB).unwrap(), ab);
        // 1-3 stray bytes at the end are ignored, as snappy-java does.
        s.extend_from_slice(&[0, 0, 7]);
        assert_eq!(dec(&s, MIB).unwrap(), ab);
        // A half header between blocks is not.
        let mut half = comp(&a, true);
        half.extend_from_slice(&XERIAL_MAGIC[..6]);
        assert!(is_invalid(&dec(&half, MIB), "snappy"));
    }

    #[test]
    fn limit_is_checked_on_claims_before_decompressing() {
        let input = sample(100_000, 11);
        for framed in [false, true] {
            let s = comp(&input, framed);
            assert_eq!(dec(&s, input.len()).unwrap(), input);
            let mut out = Vec::new();
            assert_eq!(
                decompress(&s, input.len() - 1, &mut out),
                Err(too_large(input.len() - 1))
            );
            assert!(out.is_empty() && out.capacity() == 0, "nothing allocated");
        }
    }

    #[test]
    fn bomb_is_refused_quickly() {
        // Raw: a varint claiming ~4 GiB, and a real 64 MiB block claim.
        assert!(is_too_large(&dec(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0], MIB), "snappy"));
        // xerial: 2048 blocks of 32 KiB zeros (64 MiB) in ~3 MiB of payload.
        let block = raw(&[0u8; XERIAL_BLOCK_SIZE]);
        let mut s = comp(b"", true);
        for _ in 0..2048 {
            s.extend_from_slice(&(block.len() as u32).to_be_bytes());
            s.extend_from_slice(&block);
        }
        let t = std::time::Instant::now();
        let mut out = Vec::new();
        assert_eq!(decompress(&s, MIB, &mut out), Err(too_large(MIB)));
        assert_eq!(out.capacity(), 0);
        assert!(t.elapsed().as_secs() < 2);
    }

    #[test]
    fn claims_snappy_cannot_encode_are_invalid() {
        // 1 GiB claimed by a 7-byte block, with no effective limit.
        assert!(is_invalid(
            &dec(&[0x80, 0x80, 0x80, 0x80, 0x04, 0, 0], usize::MAX),
            "snappy"
        ));
    }

    #[test]
    fn bad_payloads_are_invalid() {
        assert!(is_invalid(&dec(b"", MIB), "snappy"));
        assert!(is_invalid(&dec(&XERIAL_MAGIC, MIB), "snappy"));
        assert!(is_invalid(&dec(&comp(b"abc", true)[..15], MIB), "snappy"));
        let mut zero_block = comp(b"", true);
        zero_block.extend_from_slice(&[0, 0, 0, 0]);
        assert!(is_invalid(&dec(&zero_block, MIB), "snappy"));
        let mut negative = comp(b"", true);
        negative.extend_from_slice(&[0xFF, 0, 0, 1, 0]);
        assert!(is_invalid(&dec(&negative, MIB), "snappy"));
        for framed in [false, true] {
            let input = sample(70_000, 12);
            let s = comp(&input, framed);
            for cut in (1..s.len() - 3).step_by(11) {
                match dec(&s[..cut], MIB) {
                    Err(e) => assert!(matches!(e, CodecError::Invalid { .. }), "cut at {cut}: {e}"),
                    // Cut at a xerial block boundary: a shorter valid stream.
                    Ok(out) => assert!(
                        framed && out.len() < input.len() && input.starts_with(&out),
                        "cut at {cut}"
                    ),
                }
            }
            let mut x = 0x2545_F491u32;
            for _ in 0..300 {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let mut bad = s.clone();
                let at = (x as usize >> 8) % s.len();
                bad[at] ^= (x as u8) | 1;
                let _ = dec(&bad, MIB); // any result but a panic
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn prop_round_trip(input in proptest::collection::vec(any::<u8>(), 0..100_000), framed in any::<bool>()) {
            let s = comp(&input, framed);
            prop_assert_eq!(dec(&s, input.len()).unwrap(), input);
        }

        #[test]
        fn prop_garbage_never_panics(body in proptest::collection::vec(any::<u8>(), 0..2000), framed in any::<bool>()) {
            let mut s = if framed { comp(b"", true) } else { Vec::new() };
            s.extend_from_slice(&body);
            let _ = dec(&s, 1 << 16);
        }
    }
}
