//! Decode benchmarks: primitives (varint, CRC32-C, memcpy), each
//! codec's decompression (through `kafkabatch::compression` and through the
//! raw crate as the floor), and `kafkabatch::decode` against the
//! `kafka-protocol` crate's `RecordBatchDecoder` on the same batches.
//!
//! Run with `cargo bench --bench decode` (or `make bench`); filter with
//! `cargo bench --bench decode -- decode_v2/none_100B`. See benches/README.md.
//!
//! Input is built with `kafkabatch::encode` in the shape a Java producer
//! (Kafka >= 3.0: idempotent by default) writes: 1,000 records a batch, a
//! producer id/epoch/base sequence, CreateTime timestamps a few ms apart,
//! xerial-framed snappy in 32 KiB blocks, Kafka's lz4 frame in 64 KiB
//! blocks, zstd streamed without a content size (as zstd-jni's
//! `ZstdOutputStream` writes it), gzip at level 6. The records come from the
//! same deterministic generator as `benches/bench_decode.py`, which checks
//! that aiokafka's `DefaultRecordBatchBuilder` writes byte-identical
//! uncompressed batches (the files land in `target/bench-data/`).
//!
//! `kafkabatch_no_columns` / `kafkabatch_offset_only`: the same decode
//! building no column (a `count()`) or the `offset` column only.
//!
//! Throughput: decode groups report records/s and *decompressed* record
//! bytes/s (the same byte count for a codec's decompression and for decoding
//! its batches, so the two compare directly).

use std::hint::black_box;
use std::io::{Read, Write};
use std::time::Duration;

use bytes::Bytes;
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode, Throughput};
use kafka_protocol::records::RecordBatchDecoder;
use kafkabatch::arrow_out::Columns;
use kafkabatch::batch::{BatchWalker, V2_ATTRIBUTES_OFFSET, V2_CRC_OFFSET, V2_HEADER_SIZE};
use kafkabatch::compression::{self, Codec, CompressOptions};
use kafkabatch::encode::{encode, EncodeOptions, HeaderRef, RecordRef};
use kafkabatch::varint::read_varint;
use kafkabatch::DecodeOptions;

const RECORDS_PER_BATCH: usize = 1_000;
const LIMIT: usize = kafkabatch::decode::DEFAULT_MAX_DECOMPRESSED_SIZE;

// ---------------------------------------------------------------------------
// Data: the generator shared with bench_decode.py (keep the two in step).

/// A 64-bit LCG (Knuth's MMIX constants); `next` gives its top 31 bits.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

const WORDS: [&str; 16] = [
    "kafka",
    "record",
    "batch",
    "offset",
    "topic",
    "partition",
    "consumer",
    "producer",
    "broker",
    "leader",
    "replica",
    "segment",
    "index",
    "commit",
    "fetch",
    "stream",
];
const EVENTS: [&str; 4] = ["click", "view", "purchase", "signup"];
const BASE_TS: i64 = 1_700_000_000_000;

/// One record: a `user-NNNNN` key, a JSON-ish value of exactly `value_size`
/// bytes, and (with `headers`) a trace-id and a content-type header.
struct OwnedRecord {
    key: Vec<u8>,
    value: Vec<u8>,
    timestamp: i64,
    trace: String,
}

fn records(n: usize, value_size: usize, seed: u64) -> Vec<OwnedRecord> {
    let mut rng = Lcg(seed);
    (0..n)
        .map(|i| {
            let key = format!("user-{:05}", rng.next() % 50_000).into_bytes();
            let mut v = format!(
                "{{\"id\":{i},\"event\":\"{}\",\"amount\":{}.{:02},\"tags\":\"",
                EVENTS[(rng.next() % 4) as usize],
                rng.next() % 1000,
                rng.next() % 100
            );
            while v.len() < value_size {
                v.push_str(WORDS[(rng.next() % 16) as usize]);
                v.push(' ');
            }
            let mut value = v.into_bytes();
            value.truncate(value_size);
            let trace = format!("{:08x}{:08x}", rng.next(), rng.next());
            OwnedRecord {
                key,
                value,
                timestamp: BASE_TS + (i / 4) as i64,
                trace,
            }
        })
        .collect()
}

/// Encode `recs` as v2 batches of 1,000, the way a Java producer lays them out.
fn batches(recs: &[OwnedRecord], headers: bool, codec: Codec) -> Vec<u8> {
    let header_sets: Vec<[HeaderRef<'_>; 2]> = recs
        .iter()
        .map(|r| {
            [
                ("trace-id", Some(r.trace.as_bytes())),
                ("content-type", Some(&b"application/json"[..])),
            ]
        })
        .collect();
    let refs: Vec<RecordRef<'_>> = recs
        .iter()
        .zip(&header_sets)
        .map(|(r, h)| RecordRef {
            key: Some(&r.key),
            value: Some(&r.value),
            timestamp: r.timestamp,
            headers: if headers { &h[..] } else { &[] },
        })
        .collect();
    let opts = EncodeOptions {
        codec,
        compress: CompressOptions {
            level: None,
            snappy_xerial: true,
        },
        records_per_batch: Some(RECORDS_PER_BATCH),
        producer_id: 4242,
        producer_epoch: 0,
        base_sequence: 0,
        ..EncodeOptions::default()
    };
    let mut out = Vec::new();
    encode(&refs, &opts, &mut out).expect("encodable");
    if codec == Codec::Zstd {
        out = zstd_as_java(&out);
    }
    out
}

/// Re-compress each batch's zstd payload as a stream without a content size,
/// fed 16 KiB at a time (Kafka's `ZstdFactory`: a 16 KiB `BufferedOutputStream`
/// over zstd-jni's `ZstdOutputStream`, level 3), and fix length and CRC.
fn zstd_as_java(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut plain = Vec::new();
    for raw in BatchWalker::new(data) {
        compression::decompress(Codec::Zstd, &raw.bytes[V2_HEADER_SIZE..], 2, LIMIT, &mut plain).expect("zstd");
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).expect("zstd encoder");
        for chunk in plain.chunks(16 << 10) {
            enc.write_all(chunk).expect("zstd write");
        }
        let payload = enc.finish().expect("zstd finish");
        out.extend_from_slice(&rewrap(raw.bytes, &payload));
    }
    out
}

/// `batch` with its payload replaced: length and CRC recomputed.
fn rewrap(batch: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut b = batch[..V2_HEADER_SIZE].to_vec();
    b.extend_from_slice(payload);
    let size = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&size.to_be_bytes());
    let crc = kafkabatch::crc::crc32c(&b[V2_ATTRIBUTES_OFFSET..]);
    b[V2_CRC_OFFSET..V2_CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

/// The records sections (uncompressed) of every batch of `data`.
fn plain_payloads(data: &[u8]) -> Vec<Vec<u8>> {
    BatchWalker::new(data)
        .map(|raw| {
            let codec = Codec::from_id(raw.bytes[V2_ATTRIBUTES_OFFSET + 1] & 7).expect("codec");
            let mut out = Vec::new();
            compression::decompress(codec, &raw.bytes[V2_HEADER_SIZE..], 2, LIMIT, &mut out).expect("payload");
            out
        })
        .collect()
}

fn payloads(data: &[u8]) -> Vec<&[u8]> {
    BatchWalker::new(data).map(|raw| &raw.bytes[V2_HEADER_SIZE..]).collect()
}

/// Spot-check the layout against Kafka's `DefaultRecordBatch` /
/// `DefaultRecord.writeTo` (what a Java producer writes), by hand.
fn check_java_shape(data: &[u8], recs: &[OwnedRecord], headers: bool) {
    let raw = BatchWalker::new(data).next().expect("a batch");
    let b = raw.bytes;
    assert_eq!(b[16], 2, "magic");
    assert_eq!(
        i32::from_be_bytes(b[23..27].try_into().unwrap()),
        RECORDS_PER_BATCH as i32 - 1,
        "lastOffsetDelta"
    );
    assert_eq!(
        i64::from_be_bytes(b[27..35].try_into().unwrap()),
        recs[0].timestamp,
        "baseTimestamp"
    );
    let max = recs[..RECORDS_PER_BATCH].iter().map(|r| r.timestamp).max().unwrap();
    assert_eq!(i64::from_be_bytes(b[35..43].try_into().unwrap()), max, "maxTimestamp");
    assert_eq!(i64::from_be_bytes(b[43..51].try_into().unwrap()), 4242, "producerId");
    assert_eq!(i32::from_be_bytes(b[53..57].try_into().unwrap()), 0, "baseSequence");
    // DefaultRecord.writeTo for record 0, written out field by field.
    let r = &recs[0];
    let mut body = vec![0u8, 0, 0]; // attributes, timestampDelta 0, offsetDelta 0
    kafkabatch::varint::write_varint(&mut body, r.key.len() as i32);
    body.extend_from_slice(&r.key);
    kafkabatch::varint::write_varint(&mut body, r.value.len() as i32);
    body.extend_from_slice(&r.value);
    if headers {
        body.push(4); // 2 headers
        for (k, v) in [
            ("trace-id", r.trace.as_bytes()),
            ("content-type", &b"application/json"[..]),
        ] {
            kafkabatch::varint::write_varint(&mut body, k.len() as i32);
            body.extend_from_slice(k.as_bytes());
            kafkabatch::varint::write_varint(&mut body, v.len() as i32);
            body.extend_from_slice(v);
        }
    } else {
        body.push(0);
    }
    let mut expect = Vec::new();
    kafkabatch::varint::write_varint(&mut expect, body.len() as i32);
    expect.extend_from_slice(&body);
    assert_eq!(
        &b[V2_HEADER_SIZE..V2_HEADER_SIZE + expect.len()],
        &expect[..],
        "record 0 as DefaultRecord.writeTo"
    );
}

/// Leave the inputs where bench_decode.py compares them with aiokafka's builder.
fn save(name: &str, data: &[u8]) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(name), data);
    }
}

// ---------------------------------------------------------------------------
// Peers

fn opts(threads: usize) -> DecodeOptions {
    DecodeOptions {
        threads,
        ..DecodeOptions::default()
    }
}

fn kafkabatch_decode(data: &[u8], threads: usize) -> usize {
    let out = kafkabatch::decode(data, Some("bench"), Some(0), &opts(threads)).expect("decodes");
    black_box(&out.chunks);
    out.records
}

/// `binary_view` output: keys and values point into the input, as
/// kafka-protocol's `Bytes` do (the input is an Arrow buffer, shared).
fn kafkabatch_decode_views(data: &arrow_buffer::Buffer, threads: usize) -> usize {
    let out = kafkabatch::decode::decode_range_views(data, 0, data.len(), Some("bench"), Some(0), &opts(threads), None)
        .expect("decodes");
    black_box(&out.chunks);
    out.records
}

/// Only `columns` built (a `count()` builds none, a read of `offset` one).
fn kafkabatch_decode_columns(data: &[u8], columns: Columns) -> usize {
    let out =
        kafkabatch::decode::decode_range_columns(data, 0, data.len(), Some("bench"), Some(0), &opts(1), columns, None)
            .expect("decodes");
    black_box(&out.chunks);
    out.records
}

/// kafka-protocol: every batch into a `Vec<Record>` (offset, timestamp,
/// key, value, headers materialised; CRC checked; its own decompression).
fn kafka_protocol_decode(data: &Bytes) -> usize {
    let mut buf = data.clone();
    let sets = RecordBatchDecoder::decode_all(&mut buf).expect("kafka-protocol decodes");
    let n = sets.iter().map(|s| s.records.len()).sum();
    black_box(sets);
    n
}

/// `KAFKABATCH_BENCH_ONLY=decode_v2/none_100B` skips building the inputs of
/// every benchmark group whose name does not contain it (criterion's own
/// filter still runs all setup code), for quick runs under perf or callgrind.
fn wanted(group: &str) -> bool {
    std::env::var("KAFKABATCH_BENCH_ONLY").map_or(true, |only| group.contains(&only) || only.contains(group))
}

fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group.sampling_mode(SamplingMode::Flat);
}

// ---------------------------------------------------------------------------
// Benchmarks

fn primitives(c: &mut Criterion) {
    if !wanted("primitives") {
        return;
    }
    let mut g = c.benchmark_group("primitives");
    configure(&mut g);
    // Varints as records hold them: mostly 1-2 bytes (lengths, deltas,
    // counts), some longer.
    let mut rng = Lcg(7);
    let mut varints = Vec::new();
    let mut count = 0usize;
    while varints.len() < 1 << 20 {
        let v = match rng.next() % 10 {
            0..=4 => (rng.next() % 64) as i32,
            5..=8 => (rng.next() % 8192) as i32,
            _ => (rng.next() as i32) >> (rng.next() % 16),
        };
        kafkabatch::varint::write_varint(&mut varints, v);
        count += 1;
    }
    g.throughput(Throughput::ElementsAndBytes {
        elements: count as u64,
        bytes: varints.len() as u64,
    });
    g.bench_function("varint_decode_1MiB", |b| {
        b.iter(|| {
            let buf = black_box(&varints[..]);
            let (mut pos, mut sum) = (0usize, 0i64);
            while let Some(v) = read_varint(buf, &mut pos) {
                sum = sum.wrapping_add(v as i64);
            }
            sum
        })
    });
    let mib: Vec<u8> = (0..1 << 20).map(|i| (Lcg(i).next() & 0xff) as u8).collect();
    let mut dst = vec![0u8; mib.len()];
    g.throughput(Throughput::Bytes(mib.len() as u64));
    g.bench_function("crc32c_1MiB", |b| b.iter(|| kafkabatch::crc::crc32c(black_box(&mib))));
    g.bench_function("memcpy_1MiB", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&mib));
            black_box(&dst);
        })
    });
    g.finish();
}

fn decode_uncompressed(c: &mut Criterion) {
    // (name, batches, value size, headers)
    // none_100B_small: 20 batches (2.4 MB), small enough that the output
    // columns come from reused heap memory instead of fresh mmap-ed pages,
    // to separate the CPU cost from page faults and DRAM bandwidth.
    let cases = [
        ("none_100B", 400, 100, false),
        ("none_100B_small", 20, 100, false),
        ("none_100B_headers", 400, 100, true),
        ("none_1KB", 50, 1000, false),
    ];
    for (name, nbatches, value_size, headers) in cases {
        if !wanted(&format!("decode_v2/{name}/")) {
            continue;
        }
        let recs = records(nbatches * RECORDS_PER_BATCH, value_size, 42);
        let data = batches(&recs, headers, Codec::None);
        check_java_shape(&data, &recs, headers);
        save(&format!("{name}.bin"), &data);
        drop(recs);
        let n = nbatches * RECORDS_PER_BATCH;
        assert_eq!(kafkabatch_decode(&data, 1), n);
        let bytes = Bytes::from(data.clone());
        assert_eq!(kafka_protocol_decode(&bytes), n);

        let mut g = c.benchmark_group(format!("decode_v2/{name}"));
        configure(&mut g);
        g.throughput(Throughput::ElementsAndBytes {
            elements: n as u64,
            bytes: data.len() as u64,
        });
        g.bench_function("kafkabatch", |b| b.iter(|| kafkabatch_decode(&data, 1)));
        g.bench_function("kafkabatch_2threads", |b| b.iter(|| kafkabatch_decode(&data, 2)));
        let shared = arrow_buffer::Buffer::from(data.clone());
        assert_eq!(kafkabatch_decode_views(&shared, 1), n);
        g.bench_function("kafkabatch_binary_view", |b| {
            b.iter(|| kafkabatch_decode_views(&shared, 1))
        });
        assert_eq!(kafkabatch_decode_columns(&data, Columns::NONE), n);
        g.bench_function("kafkabatch_no_columns", |b| {
            b.iter(|| kafkabatch_decode_columns(&data, Columns::NONE))
        });
        g.bench_function("kafkabatch_offset_only", |b| {
            b.iter(|| kafkabatch_decode_columns(&data, Columns::OFFSET))
        });
        g.bench_function("kafka-protocol", |b| b.iter(|| kafka_protocol_decode(&bytes)));
        let mut dst = vec![0u8; data.len()];
        g.bench_function("limit_memcpy", |b| {
            b.iter(|| {
                dst.copy_from_slice(black_box(&data));
                black_box(&dst);
            })
        });
        g.bench_function("limit_crc32c", |b| b.iter(|| kafkabatch::crc::crc32c(black_box(&data))));
        g.finish();
    }
}

/// The codec crate itself on the same blocks the Kafka framing holds.
enum Floor {
    /// liblz4 (`lz4-sys`) on the blocks (Kafka's lz4 frame holds 64 KiB blocks).
    Lz4(Vec<(Vec<u8>, usize)>),
    /// snap raw blocks (xerial framing holds 32 KiB blocks).
    Snappy(Vec<(Vec<u8>, usize)>),
    /// zstd one-shot decompression of the same frames.
    Zstd,
    /// flate2's GzDecoder on the same members.
    Gzip,
}

fn floor_for(codec: Codec, plain: &[Vec<u8>]) -> Floor {
    match codec {
        Codec::Lz4 => Floor::Lz4(
            plain
                .iter()
                .flat_map(|p| p.chunks(64 << 10))
                .map(|c| (lz4_flex::block::compress(c), c.len()))
                .collect(),
        ),
        Codec::Snappy => Floor::Snappy(
            plain
                .iter()
                .flat_map(|p| p.chunks(32 << 10))
                .map(|c| (snap::raw::Encoder::new().compress_vec(c).expect("snappy"), c.len()))
                .collect(),
        ),
        Codec::Zstd => Floor::Zstd,
        Codec::Gzip => Floor::Gzip,
        Codec::None => unreachable!(),
    }
}

fn run_floor(
    floor: &Floor,
    payloads: &[&[u8]],
    out: &mut Vec<u8>,
    zstd_ctx: &mut zstd::bulk::Decompressor<'_>,
) -> usize {
    let mut total = 0;
    match floor {
        Floor::Lz4(blocks) => {
            out.resize(64 << 10, 0);
            for (block, len) in blocks {
                let (src, dst) = (block.len() as i32, *len as i32);
                // SAFETY: liblz4's safe decoder reads at most `src` bytes of
                // `block` and writes at most `dst` bytes to `out`, which holds 64 KiB.
                let n =
                    unsafe { lz4_sys::LZ4_decompress_safe(block.as_ptr().cast(), out.as_mut_ptr().cast(), src, dst) };
                total += usize::try_from(n).expect("lz4");
            }
        }
        Floor::Snappy(blocks) => {
            out.resize(64 << 10, 0);
            let mut dec = snap::raw::Decoder::new();
            for (block, _) in blocks {
                total += dec.decompress(block, out).expect("snappy");
            }
        }
        Floor::Zstd => {
            for p in payloads {
                out.clear();
                out.reserve(4 << 20);
                total += zstd_ctx.decompress_to_buffer(p, out).expect("zstd");
            }
        }
        Floor::Gzip => {
            for p in payloads {
                out.clear();
                total += flate2::read::GzDecoder::new(*p).read_to_end(out).expect("gzip");
            }
        }
    }
    black_box(&out);
    total
}

fn decode_compressed(c: &mut Criterion) {
    if !wanted("decode_compressed/") {
        return;
    }
    let recs = records(200 * RECORDS_PER_BATCH, 100, 42);
    for codec in [Codec::Lz4, Codec::Zstd, Codec::Snappy, Codec::Gzip] {
        if !wanted(&format!("decode_compressed/{}_100B/", codec.name())) {
            continue;
        }
        let data = batches(&recs, false, codec);
        save(&format!("{}_100B.bin", codec.name()), &data);
        let plain = plain_payloads(&data);
        let plain_bytes: usize = plain.iter().map(Vec::len).sum();
        let pays = payloads(&data);
        let n = recs.len();
        assert_eq!(kafkabatch_decode(&data, 1), n);
        let bytes = Bytes::from(data.clone());
        assert_eq!(kafka_protocol_decode(&bytes), n);
        let floor = floor_for(codec, &plain);
        let mut zstd_ctx = zstd::bulk::Decompressor::new().expect("zstd ctx");
        let mut out = Vec::new();
        assert_eq!(run_floor(&floor, &pays, &mut out, &mut zstd_ctx), plain_bytes);
        eprintln!(
            "{}: {} batches, {} wire bytes, {} decompressed bytes (ratio {:.2})",
            codec.name(),
            pays.len(),
            data.len(),
            plain_bytes,
            plain_bytes as f64 / data.len() as f64
        );

        let mut g = c.benchmark_group(format!("decode_compressed/{}_100B", codec.name()));
        configure(&mut g);
        g.throughput(Throughput::ElementsAndBytes {
            elements: n as u64,
            bytes: plain_bytes as u64,
        });
        g.bench_function("kafkabatch", |b| b.iter(|| kafkabatch_decode(&data, 1)));
        g.bench_function("kafkabatch_no_columns", |b| {
            b.iter(|| kafkabatch_decode_columns(&data, Columns::NONE))
        });
        g.bench_function("kafkabatch_decompress_only", |b| {
            let mut scratch = Vec::new();
            b.iter(|| {
                let mut total = 0;
                for p in &pays {
                    total += compression::decompress_reusing(codec, p, 2, LIMIT, &mut scratch).expect("decompresses");
                }
                total
            })
        });
        g.bench_function("codec_crate_floor", |b| {
            b.iter(|| run_floor(&floor, &pays, &mut out, &mut zstd_ctx))
        });
        g.bench_function("kafka-protocol", |b| b.iter(|| kafka_protocol_decode(&bytes)));
        g.finish();
    }
}

criterion_group!(benches, primitives, decode_uncompressed, decode_compressed);
criterion_main!(benches);
