//! Decompression (and compression, for the encoder) of record payloads.
//! One file per codec; this module only dispatches.
//!
//! Kafka codec ids (attributes bits 0-2, spec "Record Batch" / "Message Set"):
//! 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; 5-7 are unknown.

pub mod gzip;
pub mod lz4;
pub mod snappy;
pub mod zstd;

#[cfg(test)]
mod test_support;

/// A Kafka compression codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Codec {
    /// The codec of attribute bits 0-2, or `Err(id)` for ids Kafka does not define.
    pub fn from_id(id: u8) -> Result<Codec, u8> {
        match id {
            0 => Ok(Codec::None),
            1 => Ok(Codec::Gzip),
            2 => Ok(Codec::Snappy),
            3 => Ok(Codec::Lz4),
            4 => Ok(Codec::Zstd),
            other => Err(other),
        }
    }

    pub fn id(self) -> u8 {
        match self {
            Codec::None => 0,
            Codec::Gzip => 1,
            Codec::Snappy => 2,
            Codec::Lz4 => 3,
            Codec::Zstd => 4,
        }
    }

    /// The name Kafka and this library use: "none", "gzip", "snappy", "lz4", "zstd".
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    pub fn from_name(name: &str) -> Option<Codec> {
        match name {
            "none" => Some(Codec::None),
            "gzip" => Some(Codec::Gzip),
            "snappy" => Some(Codec::Snappy),
            "lz4" => Some(Codec::Lz4),
            "zstd" => Some(Codec::Zstd),
            _ => None,
        }
    }
}

/// Why a payload could not be decompressed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The payload would inflate past `limit` bytes (a bomb, or a cap set too low).
    #[error("{codec} payload inflates past the {limit}-byte cap (max_decompressed_size)")]
    TooLarge { codec: &'static str, limit: usize },
    /// The codec rejected the payload; the message says why.
    #[error("{codec}: {message}")]
    Invalid { codec: &'static str, message: String },
}

/// Decompress a whole `payload` written with `codec` into `out` (cleared
/// first). `magic` is the batch's magic byte: lz4 in magic 0 has a broken frame
/// header checksum (KAFKA-3160) that must be accepted. Output past `limit` bytes
/// is an error, found without allocating past the limit.
pub fn decompress(codec: Codec, payload: &[u8], magic: i8, limit: usize, out: &mut Vec<u8>) -> Result<(), CodecError> {
    out.clear();
    match codec {
        Codec::None => {
            if payload.len() > limit {
                return Err(CodecError::TooLarge { codec: "none", limit });
            }
            out.extend_from_slice(payload);
            Ok(())
        }
        Codec::Gzip => gzip::decompress(payload, limit, out),
        Codec::Snappy => snappy::decompress(payload, limit, out),
        Codec::Lz4 => lz4::decompress(payload, magic == 0, limit, out),
        Codec::Zstd => zstd::decompress(payload, limit, out),
    }
}

/// [`decompress`] into a buffer reused batch after batch: the data is
/// `out[..n]` for the `n` returned, and `out` may hold more bytes past it,
/// kept as room so lz4 decodes in place without zeroing it again (see
/// [`lz4::decompress_in_room`]). Other codecs fill `out` as [`decompress`] does.
pub fn decompress_reusing(
    codec: Codec,
    payload: &[u8],
    magic: i8,
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    match codec {
        Codec::Lz4 => lz4::decompress_in_room(payload, magic == 0, limit, out),
        _ => decompress(codec, payload, magic, limit, out).map(|()| out.len()),
    }
}

/// Options for compressing, as producers set them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompressOptions {
    /// Codec-specific level; `None` is the codec's (and Kafka's) default.
    pub level: Option<i32>,
    /// Snappy only: write the xerial framing Java producers use instead of a raw block.
    pub snappy_xerial: bool,
}

/// Compress `input` with `codec`, appending to `out`. For lz4, `magic == 0`
/// writes the KAFKA-3160 header checksum that old Kafka readers expect.
pub fn compress(
    codec: Codec,
    input: &[u8],
    magic: i8,
    options: CompressOptions,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    match codec {
        Codec::None => {
            out.extend_from_slice(input);
            Ok(())
        }
        Codec::Gzip => gzip::compress(input, options.level, out),
        Codec::Snappy => snappy::compress(input, options.snappy_xerial, out),
        Codec::Lz4 => lz4::compress(input, magic == 0, options.level, out),
        Codec::Zstd => zstd::compress(input, options.level, out),
    }
}
