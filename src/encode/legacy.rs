//! v0/v1 messages (spec "Message Set"):
//!
//! ```text
//! offset int64, messageSize int32 (bytes after this field),
//! crc uint32 (CRC32 IEEE of magic..end), magic int8, attributes int8,
//! [v1: timestamp int64], key bytes (int32 length, -1 null), value bytes
//! ```
//!
//! A compressed message set is one wrapper message with a null key whose
//! value is the codec's output over the inner (uncompressed) messages.

/// offset + messageSize.
pub(super) const LOG_OVERHEAD: usize = 12;
/// Largest messageSize (an int32).
pub(super) const MAX_MESSAGE: usize = i32::MAX as usize;
/// Largest whole wrapper entry (offset and size fields included).
pub(super) const MAX_WRAPPER_CONTENT: usize = LOG_OVERHEAD + MAX_MESSAGE;

pub(super) const TIMESTAMP_TYPE_BIT: i8 = 0x08;

/// messageSize of a message with these key and value lengths (nulls count 0).
#[inline]
pub(super) fn message_size(magic: i8, key_len: usize, value_len: usize) -> usize {
    let overhead = if magic == 0 { 14 } else { 22 };
    overhead + key_len + value_len
}

fn write_nullable(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(b) => {
            out.extend_from_slice(&(b.len() as i32).to_be_bytes());
            out.extend_from_slice(b);
        }
    }
}

/// Append one uncompressed message; returns the bytes written. `timestamp`
/// is ignored for magic 0. Lengths were checked by `check_record`.
pub(super) fn write_message(
    out: &mut Vec<u8>,
    offset: i64,
    magic: i8,
    attributes: i8,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> usize {
    let size = message_size(magic, key.map_or(0, <[u8]>::len), value.map_or(0, <[u8]>::len));
    out.reserve(LOG_OVERHEAD + size);
    let start = out.len();
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&(size as i32).to_be_bytes());
    out.extend_from_slice(&[0; 4]); // crc, patched below
    out.push(magic as u8);
    out.push(attributes as u8);
    if magic >= 1 {
        out.extend_from_slice(&timestamp.to_be_bytes());
    }
    write_nullable(out, key);
    write_nullable(out, value);
    let crc = crate::crc::crc32(&out[start + 16..]);
    out[start + 12..start + 16].copy_from_slice(&crc.to_be_bytes());
    LOG_OVERHEAD + size
}

/// Append a wrapper message's fields up to its value length (a placeholder),
/// with a null key. Returns where the value's bytes start; append them, then
/// call [`end_wrapper`].
pub(super) fn begin_wrapper(out: &mut Vec<u8>, offset: i64, magic: i8, attributes: i8, timestamp: i64) -> usize {
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&[0; 8]); // messageSize, crc
    out.push(magic as u8);
    out.push(attributes as u8);
    if magic >= 1 {
        out.extend_from_slice(&timestamp.to_be_bytes());
    }
    out.extend_from_slice(&(-1i32).to_be_bytes()); // key: null
    out.extend_from_slice(&[0; 4]); // value length
    out.len()
}

/// Patch the wrapper starting at `start` whose value ends at `out.len()`:
/// messageSize, value length, CRC. `Err(size)` if it is too large for the format.
pub(super) fn end_wrapper(out: &mut [u8], start: usize, value_start: usize) -> Result<(), u64> {
    let size = out.len() - start - LOG_OVERHEAD;
    if size > MAX_MESSAGE {
        return Err((out.len() - start) as u64);
    }
    let value_len = out.len() - value_start;
    out[start + 8..start + 12].copy_from_slice(&(size as i32).to_be_bytes());
    out[value_start - 4..value_start].copy_from_slice(&(value_len as i32).to_be_bytes());
    let crc = crate::crc::crc32(&out[start + 16..]);
    out[start + 12..start + 16].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}
