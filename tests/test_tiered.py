"""Tiered storage: remote segments read where they live, against the broker folder they came from.

Fixtures are laid out as Aiven's plugin and Kafka's LocalTieredStorage write
them (see tests/tiered_fixtures.py: zstandard, cryptography's AESGCM and
pycryptodome's OAEP-SHA3-512, never kafkabatch's own code), from a log dir
written by kafkabatch's generator; every read is compared with reading the
original broker folder.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import tiered_fixtures as tf

import kafkabatch as kb
from kafkabatch import _kafkabatch as native
from kafkabatch.log import list_segments, scan_log
from kafkabatch.log.tiered import TieredSource, TieredStorageWarning, remote_name

pytest.importorskip("Crypto")
pytest.importorskip("cryptography")

CHUNK = 8 << 10  # small chunks: every segment spans many


@pytest.fixture(scope="session")
def broker(tmp_path_factory) -> Path:
    """A broker log dir: two partitions of several segments, lz4 and zstd batches, transactions."""
    root = tmp_path_factory.mktemp("broker")
    kb.generate(
        root,
        size="1200KB",
        topics=[kb.TopicSpec("orders", 2, codec="lz4"), kb.TopicSpec("payments", 1, codec="zstd")],
        segment_bytes="96KB",
        progress=False,
    )
    return root


@pytest.fixture(scope="session")
def keys() -> tuple[tf.KeyPair, tf.KeyPair]:
    return tf.make_key_pair("key-1"), tf.make_key_pair("key-2")


def _partitions(broker: Path) -> list[tuple[str, int, Path]]:
    out = []
    for folder in sorted(broker.iterdir()):
        if folder.is_dir() and "-" in folder.name:
            topic, _, partition = folder.name.rpartition("-")
            out.append((topic, int(partition), folder))
    return out


def _end_offsets(log: Path) -> tuple[int, int]:
    batches = list(kb.iter_batches(log.read_bytes(), validate_crc=False))
    return batches[-1].last_offset, max(b.max_timestamp for b in batches)


def _upload(broker: Path, root: Path, mode: str, key: tf.KeyPair | None, *, segments=None, prefix="tiered/", **kw):
    uploader = tf.Uploader(root, mode, CHUNK, key, prefix=prefix, **kw)
    for topic, partition, folder in _partitions(broker):
        logs = tf.broker_segments(folder)
        for log in logs if segments is None else [logs[i] for i in segments if i < len(logs)]:
            end, max_ts = _end_offsets(log)
            uploader.upload(log, topic, partition, end_offset=end, max_timestamp=max_ts)
    return uploader


def _key_spec(key: tf.KeyPair) -> dict[str, str]:
    return {key.key_id: key.private_pem}


def _rows(table: pa.Table) -> list[tuple]:
    cols = ["topic", "partition", "offset", "timestamp", "key", "value", "headers"]
    return sorted(zip(*(table[c].to_pylist() for c in cols)))


def _same(a: pa.Table, b: pa.Table) -> None:
    assert a.num_rows == b.num_rows
    assert _rows(a) == _rows(b)


@pytest.fixture(scope="session")
def buckets(broker, keys, tmp_path_factory):
    """One bucket per mode, every segment uploaded."""
    out = {}
    for mode in tf.MODES:
        root = tmp_path_factory.mktemp(mode.replace("+", "-"))
        _upload(broker, root, mode, keys[0] if "encrypted" in mode else None)
        out[mode] = root
    return out


@pytest.mark.parametrize("mode", tf.MODES)
def test_every_mode_reads_as_the_broker_folder(broker, buckets, keys, mode):
    expected = scan_log(broker).read_all()
    segments = list_segments(buckets[mode])
    assert {s.layout for s in segments} == {"aiven"}
    assert {(s.topic, s.partition) for s in segments} == {("orders", 0), ("orders", 1), ("payments", 0)}
    got = scan_log(buckets[mode], tiered_keys=_key_spec(keys[0])).read_all()
    _same(got, expected)
    # Objects really are transformed, and span many chunks.
    manifest = json.loads(Path(segments[0].manifest).read_text())
    assert manifest["chunkIndex"]["type"] == ("variable" if "zstd" in mode else "fixed")
    m = native.RemoteManifest(Path(segments[0].manifest).read_text(), native.TieredKeys(_key_spec(keys[0])))
    assert m.chunk_count > 5 and m.original_size == segments[0].size
    assert m.compression == ("zstd" in mode) and m.encrypted == ("encrypted" in mode)


@pytest.mark.parametrize("mode", ["plain", "zstd+encrypted"])
def test_bounded_reads_fetch_only_what_they_need(broker, buckets, keys, mode):
    start, end = 700, 760
    expected = scan_log(broker, start_offset=start, end_offset=end).read_all()
    assert expected.num_rows > 0
    results = []  # what each segment read fetched (a segment left unread by its name fetches nothing)
    got = scan_log(
        buckets[mode], start_offset=start, end_offset=end, tiered_keys=_key_spec(keys[0]), on_segment=results.append
    ).read_all()
    _same(got, expected)
    read = [r for r in results if r.fetched_bytes]
    fetched = sum(r.fetched_bytes for r in read)
    tiered_keys = native.TieredKeys(_key_spec(keys[0]))
    whole = sum(native.RemoteManifest(Path(r.segment.manifest).read_text(), tiered_keys).transformed_size for r in read)
    assert 0 < fetched < whole / 3, (fetched, whole)
    # Timestamps too.
    ts = expected["timestamp"][0].as_py()
    _same(
        scan_log(buckets[mode], start_timestamp=ts, end_offset=end, tiered_keys=_key_spec(keys[0])).read_all(),
        scan_log(broker, start_timestamp=ts, end_offset=end).read_all(),
    )


def test_read_segment_by_manifest_or_log_key(broker, buckets, keys):
    seg = list_segments(buckets["zstd+encrypted"])[1]
    broker_log = broker / f"{seg.topic}-{seg.partition}" / f"{seg.base_offset:020d}.log"
    expected = kb.read_segment(broker_log)
    keyspec = _key_spec(keys[0])
    _same(kb.read_segment(seg.manifest, tiered_keys=keyspec), expected)
    _same(kb.read_segment(seg.path, tiered_keys=keyspec), expected)
    first = expected["offset"][10].as_py()
    _same(
        kb.read_segment(seg.path, tiered_keys=keyspec, start_offset=first, end_offset=first + 5),
        kb.read_segment(broker_log, start_offset=first, end_offset=first + 5),
    )
    # read_committed: the same records as the broker's segment gives.
    _same(
        kb.read_segment(seg.path, tiered_keys=keyspec, isolation="read_committed"),
        scan_log(broker / f"{seg.topic}-{seg.partition}", isolation="read_committed", start_offset=seg.base_offset,
                 end_offset=expected["offset"][-1].as_py() + 1).read_all(),
    )  # fmt: skip


def test_remote_and_local_together_every_offset_once(broker, keys, tmp_path):
    """A bucket of older segments, a broker dir holding the newer ones (and
    some of the same), and a second upload of the same offsets under another
    segment id: every offset exactly once."""
    root = tmp_path / "all"
    bucket = root / "bucket"
    uploader = _upload(broker, bucket, "zstd+encrypted", keys[0], segments=[0, 1, 2, 3])
    # The same offsets uploaded again after a leader change (another segment id, other chunking).
    again = tf.Uploader(bucket, "zstd", CHUNK * 2, prefix="tiered/", topic_ids=uploader.topic_ids, seed=9)
    for topic, partition, folder in _partitions(broker):
        log = tf.broker_segments(folder)[1]
        end, max_ts = _end_offsets(log)
        again.upload(log, topic, partition, end_offset=end, max_timestamp=max_ts)
    # The broker keeps its newest segments locally (2.. of each partition).
    for _topic, _partition, folder in _partitions(broker):
        local = root / "broker" / folder.name
        local.mkdir(parents=True)
        for log in tf.broker_segments(folder)[2:]:
            for f in folder.glob(log.stem + ".*"):
                shutil.copy(f, local / f.name)
    expected = scan_log(broker).read_all()
    got = scan_log(root, tiered_keys=_key_spec(keys[0])).read_all()
    offsets = list(zip(got["topic"].to_pylist(), got["partition"].to_pylist(), got["offset"].to_pylist()))
    assert len(offsets) == len(set(offsets))
    _same(got, expected)
    # read_committed: each batch's transaction state is taken once too.
    _same(
        scan_log(root, tiered_keys=_key_spec(keys[0]), isolation="read_committed").read_all(),
        scan_log(broker, isolation="read_committed").read_all(),
    )
    # Bounded reads across the seam.
    seam = tf.broker_segments(broker / "orders-0")[2].name
    base = int(seam[:20])
    _same(
        scan_log(root, start_offset=base - 7, end_offset=base + 9, tiered_keys=_key_spec(keys[0])).read_all(),
        scan_log(broker, start_offset=base - 7, end_offset=base + 9).read_all(),
    )


def test_local_tiered_storage_layout(broker, tmp_path):
    import random

    rng = random.Random(3)
    topic_ids = {}
    for topic, partition, folder in _partitions(broker):
        topic_id = topic_ids.setdefault(topic, tf.kafka_uuid(rng, dash_digit=True))
        for i, log in enumerate(tf.broker_segments(folder)):
            tf.local_tiered_copy(tmp_path, log, topic, partition, topic_id, tf.kafka_uuid(rng), padded=i % 2 == 0)
    segments = list_segments(tmp_path)
    assert {s.layout for s in segments} == {"local-tiered"}
    assert {(s.topic, s.partition) for s in segments} == {("orders", 0), ("orders", 1), ("payments", 0)}
    assert all("-" in s.topic_id for s in segments if s.topic_id)
    _same(scan_log(tmp_path).read_all(), scan_log(broker).read_all())
    _same(
        scan_log(tmp_path, start_offset=300, end_offset=420).read_all(),
        scan_log(broker, start_offset=300, end_offset=420).read_all(),
    )


def test_names_are_not_parsed_by_the_last_dash():
    n = remote_name("b/p/my-topic-7-Ab3-12defghijklmnop-12/12/00000000000000000042-tqimKeZwStOEOwRzT3L5oQ.rsm-manifest")
    assert (n.layout, n.topic, n.partition, n.topic_id, n.base_offset) == (
        "aiven", "my-topic-7", 12, "Ab3-12defghijklmnop-12", 42,
    )  # fmt: skip
    n = remote_name("x/my-topic-7-3-Ab3-12defghijklmnop-12/42-tqimKeZwStOEOwRzT3L5oQ.log")
    assert (n.layout, n.topic, n.partition, n.topic_id) == ("local-tiered", "my-topic-7", 3, "Ab3-12defghijklmnop-12")
    assert remote_name("orders-0/00000000000000000000.log") is None


#: The plugin's own manifest strings (SegmentManifestV1SerdeTest), key removed as in its test.
RLSM = (
    '{"remoteLogSegmentId":{"topicIdPartition":{"topicId":"lZ6vvmajTWKDBUTV6SQAtQ","topicPartition":'
    '{"topic":"topic1","partition":42}},"id":"adh9f8BMS4anaUnD8KWfWg"},"startOffset":0,"endOffset":1000,'
    '"maxTimestampMs":1000000000,"brokerId":2,"eventTimestampMs":2000000000,'
    '"segmentLeaderEpochs":{"0":100,"1":200,"2":300}}'
)
WITHOUT_ENCRYPTION_JSON = (
    '{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":100,"originalFileSize":1000,'
    '"transformedChunkSize":110,"finalTransformedChunkSize":110},"segmentIndexes":{'
    '"offset":{"position":0,"size":1},"timestamp":{"position":1,"size":1},'
    '"producerSnapshot":{"position":2,"size":1},"leaderEpoch":{"position":3,"size":1},'
    '"transaction":{"position":4,"size":1}},"compression":false,"remoteLogSegmentMetadata":' + RLSM + "}"
)
VARIABLE_CHUNK_INDEX_JSON = (
    '{"type":"variable","originalChunkSize":100,"originalFileSize":250,'
    '"transformedChunks":"KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe"}'
)


def test_plugin_manifest_strings():
    m = native.RemoteManifest(WITHOUT_ENCRYPTION_JSON, name="m")
    assert (m.chunk_index_type, m.chunk_count, m.original_size, m.transformed_size) == ("fixed", 10, 1000, 1100)
    assert (m.topic, m.partition, m.topic_id, m.segment_id) == (
        "topic1",
        42,
        "lZ6vvmajTWKDBUTV6SQAtQ",
        "adh9f8BMS4anaUnD8KWfWg",
    )
    assert (m.start_offset, m.end_offset, m.max_timestamp) == (0, 1000, 1000000000)
    assert m.index_slice("transaction") == (4, 1) and m.index_slice("leaderEpoch") == (3, 1)
    assert not m.encrypted and m.key_id is None
    variable = WITHOUT_ENCRYPTION_JSON.replace(
        '{"type":"fixed","originalChunkSize":100,"originalFileSize":1000,"transformedChunkSize":110,'
        '"finalTransformedChunkSize":110}',
        VARIABLE_CHUNK_INDEX_JSON,
    )
    m = native.RemoteManifest(variable)
    assert [m.chunk(i) for i in range(m.chunk_count)] == [(0, 100, 0, 10), (100, 100, 10, 20), (200, 50, 30, 30)]
    assert m.chunks_for(150, 201) == (1, 3) and m.transformed_range(1, 3) == (10, 60)


def _first_manifest(root: Path) -> Path:
    return sorted(root.rglob("*.rsm-manifest"))[0]


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_bad_input_clear_errors(broker, buckets, keys, tmp_path):
    enc = buckets["zstd+encrypted"]
    # No keys, a wrong key.
    with pytest.raises(kb.TieredStorageError, match=r'key pair "key-1" and no keys were given \(tiered_keys\)') as info:
        scan_log(enc).read_all()
    assert info.value.kind == "key" and info.value.object.endswith(".rsm-manifest")
    wrong = {"key-1": keys[1].private_pem}
    with pytest.raises(kb.TieredStorageError, match="does not unwrap"):
        scan_log(enc, tiered_keys=wrong).read_all()
    with pytest.raises(kb.TieredStorageError, match="not among the keys given \\(key-2\\)"):
        scan_log(enc, tiered_keys=_key_spec(keys[1])).read_all()
    # A chunk whose GCM tag fails: named, and skippable.
    bad = _copy(enc, tmp_path / "gcm")
    manifest = _first_manifest(bad)
    m = native.RemoteManifest(manifest.read_text(), native.TieredKeys(_key_spec(keys[0])))
    log = manifest.with_name(manifest.name.replace(".rsm-manifest", ".log"))
    data = bytearray(log.read_bytes())
    data[m.chunk(3)[2] + 20] ^= 0x55
    log.write_bytes(bytes(data))
    with pytest.raises(kb.TieredStorageError, match="chunk 3: the AES-GCM tag does not match") as info:
        scan_log(bad, tiered_keys=_key_spec(keys[0])).read_all()
    assert info.value.kind == "chunk" and info.value.chunk == 3 and str(log) in str(info.value)
    results = []
    got = scan_log(bad, tiered_keys=_key_spec(keys[0]), on_error="skip", on_segment=results.append).read_all()
    assert sum(len(r.skipped) for r in results) == 1
    assert 0 < got.num_rows < scan_log(broker).read_all().num_rows
    # A truncated object.
    cut = _copy(enc, tmp_path / "cut")
    log = sorted(cut.rglob("*.log"))[0]
    log.write_bytes(log.read_bytes()[:-100])
    with pytest.raises(kb.TieredStorageError, match="describes") as info:
        scan_log(cut, tiered_keys=_key_spec(keys[0])).read_all()
    assert info.value.kind == "truncated"
    # Unknown manifest version, malformed JSON.
    for text, want in (('{"version":"2"}', 'version "2" is not supported'), ("{not json", "not valid JSON")):
        odd = _copy(enc, tmp_path / f"m{len(text)}")
        _first_manifest(odd).write_text(text)
        with pytest.raises(kb.TieredStorageError, match=want) as info:
            scan_log(odd, tiered_keys=_key_spec(keys[0])).read_all()
        assert info.value.kind == "manifest"
        results = []
        scan_log(odd, tiered_keys=_key_spec(keys[0]), on_error="skip", on_segment=results.append).read_all()
        assert sum(len(r.skipped) for r in results) == 1
    # An index slice out of range.
    out = _copy(buckets["zstd"], tmp_path / "index")
    manifest = _first_manifest(out)
    doc = json.loads(manifest.read_text())
    doc["segmentIndexes"]["offset"]["position"] = 1 << 30
    manifest.write_text(json.dumps(doc))
    base = int(manifest.name[:20])
    with pytest.raises(kb.TieredStorageError, match="offset index lies at bytes"):
        scan_log(out, start_offset=base + 50, end_offset=base + 60).read_all()


def test_log_without_manifest_is_left_out(broker, buckets, tmp_path):
    """The newest segment of a partition without its manifest is an upload in
    progress: left out with a warning. An older one is a hole (segments are
    uploaded in offset order): an error, or with a problems list, one there."""
    partial = _copy(buckets["zstd"], tmp_path / "partial")
    newest = sorted(sorted(partial.rglob("*.rsm-manifest"))[0].parent.glob("*.rsm-manifest"))[-1]
    newest.unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        segments = list_segments(partial)
    assert any(issubclass(w.category, TieredStorageWarning) and "upload in progress" in str(w.message) for w in caught)
    assert len(segments) == len(list_segments(buckets["zstd"])) - 1
    hole = _first_manifest(partial)
    hole.unlink()
    log = str(hole).replace(".rsm-manifest", ".log")
    with pytest.raises(kb.TieredStorageError, match="manifest .* is missing") as info:
        list_segments(partial)
    assert info.value.object == log
    problems: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TieredStorageWarning)
        assert len(list_segments(partial, problems=problems)) == len(segments) - 1
    assert [seg.path for seg, _ in problems] == [log]


def test_spark_reads_a_bucket(spark, kafka_log, broker, buckets, keys):
    keyspec = json.dumps(_key_spec(keys[0]))
    df = (
        spark.read.format(kafka_log)
        .option("tieredKeys", keyspec)
        .option("maxBytesPerPartition", str(256 << 10))
        .load(str(buckets["zstd+encrypted"]))
    )
    rows = df.select("topic", "partition", "offset").collect()
    expected = scan_log(broker).read_all()
    assert sorted((r.topic, r.partition, r.offset) for r in rows) == sorted(
        zip(expected["topic"].to_pylist(), expected["partition"].to_pylist(), expected["offset"].to_pylist())
    )
    assert df.rdd.getNumPartitions() >= 2


def test_cli_dump_stats_convert(broker, buckets, keys, tmp_path):
    from kafkabatch.cli import main

    pem = tmp_path / "key-1.pem"
    pem.write_text(keys[0].private_pem)
    flag = ["--tiered-key", f"key-1={pem}"]
    bucket = str(buckets["zstd+encrypted"])
    out = tmp_path / "out.parquet"
    assert main(["convert", bucket, str(out), "--no-progress", "-q", *flag]) == 0
    import pyarrow.parquet as pq

    _same(pq.read_table(out), scan_log(broker).read_all())
    totals = []
    for path in (bucket, str(broker)):
        stats = tmp_path / "stats.json"
        with open(stats, "w") as f, contextlib.redirect_stdout(f):
            assert main(["stats", path, "--json", "--no-progress", *flag]) == 0
        totals.append(json.loads(stats.read_text())["total"])
    for field in ("records", "batches", "control_batches", "record_bytes"):
        assert totals[0][field] == totals[1][field], field
    seg = list_segments(bucket)[0]
    dumped = tmp_path / "dump.txt"
    with open(dumped, "w") as f, contextlib.redirect_stdout(f):
        assert main(["dump", seg.manifest, *flag]) == 0
    lines = [line for line in dumped.read_text().splitlines() if line.startswith("baseOffset:")]
    assert len(lines) == len(list(kb.iter_batches((broker / "orders-0" / f"{seg.base_offset:020d}.log").read_bytes())))


def test_bounded_read_on_s3_fetches_chunks_not_objects(broker, buckets, keys, moto_s3):
    """Counted on the server: a bounded read requests its chunks and one index slice, never whole objects."""
    import urllib.request

    filesystem, endpoint, recording = moto_s3
    local = buckets["zstd+encrypted"]
    sizes = {}
    for path in sorted(local.rglob("*")):
        if path.is_file():
            key = "tiered/" + path.relative_to(local).as_posix()
            with filesystem.open_output_stream(key) as f:
                f.write(path.read_bytes())
            sizes[key] = path.stat().st_size
    urllib.request.urlopen(
        urllib.request.Request(f"http://{endpoint}/moto-api/recorder/start-recording", method="POST")
    )
    seg = list_segments(local)[2]
    folder = Path(seg.path).parent.relative_to(local).as_posix()
    uri = f"s3://tiered/{folder}/?endpoint_override={endpoint}&scheme=http"
    start = seg.base_offset + 100
    got = scan_log(uri, start_offset=start, end_offset=start + 5, tiered_keys=_key_spec(keys[0])).read_all()
    _same(got, scan_log(broker / f"{seg.topic}-{seg.partition}", start_offset=start, end_offset=start + 5).read_all())
    urllib.request.urlopen(urllib.request.Request(f"http://{endpoint}/moto-api/recorder/stop-recording", method="POST"))
    fetched = tf.bytes_fetched(recording, endpoint, sizes)
    m = native.RemoteManifest(Path(seg.manifest).read_text(), native.TieredKeys(_key_spec(keys[0])))
    biggest_chunk = max(m.chunk(i)[3] for i in range(m.chunk_count))
    log_key = "tiered/" + Path(seg.path).relative_to(local).as_posix()
    indexes_key = log_key[: -len(".log")] + ".indexes"
    assert 0 < fetched.get(log_key, 0) <= 3 * biggest_chunk, (fetched, biggest_chunk)
    assert fetched.get(indexes_key, 0) <= m.index_slice("offset")[1]
    # Other segments of the partition: at most their (small) manifests.
    for key in fetched:
        if key not in (log_key, indexes_key):
            assert key.endswith(".rsm-manifest"), key


def test_stream_picks_up_segments_once_their_manifest_exists(spark, broker, keys, tmp_path):
    """readStream over a bucket: each trigger reads the segments uploaded since, a segment
    counting only once its manifest exists."""
    from pyspark.sql import functions as F

    bucket, ck, out = tmp_path / "bucket", tmp_path / "ck", tmp_path / "out"
    uploader = tf.Uploader(bucket, "zstd+encrypted", CHUNK, keys[0], prefix="tiered/")
    folder = max((f for _, _, f in _partitions(broker)), key=lambda f: len(tf.broker_segments(f)))
    topic, _, partition = folder.name.rpartition("-")
    logs = tf.broker_segments(folder)
    assert len(logs) >= 3

    def put(log: Path) -> dict[str, Path]:
        end, max_ts = _end_offsets(log)
        return uploader.upload(log, topic, int(partition), end_offset=end, max_timestamp=max_ts)

    def run() -> list[int]:
        query = (
            spark.readStream.format("kafka-log-python")
            .option("tieredKeys", json.dumps(_key_spec(keys[0])))
            .load(str(bucket))
            .writeStream.format("parquet")
            .option("checkpointLocation", str(ck))
            .trigger(availableNow=True)
            .start(str(out))
        )
        query.awaitTermination(120)
        if query.exception() is not None:
            raise query.exception()
        return sorted(r.offset for r in spark.read.parquet(str(out)).select(F.col("offset")).collect())

    def offsets(upto: int) -> list[int]:
        table = scan_log(folder).read_all()
        return sorted(o for o in table["offset"].to_pylist() if o < upto)

    put(logs[0])
    assert run() == offsets(int(logs[1].name[:20]))
    put(logs[1])
    pending = put(logs[2])
    manifest_text = pending["rsm-manifest"].read_text()
    pending["rsm-manifest"].unlink()  # still uploading: the .log is there, its manifest not yet
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TieredStorageWarning)
        assert run() == offsets(int(logs[2].name[:20]))
        pending["rsm-manifest"].write_text(manifest_text)
        assert run() == offsets(int(logs[3].name[:20]) if len(logs) > 3 else 1 << 62)


def test_spark_plan_cuts_remote_segments_at_chunks(buckets, keys):
    pytest.importorskip("pyspark")
    import kafkabatch.spark as kbs
    from kafkabatch.spark.planning import splits_of

    seg = max(list_segments(buckets["zstd+encrypted"], tiered_keys=_key_spec(keys[0])), key=lambda s: s.size)
    options = {
        "path": str(buckets["zstd+encrypted"]),
        "tieredkeys": json.dumps(_key_spec(keys[0])),
        "maxbytesperpartition": str(3 * CHUNK),
        "minpartitions": "1000",
    }
    source = kbs.KafkaLogDataSource(options)
    tasks = source.reader(source.schema()).partitions()
    ranges = [(s.start, s.end, s.check_start) for task in tasks for s in splits_of(task) if s.path == seg.path]
    assert len(ranges) > 2 and ranges[0][0] == 0 and ranges[-1][1] == seg.size
    for (_, end, _), (start, _, from_index) in zip(ranges, ranges[1:]):
        assert end == start and from_index
    source = TieredSource(seg.path, seg.manifest, seg.keys)
    try:
        for start, end, _ in ranges[1:]:  # each cut is a batch start (the first indexed one of a chunk)
            assert kb.valid_bytes(bytes(source.read(start, end - start))) == end - start
    finally:
        source.close()


GOLDEN = Path(__file__).parent / "data" / "tiered-aiven"


def test_a_segment_the_plugin_itself_wrote():
    """Objects written by the Aiven plugin's own classes (see tests/data/tiered-aiven/README.md)."""
    keys = {"key-1": str(GOLDEN / "private-key.pem")}
    bucket = GOLDEN / "zstd-encrypted"
    [seg] = list_segments(bucket)
    assert (seg.topic, seg.partition, seg.base_offset, seg.topic_id, seg.layout) == (
        "orders", 0, 75, "Ab3-12XqRZ-5Wd9PlYx0cQ", "aiven",
    )  # fmt: skip
    original = (GOLDEN / "original.log").read_bytes()
    assert seg.size == len(original)
    _same(scan_log(bucket, tiered_keys=keys).read_all(), kb.decode(original, topic="orders", partition=0))
    m = native.RemoteManifest(
        Path(seg.manifest).read_text(), native.TieredKeys({"key-1": (GOLDEN / "private-key.pem").read_text()})
    )
    assert (m.chunk_index_type, m.compression, m.encrypted, m.key_id) == ("variable", True, True, "key-1")
    assert m.chunk_count == 11 and m.detransform(Path(seg.path).read_bytes()) == original
    indexes = Path(seg.path).with_suffix(".indexes").read_bytes()
    position, size = m.index_slice("transaction")
    assert (
        m.detransform_index("transaction", indexes[position : position + size])
        == (GOLDEN / "original.txnindex").read_bytes()
    )
    # A bounded read seeks with the plugin's encrypted offset index.
    offsets = kb.decode(original)["offset"].to_pylist()
    start, end = offsets[len(offsets) // 2], offsets[len(offsets) // 2] + 5
    _same(
        kb.read_segment(seg.manifest, tiered_keys=keys, start_offset=start, end_offset=end),
        kb.decode(original, topic="orders", partition=0).filter(
            (pc.field("offset") >= start) & (pc.field("offset") < end)
        ),
    )


def test_remote_names_in_unknown_folders_are_one_clear_error(tmp_path):
    stray = tmp_path / "somewhere" / "00000000000000000000-tqimKeZwStOEOwRzT3L5oQ.log"
    stray.parent.mkdir()
    stray.write_bytes(b"")
    with pytest.raises(ValueError, match="somewhere.*fit no known layout.*topic= and partition="):
        list_segments(tmp_path)
    [seg] = list_segments(tmp_path, topic="t", partition=3)
    assert (seg.topic, seg.partition, seg.base_offset) == ("t", 3, 0)


# --------------------------------------------------------------------------
# remote URIs read through the core's object stores (object_store), on moto
# --------------------------------------------------------------------------


def _put_tree(filesystem, local: Path, prefix: str) -> dict[str, int]:
    """Every file under ``local`` put on the S3 server under ``tiered/<prefix>``: key → size."""
    sizes = {}
    for path in sorted(local.rglob("*")):
        if path.is_file():
            key = f"tiered/{prefix}" + path.relative_to(local).as_posix()
            with filesystem.open_output_stream(key) as f:
                f.write(path.read_bytes())
            sizes[key] = path.stat().st_size
    return sizes


def test_core_storage_reads_as_pyarrow_reads(broker, buckets, moto_s3, monkeypatch):
    """Listing, sizes and ranged reads of the core's S3 store equal pyarrow's S3FileSystem on the same server."""
    from pyarrow import fs as pafs

    filesystem, endpoint, _ = moto_s3
    sizes = _put_tree(filesystem, buckets["zstd+encrypted"], "b/")
    sizes.update(_put_tree(filesystem, broker / "orders-0", "broker/orders-0/"))
    query = f"?endpoint_override={endpoint}&scheme=http"
    storage = native.resolve_storage(f"s3://tiered/{query}")
    assert storage is not None
    listed = storage.list(f"s3://tiered/{query}")
    infos = filesystem.get_file_info(pafs.FileSelector("tiered", recursive=True))
    expected = sorted((f"s3://{i.path}{query}", i.size) for i in infos if i.type == pafs.FileType.File)
    assert listed == expected and len(listed) == len(sizes)
    # Hadoop's spelling, and a prefix: the URIs come back spelled as asked.
    under = storage.list(f"s3a://tiered/broker/{query}")
    assert [u for u, _ in under] == [f"s3a://{k}{query}" for k in sorted(sizes) if k.startswith("tiered/broker/")]
    assert storage.list(f"s3://tiered/broker/{query}", recursive=False) == []
    for key, size in sizes.items():
        uri = f"s3://{key}{query}"
        assert storage.size(uri) == size
        with filesystem.open_input_file(key) as f:
            whole = f.read()
            cuts = [(0, size), (size // 3, size // 2), (max(size - 7, 0), size)]
            assert [storage.read(uri, a, b) for a, b in cuts] == [whole[a:b] for a, b in cuts]
            assert storage.read_ranges(uri, cuts) == [f.read_at(b - a, a) for a, b in cuts]
    assert storage.size(f"s3://tiered/b/nothing.log{query}") is None
    with pytest.raises(FileNotFoundError):
        storage.read(f"s3://tiered/b/nothing.log{query}", 0, 1)
    with pytest.raises(OSError, match="past the end"):
        key, size = next(iter(sizes.items()))
        storage.read(f"s3://{key}{query}", size - 1, size + 10)
    # The endpoint from the environment as AWS's tools take it; an http:// endpoint needs no AWS_ALLOW_HTTP.
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{endpoint}")
    monkeypatch.delenv("AWS_ALLOW_HTTP", raising=False)
    from_env = native.resolve_storage("s3://tiered/")
    assert from_env.list("s3://tiered/") == [(u.replace(query, ""), n) for u, n in listed]
    # Options in object_store's words win over the environment.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    with_options = native.resolve_storage("s3://tiered/", {"aws_endpoint": f"http://{endpoint}"})
    assert with_options.list("s3://tiered/broker/") == from_env.list("s3://tiered/broker/")
    with pytest.raises(ValueError, match="unknown storage option 'no_such_option'|\"no_such_option\""):
        native.resolve_storage("s3://tiered/", {"no_such_option": "1"})
    # Schemes the core doesn't serve (and pyarrow's other query keys) are left to pyarrow.
    assert native.resolve_storage("hdfs://namenode/kafka/") is None
    assert native.resolve_storage("s3://tiered/?allow_bucket_creation=true") is None
    assert native.resolve_storage("/var/lib/kafka") is None


def test_scan_log_joins_a_bucket_and_a_broker_dir(broker, keys, moto_s3, monkeypatch, tmp_path):
    """``scan_log([s3 prefix, broker dir])``: the older segments in a bucket, the newer (and some of the
    same) in a broker log dir; every offset once, as the original broker folder has them."""
    filesystem, endpoint, _ = moto_s3
    bucket = tmp_path / "bucket"
    _upload(broker, bucket, "zstd+encrypted", keys[0], segments=[0, 1, 2, 3], prefix="")
    _put_tree(filesystem, bucket, "kafka/")
    local = tmp_path / "broker"
    for _topic, _partition, folder in _partitions(broker):
        (local / folder.name).mkdir(parents=True)
        for log in tf.broker_segments(folder)[2:]:
            for f in folder.glob(log.stem + ".*"):
                shutil.copy(f, local / folder.name / f.name)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{endpoint}")
    remote = "s3://tiered/kafka/"
    key_spec = _key_spec(keys[0])
    expected = scan_log(broker).read_all()

    def offsets(table: pa.Table) -> list[tuple]:
        return list(zip(table["topic"].to_pylist(), table["partition"].to_pylist(), table["offset"].to_pylist()))

    got = scan_log([remote, local], tiered_keys=key_spec).read_all()
    assert len(offsets(got)) == len(set(offsets(got)))
    _same(got, expected)
    # Each copy alone holds part of the offsets (some in both); the join is their union, once.
    alone = [scan_log(root, tiered_keys=key_spec).read_all() for root in (remote, local)]
    assert all(0 < t.num_rows < expected.num_rows for t in alone)
    assert sum(t.num_rows for t in alone) > expected.num_rows
    assert set(offsets(got)) == set(offsets(alone[0])) | set(offsets(alone[1]))
    # The same list, in the other order, read through pyarrow, and through polars.
    _same(scan_log([local, remote], tiered_keys=key_spec).read_all(), expected)
    monkeypatch.setenv("KAFKABATCH_STORAGE", "pyarrow")
    _same(scan_log([remote, local], tiered_keys=key_spec, isolation="read_committed").read_all(),
          scan_log(broker, isolation="read_committed").read_all())  # fmt: skip
    monkeypatch.delenv("KAFKABATCH_STORAGE")
    pytest.importorskip("polars")
    frame = kb.scan_polars([remote, str(local)], tiered_keys=key_spec).collect()
    _same(frame.to_arrow(), expected)
    # read_segment takes a list of segments too.
    segs = list_segments(local / "orders-0")[:2]
    _same(kb.read_segment([s.path for s in segs]), pa.concat_tables([kb.read_segment(s.path) for s in segs]))
    with pytest.raises(TypeError, match="path must be a path, URI or glob, or a list of them"):
        scan_log([remote, 3])
    with pytest.raises(ValueError, match="path is an empty list"):
        scan_log([])


def test_cli_on_s3_with_the_endpoint_in_the_environment(broker, buckets, keys, moto_s3, monkeypatch, tmp_path):
    """``stats``, ``convert`` and ``dump`` on s3:// URIs, with AWS_ENDPOINT_URL as docs/tiered-storage.md says."""
    from kafkabatch.cli import main

    filesystem, endpoint, _ = moto_s3
    _put_tree(filesystem, buckets["zstd+encrypted"], "cli/")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{endpoint}")
    pem = tmp_path / "key-1.pem"
    pem.write_text(keys[0].private_pem)
    flag = ["--tiered-key", f"key-1={pem}"]
    out = tmp_path / "out.parquet"
    assert main(["convert", "s3://tiered/cli/", str(out), "--no-progress", "-q", *flag]) == 0
    import pyarrow.parquet as pq

    _same(pq.read_table(out), scan_log(broker).read_all())
    totals = []
    for path in ("s3://tiered/cli/", str(broker)):
        stats = tmp_path / "stats.json"
        with open(stats, "w") as f, contextlib.redirect_stdout(f):
            assert main(["stats", path, "--json", "--no-progress", *flag]) == 0
        totals.append(json.loads(stats.read_text())["total"])
    for field in ("records", "batches", "control_batches", "record_bytes"):
        assert totals[0][field] == totals[1][field], field
    seg = list_segments("s3://tiered/cli/")[0]
    dumped = tmp_path / "dump.txt"
    with open(dumped, "w") as f, contextlib.redirect_stdout(f):
        assert main(["dump", seg.manifest, *flag]) == 0
    lines = [line for line in dumped.read_text().splitlines() if line.startswith("baseOffset:")]
    assert len(lines) == len(list(kb.iter_batches((broker / "orders-0" / f"{seg.base_offset:020d}.log").read_bytes())))
    # A convert joining the bucket and a broker folder: each offset once.
    out2 = tmp_path / "joined.parquet"
    assert main(["convert", "s3://tiered/cli/", str(broker), str(out2), "--no-progress", "-q", *flag]) == 0
    _same(pq.read_table(out2), scan_log(broker).read_all())
