//! read_committed: which transactional batches a committed-only reader sees.
//!
//! Two sources of truth, used together:
//! 1. Markers in the data. A transactional batch of producer P belongs to P's
//!    open transaction; P's next ABORT control batch aborts it, a COMMIT
//!    commits it. A transaction with no marker yet lies past the last stable
//!    offset and is not visible — unless the caller says open transactions
//!    are decided elsewhere (a Fetch response's list covers everything below
//!    its last stable offset; a marker may lie beyond a cut response).
//! 2. Explicit aborted-transaction lists, `(producer_id, first_offset)`, from
//!    Fetch responses or `.txnindex` files.
//!
//! Both become one aborted list, applied with the Java consumer's algorithm
//! (`CompletedFetch.nextFetchedRecord`): walk batches in order; before each
//! batch with a producer id, move the aborted entries with
//! `first_offset <= batch.last_offset` into a set of aborted producers; an
//! ABORT marker of P removes P; a transactional batch of a producer in the
//! set is aborted. Control batches are never returned.

use std::collections::{BTreeMap, HashSet};

use crate::batch::{parse_v2_header, BatchHeader, BatchWalker};
use crate::control::parse_control;
use crate::decode::{decode_batch, DecodeOptions};
use crate::record::OwnedRecords;

/// An aborted transaction: its producer and its first offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
}

/// What a transaction-relevant batch is, for the visibility pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Not transactional, or legacy: always visible.
    Plain,
    Transactional,
    Commit,
    Abort,
    /// Another control record (KRaft) or an unreadable control batch.
    OtherControl,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    position: usize,
    producer_id: i64,
    first_offset: i64,
    last_offset: i64,
    kind: Kind,
}

/// Batch positions hidden from a read_committed reader: aborted or still open
/// transactional batches, and every control batch.
#[derive(Debug, Clone, Default)]
pub struct Hidden {
    positions: HashSet<usize>,
    /// The aborted list that was applied (explicit ∪ derived), sorted.
    pub aborted: Vec<AbortedTxn>,
    /// Transactions with no marker in the data: `(producer_id, first_offset)`.
    pub open: Vec<AbortedTxn>,
}

impl Hidden {
    pub fn contains(&self, position: usize) -> bool {
        self.positions.contains(&position)
    }
}

/// Classify every batch of `data` by header (and, for control batches, their
/// control record). Batches that cannot be read are left to the decode pass,
/// which reports them.
fn classify(data: &[u8], start: usize, options: &DecodeOptions) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut walker = BatchWalker::starting_at(data, start);
    for raw in walker.by_ref() {
        if raw.magic() != 2 {
            continue;
        }
        let Ok(header) = parse_v2_header(&raw) else { continue };
        let kind = if header.is_control {
            control_kind(&raw, &header, options)
        } else if header.is_transactional {
            Kind::Transactional
        } else {
            Kind::Plain
        };
        if kind != Kind::Plain || header.producer_id >= 0 {
            entries.push(Entry {
                position: header.position,
                producer_id: header.producer_id,
                first_offset: header.base_offset,
                last_offset: header.last_offset,
                kind,
            });
        }
    }
    entries
}

fn control_kind(raw: &crate::batch::RawBatch, header: &BatchHeader, options: &DecodeOptions) -> Kind {
    let opts = DecodeOptions {
        include_control: true,
        validate_crc: false,
        ..options.clone()
    };
    let mut sink = OwnedRecords::default();
    if decode_batch(raw, &opts, &mut Vec::new(), Some(&mut sink)).is_err() {
        return Kind::OtherControl;
    }
    let _ = header;
    match sink
        .records
        .first()
        .map(|r| parse_control(r.key.as_deref(), r.value.as_deref()))
    {
        Some(Ok(c)) if c.is_abort() => Kind::Abort,
        Some(Ok(c)) if c.is_commit() => Kind::Commit,
        _ => Kind::OtherControl,
    }
}

/// The hidden batches of `data` (from byte `start`) under read_committed.
/// `explicit` is an aborted list from a Fetch response or `.txnindex` files.
/// `hide_open`: whether transactions with no marker in the data are hidden
/// (past the last stable offset) or left to `explicit` to judge.
pub fn hidden_batches(
    data: &[u8],
    start: usize,
    explicit: Option<&[AbortedTxn]>,
    hide_open: bool,
    options: &DecodeOptions,
) -> Hidden {
    let entries = classify(data, start, options);

    // Source 1: markers. Open transaction per producer: its first offset.
    let mut open: BTreeMap<i64, i64> = BTreeMap::new();
    let mut aborted: Vec<AbortedTxn> = explicit.map(<[AbortedTxn]>::to_vec).unwrap_or_default();
    for e in &entries {
        match e.kind {
            Kind::Transactional => {
                open.entry(e.producer_id).or_insert(e.first_offset);
            }
            Kind::Abort => {
                if let Some(first_offset) = open.remove(&e.producer_id) {
                    aborted.push(AbortedTxn {
                        producer_id: e.producer_id,
                        first_offset,
                    });
                }
            }
            Kind::Commit => {
                open.remove(&e.producer_id);
            }
            Kind::Plain | Kind::OtherControl => {}
        }
    }
    let open: Vec<AbortedTxn> = open
        .into_iter()
        .map(|(producer_id, first_offset)| AbortedTxn {
            producer_id,
            first_offset,
        })
        .collect();
    if hide_open {
        // Past the last stable offset: not visible, as if aborted.
        aborted.extend_from_slice(&open);
    }
    aborted.sort_by_key(|a| (a.first_offset, a.producer_id));
    aborted.dedup();

    // Source 2 and the union: the Java consumer's algorithm.
    let mut positions = HashSet::new();
    let mut next = 0;
    let mut aborted_producers: HashSet<i64> = HashSet::new();
    for e in &entries {
        if matches!(e.kind, Kind::Commit | Kind::Abort | Kind::OtherControl) {
            positions.insert(e.position);
        }
        if e.producer_id < 0 {
            continue;
        }
        while next < aborted.len() && aborted[next].first_offset <= e.last_offset {
            aborted_producers.insert(aborted[next].producer_id);
            next += 1;
        }
        match e.kind {
            Kind::Abort => {
                aborted_producers.remove(&e.producer_id);
            }
            Kind::Transactional if aborted_producers.contains(&e.producer_id) => {
                positions.insert(e.position);
            }
            _ => {}
        }
    }
    Hidden {
        positions,
        aborted,
        open,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{decode, Isolation};

    /// A one-record v2 batch with producer fields, by hand from the spec.
    fn batch(offset: i64, producer_id: i64, transactional: bool, control: Option<i16>) -> Vec<u8> {
        let (key, value): (Vec<u8>, Vec<u8>) = match control {
            Some(t) => ([0i16.to_be_bytes(), t.to_be_bytes()].concat(), vec![0, 0, 0, 0, 0, 0]),
            None => (b"k".to_vec(), format!("v{offset}").into_bytes()),
        };
        let mut body = vec![0u8, 0, 0];
        crate::varint::write_varint(&mut body, key.len() as i32);
        body.extend_from_slice(&key);
        crate::varint::write_varint(&mut body, value.len() as i32);
        body.extend_from_slice(&value);
        body.push(0);
        let mut records = Vec::new();
        crate::varint::write_varint(&mut records, body.len() as i32);
        records.extend_from_slice(&body);
        let attributes: i16 = if transactional { 0x10 } else { 0 } | if control.is_some() { 0x20 } else { 0 };
        let mut b = Vec::new();
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&((49 + records.len()) as i32).to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.push(2);
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&attributes.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&0i64.to_be_bytes());
        b.extend_from_slice(&0i64.to_be_bytes());
        b.extend_from_slice(&producer_id.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&(if producer_id >= 0 { 0i32 } else { -1 }).to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&records);
        let crc = crate::crc::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    const COMMIT: Option<i16> = Some(1);
    const ABORT: Option<i16> = Some(0);

    fn committed_offsets(data: &[u8], explicit: Option<Vec<AbortedTxn>>) -> Vec<i64> {
        let hide_open = explicit.is_none();
        let options = DecodeOptions {
            isolation: Isolation::ReadCommitted {
                aborted: explicit,
                hide_open,
            },
            ..Default::default()
        };
        let out = decode(data, None, None, &options).expect("valid");
        let offsets = out.chunks[0]
            .column(4)
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .expect("int64")
            .values()
            .to_vec();
        offsets
    }

    #[test]
    fn interleaved_producers_commit_abort_and_open() {
        let data = [
            batch(0, 1, true, None),   // P1 txn A
            batch(1, 2, true, None),   // P2 txn B
            batch(2, -1, false, None), // plain
            batch(3, 1, true, None),   // P1 txn A
            batch(4, 1, true, COMMIT), // P1 commits A
            batch(5, 2, true, ABORT),  // P2 aborts B
            batch(6, 2, true, None),   // P2 txn C
            batch(7, 7, false, None),  // idempotent, not transactional
            batch(8, 2, true, COMMIT), // P2 commits C
            batch(9, 1, true, None),   // P1 txn D, still open
        ]
        .concat();
        assert_eq!(committed_offsets(&data, None), vec![0, 2, 3, 6, 7]);
        // With an explicit list, data past the markers is the broker's to judge.
        assert_eq!(committed_offsets(&data, Some(vec![])), vec![0, 2, 3, 6, 7, 9]);
        let read_uncommitted = decode(&data, None, None, &DecodeOptions::default()).expect("valid");
        assert_eq!(read_uncommitted.records, 7);
    }

    #[test]
    fn explicit_lists_apply_unsorted_and_without_markers() {
        // No markers at all (a fetch response cut before them).
        let data = [
            batch(10, 1, true, None),
            batch(11, 2, true, None),
            batch(12, 1, true, None),
            batch(13, 3, true, None),
        ]
        .concat();
        let list = vec![
            AbortedTxn {
                producer_id: 3,
                first_offset: 13,
            },
            AbortedTxn {
                producer_id: 1,
                first_offset: 10,
            },
        ];
        assert_eq!(committed_offsets(&data, Some(list)), vec![11]);
    }

    #[test]
    fn abort_marker_closes_the_aborted_transaction() {
        let data = [
            batch(0, 1, true, None),
            batch(1, 1, true, ABORT),
            batch(2, 1, true, None), // a new transaction, committed
            batch(3, 1, true, COMMIT),
        ]
        .concat();
        let list = vec![AbortedTxn {
            producer_id: 1,
            first_offset: 0,
        }];
        assert_eq!(committed_offsets(&data, Some(list)), vec![2]);
        assert_eq!(committed_offsets(&data, None), vec![2]);
    }
}
