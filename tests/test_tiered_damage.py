"""Damaged tiered-storage buckets: no crash, no bare Python exception, and no row lost without a word.

Buckets are uploaded as Aiven's plugin writes them (tests/tiered_fixtures.py:
zstandard, cryptography's AESGCM, pycryptodome's OAEP, never kafkabatch's own
code) in all four modes, then damaged one way each. Every read runs in a
subprocess under a 4 GB address-space limit (an ordinary executor): no signal,
and either exactly the original rows, or an error (Python: a
``KafkaBatchError``; CLI: one error line, exit 1) or a counted skip naming the
damaged object.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tiered_fixtures as tf

import kafkabatch as kb
from kafkabatch.log import list_segments

pytest.importorskip("Crypto")
pytest.importorskip("cryptography")

CHUNK = 8 << 10
LIMIT = 4 << 30  # bytes of address space, as an executor's memory limit
COLUMNS = ["topic", "partition", "offset", "timestamp", "key", "value"]
BARE = ("Traceback", "struct.error", "FileNotFoundError", "BufferError", "KeyError", "IndexError", "TypeError")


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> Path:
    """One partition of five segments (small: every case reads it whole)."""
    root = tmp_path_factory.mktemp("damage-broker")
    kb.generate(root, size="280KB", topics=[kb.TopicSpec("orders", 1, codec="lz4")], segment_bytes="56KB",
                progress=False)  # fmt: skip
    return root


@pytest.fixture(scope="module")
def key() -> tf.KeyPair:
    return tf.make_key_pair("key-1")


def _logs(broker: Path) -> list[Path]:
    return tf.broker_segments(broker / "orders-0")


def _last_offset(log: Path) -> int:
    return list(kb.iter_batches(log.read_bytes(), validate_crc=False))[-1].last_offset


def upload(
    broker: Path, root: Path, mode: str, key: tf.KeyPair, *, prefix: str = "tiered/", seed: int = 0
) -> tf.Uploader:
    uploader = tf.Uploader(root, mode, CHUNK, key if "encrypted" in mode else None, prefix=prefix, seed=seed)
    for log in _logs(broker):
        uploader.upload(log, "orders", 0, end_offset=_last_offset(log))
    return uploader


def _objects(root: Path, suffix: str) -> list[Path]:
    return sorted(root.rglob(f"*{suffix}"))


def _manifest_of(path: Path) -> Path:
    return path.with_name(path.name.rsplit(".", 1)[0] + ".rsm-manifest")


def _edit_manifest(manifest: Path, change: Callable[[dict], None]) -> None:
    doc = json.loads(manifest.read_text())
    change(doc)
    manifest.write_text(json.dumps(doc, separators=(",", ":")))


@dataclass
class Damage:
    """One way to damage a bucket: what it does, the object it names, and what a read may give."""

    root: Path  # the bucket (what scan_log and the CLI read)
    target: Path | None  # the damaged segment's .log (what read_segment and dump read), if one
    named: str  # a piece of the object's name every error or skip must carry
    intact: bool = False  # reading the bucket must give the original rows (no loss is acceptable)
    target_intact: bool = False  # reading the damaged segment alone must give its rows too
    start_offset: int | None = None  # a bounded read
    mixed: bool = False  # a broker folder beside the bucket (stats counts overlapping copies each)


def _segment(root: Path, i: int = 1) -> Path:
    return _objects(root, ".log")[i]


def end_offset_huge(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    log = _segment(root)
    _edit_manifest(_manifest_of(log), lambda d: d["remoteLogSegmentMetadata"].update(endOffset=1 << 62))
    return Damage(root, log, log.stem, intact=True, target_intact=True)


def end_offset_past(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    log = _segment(root)
    _edit_manifest(_manifest_of(log), lambda d: d["remoteLogSegmentMetadata"].update(
        endOffset=d["remoteLogSegmentMetadata"]["endOffset"] + 535))  # fmt: skip
    return Damage(root, log, log.stem, intact=True, target_intact=True)


def end_offset_past_last(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    """The bucket's newest segment claims offsets that a broker folder beside it holds."""
    log = _segment(root, -1)
    _edit_manifest(_manifest_of(log), lambda d: d["remoteLogSegmentMetadata"].update(endOffset=1 << 62))
    local = root / "broker" / "orders-0"
    local.mkdir(parents=True)
    for f in (broker / "orders-0").iterdir():
        shutil.copy(f, local / f.name)
    return Damage(root, None, log.stem, intact=True, mixed=True)


def no_log(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    log = _segment(root)
    log.unlink()
    return Damage(root, None, log.stem)


def size_short(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    log = _segment(root)
    _edit_manifest(
        _manifest_of(log), lambda d: d["chunkIndex"].update(originalFileSize=d["chunkIndex"]["originalFileSize"] - 100)
    )
    return Damage(root, log, log.stem)


def size_long(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    log = _segment(root)
    _edit_manifest(
        _manifest_of(log),
        lambda d: d["chunkIndex"].update(originalFileSize=d["chunkIndex"]["originalFileSize"] + 50_000),
    )
    return Damage(root, log, log.stem)


def chunk_size_zero(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    log = _segment(root)
    if "zstd" in mode:
        pytest.skip("a variable chunk index has no transformedChunkSize")
    _edit_manifest(_manifest_of(log), lambda d: d["chunkIndex"].update(transformedChunkSize=0))
    return Damage(root, log, log.stem)


def no_indexes(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    log = _segment(root)
    log.with_suffix(".indexes").unlink()
    first = int(log.name[:20])
    return Damage(root, log, log.stem, intact=True, target_intact=True, start_offset=first + 40)


def bad_chunk(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    log = _segment(root)
    data = bytearray(log.read_bytes())
    data[2 * CHUNK + 100 if "zstd" not in mode else len(data) // 2] ^= 0x55
    log.write_bytes(bytes(data))
    return Damage(root, log, log.stem)


def truncated(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    log = _segment(root)
    log.write_bytes(log.read_bytes()[:-100])
    return Damage(root, log, log.stem)


def twin_damaged(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    """The same offsets uploaded twice (a leader change); the copy read first is truncated."""
    uploader = tf.Uploader(root, mode, CHUNK, key if "encrypted" in mode else None, prefix="tiered/", seed=7,
                           topic_ids={"orders": _segment(root).parent.parent.name[-22:]})  # fmt: skip
    log = _logs(broker)[1]
    uploader.upload(log, "orders", 0, end_offset=_last_offset(log))
    first = sorted(p for p in _objects(root, ".log") if p.name.startswith(log.name[:20]))[0]
    first.write_bytes(first.read_bytes()[:-100])
    return Damage(root, first, first.stem, intact=True)


def bad_chunk_twin(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    """The same offsets uploaded twice; the copy read first has a bad chunk in its middle."""
    uploader = tf.Uploader(root, mode, CHUNK, key if "encrypted" in mode else None, prefix="tiered/", seed=7,
                           topic_ids={"orders": _segment(root).parent.parent.name[-22:]})  # fmt: skip
    log = _logs(broker)[1]
    uploader.upload(log, "orders", 0, end_offset=_last_offset(log))
    first = sorted(p for p in _objects(root, ".log") if p.name.startswith(log.name[:20]))[0]
    data = bytearray(first.read_bytes())
    data[2 * CHUNK + 100 if "zstd" not in mode else len(data) // 2] ^= 0x55
    first.write_bytes(bytes(data))
    return Damage(root, first, first.stem, intact=True)


def no_encryption_block(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    if "encrypted" not in mode:
        pytest.skip("only encrypted segments have an encryption block")
    log = _segment(root)
    _edit_manifest(_manifest_of(log), lambda d: d.pop("encryption"))
    return Damage(root, log, log.stem)


def no_manifest(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    """A hole: a .log without its manifest, with later segments complete."""
    log = _segment(root)
    _manifest_of(log).unlink()
    return Damage(root, log, log.stem)


def partition_folder_word(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    folder = _segment(root).parent
    folder.rename(folder.with_name("zero"))
    return Damage(root, None, "zero")


def partition_folder_superscript(root: Path, mode: str, broker: Path, key: tf.KeyPair) -> Damage:
    folder = _segment(root).parent
    folder.rename(folder.with_name("²"))
    return Damage(root, None, "²")


CASES = [
    end_offset_huge, end_offset_past, end_offset_past_last, no_log, size_short, size_long, chunk_size_zero,
    no_indexes, bad_chunk, truncated, twin_damaged, no_encryption_block, no_manifest, partition_folder_word,
    partition_folder_superscript,
]  # fmt: skip


RUNNER = textwrap.dedent(
    """
    import json, resource, sys, warnings
    import pyarrow.parquet as pq
    import kafkabatch as kb
    from kafkabatch.log import scan_log

    root, target, keys, start, out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], sys.argv[5]
    start = int(start) if start else None
    warnings.simplefilter("ignore")
    report = {}

    def attempt(name, read):
        results = []
        try:
            table = read(results.append)
        except Exception as e:  # every error is judged by the test
            report[name] = {"error": type(e).__module__ + "." + type(e).__qualname__, "message": str(e),
                            "kafkabatch": isinstance(e, kb.KafkaBatchError)}
            return
        pq.write_table(table, f"{out}-{name}.parquet")
        report[name] = {"skipped": [str(e) for r in results for e in r.skipped]}

    attempt("scan", lambda on: scan_log(root, tiered_keys=keys, start_offset=start, on_segment=on).read_all())
    attempt("scan_skip", lambda on: scan_log(root, tiered_keys=keys, start_offset=start, on_error="skip",
                                             on_segment=on).read_all())
    attempt("scan_committed_skip", lambda on: scan_log(root, tiered_keys=keys, start_offset=start, on_error="skip",
                                                       isolation="read_committed", on_segment=on).read_all())
    if target:
        attempt("read_segment", lambda on: kb.read_segment(target, tiered_keys=keys, start_offset=start))
    print(json.dumps(report))
    """
)


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    """``python args...`` under the address-space limit, started (the reads of one case run side by side)."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.Popen(
        [sys.executable, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_limited, env=env,
    )  # fmt: skip


def _finish(process: subprocess.Popen) -> subprocess.CompletedProcess:
    stdout, stderr = process.communicate(timeout=300)
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert done.returncode >= 0, f"killed by signal {-done.returncode}: {done.stderr[-2000:]}"
    return done


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return _finish(_start(args, cwd))


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table[c].to_pylist() for c in COLUMNS)))


def _judge(what: str, got: list[tuple] | None, expected: list[tuple], error: str | None, skipped: list[str],
           damage: Damage, intact: bool) -> None:  # fmt: skip
    """Exactly the original rows, or an error / a counted skip naming the damaged object
    (``intact``: only the original rows will do)."""
    if error is not None:
        assert damage.named in error, f"{what}: the error does not name {damage.named}: {error}"
        assert not intact, f"{what}: an error where every row can be read: {error}"
        return
    assert got is not None
    if got == expected:
        return
    assert not intact, f"{what}: {len(got)} rows of {len(expected)}"
    assert set(got) <= set(expected), f"{what}: rows that are not in the log"
    assert any(damage.named in s for s in skipped), f"{what}: {len(got)} of {len(expected)} rows, skips: {skipped}"


@pytest.mark.parametrize("mode", tf.MODES)
@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_damaged_bucket(broker, key, tmp_path, mode, case):
    root = tmp_path / "bucket"
    upload(broker, root, mode, key)
    damage = case(root, mode, broker, key)
    keys = {key.key_id: key.private_pem}
    original = kb.scan_log(broker, start_offset=damage.start_offset).read_all()
    expected = _rows(original)
    segment_expected = None
    if damage.target is not None:
        base = int(damage.target.name[:20])
        broker_log = broker / "orders-0" / f"{base:020d}.log"
        segment_expected = _rows(kb.read_segment(broker_log, topic="orders", partition=0,
                                                 start_offset=damage.start_offset))  # fmt: skip

    # Python and the CLI, under the limit.
    out = tmp_path / "py"
    python = _start(
        ["-c", RUNNER, str(root), str(damage.target or ""), json.dumps(keys), str(damage.start_offset or ""), str(out)],
        tmp_path,
    )
    pem = tmp_path / "key.pem"
    pem.write_text(key.private_pem)
    flag = ["--tiered-key", f"key-1={pem}"]
    offsets = [] if damage.start_offset is None else ["--offsets", f"{damage.start_offset}:"]
    parquet = tmp_path / "out.parquet"
    commands = [
        (["convert", str(root), str(parquet), "--on-error", "skip", "--no-progress", *offsets, *flag], True),
        (["stats", str(root), "--json", "--no-progress", *flag], False),
        *((["dump", str(damage.target), *flag], False),) * (damage.target is not None),
    ]
    cli = [(argv, check_rows, _start(["-m", "kafkabatch", *argv], tmp_path)) for argv, check_rows in commands]
    done = _finish(python)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for name, outcome in report.items():
        intact = damage.target_intact if name == "read_segment" else damage.intact
        if "error" in outcome:
            assert outcome["kafkabatch"], f"{name}: a bare {outcome['error']}: {outcome['message']}"
            _judge(name, None, [], outcome["message"], [], damage, intact)
            continue
        got = _rows(pq.read_table(f"{out}-{name}.parquet"))
        if name == "scan_committed_skip":
            want = _rows(kb.scan_log(broker, start_offset=damage.start_offset, isolation="read_committed").read_all())
        else:
            want = segment_expected if name == "read_segment" else expected
        _judge(name, got, want, None, outcome["skipped"], damage, intact)
        if name == "scan" and got != want:
            raise AssertionError(f"scan_log without skip lost rows silently: {len(got)} of {len(want)}")

    for argv, check_rows, process in cli:
        done = _finish(process)
        for bare in BARE:
            assert bare not in done.stderr, f"{argv[0]}: {done.stderr[-2000:]}"
        if done.returncode != 0:
            assert done.returncode == 1, done.stderr[-2000:]
            error_line = [line for line in done.stderr.splitlines() if f"kafkabatch {argv[0]}: error:" in line]
            assert error_line, done.stderr[-2000:]
            _judge(
                argv[0],
                None,
                [],
                error_line[0],
                [],
                damage,
                damage.target_intact if argv[0] == "dump" else damage.intact,
            )
            continue
        if check_rows:
            _judge(
                argv[0], _rows(pq.read_table(parquet)), expected, None, done.stderr.splitlines(), damage, damage.intact
            )
        elif argv[0] == "stats" and damage.start_offset is None and not damage.mixed:
            total = json.loads(done.stdout)["total"]
            records = total["records"]
            if records != original.num_rows:
                assert not damage.intact and records < original.num_rows, (records, original.num_rows)
                # Fewer records: never silently (the damaged object named, its problems counted).
                assert damage.named in done.stderr, f"stats: {records} of {original.num_rows}, silent: {done.stderr}"
                assert (
                    total["unreadable_batches"]
                    or total["trailing_bytes"]
                    or total["invalid_crc_batches"]
                    or ("skipped" in done.stderr)
                ), f"stats: {records} of {original.num_rows} records, no problem counted: {total}"


# --------------------------------------------------------------------------
# the items one by one, in process
# --------------------------------------------------------------------------


def _scan_rows(root: Path, keys: dict[str, str], **kw) -> list[tuple]:
    return _rows(kb.scan_log(root, tiered_keys=keys, **kw).read_all())


@pytest.mark.parametrize("mode", ["encrypted", "zstd+encrypted"])
def test_one_bad_chunk_costs_only_its_batches(broker, key, tmp_path, mode):
    """Under skip, a chunk whose GCM tag fails loses the batches overlapping it, not its segment."""
    root = tmp_path / "bucket"
    upload(broker, root, mode, key)
    keys = {key.key_id: key.private_pem}
    log = _segment(root)
    m = kb._kafkabatch.RemoteManifest(_manifest_of(log).read_text(), kb._kafkabatch.TieredKeys(keys))
    bad = 2
    original_start, original_size, stored_at, _ = m.chunk(bad)
    data = bytearray(log.read_bytes())
    data[stored_at + 20] ^= 0x55
    log.write_bytes(bytes(data))
    # The batches of the original segment that overlap the chunk's original bytes.
    original_log = _logs(broker)[1]
    lost = set()
    for b in kb.iter_batches(original_log.read_bytes()):
        if b.position < original_start + original_size and b.position + b.size_in_bytes > original_start:
            lost.update(range(b.base_offset, b.last_offset + 1))
    assert lost
    results: list = []
    got = _rows(kb.scan_log(root, tiered_keys=keys, on_error="skip", on_segment=results.append).read_all())
    expected = [r for r in _rows(kb.scan_log(broker).read_all()) if r[2] not in lost]
    assert got == expected
    [damaged] = [r for r in results if r.skipped]
    assert [e.chunk for e in damaged.skipped] == [bad] and "AES-GCM tag" in str(damaged.skipped[0])
    assert f"skipped chunk {bad}" in damaged.describe()
    # read_committed too: the pre-pass walks around the chunk, the read counts it.
    results = []
    got = _rows(kb.scan_log(root, tiered_keys=keys, on_error="skip", isolation="read_committed",
                            on_segment=results.append).read_all())  # fmt: skip
    committed = [r for r in _rows(kb.scan_log(broker, isolation="read_committed").read_all()) if r[2] not in lost]
    assert got == committed and sum(len(r.skipped) for r in results) == 1
    # Without skip: the error, naming the object and the chunk.
    with pytest.raises(kb.TieredStorageError, match=f"{log.name}: chunk {bad}: the AES-GCM tag"):
        kb.scan_log(root, tiered_keys=keys).read_all()


# Its own file and package: test_protobuf's store.proto differs, and one process imports both.
STORE_PROTO = """
syntax = "proto3";
package damaged;
message Item { string sku = 1; int32 qty = 2; }
message Order { string order_id = 1; repeated Item items = 2; }
"""


def test_a_damaged_first_segment_is_passed_over_when_sampling_frames(key, tmp_path):
    """Framed Protobuf values whose message is learnt from the first values
    of the log: a bad chunk in the first segment (or a cap it breaks) sends
    the sampling on to the next segment, and the scan counts the chunk."""
    pytest.importorskip("google.protobuf")
    protoc = pytest.importorskip("grpc_tools.protoc")
    sr = pytest.importorskip("confluent_kafka.schema_registry")
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    (tmp_path / "damaged_store.proto").write_text(STORE_PROTO)
    assert protoc.main(["protoc", f"-I{tmp_path}", f"--python_out={tmp_path}", "damaged_store.proto"]) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        import damaged_store_pb2 as store_pb2  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    serializer = ProtobufSerializer(store_pb2.Order, sr.SchemaRegistryClient.new_client({"url": "mock://sample"}),
                                    {"use.deprecated.format": False})  # fmt: skip
    context = SerializationContext("orders", MessageField.VALUE)
    messages = [store_pb2.Order(order_id=f"o-{i}" + "x" * 200, items=[store_pb2.Item(sku=f"s{i}", qty=i)])
                for i in range(600)]  # fmt: skip
    values = [serializer(m, context) for m in messages]
    assert {v[5:7] for v in values} == {b"\x02\x02"}, "damaged.Order is message [1]: the frames decide"
    broker = tmp_path / "broker" / "orders-0"
    broker.mkdir(parents=True)
    for base in range(0, len(values), 200):
        records = [{"value": v} for v in values[base : base + 200]]
        kb.write_segment(broker / f"{base:020d}.log", records, base_offset=base, records_per_batch=10)
    registry = {str(int.from_bytes(values[0][1:5], "big")): STORE_PROTO}
    options = dict(value_format="protobuf", schema_registry=registry)
    root = tmp_path / "bucket"
    uploader = tf.Uploader(root, "encrypted", CHUNK, key, prefix="tiered/")
    for log in tf.broker_segments(broker):
        uploader.upload(log, "orders", 0, end_offset=_last_offset(log))
    keys = {key.key_id: key.private_pem}
    first = _segment(root, 0)
    data = bytearray(first.read_bytes())
    data[CHUNK // 2] ^= 0x55  # chunk 0: the first values
    first.write_bytes(bytes(data))
    results: list = []
    got = kb.scan_log(root, tiered_keys=keys, on_error="skip", on_segment=results.append, **options).read_all()
    want = kb.scan_log(broker, **options).read_all()
    assert [f.name for f in got.schema.field("value").type] == ["order_id", "items"]
    kept = set(got["offset"].to_pylist())
    assert 0 not in kept and 599 in kept
    assert _rows(got) == [r for r in _rows(want) if r[2] in kept]
    [damaged] = [r for r in results if r.skipped]
    assert first.name in str(damaged.skipped[0])
    # Without skip, the scan's own error (not one from the sampling) names the object.
    with pytest.raises(kb.TieredStorageError, match=first.name):
        kb.scan_log(root, tiered_keys=keys, **options).read_all()


@pytest.mark.parametrize("mode", tf.MODES)
def test_cli_reads_an_untouched_bucket(broker, key, tmp_path, mode):
    """stats and dump of an intact bucket: no BufferError, and the broker's counts."""
    from kafkabatch.cli import main

    root = tmp_path / "bucket"
    upload(broker, root, mode, key)
    pem = tmp_path / "key.pem"
    pem.write_text(key.private_pem)
    flag = ["--tiered-key", f"key-1={pem}"]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["stats", str(root), "--json", "--no-progress", *flag]) == 0
    assert json.loads(out.getvalue())["total"]["records"] == kb.scan_log(broker).read_all().num_rows
    log = _segment(root)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["dump", str(log), *flag]) == 0
    batches = [line for line in out.getvalue().splitlines() if line.startswith("baseOffset:")]
    assert len(batches) == len(list(kb.iter_batches(_logs(broker)[1].read_bytes())))


def test_names_with_question_marks_and_glued_prefixes(broker, key, tmp_path):
    """A local key prefix holding "?" is a name, not a query; a prefix without
    a trailing "/" does not become part of the topic when the manifest names it."""
    expected = _rows(kb.scan_log(broker).read_all())
    for prefix in ("pre?x/", "v1.2_", "a?b/v1.2_"):
        root = tmp_path / prefix.replace("/", "_")
        upload(broker, root, "zstd", key, prefix=prefix)
        segments = list_segments(root)
        assert {s.topic for s in segments} == {"orders"}, prefix
        assert _scan_rows(root, {}) == expected, prefix
        log = _segment(root)
        assert len(kb.read_segment(str(log))) == len(kb.read_segment(_logs(broker)[1]))


def test_clear_words_for_damaged_manifests(broker, key, tmp_path):
    keys = {key.key_id: key.private_pem}
    # A partition folder that is not ASCII digits: the layout error names it.
    root = tmp_path / "sup"
    upload(broker, root, "plain", key)
    folder = _segment(root).parent
    folder.rename(folder.with_name("²"))
    with pytest.raises(kb.TieredStorageError, match="partition folder '²' is not a number") as info:
        kb.scan_log(root).read_all()
    assert info.value.kind == "layout"
    # Inconsistent, not "truncated": a chunk index that describes more than the object holds.
    root = tmp_path / "long"
    upload(broker, root, "zstd", key)
    log = _segment(root)
    doc = json.loads(_manifest_of(log).read_text())
    m = kb._kafkabatch.RemoteManifest(_manifest_of(log).read_text())
    doc["chunkIndex"]["originalFileSize"] = m.original_size - 1  # still fits its chunks
    _manifest_of(log).write_text(json.dumps(doc))
    with pytest.raises(kb.TieredStorageError) as info:
        kb.read_segment(str(log))
    assert "truncated" not in str(info.value)
    # A manifest that lost its encryption block: a hint that manifest and object disagree.
    for mode in ("zstd+encrypted", "encrypted"):
        root = tmp_path / f"noenc-{mode}"
        upload(broker, root, mode, key)
        log = _segment(root)
        doc = json.loads(_manifest_of(log).read_text())
        del doc["encryption"]
        _manifest_of(log).write_text(json.dumps(doc))
        with pytest.raises(kb.TieredStorageError, match="lost its encryption block"):
            kb.read_segment(str(log), tiered_keys=keys)
    # An encrypted .log named without its manifest: says the manifest is missing (not an empty table).
    _manifest_of(log).unlink()
    with pytest.raises(kb.TieredStorageError, match="manifest .* is missing"):
        kb.read_segment(str(log), tiered_keys=keys)
    # The cap on a chunk is named in the caller's words.
    root = tmp_path / "cap"
    upload(broker, root, "zstd", key)
    with pytest.raises(kb.TieredStorageError, match="max_decompressed_size"):
        kb.scan_log(root, max_decompressed_size=1024).read_all()


def test_convert_reports_a_lost_segment_honestly(broker, key, tmp_path):
    root = tmp_path / "bucket"
    upload(broker, root, "zstd+encrypted", key)
    log = _segment(root)
    _edit_manifest(_manifest_of(log), lambda d: d.update(version="2"))
    pem = tmp_path / "key.pem"
    pem.write_text(key.private_pem)
    done = _run(["-m", "kafkabatch", "convert", str(root), str(tmp_path / "o.parquet"), "--on-error", "skip",
                 "--no-progress", "--tiered-key", f"key-1={pem}"], tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "[bytes 0-0]" not in done.stderr and "corrupt batch (0 bytes)" not in done.stderr
    assert f"{log.name}: not read:" in done.stderr and 'version "2" is not supported' in done.stderr
    total = len(_logs(broker))
    assert f"converted {total - 1} segments" in done.stderr and "1 segment not read" in done.stderr


SPARK_CASES = [end_offset_huge, no_log, bad_chunk, twin_damaged, bad_chunk_twin, no_manifest, partition_folder_word]


@pytest.mark.spark
@pytest.mark.parametrize("case", SPARK_CASES, ids=[c.__name__ for c in SPARK_CASES])
def test_spark_agrees_with_scan_log(spark, kafka_log, broker, key, tmp_path, case):
    """The same damaged bucket gives Spark the rows scan_log gives: with
    DROPMALFORMED those of on_error="skip"; with FAILFAST, the rows of a
    plain read or an error naming the object."""
    mode = "zstd+encrypted"
    root = tmp_path / "bucket"
    upload(broker, root, mode, key)
    damage = case(root, mode, broker, key)
    keys = {key.key_id: key.private_pem}

    def spark_read(spark_mode: str):
        return (
            spark.read.format(kafka_log)
            .option("tieredKeys", json.dumps(keys))
            .option("mode", spark_mode)
            .option("maxBytesPerPartition", str(3 * CHUNK))
            .load(str(root))
        )

    def spark_rows(spark_mode: str) -> list[tuple]:
        return sorted((r.topic, r.partition, r.offset, bytes(r.value)) for r in spark_read(spark_mode).collect())

    def python_rows(**kw) -> list[tuple]:
        table = kb.scan_log(root, tiered_keys=keys, **kw).read_all()
        return sorted(zip(table["topic"].to_pylist(), table["partition"].to_pylist(), table["offset"].to_pylist(),
                          table["value"].to_pylist()))  # fmt: skip

    skipped = python_rows(on_error="skip")
    assert spark_rows("DROPMALFORMED") == skipped
    # count(), answered from batch headers where they can answer, counts the same rows: a damaged
    # object or chunk sends it to the read's own rules (skipped, or read from its twin)
    assert spark_read("DROPMALFORMED").count() == len(skipped)
    try:
        expected = python_rows()
    except kb.KafkaBatchError as error:
        assert damage.named in str(error)
        with pytest.raises(Exception, match=damage.named.replace("?", r"\?")):
            spark_rows("FAILFAST")
    else:
        assert spark_rows("FAILFAST") == expected


def test_on_s3_a_missing_index_or_log_is_not_silent(broker, key, moto_s3, tmp_path):
    """The same on S3 (moto's server): a missing .indexes object reads the
    segment from its start; a manifest whose .log is gone is an error, or a
    counted skip naming it."""
    filesystem, endpoint, _ = moto_s3
    root = tmp_path / "bucket"
    upload(broker, root, "zstd", key)
    gone_index, gone_log = _segment(root, 1).with_suffix(".indexes"), _segment(root, 3)
    for path in sorted(root.rglob("*")):
        if path.is_file() and path not in (gone_index, gone_log):
            with filesystem.open_output_stream("tiered/" + path.relative_to(root).as_posix()) as f:
                f.write(path.read_bytes())
    uri = f"s3://tiered/tiered/?endpoint_override={endpoint}&scheme=http"
    with pytest.raises(kb.TieredStorageError, match=rf"{gone_log.name}\?.*: the segment's \.log object is missing"):
        kb.scan_log(uri).read_all()
    results: list = []
    start = int(gone_index.name[:20]) + 40
    with pytest.warns(kb.IndexFileWarning, match="the .indexes object is missing"):
        got = _rows(kb.scan_log(uri, start_offset=start, on_error="skip", on_segment=results.append).read_all())
    lost = set(o for o in range(int(gone_log.name[:20]), _last_offset(_logs(broker)[3]) + 1))
    assert got == [r for r in _rows(kb.scan_log(broker, start_offset=start).read_all()) if r[2] not in lost]
    [skipped] = [e for r in results for e in r.skipped]
    assert gone_log.name in str(skipped)


def test_the_cli_on_s3_skips_and_falls_back_as_on_a_local_path(broker, key, moto_s3, tmp_path):
    """The CLI reads an s3:// bucket as it reads the same bucket on disk:
    convert --on-error skip counts a manifest whose .log is gone, and stats
    counts the intact twin of a damaged upload."""
    filesystem, endpoint, _ = moto_s3

    def put(root: Path, prefix: str, leave_out: tuple[Path, ...] = ()) -> str:
        for path in sorted(root.rglob("*")):
            if path.is_file() and path not in leave_out:
                with filesystem.open_output_stream(f"tiered/{prefix}/" + path.relative_to(root).as_posix()) as f:
                    f.write(path.read_bytes())
        return f"s3://tiered/{prefix}/tiered/?endpoint_override={endpoint}&scheme=http"

    def convert(source: str, out: Path) -> tuple[subprocess.CompletedProcess, list[tuple]]:
        done = _run(["-m", "kafkabatch", "convert", source, str(out), "--on-error", "skip", "--no-progress"],
                    tmp_path)  # fmt: skip
        return done, (_rows(pq.read_table(out)) if done.returncode == 0 else [])

    gone = tmp_path / "gone"
    upload(broker, gone, "zstd", key)
    gone_log = _segment(gone, 3)
    uri = put(gone, "gone", (gone_log,))
    gone_log.unlink()
    local, local_rows = convert(str(gone), tmp_path / "local.parquet")
    remote, remote_rows = convert(uri, tmp_path / "remote.parquet")
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    assert gone_log.name in remote.stderr and "1 segment not read" in remote.stderr
    assert remote_rows == local_rows and 0 < len(local_rows) < kb.scan_log(broker).read_all().num_rows

    twin = tmp_path / "twin"
    upload(broker, twin, "zstd", key)
    damage = twin_damaged(twin, "zstd", broker, key)
    uri = put(twin, "twin")
    counts = []
    for source in (str(twin), uri):
        done = _run(["-m", "kafkabatch", "stats", source, "--json", "--no-progress"], tmp_path)
        assert done.returncode == 0, done.stderr
        assert damage.named in done.stderr
        counts.append(json.loads(done.stdout)["total"]["records"])
    assert counts == [kb.scan_log(broker).read_all().num_rows] * 2


def test_offsets_uploaded_twice_in_other_pieces(broker, key, tmp_path):
    """Segments 1 and 2 uploaded again as one piece into the same folder (a
    re-upload cut elsewhere): every offset once, whichever copy is read."""
    root = tmp_path / "bucket"
    uploader = upload(broker, root, "zstd", key)
    logs = _logs(broker)
    joined = tmp_path / "joined" / logs[1].name
    joined.parent.mkdir()
    joined.write_bytes(logs[1].read_bytes() + logs[2].read_bytes())
    again = tf.Uploader(root, "zstd", CHUNK, prefix="tiered/", seed=5, topic_ids=uploader.topic_ids)
    again.upload(joined, "orders", 0, end_offset=_last_offset(logs[2]))
    got = kb.scan_log(root).read_all()
    assert len(set(got["offset"].to_pylist())) == got.num_rows
    assert _rows(got) == _rows(kb.scan_log(broker).read_all())


def test_a_named_manifest_whose_log_is_gone(broker, key, tmp_path):
    """A manifest named directly, its .log gone: the same missing-object error
    as in a folder, and with skip a counted skip naming it."""
    root = tmp_path / "bucket"
    upload(broker, root, "zstd", key)
    log = _segment(root)
    log.unlink()
    manifest = _manifest_of(log)
    with pytest.raises(kb.TieredStorageError, match=rf"{log.name}.*the segment's \.log object is missing"):
        kb.scan_log(manifest).read_all()
    results: list = []
    got = kb.scan_log(manifest, on_error="skip", on_segment=results.append).read_all()
    assert got.num_rows == 0
    [skipped] = [e for r in results for e in r.skipped]
    assert log.name in str(skipped)


def test_a_glob_of_manifests_reads_their_segments(broker, key, tmp_path):
    """``bucket/*/*/*.rsm-manifest``: each manifest stands for its segment (the .log objects exist, unlisted)."""
    root = tmp_path / "bucket"
    upload(broker, root, "zstd", key)
    got = kb.scan_log(f"{root}/tiered/*/*/*.rsm-manifest").read_all()
    assert _rows(got) == _rows(kb.scan_log(broker).read_all())


def test_an_abandoned_upload_beside_its_completed_reupload(broker, key, tmp_path):
    """A .log without manifest (an abandoned upload) whose offsets a completed
    re-upload (another id, same base offset) holds is no hole: every row, a warning."""
    root = tmp_path / "bucket"
    uploader = upload(broker, root, "zstd", key)
    log = _logs(broker)[1]
    again = tf.Uploader(root, "zstd", CHUNK, prefix="tiered/", seed=9, topic_ids=uploader.topic_ids)
    abandoned = again.upload(log, "orders", 0, end_offset=_last_offset(log))
    abandoned["rsm-manifest"].unlink()
    with pytest.warns(kb.TieredStorageWarning, match=rf"{abandoned['log'].name}.*abandoned"):
        got = kb.scan_log(root).read_all()
    assert _rows(got) == _rows(kb.scan_log(broker).read_all())


def test_read_committed_prepass_uses_the_twin(key, tmp_path):
    """A transaction that begins in a segment whose chosen copy is damaged
    (another upload of it intact) and is aborted in the next: the pre-pass
    walks the twin, so read_committed raises nothing and returns no aborted row."""
    broker = tmp_path / "broker"
    folder = broker / "orders-0"
    value = b"v" * 300

    def plain(first: int, last: int) -> bytes:
        return kb.encode([{"value": value}] * (last - first + 1), base_offset=first, records_per_batch=10)

    def txn(first: int, last: int) -> bytes:
        return kb.encode([{"value": value}] * (last - first + 1), base_offset=first, records_per_batch=10,
                         producer_id=200, producer_epoch=0, base_sequence=first, transactional=True)  # fmt: skip

    segments = {
        0: plain(0, 49),
        50: plain(50, 69) + txn(70, 89) + plain(90, 99),
        100: txn(100, 109) + kb.control_batch("abort", 200, 0, 110, timestamp=0) + plain(111, 130),
    }
    folder.mkdir(parents=True)
    for base, data in segments.items():
        (folder / f"{base:020d}.log").write_bytes(data)
    want = _rows(kb.scan_log(broker, isolation="read_committed").read_all())
    assert len(want) == 131 - 30 - 1  # the aborted transaction and its marker hidden
    root = tmp_path / "bucket"
    uploader = upload(broker, root, "zstd", key)
    log = _logs(broker)[1]
    again = tf.Uploader(root, "zstd", CHUNK, prefix="tiered/", seed=7, topic_ids=uploader.topic_ids)
    again.upload(log, "orders", 0, end_offset=_last_offset(log))
    [segment] = [s for s in list_segments(root) if s.base_offset == 50]
    assert segment.twins
    Path(segment.path).write_bytes(Path(segment.path).read_bytes()[:-100])  # the copy chosen: truncated
    for on_error in ("raise", "skip"):
        with pytest.warns(kb.TieredStorageWarning, match="instead"):
            got = _scan_rows(root, {}, isolation="read_committed", on_error=on_error)
        assert got == want, on_error


def test_a_twin_read_is_reported_once(broker, key, tmp_path):
    """A damaged segment read from its twin is one segment, reported once:
    its result counts the twin's rows, and convert reads every segment."""
    root = tmp_path / "bucket"
    upload(broker, root, "zstd", key)
    damage = twin_damaged(root, "zstd", broker, key)
    assert damage.target is not None
    results: list = []
    got = _scan_rows(root, {}, on_error="skip", on_segment=results.append)
    assert got == _rows(kb.scan_log(broker).read_all())
    assert sorted(r.segment.path for r in results) == sorted(s.path for s in list_segments(root))
    [damaged] = [r for r in results if r.skipped]
    broker_log = broker / "orders-0" / damage.target.name[:20]
    assert damaged.rows == kb.read_segment(f"{broker_log}.log", topic="orders", partition=0).num_rows
    assert damaged.segment.path == str(damage.target) and damaged.twin is not None
    assert "instead" in damaged.describe() and "not read" not in damaged.describe()
    done = _run(["-m", "kafkabatch", "convert", str(root), str(tmp_path / "o.parquet"), "--on-error", "skip",
                 "--no-progress"], tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"converted {len(_logs(broker))} segments" in done.stderr and "not read" not in done.stderr, done.stderr


@pytest.mark.parametrize("case", [no_log, twin_damaged], ids=["no_log", "twin_damaged"])
def test_convert_prints_each_skip_once(broker, key, tmp_path, case):
    root = tmp_path / "bucket"
    upload(broker, root, "zstd", key)
    damage = case(root, "zstd", broker, key)
    done = _run(["-m", "kafkabatch", "convert", str(root), str(tmp_path / "o.parquet"), "--on-error", "skip",
                 "--no-progress"], tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    naming = [line for line in done.stderr.splitlines() if damage.named in line]
    assert len(naming) == 1, done.stderr
