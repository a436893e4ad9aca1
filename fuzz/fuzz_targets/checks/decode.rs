//! `kafkabatch::decode` on arbitrary buffers, in raise and skip modes and
//! under read_committed.
//!
//! Input: one selector byte, then the buffer. Selector bits: 0 validate CRCs
//! (off by default so mutations get past the checksum into the records),
//! 1 include control records, 2 a 1 MiB instead of a 64 KiB decompression
//! cap, 3 read_committed with hide_open, 4 read_committed with an explicit
//! aborted list derived from the input.
//!
//! Invariants, against a reference built by decoding each framed batch on
//! its own:
//! - nothing panics;
//! - raise mode gives exactly the rows of every batch when all decode, else
//!   the first failing batch's error, located at that batch;
//! - skip mode gives exactly the rows of the batches that decode on their
//!   own, one skipped entry per other batch, and the same walk end;
//! - read_committed rows are a subsequence of read_uncommitted rows;
//! - output cut into small chunks, each through a step, has the same rows.

use super::{check_located, is_subsequence, rows};
use kafkabatch::batch::{BatchWalker, WalkEnd};
use kafkabatch::decode::{decode_range, decode_range_views, ChunkStep};
use kafkabatch::txn::AbortedTxn;
use kafkabatch::{decode, DecodeOptions, ErrorKind, Isolation, OnError};

/// Run the checks on one input; panics on a violation.
pub fn check(input: &[u8]) {
    let Some((&sel, data)) = input.split_first() else {
        // The empty buffer: a clean walk, no rows.
        let out = decode(&[], None, None, &DecodeOptions::default()).expect("empty input decodes");
        assert_eq!((out.records, out.end), (0, WalkEnd::Clean));
        return;
    };
    let base = DecodeOptions {
        validate_crc: sel & 1 != 0,
        include_control: sel & 2 != 0,
        on_error: OnError::Raise,
        max_decompressed_size: if sel & 4 != 0 { super::LIMIT } else { 64 << 10 },
        isolation: Isolation::ReadUncommitted,
        threads: 1,
    };

    // Reference: each batch alone.
    let mut expected = Vec::new();
    let mut failed = Vec::new();
    let mut walker = BatchWalker::new(data);
    for raw in walker.by_ref() {
        match decode(raw.bytes, None, None, &base) {
            Ok(alone) => {
                assert_eq!(alone.end, WalkEnd::Clean, "one framed batch walks cleanly");
                assert_eq!(alone.batches, 1);
                expected.extend(rows(&alone));
            }
            Err(e) => {
                check_located(&e, 0);
                failed.push((raw.position, e));
            }
        }
    }
    let end = walker.end().cloned().expect("the walk ended");

    // Raise mode.
    match (decode(data, Some("t"), Some(3), &base), failed.first()) {
        (Ok(out), None) => {
            assert!(!matches!(end, WalkEnd::Broken(_)), "raise mode accepted broken framing");
            assert_eq!(out.end, end);
            assert!(out.skipped.is_empty());
            assert!(
                rows(&out) == expected,
                "raise mode rows differ from the batches decoded alone"
            );
        }
        (Err(e), None) => match &end {
            WalkEnd::Broken(b) => assert_eq!(&e, b, "raise mode error is not the broken framing"),
            _ => panic!("raise mode failed ({e}) although every batch decodes alone"),
        },
        (Err(e), Some((position, alone))) => {
            check_located(&e, *position);
            assert_eq!((e.kind, e.in_payload), (alone.kind, alone.in_payload), "{e} vs {alone}");
            // A codec's own message may name a different symptom of the same
            // damage from one call to the next (zstd reuses a per-thread
            // context whose buffers keep the size of earlier frames, so a
            // corrupt block is "too large for the destination" or "corrupt");
            // every other reason is ours and must be identical.
            if e.kind != ErrorKind::Decompression {
                assert_eq!(e.reason, alone.reason);
            }
            let shift = if e.in_payload { 0 } else { *position };
            assert_eq!(
                e.byte_position,
                alone.byte_position + shift,
                "field position moved: {e}"
            );
        }
        (Ok(_), Some((position, e))) => panic!("raise mode accepted the batch at {position}, which fails alone: {e}"),
    }

    // Skip mode.
    let skip_options = DecodeOptions {
        on_error: OnError::Skip,
        ..base.clone()
    };
    let skip = decode(data, None, None, &skip_options).expect("skip mode never fails");
    assert_eq!(skip.end, end);
    assert_eq!(skip.skipped.len(), failed.len());
    for (e, (position, _)) in skip.skipped.iter().zip(&failed) {
        check_located(e, *position);
    }
    let skip_rows = rows(&skip);
    assert!(
        skip_rows == expected,
        "skip mode rows differ from the good batches decoded alone"
    );

    // binary_view output: the same rows and account, keys and values seen
    // through views into the input (or copied out of decompressed payloads).
    let input = arrow_buffer::Buffer::from_vec(data.to_vec());
    let viewed =
        decode_range_views(&input, 0, input.len(), None, None, &skip_options, None).expect("skip mode never fails");
    assert_eq!(
        (viewed.end.clone(), viewed.skipped.len(), viewed.batches),
        (skip.end.clone(), skip.skipped.len(), skip.batches)
    );
    assert!(rows(&viewed) == skip_rows, "binary_view rows differ from binary rows");

    // Chunks cut small and each handed to a step (as values parsed while
    // decoding are): the same rows and account, every chunk seen once.
    let seen = std::sync::atomic::AtomicUsize::new(0);
    let count = |chunk: arrow_array::RecordBatch| {
        seen.fetch_add(chunk.num_rows(), std::sync::atomic::Ordering::Relaxed);
        chunk
    };
    let step = ChunkStep {
        chunk_bytes: 4096,
        apply: &count,
    };
    let stepped =
        decode_range(data, 0, data.len(), None, None, &skip_options, Some(&step)).expect("skip mode never fails");
    assert_eq!(
        (stepped.end.clone(), stepped.skipped.len(), stepped.batches),
        (skip.end.clone(), skip.skipped.len(), skip.batches)
    );
    assert!(rows(&stepped) == skip_rows, "rows cut into stepped chunks differ");
    assert_eq!(
        seen.into_inner(),
        skip_rows.len(),
        "every chunk goes through the step once"
    );

    // read_committed: whole batches are hidden, nothing is added.
    if sel & 0x18 != 0 {
        let aborted = (sel & 0x10 != 0).then(|| {
            data.chunks(16)
                .take(8)
                .map(|c| AbortedTxn {
                    producer_id: i64::from(c.first().copied().unwrap_or(0) % 4),
                    first_offset: i64::from(c.last().copied().unwrap_or(0)),
                })
                .collect()
        });
        let isolation = Isolation::ReadCommitted {
            aborted,
            hide_open: sel & 0x08 != 0,
        };
        let committed = decode(
            data,
            None,
            None,
            &DecodeOptions {
                isolation,
                ..skip_options
            },
        )
        .expect("skip mode never fails");
        let committed_rows = rows(&committed);
        assert!(
            is_subsequence(&committed_rows, &skip_rows),
            "read_committed shows rows read_uncommitted does not"
        );
        assert_eq!(
            committed.batches + committed.hidden_batches + committed.skipped.len(),
            skip.batches + skip.skipped.len()
        );
    }
}
