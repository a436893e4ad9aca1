//! The one error type of the core. Every variant says where (the batch's byte
//! position in the input and its base offset) and why.

use std::fmt;

/// What kind of failure a [`DecodeError`] is; maps 1:1 onto the Python
/// exception classes (`CorruptBatchError`, `CrcMismatchError`,
/// `UnsupportedFormatError`, `DecompressionError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The bytes contradict the format (bad length, bad count, bad varint, ...).
    Corrupt,
    /// The stored checksum does not match the bytes.
    CrcMismatch,
    /// A magic byte or codec id this library (and Kafka) does not know.
    Unsupported,
    /// A codec rejected the payload, or it inflated past the configured cap.
    Decompression,
}

/// A decoding failure, located in the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DecodeError {
    pub kind: ErrorKind,
    /// Byte position of the start of the batch (or legacy message) in the input.
    pub batch_position: usize,
    /// The batch's base offset, when its header could be read.
    pub base_offset: Option<i64>,
    /// Byte position of the offending field: in the input, or, for data
    /// inside a compressed payload, in the decompressed payload (`in_payload`).
    pub byte_position: usize,
    pub in_payload: bool,
    pub reason: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ErrorKind::Corrupt => "corrupt batch",
            ErrorKind::CrcMismatch => "CRC mismatch in batch",
            ErrorKind::Unsupported => "unsupported batch",
            ErrorKind::Decompression => "cannot decompress batch",
        };
        write!(f, "{what} at byte {}", self.batch_position)?;
        if let Some(offset) = self.base_offset {
            write!(f, " (base offset {offset})")?;
        }
        if self.in_payload {
            write!(f, ", byte {} of its decompressed records", self.byte_position)?;
        } else if self.byte_position != self.batch_position {
            write!(f, ", at byte {}", self.byte_position)?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl DecodeError {
    pub fn new(
        kind: ErrorKind,
        batch_position: usize,
        base_offset: Option<i64>,
        byte_position: usize,
        reason: impl Into<String>,
    ) -> Self {
        DecodeError {
            kind,
            batch_position,
            base_offset,
            byte_position,
            in_payload: false,
            reason: reason.into(),
        }
    }

    pub fn corrupt(
        batch_position: usize,
        base_offset: Option<i64>,
        byte_position: usize,
        reason: impl Into<String>,
    ) -> Self {
        Self::new(ErrorKind::Corrupt, batch_position, base_offset, byte_position, reason)
    }
}

/// A failure found while reading a byte slice, before it is placed in the
/// input: `at` is relative to the start of the slice being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalError {
    pub kind: ErrorKind,
    pub at: usize,
    pub reason: String,
}

impl LocalError {
    pub fn corrupt(at: usize, reason: impl Into<String>) -> Self {
        LocalError {
            kind: ErrorKind::Corrupt,
            at,
            reason: reason.into(),
        }
    }

    /// Place this error in the input: `base` is where the slice started.
    pub fn locate(self, batch_position: usize, base_offset: Option<i64>, base: usize, in_payload: bool) -> DecodeError {
        DecodeError {
            kind: self.kind,
            batch_position,
            base_offset,
            byte_position: base + self.at,
            in_payload,
            reason: self.reason,
        }
    }
}
