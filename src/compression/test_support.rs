//! Test data and helpers the codec tests share: text-like and incompressible
//! inputs, the input the third-party fixtures were made from, hex fixtures,
//! and error checks.

use super::CodecError;

pub const MIB: usize = 1 << 20;

/// The words of [`sample`]: the generator of the Java and CLI fixtures.
pub const WORDS: [&[u8]; 10] = [
    b"kafka",
    b"record",
    b"batch",
    b"offset",
    b"topic",
    b"partition",
    b"lz4",
    b"frame",
    b"block",
    b"zstd",
];

/// `n` bytes of text-like data: `words` picked by a linear congruential
/// generator from `seed`, separated by spaces.
pub fn sample_of(words: &[&[u8]], n: usize, seed: u32) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(n + 16);
    while out.len() < n {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
        out.extend_from_slice(words[((state >> 16) % words.len() as u32) as usize]);
        out.push(b' ');
    }
    out.truncate(n);
    out
}

/// Text-like test data of [`WORDS`] (the same generator made the fixtures).
pub fn sample(n: usize, seed: u32) -> Vec<u8> {
    sample_of(&WORDS, n, seed)
}

/// `sample(300, 12345)` repeated to `n` bytes: the fixtures' input.
pub fn repeated(n: usize) -> Vec<u8> {
    sample(300, 12345).iter().copied().cycle().take(n).collect()
}

/// Incompressible bytes (xorshift).
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Inputs every codec must round-trip: empty, one byte, text, noise, and a
/// long run of zeros.
pub fn round_trip_inputs() -> [Vec<u8>; 5] {
    [
        Vec::new(),
        b"x".to_vec(),
        sample(100_000, 1),
        noise(100_000, 2),
        vec![0; 1_000_000],
    ]
}

/// What a codec call writes to its `out` buffer, as a fresh `Vec`.
pub fn into_vec(call: impl FnOnce(&mut Vec<u8>) -> Result<(), CodecError>) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    call(&mut out).map(|()| out)
}

/// The bytes of a hex fixture.
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Whether `r` is `codec` rejecting its payload.
pub fn is_invalid(r: &Result<Vec<u8>, CodecError>, codec: &str) -> bool {
    matches!(r, Err(CodecError::Invalid { codec: c, .. }) if *c == codec)
}

/// Whether `r` is `codec` refusing to inflate past its cap.
pub fn is_too_large(r: &Result<Vec<u8>, CodecError>, codec: &str) -> bool {
    matches!(r, Err(CodecError::TooLarge { codec: c, .. }) if *c == codec)
}
