//! Planning alone: `Scan::plan()` of a folder of about 5,000 small segments
//! (list, skip by name, cut by one header walk per segment), decoding nothing.
//!
//! - `all`: every segment, no bounds (listing only);
//! - `offset_past_end`: a start offset past every partition's end (names decide);
//! - `time_past_end`: a start time after every record (each segment's headers
//!   walked once, every batch ruled out);
//! - `time_past_end_read_committed`: the same with the transaction pre-pass.
//!
//! The folder is `/tmp/kb-planning-5000` when `benches/bench_planning.py` made
//! it, else generated here once by the core's generator (the same shape: ~10 KB
//! segments). Run with `cargo bench --bench plan`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use kafkabatch::generate::{Kind, PartitionConfig, PartitionGenerator};
use kafkabatch::scan::{Scan, ScanIsolation};

const SEGMENTS: u64 = 5_000;
const SEGMENT_BYTES: u64 = 10_000;

/// The folder of small segments: the Python bench's, else one generated here.
fn folder() -> PathBuf {
    let python = Path::new("/tmp/kb-planning-5000");
    if python.is_dir() && std::fs::read_dir(python).is_ok_and(|mut d| d.next().is_some()) {
        return python.to_path_buf();
    }
    let dir = std::env::temp_dir().join("kb-plan-bench-5000");
    if dir.is_dir() {
        return dir;
    }
    let partitions = [
        ("orders", Kind::Orders),
        ("clicks", Kind::Clicks),
        ("payments", Kind::Payments),
        ("audit", Kind::Audit),
    ];
    let per_partition = SEGMENTS * SEGMENT_BYTES / (2 * partitions.len() as u64);
    for (topic, kind) in partitions {
        for partition in 0..2 {
            let mut cfg = PartitionConfig::new(dir.join(format!("{topic}-{partition}")), topic, partition, kind);
            cfg.segment_bytes = SEGMENT_BYTES;
            cfg.target_bytes = per_partition;
            let mut generator = PartitionGenerator::new(cfg).expect("a new folder");
            generator.step(u64::MAX).expect("writes");
            generator.finish().expect("closes");
        }
    }
    dir
}

fn count_segments(dir: &Path) -> usize {
    kafkabatch::storage::local::walk(dir.to_str().unwrap_or_default(), &|_| true)
        .map(|folders| {
            folders
                .iter()
                .map(|f| f.files.iter().filter(|(name, _)| name.ends_with(".log")).count())
                .sum()
        })
        .unwrap_or(0)
}

fn bench(c: &mut Criterion) {
    let dir = folder();
    let root = dir.to_str().expect("a UTF-8 path").to_string();
    eprintln!("plan bench: {} segments under {root}", count_segments(&dir));
    let far = 4_102_444_800_000; // 2100-01-01, after every generated record
    let cases: [(&str, Scan); 4] = [
        ("all", Scan::new([root.as_str()])),
        (
            "offset_past_end",
            Scan::new([root.as_str()]).start_offset(Some(i64::MAX / 2)),
        ),
        (
            "time_past_end",
            Scan::new([root.as_str()]).start_timestamp_ms(Some(far)),
        ),
        (
            "time_past_end_read_committed",
            Scan::new([root.as_str()])
                .start_timestamp_ms(Some(far))
                .isolation(ScanIsolation::ReadCommitted),
        ),
    ];
    let mut group = c.benchmark_group("plan");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    for (name, scan) in cases {
        let plan = scan.plan().expect("plans");
        eprintln!("{name}: {} splits", plan.splits().count());
        group.bench_function(name, |b| b.iter(|| black_box(scan.plan().expect("plans"))));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
