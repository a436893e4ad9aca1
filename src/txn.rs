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

use crate::batch::{parse_v2_header, BatchWalker, RawBatch, TRANSACTIONAL_BIT};
use crate::control::parse_control;
use crate::prune::BatchFacts;
use crate::record::OwnedRecord;

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
/// first record, from `read_control`). Batches that cannot be read are left
/// to the decode pass, which reports them.
fn classify(data: &[u8], start: usize, read_control: &mut impl FnMut(&RawBatch) -> Option<OwnedRecord>) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut walker = BatchWalker::starting_at(data, start);
    for raw in walker.by_ref() {
        if raw.magic() != 2 {
            continue;
        }
        let Ok(header) = parse_v2_header(&raw) else { continue };
        let kind = if header.is_control {
            control_kind(read_control(&raw))
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

/// What a control batch whose first record is `first` marks (`None`: the
/// batch could not be read or holds no record).
fn control_kind(first: Option<OwnedRecord>) -> Kind {
    match first.map(|r| parse_control(r.key.as_deref(), r.value.as_deref())) {
        Some(Ok(c)) if c.is_abort() => Kind::Abort,
        Some(Ok(c)) if c.is_commit() => Kind::Commit,
        _ => Kind::OtherControl,
    }
}

/// The hidden batches of `data` (from byte `start`) under read_committed.
/// `explicit` is an aborted list from a Fetch response or `.txnindex` files.
/// `hide_open`: whether transactions with no marker in the data are hidden
/// (past the last stable offset) or left to `explicit` to judge.
/// `read_control` reads a control batch's first record (`None` when the
/// batch cannot be read): this module looks at headers only and leaves
/// record decoding to its caller (the decoder, which also checks sizes).
pub fn hidden_batches(
    data: &[u8],
    start: usize,
    explicit: Option<&[AbortedTxn]>,
    hide_open: bool,
    mut read_control: impl FnMut(&RawBatch) -> Option<OwnedRecord>,
) -> Hidden {
    let entries = classify(data, start, &mut read_control);

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

/// A transaction a marker ended with ABORT: producer, first offset, and the
/// marker's offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub marker_offset: i64,
}

/// One step of the read_committed pre-pass over a partition read in pieces
/// (a window, a Spark task): walk the headers of `data`, starting with the
/// transactions `open` (producer id → first offset) that earlier pieces
/// left open, and return the transactions that an ABORT marker here ends;
/// `open` is updated. Batches ending before `start_offset` were seen in an
/// earlier segment; the walk stops at the first batch from `end_offset` on
/// (left to a later one). Only transactional v2 batches count. A COMMIT
/// marker closes its producer's open transaction and an ABORT marker aborts
/// it (`read_control` gives the control batch's first record); a marker that
/// can't be read leaves it open, so its records stay hidden rather than
/// shown by mistake.
pub fn transaction_pass(
    data: &[u8],
    open: &mut BTreeMap<i64, i64>,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    read_control: impl FnMut(&RawBatch) -> Option<OwnedRecord>,
) -> Vec<EndedTxn> {
    let batches = BatchWalker::new(data).map(|raw| (BatchFacts::read(&raw, None), raw));
    transaction_pass_over(batches, open, start_offset, end_offset, read_control)
}

/// [`transaction_pass`] over batches already walked (their header facts and
/// bytes, in log order), e.g. from one walk of a file
/// (`crate::scan::walk::Walk::transaction_pass`).
pub fn transaction_pass_over<'a>(
    batches: impl IntoIterator<Item = (BatchFacts, RawBatch<'a>)>,
    open: &mut BTreeMap<i64, i64>,
    start_offset: Option<i64>,
    end_offset: Option<i64>,
    mut read_control: impl FnMut(&RawBatch) -> Option<OwnedRecord>,
) -> Vec<EndedTxn> {
    let mut ended = Vec::new();
    for (f, raw) in batches {
        // only whole transactional v2 headers count (what `parse_v2_header` takes)
        if f.magic != 2 || !f.header_ok || f.attributes & TRANSACTIONAL_BIT == 0 {
            continue;
        }
        if start_offset.is_some_and(|s| f.last_offset < s) {
            continue;
        }
        if end_offset.is_some_and(|e| f.base_offset >= e) {
            break;
        }
        if f.is_control() {
            match control_kind(read_control(&raw)) {
                Kind::Abort => {
                    if let Some(first_offset) = open.remove(&f.producer_id) {
                        ended.push(EndedTxn {
                            producer_id: f.producer_id,
                            first_offset,
                            marker_offset: f.base_offset,
                        });
                    }
                }
                Kind::Commit => {
                    open.remove(&f.producer_id);
                }
                // Unreadable: the transaction stays open, so its records stay
                // hidden (the decode pass reports the batch).
                _ => {}
            }
        } else {
            open.entry(f.producer_id).or_insert(f.base_offset);
        }
    }
    ended
}
