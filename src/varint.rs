//! Zig-zag varints and varlongs as Kafka writes them (spec "Record",
//! protobuf encoding). Decoding never reads past the slice and rejects
//! encodings longer than 5 (varint) or 10 (varlong) bytes, as Kafka's
//! `ByteUtils.readVarint`/`readVarlong` do.

/// Read a zig-zag varint (i32) at `*pos`, advancing it. `None` if the bytes end
/// or the encoding is longer than 5 bytes.
#[inline(always)]
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Option<i32> {
    read_zigzag(buf, pos).map(unzigzag32)
}

/// A varint's zig-zag encoding itself, not decoded: odd for negative
/// values, `2n` for `n >= 0`. Lengths only need that split (any negative
/// length is null), which saves the decoding in the innermost loop.
#[inline(always)]
pub fn read_zigzag(buf: &[u8], pos: &mut usize) -> Option<u32> {
    // Fast paths: one byte covers -64..=63, two bytes -8192..=8191 — lengths,
    // deltas and counts of ordinary records.
    let p = *pos;
    let first = *buf.get(p)?;
    if first < 0x80 {
        *pos = p + 1;
        return Some(first as u32);
    }
    if let Some(&second) = buf.get(p + 1) {
        if second < 0x80 {
            *pos = p + 2;
            return Some((first & 0x7f) as u32 | (second as u32) << 7);
        }
    }
    let (value, next) = read_varint_slow(buf, p)?;
    *pos = next;
    Some(value)
}

/// Longer encodings. Takes and returns the position by value, so callers'
/// positions never have their address taken and stay in registers.
#[inline(never)]
fn read_varint_slow(buf: &[u8], pos: usize) -> Option<(u32, usize)> {
    let mut value: u32 = 0;
    for i in 0..5 {
        let byte = *buf.get(pos + i)?;
        if i == 4 && byte & 0xf0 != 0 {
            // The 5th byte may only carry the top 4 bits (and no continuation).
            return None;
        }
        value |= ((byte & 0x7f) as u32) << (7 * i);
        if byte < 0x80 {
            return Some((value, pos + i + 1));
        }
    }
    None
}

/// Read a zig-zag varlong (i64) at `*pos`, advancing it. `None` if the bytes
/// end or the encoding is longer than 10 bytes.
#[inline(always)]
pub fn read_varlong(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let p = *pos;
    let first = *buf.get(p)?;
    if first < 0x80 {
        *pos = p + 1;
        return Some(unzigzag64(first as u64));
    }
    if let Some(&second) = buf.get(p + 1) {
        if second < 0x80 {
            *pos = p + 2;
            return Some(unzigzag64((first & 0x7f) as u64 | (second as u64) << 7));
        }
    }
    let (value, next) = read_varlong_slow(buf, p)?;
    *pos = next;
    Some(value)
}

#[inline(never)]
fn read_varlong_slow(buf: &[u8], pos: usize) -> Option<(i64, usize)> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let byte = *buf.get(pos + i)?;
        if i == 9 && byte & 0xfe != 0 {
            return None;
        }
        value |= ((byte & 0x7f) as u64) << (7 * i);
        if byte < 0x80 {
            return Some((unzigzag64(value), pos + i + 1));
        }
    }
    None
}

#[inline(always)]
pub fn unzigzag32(v: u32) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

#[inline(always)]
fn unzigzag64(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Append `value` as a zig-zag varint.
#[inline]
pub fn write_varint(out: &mut Vec<u8>, value: i32) {
    write_unsigned(out, ((value << 1) ^ (value >> 31)) as u32 as u64);
}

/// Append `value` as a zig-zag varlong.
#[inline]
pub fn write_varlong(out: &mut Vec<u8>, value: i64) {
    write_unsigned(out, ((value << 1) ^ (value >> 63)) as u64);
}

/// Append `v` as an unsigned varint (Kafka's `writeUnsignedVarint` for
/// values below 2^32; the message format's compact lengths and tags).
#[inline]
pub fn write_unsigned(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes `write_varint(value)` takes.
#[inline]
pub fn varint_size(value: i32) -> usize {
    unsigned_size(((value << 1) ^ (value >> 31)) as u32 as u64)
}

/// Bytes `write_varlong(value)` takes.
#[inline]
pub fn varlong_size(value: i64) -> usize {
    unsigned_size(((value << 1) ^ (value >> 63)) as u64)
}

#[inline]
fn unsigned_size(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings_from_the_protobuf_spec() {
        // zig-zag: 0→0, -1→1, 1→2, -2→3, 2147483647→4294967294, -2147483648→4294967295
        for (v, bytes) in [
            (0i32, vec![0x00u8]),
            (-1, vec![0x01]),
            (1, vec![0x02]),
            (-2, vec![0x03]),
            (63, vec![0x7e]),
            (-64, vec![0x7f]),
            (64, vec![0x80, 0x01]),
            (i32::MAX, vec![0xfe, 0xff, 0xff, 0xff, 0x0f]),
            (i32::MIN, vec![0xff, 0xff, 0xff, 0xff, 0x0f]),
        ] {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            assert_eq!(out, bytes, "encoding {v}");
            assert_eq!(varint_size(v), bytes.len());
            let mut pos = 0;
            assert_eq!(read_varint(&bytes, &mut pos), Some(v));
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn rejects_overlong_and_truncated() {
        let mut pos = 0;
        assert_eq!(read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], &mut pos), None);
        assert_eq!(read_varint(&[0xff, 0xff, 0xff, 0xff, 0x1f], &mut pos), None);
        assert_eq!(read_varint(&[0x80, 0x80], &mut pos), None);
        assert_eq!(read_varint(&[], &mut pos), None);
        assert_eq!(read_varlong(&[0xff; 11], &mut pos), None);
        assert_eq!(
            read_varlong(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02], &mut pos),
            None
        );
        assert_eq!(pos, 0, "failed reads do not move the cursor");
        let mut pos = 0;
        assert_eq!(
            read_varlong(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &mut pos),
            Some(i64::MIN)
        );
    }

    proptest! {
        #[test]
        fn varint_round_trip(v in any::<i32>()) {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            prop_assert_eq!(out.len(), varint_size(v));
            let mut pos = 0;
            prop_assert_eq!(read_varint(&out, &mut pos), Some(v));
            prop_assert_eq!(pos, out.len());
        }

        #[test]
        fn varlong_round_trip(v in any::<i64>()) {
            let mut out = Vec::new();
            write_varlong(&mut out, v);
            prop_assert_eq!(out.len(), varlong_size(v));
            let mut pos = 0;
            prop_assert_eq!(read_varlong(&out, &mut pos), Some(v));
            prop_assert_eq!(pos, out.len());
        }
    }
}
