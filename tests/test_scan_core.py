"""The core's reader (``_kafkabatch._scan_read``, the Rust ``Scan``) against ``kafkabatch.scan_log``.

``scan_log`` is tested against real clients' bytes elsewhere (tests/README.md); here
the core's plan and reader must give the same rows, in the same order, on a
generated folder (legacy v1 and transactions included), the real-client folders the
suite builds and a sample Aiven bucket, under bounds and both isolation levels.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import realclients as rc
from test_logdir import build_log

import kafkabatch as kb
from kafkabatch import _kafkabatch as native
from kafkabatch.log.tiered import resolve_keys


def core(root: Path | str, **options: Any) -> pa.Table:
    reader = native._scan_read([str(root)], **options)
    assert reader.schema == kb.SCHEMA
    return reader.read_all()


def same(root: Path | str, **options: Any) -> pa.Table:
    """Asserts the core and ``scan_log`` return the same rows for ``options``; returns them."""
    ours = core(root, **options)
    theirs = kb.scan_log(root, **options).read_all()
    assert ours.num_rows == theirs.num_rows, options
    assert ours.equals(theirs), options
    keys = list(zip(*(ours.column(c).to_pylist() for c in ("topic", "partition", "offset")), strict=True))
    assert len(keys) == len(set(keys)), "an offset returned twice"
    return ours


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "data"
    kb.generate(out, size="3MB", segment_bytes="64KB", seed=5)
    return out


@pytest.fixture(scope="module")
def middle_ms(generated) -> int:
    """A time about half way through the generated records (ms)."""
    stamps = kb.scan_log(generated).read_all().column("timestamp")
    low, high = pc.min_max(stamps.cast(pa.int64())).values()
    return (low.as_py() + high.as_py()) // 2000


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_generated_folder_whole(generated, isolation):
    table = same(generated, isolation=isolation)
    topics = set(table.column("topic").to_pylist())
    assert {"orders", "audit-legacy"} <= topics
    if isolation == "read_uncommitted":
        committed = core(generated, isolation="read_committed")
        assert committed.num_rows < table.num_rows  # the generator aborts some transactions


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
@pytest.mark.parametrize(
    "bounds",
    [
        {"start_offset": 150},
        {"end_offset": 400},
        {"start_offset": 90, "end_offset": 1_000},
        {"start_offset": {"orders": {0: 500, 2: 20}}, "end_offset": {("audit-legacy", 0): 300}},
        {"start_offset": 10, "end_offset": 5},
        {"max_chunk_bytes": 3_000},
    ],
)
def test_generated_folder_offset_bounds(generated, isolation, bounds):
    same(generated, isolation=isolation, **bounds)


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_generated_folder_time_bounds(generated, middle_ms, isolation):
    newer = same(generated, isolation=isolation, start_timestamp=middle_ms)
    older = same(generated, isolation=isolation, end_timestamp=middle_ms)
    assert newer.num_rows > 0 and older.num_rows > 0
    assert newer.num_rows + older.num_rows == core(generated, isolation=isolation).num_rows
    same(generated, isolation=isolation, start_timestamp=middle_ms - 5_000, end_timestamp=middle_ms, start_offset=30)


def test_generated_partition_folder_and_overrides(generated):
    same(generated / "orders-1")
    same(generated / "orders-1", topic="renamed", partition=7)
    legacy = same(generated / "audit-legacy-0", start_offset=100, end_offset=600)
    assert legacy.column("offset")[0].as_py() == 100


@pytest.fixture(scope="module")
def client_log(tmp_path_factory) -> Path:
    return build_log(tmp_path_factory.mktemp("logs") / "kafka-data")


@pytest.mark.filterwarnings("ignore:.*no offset index")  # scan_log's: the fixture keeps no indexes
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"start_offset": 25},
        {"end_offset": 17},
        {"isolation": "read_committed"},
        {"max_chunk_bytes": 100},
        {"validate_crc": False, "include_control": True},
    ],
)
def test_real_client_log_dir(client_log, options):
    assert same(client_log, **options).num_rows > 0


def test_real_client_log_dir_time_bounds(client_log):
    stamps = sorted(kb.scan_log(client_log).read_all().column("timestamp").cast(pa.int64()).to_pylist())
    middle = stamps[len(stamps) // 2] // 1000
    assert 0 < same(client_log, start_timestamp=middle).num_rows < len(stamps)
    assert 0 < same(client_log, end_timestamp=middle).num_rows < len(stamps)


def _fixture_names() -> list[str]:
    return [n for n in rc.all_fixture_names() if not n.startswith("librdkafka-")]


@pytest.mark.parametrize("name", _fixture_names())
def test_real_client_fixtures(golden, name, tmp_path):
    """Every real-client fixture as a one-segment partition folder: rows or error, as scan_log."""
    fixture = golden(name)
    folder = rc.write_segment(tmp_path, "t", 0, fixture.data).parent
    options = {} if fixture.crc_valid else {"validate_crc": False}
    for isolation in ("read_uncommitted", "read_committed"):
        try:
            theirs = kb.scan_log(folder, isolation=isolation, **options).read_all()
        except kb.KafkaBatchError:
            with pytest.raises(ValueError):
                core(folder, isolation=isolation, **options)
            continue
        assert core(folder, isolation=isolation, **options).equals(theirs), isolation


def test_librdkafka_fixtures(librdkafka, tmp_path):
    for name, fixture in librdkafka.items():
        folder = rc.write_segment(tmp_path / name, "t", 0, fixture.data).parent
        options = {} if fixture.crc_valid else {"validate_crc": False}
        for isolation in ("read_uncommitted", "read_committed"):
            theirs = kb.scan_log(folder, isolation=isolation, **options).read_all()
            assert core(folder, isolation=isolation, **options).equals(theirs), (name, isolation)


@pytest.fixture(scope="module")
def bucket(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiered") / "sample"
    summary = kb.generate(
        out, size="1MB", segment_bytes="48KB", seed=3, tiered="aiven", tiered_compression=True, tiered_encryption=True
    )
    assert summary.tiered is not None
    return summary.tiered


def test_tiered_bucket_every_offset_once(bucket):
    keys = dict(resolve_keys(bucket.tiered_keys))
    remote = same(bucket.folder, tiered_keys=keys)
    broker = kb.scan_log(bucket.broker).read_all()
    assert remote.equals(broker)
    same(bucket.folder, tiered_keys=keys, isolation="read_committed", start_offset=40)
    # bounded: remote segments are sought with their .indexes object's offset and time indexes
    stamps = broker.column("timestamp").cast(pa.int64()).to_pylist()
    middle = stamps[len(stamps) // 2] // 1000
    for bounds in ({"start_offset": 100, "end_offset": 300}, {"start_timestamp": middle}, {"end_offset": 7}):
        assert same(bucket.folder, tiered_keys=keys, **bounds).equals(same(bucket.broker, **bounds)), bounds
    # the folder holding both the bucket and the broker dir: every offset once
    assert same(bucket.folder.parent, tiered_keys=keys).equals(broker)


def test_tiered_bucket_without_keys_names_the_key_pair(bucket):
    with pytest.raises(ValueError, match="no keys were given"):
        core(bucket.folder)


#: The damaged buckets of test_tiered_damage (uploaded by the plugin's own
#: transforms, then damaged one way each) that the core's reader must read as
#: ``scan_log`` does: the same rows, or an error naming the same object.
DAMAGES = ("no_log", "bad_chunk", "truncated", "twin_damaged", "bad_chunk_twin", "no_manifest",
           "partition_folder_word", "end_offset_huge", "size_short", "no_indexes")  # fmt: skip


@pytest.fixture(scope="module")
def damage_broker(tmp_path_factory) -> Path:
    """test_tiered_damage's partition: five small segments."""
    pytest.importorskip("Crypto")
    pytest.importorskip("cryptography")
    root = tmp_path_factory.mktemp("damage-broker")
    kb.generate(root, size="280KB", topics=[kb.TopicSpec("orders", 1, codec="lz4")], segment_bytes="56KB",
                progress=False)  # fmt: skip
    return root


@pytest.mark.parametrize("mode", ["zstd", "zstd+encrypted"])
@pytest.mark.parametrize("case", DAMAGES)
def test_a_damaged_bucket_reads_as_scan_log_reads_it(damage_broker, tmp_path, mode, case):
    """Under ``on_error="skip"`` the rows of ``scan_log`` (a chunk that can't be
    undone costs its batches, a damaged copy is read from its twin, a segment
    that can't be listed or opened is left out); under ``"raise"`` its rows, or
    an error naming the same object."""
    import test_tiered_damage as td
    import tiered_fixtures as tf

    key = tf.make_key_pair("key-1")
    root = tmp_path / "bucket"
    td.upload(damage_broker, root, mode, key)
    damage = getattr(td, case)(root, mode, damage_broker, key)
    keys = {key.key_id: key.private_pem}
    for isolation in ("read_uncommitted", "read_committed"):
        options = {"tiered_keys": keys, "isolation": isolation, "start_offset": damage.start_offset}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = kb.scan_log(root, on_error="skip", **options).read_all()
        assert core(root, on_error="skip", **options).equals(theirs), (case, isolation)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = kb.scan_log(root, **options).read_all()
        except kb.KafkaBatchError as error:
            assert damage.named in str(error)
            # (an error met while streaming reaches Python as pyarrow's, with the core's words)
            with pytest.raises((kb.KafkaBatchError, pa.ArrowInvalid), match=damage.named.replace("?", r"\?")):
                core(root, **options)
        else:
            assert core(root, **options).equals(theirs), (case, isolation)


def test_bad_options_in_the_callers_words(generated):
    with pytest.raises(ValueError, match="isolation must be"):
        core(generated, isolation="committed")
    with pytest.raises(ValueError, match="max_chunk_bytes must be positive"):
        core(generated, max_chunk_bytes=0)
    with pytest.raises(TypeError, match="start_offset must be an int or a mapping"):
        core(generated, start_offset="10")
    with pytest.raises(ValueError, match="no storage"):
        core("s3://bucket/prefix/")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        core(generated / "missing")
