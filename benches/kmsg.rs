//! Kafka's internal topics as typed tables: a generated `__consumer_offsets`
//! partition of 1 M offset commits (OffsetCommitKey v1 + OffsetCommitValue
//! v3, as brokers since Kafka 2.1 write them; 50 groups x 20 topics x 32
//! partitions), written with the message-definition encoder and
//! `kafkabatch::encode` in lz4 batches of 1,000 records.
//!
//! - `plain`: `kafkabatch::decode` of the segment (key/value columns), one thread;
//! - `typed`: the same decode, then `kmsg::decode_internal` of every chunk's
//!   key/value columns into the typed table (record type, versions, the
//!   `offset_commit` struct of key and value), one thread;
//! - `definitions_only`: `decode_internal` alone on already decoded columns.
//!
//! Run with `cargo bench --bench kmsg`.

use std::hint::black_box;
use std::time::Duration;

use arrow_array::{Array, BinaryArray, RecordBatch};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafkabatch::encode::{encode, EncodeOptions, RecordRef};
use kafkabatch::kmsg::write::{coordinator_key, coordinator_value};
use kafkabatch::kmsg::{decode_internal, Definitions, Kind};
use kafkabatch::{Codec, DecodeOptions};
use serde_json::json;

const RECORDS: usize = 1_000_000;

fn segment(defs: &Definitions) -> Vec<u8> {
    let reg = &defs.reg;
    let key_msg = reg.message("OffsetCommitKey").expect("shipped");
    let value_msg = reg.message("OffsetCommitValue").expect("shipped");
    let mut keys = Vec::with_capacity(50 * 20 * 32);
    for g in 0..50 {
        for t in 0..20 {
            for p in 0..32 {
                let key = json!({"group": format!("consumer-group-{g}"), "topic": format!("orders.events.{t}"), "partition": p});
                keys.push(coordinator_key(reg, key_msg, 1, &key).expect("encodes"));
            }
        }
    }
    let base_ts = 1_700_000_000_000i64;
    let values: Vec<Vec<u8>> = (0..RECORDS)
        .map(|i| {
            let v = json!({"offset": (i as i64) * 37 + 1_000_000, "leaderEpoch": 7, "metadata": "",
                "commitTimestamp": base_ts + i as i64});
            coordinator_value(reg, value_msg, 3, &v).expect("encodes")
        })
        .collect();
    let records: Vec<RecordRef<'_>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| RecordRef::new(Some(&keys[(i * 7919) % keys.len()]), Some(v), base_ts + i as i64))
        .collect();
    let opts = EncodeOptions {
        codec: Codec::Lz4,
        records_per_batch: Some(1_000),
        ..EncodeOptions::default()
    };
    let mut out = Vec::new();
    encode(&records, &opts, &mut out).expect("encodes");
    out
}

fn plain(data: &[u8]) -> Vec<RecordBatch> {
    let opts = DecodeOptions {
        threads: 1,
        ..DecodeOptions::default()
    };
    kafkabatch::decode(data, Some("__consumer_offsets"), Some(0), &opts)
        .expect("decodes")
        .chunks
}

fn typed(defs: &Definitions, chunks: &[RecordBatch]) -> usize {
    let mut rows = 0;
    for chunk in chunks {
        // The key and value columns read in place, as the Python binding does.
        let k = chunk
            .column(0)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .expect("binary keys");
        let v = chunk
            .column(1)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .expect("binary values");
        let table = decode_internal(defs, Kind::ConsumerOffsets, k, v, None, false);
        rows += table.num_rows();
        black_box(table);
    }
    rows
}

fn bench(c: &mut Criterion) {
    let defs = Definitions::builtin();
    let data = segment(&defs);
    let decoded = plain(&data);
    // The typed table is right: every row an OffsetCommit, no errors.
    let check = {
        let k = decoded[0]
            .column(0)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .expect("binary");
        let v = decoded[0]
            .column(1)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .expect("binary");
        decode_internal(&defs, Kind::ConsumerOffsets, k, v, None, false)
    };
    assert_eq!(
        check.column_by_name("error").expect("error").null_count(),
        check.num_rows()
    );
    assert_eq!(check.column_by_name("offset_commit").expect("column").null_count(), 0);
    assert_eq!(typed(&defs, &decoded), RECORDS);

    let mut g = c.benchmark_group("kmsg_consumer_offsets_1M_lz4");
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(8));
    g.throughput(Throughput::Elements(RECORDS as u64));
    g.bench_function("plain", |b| b.iter(|| black_box(plain(&data)).len()));
    g.bench_function("typed", |b| b.iter(|| typed(&defs, &plain(&data))));
    g.bench_function("definitions_only", |b| b.iter(|| typed(&defs, &decoded)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
