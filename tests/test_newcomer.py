"""What a new user trips over: files that are not segments, misspelled
keywords, errors that name the file and use the caller's vocabulary, reports
that report. Data from real clients (aiokafka, kafka-python) written as
segment files."""

from __future__ import annotations

import gzip
import json
import os
import random
import warnings
from pathlib import Path

import pytest
import realclients as rc

import kafkabatch as kb


@pytest.fixture(scope="module")
def real() -> bytes:
    return rc.get("aiokafka-v2-zstd-multibatch").data


def segment(folder: Path, data: bytes, name: str = "00000000000000000000.log") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- item 1: data that is not there


def test_random_bytes_are_an_error_naming_file_and_byte(tmp_path):
    path = segment(tmp_path / "orders-0", random.Random(7).randbytes(20000))
    with pytest.raises(kb.CorruptBatchError) as info:
        kb.read_segment(path)
    text = str(info.value)
    assert str(path) in text and "at byte 0" in text and "not a Kafka batch" in text, text
    assert info.value.batch_position == 0
    with pytest.raises(kb.CorruptBatchError, match="not a Kafka batch"):
        kb.scan_log(tmp_path).read_all()


def test_random_bytes_in_skip_mode_are_a_counted_reported_skip(tmp_path):
    data = random.Random(7).randbytes(20000)
    report = kb.decode_report(data, on_error="skip")
    assert (report.records, report.end, report.trailing_bytes) == (0, "broken", 20000)
    assert isinstance(report.end_error, kb.CorruptBatchError) and "not a Kafka batch" in str(report.end_error)
    segment(tmp_path / "orders-0", data)
    results = []
    assert kb.scan_log(tmp_path, on_error="skip", on_segment=results.append).read_all().num_rows == 0
    assert results[0].problems and "not a Kafka batch" in results[0].describe()


@pytest.mark.parametrize(
    ("content", "guess"),
    [
        (gzip.compress(b"x" * 5000, mtime=0), "gzip-compressed file"),
        (b"PK\x03\x04" + bytes(range(256)) * 20, "zip archive"),
        (b'{"orderId": 1, "amount": 3.5}\n' * 200, "text file"),
    ],
    ids=["gzip", "zip", "text"],  # the same on every xdist worker (gzip's header holds a time without mtime=0)
)
def test_a_foreign_file_gets_a_guess(tmp_path, content, guess):
    path = segment(tmp_path / "orders-0", content)
    with pytest.raises(kb.KafkaBatchError, match=guess):
        kb.read_segment(path)


def test_an_index_file_passed_as_a_segment_is_named_so(tmp_path):
    # Kafka's offset index entries (relative offset, position), as a broker writes them.
    index = b"".join(i.to_bytes(4, "big") + (4096 * i + 80).to_bytes(4, "big") for i in range(1, 50))
    path = segment(tmp_path / "orders-0", index)
    with pytest.raises(kb.KafkaBatchError, match="offset index file"):
        kb.read_segment(path)


def test_quiet_ends_empty_truncated_and_zero_filled(tmp_path, real):
    expected = kb.decode(real).num_rows
    # An empty file, a batch being written, and a preallocated segment
    # (log.preallocate=true: zeros to the segment size after the data).
    assert kb.read_segment(segment(tmp_path / "a-0", b"")).num_rows == 0
    truncated = kb.decode_report(real[:-10])
    assert truncated.end == "truncated" and truncated.records < expected
    path = segment(tmp_path / "b-0", real + bytes(1 << 16))
    assert kb.read_segment(path).num_rows == expected
    report = kb.decode_report(real + bytes(1 << 16))
    assert (report.records, report.end, report.trailing_bytes, report.end_error) == (
        expected,
        "truncated",
        1 << 16,
        None,
    )
    assert kb.valid_bytes(real + bytes(1 << 16)) == len(real)
    zeros = segment(tmp_path / "c-0", bytes(4096))
    assert kb.read_segment(zeros).num_rows == 0
    assert kb.scan_log(tmp_path).read_all().num_rows == expected


# ---------------------------------------------------------------- item 4: misspelled keywords


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda p, d: kb.read_segment(p, isolaton="read_committed"), "read_segment"),
        (lambda p, d: kb.scan_log(p.parent, isolaton="read_committed"), "scan_log"),
        (lambda p, d: kb.decode(d, isolaton="read_committed"), "decode"),
        (lambda p, d: kb.decode_report(d, isolaton="read_committed"), "decode_report"),
        (lambda p, d: kb.iter_batches(d, isolaton="read_committed"), "iter_batches"),
    ],
)
def test_a_misspelled_keyword_gets_did_you_mean_naming_the_function_called(tmp_path, real, call, name):
    path = segment(tmp_path / "orders-0", real)
    with pytest.raises(TypeError) as info:
        call(path, real)
    assert str(info.value) == (f"{name}() got an unexpected keyword argument 'isolaton'; did you mean 'isolation'?")


def test_read_segment_suggests_its_own_keywords_too(tmp_path, real):
    path = segment(tmp_path / "orders-0", real)
    with pytest.raises(TypeError, match=r"read_segment\(\).*'start_ofset'; did you mean 'start_offset'\?"):
        kb.read_segment(path, start_ofset=3)
    with pytest.raises(TypeError, match=r"scan_log\(\).*'value_fromat'; did you mean 'value_format'\?"):
        kb.scan_log(tmp_path, value_fromat="json")


def test_good_keywords_still_work_and_other_type_errors_pass_through(real):
    assert kb.decode(real, isolation="read_committed").num_rows == kb.decode(real).num_rows
    with pytest.raises(TypeError) as info:
        kb.decode(12345)  # not a buffer: the native error, unchanged
    assert "did you mean" not in str(info.value)


# ---------------------------------------------------------------- item 7: read_segment names the file


@pytest.mark.filterwarnings("ignore::kafkabatch.IndexFileWarning")  # no .index beside it: a full scan
def test_read_segment_errors_name_the_file(tmp_path):
    data = bytearray(rc.get("kafka-python-v2-none-multibatch").data)
    position, size = rc.batch_spans(data)[0]
    first_end = position + size
    data[first_end + 30] ^= 0xFF  # inside the second batch: a CRC mismatch there
    path = segment(tmp_path / "orders-0", bytes(data))
    with pytest.raises(kb.CrcMismatchError) as info:
        kb.read_segment(path)
    assert str(info.value).startswith(f"{path}: batch at byte {first_end}"), str(info.value)
    assert info.value.batch_position == first_end and info.value.path == os.fspath(path)
    offsets = kb.decode(bytes(data), validate_crc=False).column("offset")
    with pytest.raises(kb.CrcMismatchError, match=str(path)):  # bounds reaching the damaged batch
        kb.read_segment(path, start_offset=0, end_offset=offsets[-1].as_py() + 1)
    # bounds the first batch ends: the damaged batch after it is never decoded (as scan_log reads it)
    before = kb.read_segment(path, start_offset=0, end_offset=offsets[0].as_py() + 1)
    assert before.column("offset").to_pylist() == [offsets[0].as_py()]


# ---------------------------------------------------------------- items 9 and 10: reports


def damaged(data: bytes) -> tuple[bytes, int]:
    """``data`` with one byte of its second batch flipped (a CRC mismatch), and that batch's position."""
    spans = rc.batch_spans(data)
    buf = bytearray(data)
    buf[spans[1][0] + 40] ^= 0xFF
    return bytes(buf), spans[1][0]


def test_decode_report_reports_damage_by_default():
    data, at = damaged(rc.get("kafka-python-v2-none-multibatch").data)
    report = kb.decode_report(data)
    assert len(report.skipped) == 1 and isinstance(report.skipped[0], kb.CrcMismatchError)
    assert report.skipped[0].batch_position == at
    assert report.records == kb.decode(data, on_error="skip").num_rows > 0
    with pytest.raises(kb.CrcMismatchError):
        kb.decode_report(data, on_error="raise")
    with pytest.raises(kb.CrcMismatchError):
        kb.decode(data)  # decode still raises by default


def test_a_report_prints_short():
    data, at = damaged(rc.get("kafka-python-v2-none-multibatch").data)
    report = kb.decode_report(data + data[:30])
    text = repr(report)
    assert text.startswith(
        f"DecodeReport(rows={report.table.num_rows}, batches={report.batches}, skipped=1 [byte {at}: "
    )
    assert "CRC" in text and f"valid_bytes={len(data)}" in text and "trailing_bytes=30" in text
    assert len(text) < 300 and "pyarrow" not in text
    assert str(report) == text


# ---------------------------------------------------------------- item 3: each interface's own names


def cli_io(capsys, *args) -> tuple[int, str, str]:
    """``kafkabatch ARGS`` in this process: exit status, stdout, stderr."""
    from kafkabatch.cli import main

    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def cli(capsys, *args) -> tuple[int, str]:
    code, _, err = cli_io(capsys, *args)
    return code, err


def test_cli_value_errors_use_the_command_lines_names(tmp_path, capsys, real):
    path = segment(tmp_path / "orders-0", real)
    code, err = cli(capsys, "convert", path, tmp_path / "out.parquet", "--value-format", "json")
    assert code == 1
    assert "--value-format json needs --value-schema" in err and "value_schema" not in err, err
    code, err = cli(capsys, "convert", path, tmp_path / "out.parquet", "--value-format", "avro")
    assert "--value-format avro needs --value-schema" in err and "--schema-registry" in err, err


def test_spark_value_errors_use_the_options_names():
    pytest.importorskip("pyspark")
    from kafkabatch.spark.values import value_columns
    from kafkabatch.values.spec import FORMATS

    with pytest.raises(ValueError, match=r"^valueFormat=json needs valueSchema \(a Spark DDL"):
        value_columns({"valueformat": "json"}, ["orders"])
    with pytest.raises(ValueError) as info:
        value_columns({"valueformat": "xml"}, ["orders"])
    assert str(info.value) == f"valueFormat must be one of {', '.join(FORMATS)}, not 'xml'"
    with pytest.raises(ValueError, match=r"^keySchema needs a typed keyFormat \('json', 'avro' or 'protobuf'\)"):
        value_columns({"keyschema": "id string"}, ["orders"])


def test_python_keeps_the_keyword_names(real):
    with pytest.raises(ValueError, match=r"^value_format='json' needs value_schema"):
        kb.decode(real, value_format="json")


def test_spark_source_errors_in_spark_words(spark, kafka_log, tmp_path, real):
    segment(tmp_path / "orders-0", real)
    with pytest.raises(Exception, match=r"valueFormat=json needs valueSchema"):
        spark.read.format(kafka_log).option("valueFormat", "json").load(str(tmp_path)).schema  # noqa: B018


# ---------------------------------------------------------------- item 2: offsets for partitions that are not there


def test_batch_starting_offsets_for_a_missing_partition_is_refused(spark, kafka_log, tmp_path, real):
    segment(tmp_path / "orders-0", real)
    reader = spark.read.format(kafka_log).option("startingOffsets", '{"orders":{"7":5}}')
    with pytest.raises(
        Exception, match=r"'startingOffsets' names topic-partitions that have no log.*orders-7.*found: orders-0"
    ):
        reader.load(str(tmp_path)).count()
    ending = spark.read.format(kafka_log).option("endingOffsets", '{"order":{"0":5}}')
    with pytest.raises(Exception, match=r"'endingOffsets' names .*order-0"):
        ending.load(str(tmp_path)).count()
    offsets = kb.decode(real).column("offset").to_pylist()
    start = json.dumps({"orders": {"0": offsets[5]}})
    named = spark.read.format(kafka_log).option("startingOffsets", start).load(str(tmp_path))
    assert named.count() == len(offsets) - 5


# ---------------------------------------------------------------- item 13: sample data for every format


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample") / "logs"
    summary = kb.generate(root, size="3MB", segment_bytes="256k", seed=5, progress=False)
    return root, summary


def test_generate_writes_an_avro_topic_fastavro_reads(sample):
    import io
    import json

    fastavro = pytest.importorskip("fastavro")
    root, summary = sample
    topic = summary.topics["shipments"]
    assert topic.schema_file == root / "schemas" / "registry.json"
    registry = json.loads(topic.schema_file.read_text())
    assert sorted(registry) == ["1", "2"]
    writers = {int(k): fastavro.parse_schema(v) for k, v in registry.items()}
    reader = fastavro.parse_schema(registry["2"])
    raw = kb.scan_log(root / "shipments-0").read_all()
    assert raw.num_rows == topic.records > 100
    theirs, ids = [], set()
    for value in raw.column("value").to_pylist():
        assert value[0] == 0  # Confluent magic byte
        schema_id = int.from_bytes(value[1:5], "big")
        ids.add(schema_id)
        stream = io.BytesIO(value[5:])
        theirs.append(fastavro.schemaless_reader(stream, writers[schema_id], reader))
        assert stream.read() == b""  # the datum is the whole value
    assert ids == {1, 2}  # both versions, evolution between them
    # Ours, with the file as schema_registry takes it: values resolved to the newest schema.
    typed = kb.scan_log(root / "shipments-0", value_format="avro", schema_registry=registry).read_all()
    ours = typed.column("value").to_pylist()
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        assert mine == reference
    old = [r for r in theirs if r["tracking_id"] is None and r["notes"] is None and r["express"] is False]
    assert old  # version 1 records read with version 2's defaults
    # The file itself, as schema_registry takes it.
    by_path = kb.scan_log(root / "shipments-0", value_format="avro", schema_registry=str(topic.schema_file))
    assert by_path.read_all().column("value").to_pylist() == ours
    with pytest.raises(ValueError, match="nofile.json': file not found"):
        kb.decode(b"", value_format="avro", schema_registry="nofile.json")


def test_generated_json_topics_parse_strictly_with_their_json_schemas(sample):
    import json

    root, summary = sample
    for name, topic in summary.topics.items():
        if name == "shipments":
            continue
        assert topic.schema_file == root / "schemas" / f"{name}.schema.json"
        schema = json.loads(topic.schema_file.read_text())
        folders = sorted(root.glob(f"{name}-*"))
        table = pa_concat([kb.scan_log(f, value_format="json", value_schema=schema).read_all() for f in folders])
        raw = pa_concat([kb.scan_log(f).read_all() for f in folders])
        assert table.num_rows == topic.records
        parsed = table.column("value").to_pylist()
        for value, row in zip(raw.column("value").to_pylist()[:300], parsed[:300]):
            if value is None:
                assert row is None
                continue
            expected = json.loads(value)
            for field, node in schema["properties"].items():
                if node.get("format") == "date-time" or node["type"] == "object" or field not in expected:
                    continue
                assert row[field] == expected[field], (name, field)


def pa_concat(tables):
    import pyarrow as pa

    return pa.concat_tables(tables)


def test_the_schemas_folder_does_not_disturb_reading_the_log_dir(sample):
    root, summary = sample
    assert kb.scan_log(root).read_all().num_rows == summary.records


# ---------------------------------------------------------------- item 5: a schema file that is not there


@pytest.mark.parametrize("arg", ["nofile.json", "schemas/orders.avsc", "./my schemas/orders.json", "conf/orders"])
def test_a_missing_schema_file_is_file_not_found(tmp_path, capsys, real, arg):
    path = segment(tmp_path / "orders-0", real)
    code, err = cli(capsys, "convert", path, tmp_path / "o.parquet", "--value-format", "json", "--value-schema", arg)
    assert code == 1 and f"{arg}: file not found" in err, err


def test_schema_text_is_still_schema_text(tmp_path, capsys):
    from kafkabatch.cli.convert import _looks_like_path

    assert not _looks_like_path("id string, qty bigint")
    assert not _looks_like_path("http://registry:8081")
    assert not _looks_like_path('{"type": "record"}')
    assert _looks_like_path("orders.schema.json")


# ---------------------------------------------------------------- item 6: framed Avro read as plain Avro


def test_framed_avro_read_as_plain_avro_gets_a_hint(sample, capsys):
    import json

    root, summary = sample
    registry = json.loads(summary.topics["shipments"].schema_file.read_text())
    with pytest.raises(kb.ValueDecodeError) as info:
        kb.scan_log(root / "shipments-0", value_format="avro", value_schema=registry["2"]).read_all()
    text = str(info.value)
    assert "these values look Schema Registry framed (magic 0, schema id " in text and "pass schema_registry" in text
    assert info.value.offset is not None  # the located error's attributes survive
    avsc = root.parent / "shipment.avsc"
    avsc.write_text(json.dumps(registry["2"]))
    out = root.parent / "s.parquet"
    code, err = cli(capsys, "convert", root / "shipments-0", out, "--value-format", "avro", "--value-schema", avsc)
    assert code == 1 and "pass --schema-registry" in err, err


# ---------------------------------------------------------------- item 8: one damaged batch counts once


def test_one_damaged_batch_counts_once_in_stats_and_convert(tmp_path, capsys, real):
    import json

    spans = rc.batch_spans(real)
    assert len(spans) >= 3
    buf = bytearray(real)
    buf[spans[1][0] + 61] ^= 0xFF  # the zstd frame's magic: unreadable, and its CRC is wrong too
    path = segment(tmp_path / "orders-0", bytes(buf))
    code, out, err = cli_io(capsys, "stats", "--json", "--no-progress", path)
    assert code == 0, err
    counts = json.loads(out)["total"]
    assert (counts["unreadable_batches"], counts["invalid_crc_batches"]) == (1, 0), counts
    code, err = cli(capsys, "convert", "--on-error", "skip", "--no-progress", path, tmp_path / "o.parquet")
    assert code == 0 and "skipped 1 corrupt batch " in err, err


# ---------------------------------------------------------------- items 11 and 12: units, widths, help


def test_progress_and_summaries_use_binary_units(sample):
    from rich.progress import Progress

    from kafkabatch._util import byte_progress

    progress = byte_progress("x")
    assert isinstance(progress, Progress)
    task = progress.add_task("t", total=3 << 20)
    progress.update(task, completed=3 << 20)
    texts = [str(column.render(progress.tasks[0])) for column in progress.columns[2:4]]
    assert texts[0] == "3.0/3.0 MiB", texts
    root, summary = sample
    text = str(summary)
    assert "MiB" in text and " MB" not in text, text


def test_stats_table_fits_120_columns(sample, capsys):
    root, _ = sample
    code, out, err = cli_io(capsys, "stats", "--no-progress", root)
    assert code == 0, err
    widths = [len(line) for line in out.splitlines()]
    assert max(widths) <= 120, max(widths)
    assert "shipments-0" in out and "orders-2" in out


def test_convert_help_names_json_schema_files(capsys):
    with pytest.raises(SystemExit):
        cli_io(capsys, "convert", "--help")
    assert "a JSON Schema" in " ".join(capsys.readouterr().out.split())


def test_dump_of_a_file_that_is_not_a_segment_is_an_error(tmp_path, capsys):
    path = segment(tmp_path / "orders-0", gzip.compress(random.Random(1).randbytes(3000)))
    code, out, err = cli_io(capsys, "dump", path)
    assert code == 1 and "Broken framing at position: 0" in out, out
    assert f"{path}: byte 0: not a Kafka batch" in err and "gzip-compressed file" in err, err


# ---------------------------------------------------------------- the docs' sample-data examples run as written

ROOT = Path(__file__).resolve().parent.parent


def block_after(doc: str, heading: str) -> str:
    """The first fenced code block after ``heading`` in ``doc``."""
    text = (ROOT / doc).read_text()
    after = text[text.index(heading) :]
    start = after.index("```")
    start = after.index("\n", start) + 1
    return after[start : after.index("```", start)]


def test_readme_sample_data_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(block_after("README.md", "### Try it on sample data"), "README.md", "exec"), {})
    printed = capsys.readouterr().out.split()
    assert int(printed[0]) > 0 and printed[1:] == ["double", "bool"], printed


def test_cli_sample_data_example_runs(tmp_path, monkeypatch, capsys):
    import shlex

    duckdb = pytest.importorskip("duckdb")
    monkeypatch.chdir(tmp_path)
    lines = [line[2:] for line in block_after("docs/cli.md", "### Try it on sample data").splitlines() if line]
    assert len(lines) >= 4
    for line in lines:
        words = shlex.split(line)
        if words[0] == "duckdb":
            rows = duckdb.sql(words[2]).fetchall()
            assert rows and all(r[1] > 0 for r in rows)
            continue
        code, out, err = cli_io(capsys, *words[1:])
        assert code == 0, (line, err)


def test_spark_sample_data_example_runs(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kb.generate("sample-logs", size="4MB", progress=False)
    scope = {"spark": spark}
    # Spark's Python workers started elsewhere: the block's relative paths, made absolute.
    code = block_after("docs/spark.md", "### Try it on sample data").replace(
        '"sample-logs/', f'"{tmp_path}/sample-logs/'
    )
    exec(compile(code, "docs/spark.md", "exec"), scope)
    shipments = scope["shipments"].groupBy("value.carrier").count().collect()
    assert sum(r["count"] for r in shipments) == kb.scan_log("sample-logs/shipments-0").read_all().num_rows
    assert scope["orders"].where("value.total is null").count() == 0
    by_path = (
        spark.read.format("kafka-log")
        .option("valueFormat", "avro")
        .option("schemaRegistry", str(tmp_path / "sample-logs" / "schemas" / "registry.json"))
        .load(str(tmp_path / "sample-logs" / "shipments-0"))
    )
    assert sorted(by_path.groupBy("value.carrier").count().collect()) == sorted(shipments)


def test_spark_udf_helpers_suggest_too():
    pytest.importorskip("pyspark")
    import kafkabatch.spark as kbs

    with pytest.raises(TypeError, match=r"^decode_batches\(\) .*'isolaton'; did you mean 'isolation'\?"):
        kbs.decode_batches("content", isolaton="read_committed")
    with pytest.raises(TypeError, match=r"^explode_batches\(\) .*'path_colum'; did you mean 'path_column'\?"):
        kbs.explode_batches(None, "content", path_colum="path")


def test_spark_refuses_random_bytes_and_hints_at_framing(spark, kafka_log, tmp_path, sample):
    segment(tmp_path / "orders-0", random.Random(7).randbytes(20000))
    with pytest.raises(Exception, match="not a Kafka batch"):
        spark.read.format(kafka_log).load(str(tmp_path)).count()
    permissive = spark.read.format(kafka_log).option("mode", "PERMISSIVE").load(str(tmp_path))
    assert permissive.count() == 0
    root, summary = sample
    registry = json.loads(summary.topics["shipments"].schema_file.read_text())
    plain = (
        spark.read.format(kafka_log)
        .option("valueFormat", "avro")
        .option("valueSchema", json.dumps(registry["2"]))
        .load(str(root / "shipments-0"))
    )
    with pytest.raises(Exception, match=r"Schema Registry framed \(magic 0, schema id \d\); pass schemaRegistry"):
        plain.count()


# ---------------------------------------------------------------- errors in the caller's words, tiered and schemas


@pytest.fixture(scope="module")
def encrypted_bucket(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiered") / "t"
    kb.generate(out, size="512k", seed=4, tiered="aiven", tiered_encryption=True, progress=False)
    return out


def test_a_missing_tiered_key_names_each_interfaces_option(encrypted_bucket, capsys):
    with pytest.raises(kb.TieredStorageError, match=r"no keys were given \(tiered_keys\)"):
        kb.scan_log(encrypted_bucket / "bucket").read_all()
    code, err = cli(capsys, "stats", "--no-progress", encrypted_bucket / "bucket")
    assert code == 1 and "no keys were given (--tiered-key)" in err and "tiered_keys" not in err, err
    code, err = cli(capsys, "convert", encrypted_bucket / "bucket", encrypted_bucket / "out.parquet", "-q")
    assert code == 1 and "no keys were given (--tiered-key)" in err and "tiered_keys" not in err, err


def test_spark_missing_tiered_key_says_tiered_keys(spark, kafka_log, encrypted_bucket):
    df = spark.read.format(kafka_log).load(str(encrypted_bucket / "bucket"))
    with pytest.raises(Exception) as info:
        df.count()
    text = str(info.value)
    assert "no keys were given (tieredKeys)" in text and "tiered_keys" not in text, text[:2000]


def test_a_missing_pem_file_is_named(encrypted_bucket, capsys):
    missing = encrypted_bucket / "nowhere.pem"
    with pytest.raises(ValueError, match=rf"key pair 'key-1' \({missing}\): No such file"):
        kb.scan_log(encrypted_bucket / "bucket", tiered_keys={"key-1": str(missing)})
    code, err = cli(capsys, "stats", encrypted_bucket / "bucket", "--tiered-key", f"key-1={missing}")
    assert code == 1 and f"--tiered-key: can't read the private key file of key pair 'key-1' ({missing})" in err, err


def test_protobuf_without_a_schema_names_the_command_lines_flags(tmp_path, capsys, real):
    path = segment(tmp_path / "orders-0", real)
    code, err = cli(capsys, "convert", path, tmp_path / "out.parquet", "--value-format", "protobuf")
    assert code == 1, err
    assert "--value-format protobuf needs --value-message with --value-schema" in err, err
    assert "--value-descriptor-set" in err and "--schema-registry" in err, err
    assert "generated message class" not in err and "'message'" not in err, err


def test_spark_protobuf_without_a_schema_names_the_options():
    pytest.importorskip("pyspark")
    from kafkabatch.spark.values import value_columns

    with pytest.raises(ValueError) as info:
        value_columns({"valueformat": "protobuf"}, ["orders"])
    text = str(info.value)
    assert text.startswith("valueFormat=protobuf needs valueMessage with valueSchema"), text
    assert "valueDescriptorSet" in text and "schemaRegistry" in text and "generated message class" not in text


def test_a_binary_file_given_as_a_json_schema_is_named(tmp_path, capsys, real):
    path = segment(tmp_path / "orders-0", real)
    blob = tmp_path / "shop.desc"
    blob.write_bytes(b"\n\xff\x01" + bytes(range(256)))
    code, err = cli(capsys, "convert", path, tmp_path / "o.parquet", "--value-format", "json", "--value-schema", blob)
    assert code == 1 and f"{blob} is not a text file" in err and "--value-descriptor-set" in err, err
    assert "codec can't decode" not in err, err


def test_avro_given_a_json_schema_says_so(sample, capsys):
    root, summary = sample
    schema_file = summary.topics["orders"].schema_file
    with pytest.raises(ValueError, match=r"^value_schema is a JSON Schema, not an Avro schema.*value_format='json'"):
        kb.scan_log(root / "orders-0", value_format="avro", value_schema=schema_file.read_text())
    code, err = cli(
        capsys, "convert", root / "orders-0", root.parent / "o.parquet", "--value-format", "avro",
        "--value-schema", schema_file,
    )  # fmt: skip
    assert code == 1 and "--value-schema is a JSON Schema, not an Avro schema" in err, err
    assert "--value-format json" in err and "Type {" not in err and "attributes" not in err, err


def test_spark_errors_start_with_the_useful_line(spark, kafka_log, tmp_path, real):
    segment(tmp_path / "orders-0", real)
    reader = spark.read.format(kafka_log).option("valueMesage", "shop.Order")
    with pytest.raises(Exception) as info:
        reader.load(str(tmp_path)).schema  # noqa: B018
    first = str(info.value).strip().splitlines()[0]
    # (Spark hands the options lower-cased)
    assert "unknown kafka-log option 'valuemesage'; did you mean 'valueMessage'?" in first, str(info.value)[:3000]
    assert "Traceback" not in first


# ---------------------------------------------------------------- the command line: typos, warnings, dumps


def test_a_misspelled_flag_gets_the_closest_one(tmp_path, capsys, real):
    path = segment(tmp_path / "orders-0", real)
    with pytest.raises(SystemExit) as info:
        cli_io(capsys, "convert", path, tmp_path / "o.parquet", "--isolaton", "read_committed")
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --isolaton read_committed; did you mean --isolation?" in err, err
    with pytest.raises(SystemExit):
        cli_io(capsys, "stats", path, "--tiered-keys=a=b")
    assert "did you mean --tiered-key?" in capsys.readouterr().err


def test_one_did_you_mean_helper():
    from kafkabatch._util import closest
    from kafkabatch.spark.options import check_option_names

    assert closest("isolaton", ["isolation", "on_error"]) == "isolation"
    pytest.importorskip("pyspark")
    with pytest.raises(ValueError, match="did you mean 'valueMessage'"):
        check_option_names(["valuemesage"])


def test_a_json_schema_that_matches_nothing_warns_once_per_topic(sample, capsys):
    from kafkabatch.values.mismatch import SchemaMismatchWarning

    root, summary = sample
    clicks = json.loads(summary.topics["clicks"].schema_file.read_text())
    orders = json.loads(summary.topics["orders"].schema_file.read_text())
    with pytest.warns(SchemaMismatchWarning) as caught:  # three partitions, many batches: one warning
        table = kb.scan_log(str(root / "orders-*"), value_format="json", value_schema=clicks, max_chunk_bytes="64k")
        assert table.read_all().num_rows == sum(summary.topics["orders"].partition_records)
    assert len(caught) == 1, [str(w.message) for w in caught]
    text = str(caught[0].message)
    assert text.startswith("value of topic 'orders': no value in a batch of"), text
    for name in list(clicks["properties"])[:3]:
        assert name in text, text
    with warnings.catch_warnings():  # the right schema: no warning
        warnings.simplefilter("error", SchemaMismatchWarning)
        kb.scan_log(root / "orders-0", value_format="json", value_schema=orders).read_all()
        data = (root / "orders-0" / "00000000000000000000.log").read_bytes()
        kb.decode(data, value_format="json", value_schema=orders)
    with pytest.warns(SchemaMismatchWarning, match="no value in a batch of"):
        kb.decode(data, value_format="json", value_schema=clicks)
    code, out, err = cli_io(
        capsys, "convert", root / "payments-0", "-", "--value-format", "json", "--value-schema",
        summary.topics["clicks"].schema_file, "--on-value-error", "null",
    )  # fmt: skip
    assert code == 0, err
    lines = [line for line in err.splitlines() if "JSON schema" in line]
    assert len(lines) == 1 and lines[0].startswith("kafkabatch: warning: value of topic 'payments'"), err


def test_cli_warnings_are_one_line_each_once(tmp_path, capsys, real):
    path = segment(tmp_path / "orders-0", real)
    path.with_suffix(".index").write_bytes(b"\0" * 13)  # not a whole number of 8-byte entries
    code, out, err = cli_io(capsys, "convert", tmp_path, "-", "--offsets", "3:", "-q")
    assert code == 0, err
    warned = [line for line in err.splitlines() if line.strip()]
    assert warned and all(line.startswith("kafkabatch: warning: ") for line in warned), err
    assert len(warned) == len(set(warned)), err
    assert "Warning:" not in err and "warnings.warn" not in err, err


def test_dump_of_a_manifest_prints_the_log_starting_offset(encrypted_bucket, capsys):
    manifest = sorted((encrypted_bucket / "bucket").glob("*/*/*.rsm-manifest"))[-1]
    base = int(manifest.name[:20])
    key = f"key-1={encrypted_bucket / 'private.pem'}"
    code, out, err = cli_io(capsys, "dump", manifest, "--tiered-key", key)
    assert code == 0, err
    assert out.splitlines()[:2] == [f"Dumping {manifest}", f"Log starting offset: {base}"], out[:500]


def test_stats_total_row_keeps_every_codec_in_a_pipe(sample, capsys):
    root, summary = sample
    code, out, err = cli_io(capsys, "stats", "--no-progress", root)
    assert code == 0, err
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == ["total"])
    codecs_column = lines[0].index("codecs")  # the header names where the column starts
    cell = " ".join(line[codecs_column:].strip() for line in lines[at : at + 3] if line[codecs_column:].strip())
    every = sorted({t.codec for t in summary.topics.values()})
    assert cell.startswith(", ".join(every)), (cell, out)
    assert max(len(line) for line in lines) <= 120


def test_readme_protobuf_mock_registry_example_runs(capsys):
    pytest.importorskip("confluent_kafka.schema_registry")
    code = block_after("README.md", "To try framed Protobuf without a registry server")
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "[{'order_id': 'o-1', 'items': [{'sku': 'a', 'qty': 2}]}]"


def test_readme_polars_example_runs(sample):
    pytest.importorskip("polars")
    import pyarrow.compute as pc

    root, _ = sample
    text = (ROOT / "README.md").read_text()
    at = text.index("lf = kb.scan_polars(")
    code = text[text.rindex("```python\n", 0, at) + len("```python\n") : text.index("```", at)]
    scope: dict = {}
    exec(compile(code.replace("/var/lib/kafka/data", str(root)), "README.md", "exec"), scope)  # a naive cutoff raises
    got = scope["lf"].filter(scope["pl"].col("timestamp") >= scope["cutoff"]).collect()
    table = kb.scan_log(root).read_all()
    assert got.height == pc.sum(pc.greater_equal(table.column("timestamp"), scope["cutoff"])).as_py()
