//! Kafka's per-segment index files, by Kafka's rules. All integers are
//! big-endian:
//!
//! * `.index` (8-byte entries): relative offset int32, byte position int32 of
//!   a batch in the `.log`; sparse (one entry per `index.interval.bytes`).
//! * `.timeindex` (12-byte entries): timestamp int64 (ms), relative offset
//!   int32: "the largest timestamp appended up to this offset's batch".
//! * `.txnindex` (34-byte entries): version int16, producer id, first
//!   offset, last offset and last stable offset (int64 each).
//!
//! The active segment's `.index` and `.timeindex` are preallocated and
//! zero-filled past the last entry; the zero tail is dropped as
//! `kafka-dump-log.sh` does (entries stop at the first entry after the first
//! whose relative offset is 0; for the time index also at an all-zero entry).
//!
//! ```
//! use kafkabatch::scan::index::offset_index_entries;
//! let data = [0, 0, 0, 0x39, 0, 0, 0x10, 0x29, 0, 0, 0, 0x71, 0, 0, 0x20, 0x63, 0, 0, 0, 0, 0, 0, 0, 0];
//! assert_eq!(offset_index_entries(&data, 1000), Ok((vec![1057, 1113], vec![4137, 8291])));
//! ```

use crate::batch::{be_i32, be_i64};

pub const OFFSET_INDEX_ENTRY_SIZE: usize = 8;
pub const TIME_INDEX_ENTRY_SIZE: usize = 12;
pub const TXN_INDEX_ENTRY_SIZE: usize = 34;

/// An offset index whose entries a broker could not have written (stale or
/// garbage): readers then ignore the index. The text says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidIndex(pub String);

impl std::fmt::Display for InvalidIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidIndex {}

/// How many of the whole `.index` entries of `data` are in use: those before
/// the preallocated zero tail (the first entry past entry 0 whose relative
/// offset is 0; entry 0 itself may be `(0, 0)`).
pub fn offset_index_used(data: &[u8]) -> usize {
    let n = data.len() / OFFSET_INDEX_ENTRY_SIZE;
    (1..n)
        .find(|&i| be_i32(data, i * OFFSET_INDEX_ENTRY_SIZE) == 0)
        .unwrap_or(n)
}

/// How many of the whole `.timeindex` entries of `data` are in use: those
/// before the first all-zero entry or the first entry past entry 0 whose
/// relative offset is 0.
pub fn time_index_used(data: &[u8]) -> usize {
    let n = data.len() / TIME_INDEX_ENTRY_SIZE;
    (0..n)
        .find(|&i| {
            let at = i * TIME_INDEX_ENTRY_SIZE;
            be_i32(data, at + 8) == 0 && (i > 0 || be_i64(data, at) == 0)
        })
        .unwrap_or(n)
}

/// `(offsets, positions)` of the entries of a `.index` file's bytes:
/// a size that is not a multiple of 8 is corrupt (`OffsetIndex.sanityCheck`);
/// the zero tail ends the entries; what remains must be what
/// `OffsetIndex.append` allows (relative offsets and positions not negative,
/// both strictly increasing).
pub fn offset_index_entries(data: &[u8], base_offset: i64) -> Result<(Vec<i64>, Vec<i64>), InvalidIndex> {
    if !data.len().is_multiple_of(OFFSET_INDEX_ENTRY_SIZE) {
        return Err(InvalidIndex(format!(
            "{} bytes is not a multiple of the {OFFSET_INDEX_ENTRY_SIZE}-byte entry size",
            data.len()
        )));
    }
    let n = offset_index_used(data);
    let mut offsets = Vec::with_capacity(n);
    let mut positions = Vec::with_capacity(n);
    let mut previous: Option<(i32, i32)> = None;
    for i in 0..n {
        let (r, p) = (
            be_i32(data, i * OFFSET_INDEX_ENTRY_SIZE),
            be_i32(data, i * OFFSET_INDEX_ENTRY_SIZE + 4),
        );
        if r < 0 || p < 0 {
            return Err(InvalidIndex(format!(
                "entry {i} has a negative relative offset or position ({r}, {p})"
            )));
        }
        if let Some((pr, pp)) = previous.filter(|&(pr, pp)| r <= pr || p <= pp) {
            return Err(InvalidIndex(format!(
                "entry {i} ({} at byte {p}) does not follow entry {} ({} at byte {pp}): offsets and positions must grow",
                base_offset + r as i64,
                i - 1,
                base_offset + pr as i64,
            )));
        }
        previous = Some((r, p));
        offsets.push(base_offset + r as i64);
        positions.push(p as i64);
    }
    Ok((offsets, positions))
}

/// `(timestamps, offsets)` of the entries of a `.timeindex` file's bytes in
/// use (a partial last entry is ignored).
pub fn time_index_entries(data: &[u8], base_offset: i64) -> (Vec<i64>, Vec<i64>) {
    let n = time_index_used(data);
    (0..n)
        .map(|i| {
            let at = i * TIME_INDEX_ENTRY_SIZE;
            (be_i64(data, at), base_offset + be_i32(data, at + 8) as i64)
        })
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(pairs: &[(i32, i32)]) -> Vec<u8> {
        pairs
            .iter()
            .flat_map(|(r, p)| [r.to_be_bytes(), p.to_be_bytes()].concat())
            .collect()
    }

    #[test]
    fn zero_tail_partial_and_order() {
        let mut data = entries(&[(0, 0), (5, 100), (9, 300)]);
        data.extend([0u8; 80]);
        assert_eq!(offset_index_used(&data), 3);
        assert_eq!(
            offset_index_entries(&data, 10),
            Ok((vec![10, 15, 19], vec![0, 100, 300]))
        );
        assert!(offset_index_entries(&data[..20], 10)
            .unwrap_err()
            .0
            .contains("20 bytes"));
        let bad = entries(&[(5, 100), (4, 300)]);
        assert_eq!(
            offset_index_entries(&bad, 10).unwrap_err().0,
            "entry 1 (14 at byte 300) does not follow entry 0 (15 at byte 100): offsets and positions must grow"
        );
        assert!(offset_index_entries(&entries(&[(-1, 3)]), 0).is_err());
    }

    #[test]
    fn time_index_stops_at_zero_entries() {
        let entry = |t: i64, r: i32| [t.to_be_bytes().to_vec(), r.to_be_bytes().to_vec()].concat();
        let data = [entry(100, 3), entry(200, 7), entry(0, 0), entry(300, 9)].concat();
        assert_eq!(time_index_entries(&data, 1000), (vec![100, 200], vec![1003, 1007]));
        // a first entry at relative offset 0 with a real timestamp counts
        let data = [entry(100, 0), entry(200, 7), entry(9, 0)].concat();
        assert_eq!(time_index_entries(&data, 0), (vec![100, 200], vec![0, 7]));
        assert_eq!(time_index_used(&entry(0, 0)), 0);
    }
}
