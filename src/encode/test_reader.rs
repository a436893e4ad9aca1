//! A tiny, strict reader of the encoder's output, for tests only (the real
//! decoder lives elsewhere). Panics on anything malformed.

use crate::varint::{read_varint, read_varlong};

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(b[at..at + 2].try_into().unwrap())
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}
fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// Bitwise CRC32-C (reflected polynomial 0x82F63B78): an independent check on `crate::crc`.
pub fn reference_crc32c(data: &[u8]) -> u32 {
    reflected_crc(data, 0x82F6_3B78)
}

/// Bitwise CRC32 IEEE (reflected polynomial 0xEDB88320).
pub fn reference_crc32(data: &[u8]) -> u32 {
    reflected_crc(data, 0xEDB8_8320)
}

fn reflected_crc(data: &[u8], poly: u32) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ poly } else { crc >> 1 };
        }
    }
    !crc
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
    /// The records section as stored (compressed when the codec bits say so).
    pub payload: Vec<u8>,
}

impl Batch {
    /// The records, when uncompressed.
    pub fn records(&self) -> Vec<Record> {
        assert_eq!(self.attributes & 7, 0, "compressed batch");
        read_records(&self.payload, self.record_count as usize)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub attributes: u8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

/// Read consecutive v2 batches covering all of `buf`, checking lengths and CRCs.
pub fn read_batches(buf: &[u8]) -> Vec<Batch> {
    let mut batches = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let b = &buf[pos..];
        let length = be_i32(b, 8);
        let end = 12 + length as usize;
        let b = &b[..end];
        assert_eq!(b[16], 2, "magic");
        let crc = be_u32(b, 17);
        assert_eq!(crc, reference_crc32c(&b[21..]), "CRC of the batch at byte {pos}");
        batches.push(Batch {
            base_offset: be_i64(b, 0),
            batch_length: length,
            partition_leader_epoch: be_i32(b, 12),
            magic: b[16] as i8,
            crc,
            attributes: be_i16(b, 21),
            last_offset_delta: be_i32(b, 23),
            base_timestamp: be_i64(b, 27),
            max_timestamp: be_i64(b, 35),
            producer_id: be_i64(b, 43),
            producer_epoch: be_i16(b, 51),
            base_sequence: be_i32(b, 53),
            record_count: be_i32(b, 57),
            payload: b[61..].to_vec(),
        });
        pos += end;
    }
    batches
}

fn read_nullable_varint_bytes(buf: &[u8], pos: &mut usize) -> Option<Vec<u8>> {
    let len = read_varint(buf, pos).unwrap();
    if len < 0 {
        assert_eq!(len, -1);
        return None;
    }
    let bytes = buf[*pos..*pos + len as usize].to_vec();
    *pos += len as usize;
    Some(bytes)
}

/// Read exactly `count` v2 records covering all of `buf`.
pub fn read_records(buf: &[u8], count: usize) -> Vec<Record> {
    let mut pos = 0;
    let mut records = Vec::new();
    for _ in 0..count {
        let length = read_varint(buf, &mut pos).unwrap() as usize;
        let end = pos + length;
        let attributes = buf[pos];
        pos += 1;
        let timestamp_delta = read_varlong(buf, &mut pos).unwrap();
        let offset_delta = read_varint(buf, &mut pos).unwrap();
        let key = read_nullable_varint_bytes(buf, &mut pos);
        let value = read_nullable_varint_bytes(buf, &mut pos);
        let header_count = read_varint(buf, &mut pos).unwrap();
        let mut headers = Vec::new();
        for _ in 0..header_count {
            let k = read_nullable_varint_bytes(buf, &mut pos).expect("header keys are not null");
            let v = read_nullable_varint_bytes(buf, &mut pos);
            headers.push((String::from_utf8(k).unwrap(), v));
        }
        assert_eq!(pos, end, "record length field");
        records.push(Record {
            attributes,
            timestamp_delta,
            offset_delta,
            key,
            value,
            headers,
        });
    }
    assert_eq!(pos, buf.len(), "bytes after the last record");
    records
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub offset: i64,
    pub size: i32,
    pub crc: u32,
    pub magic: i8,
    pub attributes: i8,
    /// `None` for magic 0.
    pub timestamp: Option<i64>,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

fn read_nullable_i32_bytes(buf: &[u8], pos: &mut usize) -> Option<Vec<u8>> {
    let len = be_i32(buf, *pos);
    *pos += 4;
    if len < 0 {
        assert_eq!(len, -1);
        return None;
    }
    let bytes = buf[*pos..*pos + len as usize].to_vec();
    *pos += len as usize;
    Some(bytes)
}

/// Read consecutive v0/v1 messages covering all of `buf`, checking sizes and CRCs.
pub fn read_messages(buf: &[u8]) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let offset = be_i64(buf, pos);
        let size = be_i32(buf, pos + 8);
        let end = pos + 12 + size as usize;
        let m = &buf[pos + 12..end];
        let crc = be_u32(m, 0);
        assert_eq!(crc, reference_crc32(&m[4..]), "CRC of the message at byte {pos}");
        let magic = m[4] as i8;
        let attributes = m[5] as i8;
        let mut at = 6;
        let timestamp = if magic >= 1 {
            at += 8;
            Some(be_i64(m, 6))
        } else {
            None
        };
        let key = read_nullable_i32_bytes(m, &mut at);
        let value = read_nullable_i32_bytes(m, &mut at);
        assert_eq!(at, m.len(), "message size field");
        messages.push(Message {
            offset,
            size,
            crc,
            magic,
            attributes,
            timestamp,
            key,
            value,
        });
        pos = end;
    }
    messages
}
