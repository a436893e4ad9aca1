//! The `kmsg` target: Kafka's internal-topic records read with the shipped
//! message definitions (`kafkabatch::kmsg`), and user definitions loaded.
//!
//! Input: byte 0 picks the topic (low 3 bits, mod 5), bit 3 turns the JSON
//! column on and bit 7 makes the rest a user definition file instead; then
//! records, each `flags` (bit 0 control, bit 1 null key, bit 2 null value),
//! a one-byte key length and key, a two-byte big-endian value length and
//! value (cut short at the end of the input).
//!
//! Invariants: no panic; one row per record; a row either has an error and
//! a null in every record-type column, or no error and exactly one
//! record-type column set; each row decodes alike alone and among the others
//! (a failing row leaves nothing behind); a definition file either loads or
//! is refused, and a loaded one decodes without panicking.

use arrow_array::{Array, RecordBatch};
use kafkabatch::kmsg::{decode_internal, Definitions, Kind};

const FIXED: [&str; 5] = [
    "record_type",
    "record_type_id",
    "key_version",
    "value_version",
    "tombstone",
];

type Record<'a> = (Option<&'a [u8]>, Option<&'a [u8]>, bool);

pub fn records(mut rest: &[u8]) -> Vec<Record<'_>> {
    let mut out = Vec::new();
    while let Some((&flags, tail)) = rest.split_first() {
        let Some((&klen, tail)) = tail.split_first() else { break };
        let k = &tail[..(klen as usize).min(tail.len())];
        let tail = &tail[k.len()..];
        let vlen = match tail {
            [a, b, ..] => u16::from_be_bytes([*a, *b]) as usize,
            _ => 0,
        };
        let tail = &tail[tail.len().min(2)..];
        let v = &tail[..vlen.min(tail.len())];
        rest = &tail[v.len()..];
        out.push((
            (flags & 2 == 0).then_some(k),
            (flags & 4 == 0).then_some(v),
            flags & 1 == 1,
        ));
    }
    out
}

fn decode(defs: &Definitions, kind: Kind, recs: &[Record<'_>], json: bool) -> RecordBatch {
    let keys: Vec<_> = recs.iter().map(|r| r.0).collect();
    let values: Vec<_> = recs.iter().map(|r| r.1).collect();
    let control: Vec<_> = recs.iter().map(|r| r.2).collect();
    decode_internal(defs, kind, &keys, &values, Some(&control), json)
}

fn check_rows(batch: &RecordBatch, n: usize) {
    assert_eq!(batch.num_rows(), n, "one row per record");
    let error = batch.column_by_name("error").expect("error column");
    let schema = batch.schema();
    let typed: Vec<usize> = (0..batch.num_columns())
        .filter(|&i| {
            let name = schema.field(i).name();
            !FIXED.contains(&name.as_str()) && name != "error" && name != "json"
        })
        .collect();
    for row in 0..n {
        let set = typed.iter().filter(|&&i| batch.column(i).is_valid(row)).count();
        if error.is_valid(row) {
            assert_eq!(set, 0, "row {row} failed but a record-type column is set");
        } else {
            assert!(set <= 1, "row {row}: {set} record-type columns set");
        }
    }
}

pub fn check(input: &[u8]) {
    let Some((&head, rest)) = input.split_first() else {
        return;
    };
    let builtin = Definitions::builtin();
    if head & 0x80 != 0 {
        let mut defs = builtin.clone();
        if let Ok(text) = std::str::from_utf8(rest) {
            if defs.add(text).is_ok() {
                for kind in Kind::TOPICS {
                    let batch = decode(&defs, kind, &[(Some(&[0, 0]), Some(&[0, 0, 0]), false)], true);
                    check_rows(&batch, 1);
                }
            }
        }
        return;
    }
    let kind = Kind::TOPICS[(head & 7) as usize % Kind::TOPICS.len()];
    let json = head & 8 != 0;
    let recs = records(rest);
    let all = decode(&builtin, kind, &recs, json);
    check_rows(&all, recs.len());
    for (i, rec) in recs.iter().enumerate().take(8) {
        let alone = decode(&builtin, kind, std::slice::from_ref(rec), json);
        check_rows(&alone, 1);
        let among = all.slice(i, 1);
        for c in 0..alone.num_columns() {
            assert_eq!(
                alone.column(c).as_ref(),
                among.column(c).as_ref(),
                "row {i}, column {}: alone and among others differ",
                alone.schema().field(c).name()
            );
        }
    }
}
