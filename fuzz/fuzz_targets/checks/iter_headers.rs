//! The batch iterator's path: `BatchWalker` plus `decode_batch` with no sink
//! (headers only), as `iter_batches` runs it, then with a sink.
//!
//! Input: one selector byte (bit 0 validate CRCs, bit 1 include control),
//! then the buffer. Invariants: no panics; batches tile the input from 0 up to
//! `valid_bytes`; a header-only pass fails exactly when the full decode fails
//! for a reason the header pass can see, and agrees with it otherwise; errors
//! name their batch; a decoded batch holds its declared record count.
//! Pruning by header (`prune::kept_ranges`, bounds from selector bits 2-4)
//! accounts for every byte and never leaves out a batch that decodes to a
//! record in the bounds, unless its records contradict its own header. The read_committed pre-pass step
//! (`decode::transaction_pass`) runs on the same bytes without panicking,
//! and ends only transactions it saw open.

use super::check_located;
use kafkabatch::batch::{valid_bytes, BatchWalker, WalkEnd, LOG_OVERHEAD, MIN_SIZE};
use kafkabatch::decode::{decode_batch, transaction_pass};
use kafkabatch::prune::{kept_ranges, HeaderBounds};
use kafkabatch::record::OwnedRecords;
use kafkabatch::{DecodeOptions, ErrorKind};

/// Run the checks on one input; panics on a violation.
pub fn check(input: &[u8]) {
    let Some((&sel, data)) = input.split_first() else {
        return;
    };
    let options = DecodeOptions {
        validate_crc: sel & 1 != 0,
        include_control: sel & 2 != 0,
        max_decompressed_size: super::LIMIT,
        ..Default::default()
    };
    let bounds = HeaderBounds {
        start_offset: (sel & 4 != 0).then_some(3),
        end_offset: (sel & 8 != 0).then_some(40),
        start_ts_us: (sel & 16 != 0).then_some(1_000_000),
        end_ts_us: (sel & 16 != 0).then_some(2_000_000_000),
    };
    let (kept, skipped) = kept_ranges(data, &bounds, sel & 2 != 0);
    let kept_bytes: usize = kept.iter().map(|(a, b)| b - a).sum();
    assert_eq!(kept_bytes + skipped, data.len(), "pruning lost track of bytes");
    assert!(kept.windows(2).all(|w| w[0].1 < w[1].0), "kept ranges overlap or touch");
    let in_bounds = |offset: i64, timestamp: i64| {
        let us = timestamp.saturating_mul(1000);
        bounds.start_offset.is_none_or(|s| offset >= s)
            && bounds.end_offset.is_none_or(|e| offset < e)
            && bounds.start_ts_us.is_none_or(|s| us >= s)
            && bounds.end_ts_us.is_none_or(|e| us < e)
    };
    let mut open = std::collections::BTreeMap::from([(7i64, 0i64)]);
    let ended = transaction_pass(data, &mut open, bounds.start_offset, bounds.end_offset, &options);
    let mut seen_open = std::collections::BTreeSet::from([7i64]);
    for raw in BatchWalker::new(data) {
        if raw.bytes.len() >= 61 && raw.magic() == 2 {
            seen_open.insert(kafkabatch::batch::be_i64(raw.bytes, 43));
        }
    }
    assert!(ended.iter().all(|t| seen_open.contains(&t.producer_id)));
    let mut scratch = Vec::new();
    let mut walker = BatchWalker::new(data);
    let mut next = 0;
    for raw in walker.by_ref() {
        assert_eq!(raw.position, next, "batches do not tile the input");
        assert!(raw.bytes.len() >= LOG_OVERHEAD + MIN_SIZE);
        assert!(std::ptr::eq(
            raw.bytes,
            &data[raw.position..raw.position + raw.bytes.len()]
        ));
        next = raw.position + raw.bytes.len();

        let header = decode_batch::<OwnedRecords>(&raw, &options, &mut scratch, None);
        let mut sink = OwnedRecords::default();
        let full = decode_batch(&raw, &options, &mut scratch, Some(&mut sink));
        match (&header, &full) {
            (Ok(h), Ok(f)) => {
                assert_eq!(h, f, "header-only and full decode disagree on the header");
                assert_eq!(h.position, raw.position);
                assert_eq!(h.size_in_bytes, raw.bytes.len());
                let delivered = if h.is_control && !options.include_control {
                    0
                } else {
                    h.record_count as usize
                };
                assert_eq!(
                    sink.records.len(),
                    delivered,
                    "decoded count differs from the declared count"
                );
                // Headers are what pruning trusts (brokers set maxTimestamp and
                // assign the offsets); a batch whose records contradict its own
                // header may be pruned by what the header says.
                let truthful = sink
                    .records
                    .iter()
                    .all(|r| (h.base_offset..=h.last_offset).contains(&r.offset) && r.timestamp <= h.max_timestamp);
                if truthful && sink.records.iter().any(|r| in_bounds(r.offset, r.timestamp)) {
                    assert!(
                        kept.iter().any(|&(a, b)| a <= raw.position && raw.position < b),
                        "pruned a batch holding a record in the bounds"
                    );
                }
            }
            (Ok(_), Err(e)) => {
                // Only what the header pass does not read can fail: records.
                check_located(e, raw.position);
            }
            (Err(e), Err(f)) => {
                check_located(e, raw.position);
                // Codec messages may differ between calls (see checks/decode.rs).
                assert_eq!(
                    (e.kind, e.byte_position, e.in_payload),
                    (f.kind, f.byte_position, f.in_payload),
                    "{e} vs {f}"
                );
                if e.kind != ErrorKind::Decompression {
                    assert_eq!(e, f, "the header-only and full decode fail differently");
                }
            }
            (Err(e), Ok(_)) => panic!("the header pass failed ({e}) but the full decode succeeded"),
        }
    }
    assert_eq!(valid_bytes(data), walker.position());
    match walker.end().expect("the walk ended") {
        WalkEnd::Clean => assert_eq!(next, data.len()),
        WalkEnd::Truncated { position, len } => {
            assert_eq!((*position, position + len), (next, data.len()));
            assert!(*len > 0);
        }
        WalkEnd::Broken(e) => {
            assert_eq!(e.batch_position, next);
            check_located(e, next);
        }
    }
}
