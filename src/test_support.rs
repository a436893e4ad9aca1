//! Record batches laid out by hand from the spec ("Record Batch", "Record"),
//! for tests that must not lean on our own encoder's writing.

use crate::crc::crc32c;
pub(crate) use crate::encode::v2::BatchHeader as V2Header;
use crate::varint::{write_varint, write_varlong};

/// A v2 batch: `h`, then `records` (already framed, e.g. by [`record`]),
/// with batchLength and the CRC computed.
pub fn write_v2(h: &V2Header, records: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(61 + records.len());
    b.extend_from_slice(&h.base_offset.to_be_bytes());
    b.extend_from_slice(&((49 + records.len()) as i32).to_be_bytes()); // batchLength: from the leader epoch on
    b.extend_from_slice(&h.partition_leader_epoch.to_be_bytes());
    b.push(2); // magic
    b.extend_from_slice(&[0; 4]); // crc, patched below
    b.extend_from_slice(&h.attributes.to_be_bytes());
    b.extend_from_slice(&h.last_offset_delta.to_be_bytes());
    b.extend_from_slice(&h.base_timestamp.to_be_bytes());
    b.extend_from_slice(&h.max_timestamp.to_be_bytes());
    b.extend_from_slice(&h.producer_id.to_be_bytes());
    b.extend_from_slice(&h.producer_epoch.to_be_bytes());
    b.extend_from_slice(&h.base_sequence.to_be_bytes());
    b.extend_from_slice(&h.record_count.to_be_bytes());
    b.extend_from_slice(records);
    let crc = crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

/// One record laid out by hand from the spec, with its length prefix
/// (attributes 0; a `None` key, value or header value is null).
pub fn record(
    ts_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[(&str, Option<&[u8]>)],
) -> Vec<u8> {
    let mut body = vec![0u8];
    write_varlong(&mut body, ts_delta);
    write_varint(&mut body, offset_delta);
    for field in [key, value] {
        match field {
            Some(b) => {
                write_varint(&mut body, b.len() as i32);
                body.extend_from_slice(b);
            }
            None => write_varint(&mut body, -1),
        }
    }
    write_varint(&mut body, headers.len() as i32);
    for (k, v) in headers {
        write_varint(&mut body, k.len() as i32);
        body.extend_from_slice(k.as_bytes());
        match v {
            Some(b) => {
                write_varint(&mut body, b.len() as i32);
                body.extend_from_slice(b);
            }
            None => write_varint(&mut body, -1),
        }
    }
    let mut out = Vec::new();
    write_varint(&mut out, body.len() as i32);
    out.extend_from_slice(&body);
    out
}
