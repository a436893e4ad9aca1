//! Replays every input under `fuzz/regressions/<target>/` through the same
//! checks the fuzz target runs (`fuzz/fuzz_targets/checks`, included by
//! path), so a crash the fuzzer found stays fixed under plain `cargo test`.
//! Add a file there and a line to `REGRESSIONS`; a test checks the two agree.

#[path = "../fuzz/fuzz_targets/checks/mod.rs"]
mod checks;

/// (target, file name, bytes) of every stored reproducer.
macro_rules! regressions {
    ($($target:literal / $file:literal),* $(,)?) => {
        &[$(($target, $file, include_bytes!(concat!("../fuzz/regressions/", $target, "/", $file)) as &[u8])),*]
    };
}

const REGRESSIONS: &[(&str, &str, &[u8])] = regressions![
    // increment_sequence overflowed on a negative record offset delta.
    "decode" / "negative-offset-delta-sequence",
    // A corrupt zstd frame's error text depends on the per-thread context's
    // buffer sizes from earlier frames (the check compares codec errors by
    // kind and position, not text).
    "decode" / "zstd-error-depends-on-earlier-batches",
    // The same, in a legacy wrapper between iter_headers' two passes.
    "iter_headers" / "zstd-legacy-wrapper-error-text",
    // Records whose offsets or timestamps lie outside what their batch
    // header declares: pruning goes by the header (as brokers set it), so
    // the soundness check holds only for batches that agree with it.
    "iter_headers" / "records-contradict-their-header",
    // The same, decompressing one payload twice.
    "decompress_zstd" / "error-text-depends-on-earlier-frames",
    // Two lz4 frames: we used to read both; Kafka's Java reader (and
    // lz4_flex) read only the first, and so do we now.
    "decompress_lz4" / "two-frames-kafka-reads-one",
    // A block that decompresses to nothing, then a stored byte: lz4_flex's
    // read_to_end stopped at the empty block (its read returns Ok(0)); the
    // harness's reference now reads past it. Ours gives the byte, as Java.
    "decompress_lz4" / "empty-block-then-stored-block",
    // Two frames with different block sizes: lz4_flex's frame reader (the
    // harness's reference) trips a debug assertion reading the second; it
    // now gets only the first frame, the one Kafka and we read.
    "decompress_lz4" / "second-frame-other-block-size",
    // A piece with a repeated field name goes to arrow-json, whose tape took
    // a raw control character in a name that fails the same value alone;
    // values read with arrow-json are now checked against the grammar first.
    "values_json" / "arrow-json-piece-takes-what-the-grammar-refuses",
    // A fixed chunk index whose one chunk of 100 MB is stored in 0 bytes: a
    // whole read of the empty object gave no bytes and no error. Such an
    // index is now a manifest error.
    "tiered" / "chunk-of-original-bytes-stored-in-none",
];

fn run(target: &str, input: &[u8]) {
    match target {
        "decode" => checks::decode::check(input),
        "iter_headers" => checks::iter_headers::check(input),
        "decompress_gzip" => drop(checks::check_decompress(crate::Codec::Gzip, input, 2)),
        "decompress_snappy" => drop(checks::check_decompress(crate::Codec::Snappy, input, 2)),
        "decompress_zstd" => drop(checks::check_decompress(crate::Codec::Zstd, input, 2)),
        "decompress_lz4" => {
            checks::check_decompress(crate::Codec::Lz4, input, 2);
            checks::check_decompress(crate::Codec::Lz4, input, 0);
        }
        "values_json" => checks::values::check(checks::values::Kind::Json, input),
        "values_avro" => checks::values::check(checks::values::Kind::Avro, input),
        "values_protobuf" => checks::values::check(checks::values::Kind::Protobuf, input),
        "json_values" => checks::json_values::check(input),
        "kmsg" => checks::kmsg::check(input),
        "tiered" => checks::tiered::check(input),
        other => panic!("no replay for target {other}"),
    }
}

#[test]
fn fuzz_regressions_replay() {
    for (target, file, bytes) in REGRESSIONS {
        eprintln!("replaying {target}/{file} ({} bytes)", bytes.len());
        run(target, bytes);
        // The decode-family inputs also go through the other decode-family target.
        if *target == "decode" {
            run("iter_headers", bytes);
        } else if *target == "iter_headers" {
            run("decode", bytes);
        }
    }
}

#[test]
fn every_stored_regression_is_replayed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut on_disk = Vec::new();
    for target in std::fs::read_dir(&root).expect("fuzz/regressions") {
        let target = target.expect("entry").path();
        for file in std::fs::read_dir(&target).expect("target dir") {
            let file = file.expect("entry").path();
            let name = |p: &std::path::Path| p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            on_disk.push((name(&target), name(&file)));
        }
    }
    on_disk.sort();
    let mut listed: Vec<(String, String)> = REGRESSIONS
        .iter()
        .map(|(t, f, _)| (t.to_string(), f.to_string()))
        .collect();
    listed.sort();
    assert_eq!(on_disk, listed, "fuzz/regressions and REGRESSIONS disagree");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

    /// The `json_values` check on documents made to (mostly) fit random schemas.
    #[test]
    fn json_values_fast_path_agrees_with_arrow_json(
        schema in proptest::collection::vec(proptest::prelude::any::<u8>(), 24),
        seed in 1u64..,
        rows in 1usize..24,
    ) {
        let mut rng = checks::json_values::Rng(seed);
        checks::json_values::check(&checks::json_values::input(&schema, &mut rng, rows));
    }
}

/// The `json_values` seed corpus (hand-written edge cases: repeated names,
/// deep nesting, text that is not JSON) passes the check.
#[test]
fn json_values_seed_corpus_passes_the_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/json_values");
    let mut seen = 0;
    for file in std::fs::read_dir(&dir).expect("fuzz/corpus/json_values") {
        let path = file.expect("entry").path();
        checks::json_values::check(&std::fs::read(&path).expect("a seed"));
        seen += 1;
    }
    assert!(seen >= 3, "seeds in {}", dir.display());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// The `kmsg` check on seeds with bytes overwritten at random.
    #[test]
    fn kmsg_check_holds_on_mutated_seeds(
        which in 0usize..16,
        edits in proptest::collection::vec((proptest::prelude::any::<u16>(), proptest::prelude::any::<u8>()), 1..12),
    ) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/kmsg");
        let Ok(entries) = std::fs::read_dir(&dir) else { return Ok(()) };
        let mut seeds: Vec<_> = entries.map(|e| e.expect("entry").path()).collect();
        seeds.sort();
        let mut input = std::fs::read(&seeds[which % seeds.len()]).expect("a seed");
        for (at, byte) in edits {
            let n = input.len();
            if n > 1 {
                input[1 + at as usize % (n - 1)] = byte;
            }
        }
        checks::kmsg::check(&input);
    }
}

/// The `kmsg` seed corpus (records of every internal topic from an
/// independent encoder, cut and corrupted variants) passes the check.
#[test]
fn kmsg_seed_corpus_passes_the_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/kmsg");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return; // an sdist carries no corpus
    };
    let mut seen = 0;
    for entry in entries {
        checks::kmsg::check(&std::fs::read(entry.expect("entry").path()).expect("a seed"));
        seen += 1;
    }
    assert!(seen >= 5, "seeds in {}", dir.display());
}

#[test]
fn value_parser_and_tiered_seeds_pass_their_checks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for target in ["values_json", "values_avro", "values_protobuf", "tiered"] {
        let Ok(entries) = std::fs::read_dir(root.join(target)) else {
            continue; // an sdist carries no corpus
        };
        for entry in entries {
            let path = entry.expect("entry").path();
            eprintln!("checking {}", path.display());
            run(target, &std::fs::read(&path).expect("seed"));
        }
    }
}
