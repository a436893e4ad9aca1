"""kafkabatch.generate: the sample log dir, its index files, and what reads it back.

The index files are parsed here straight from Kafka's layout (struct, no
kafkabatch code) and checked against the batches of their segment; the
records are counted by kafkabatch's decoder and spot-checked by kafka-python.
Timings are printed, never asserted.
"""

from __future__ import annotations

import filecmp
import json
import re
import struct
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import realclients as rc

import kafkabatch as kb
from kafkabatch.generate import DEFAULT_CODECS, START_TIMESTAMP, GenerateSummary, TopicSpec, generate
from kafkabatch.log.index import read_offset_index, read_time_index, read_txn_index

SEGMENT_NAME = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex)$")


def parse(path: Path, fmt: str) -> list[tuple]:
    data = path.read_bytes()
    size = struct.calcsize(fmt)
    assert len(data) % size == 0, path
    return [struct.unpack_from(fmt, data, i) for i in range(0, len(data), size)]


def segments_of(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.log"))


def all_segments(root: Path) -> list[Path]:
    return sorted(root.glob("*-*/*.log"))


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> tuple[Path, GenerateSummary]:
    root = tmp_path_factory.mktemp("gen") / "logs"
    summary = generate(root, size="4MB", codecs="none", segment_bytes=150_000, seed=3, progress=False)
    return root, summary


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> tuple[Path, GenerateSummary]:
    root = tmp_path_factory.mktemp("gen") / "mixed"
    summary = generate(root, size=3 << 20, segment_bytes="256k", seed=11, progress=False)
    return root, summary


# --------------------------------------------------------------------------
# layout and index files
# --------------------------------------------------------------------------


def test_folder_layout(plain):
    root, summary = plain
    folders = sorted(p.name for p in root.iterdir())
    assert folders == [
        "audit-legacy-0",
        "clicks-0",
        "clicks-1",
        "customers-0",
        "orders-0",
        "orders-1",
        "orders-2",
        "payments-0",
        "payments-1",
    ]
    assert summary.folder == root
    for folder in root.iterdir():
        names = sorted(p.name for p in folder.iterdir())
        assert "leader-epoch-checkpoint" in names
        logs = segments_of(folder)
        assert len(logs) >= 2, folder  # 150 kB segments roll
        next_offset = 0
        for log in logs:
            assert SEGMENT_NAME.match(log.name)
            base = int(log.stem)
            assert base == next_offset, log  # segments tile the offsets
            assert log.with_suffix(".index").is_file() and log.with_suffix(".timeindex").is_file()
            batches = list(kb.iter_batches(log.read_bytes()))
            assert batches[0].base_offset == base
            next_offset = batches[-1].next_offset
            # Past segment_bytes only while transactions finish: the batch that
            # crossed the limit, then only transactional batches and markers.
            crossed = [i for i, b in enumerate(batches) if b.position + b.size_in_bytes > 150_000]
            if crossed:
                assert all(b.is_transactional for b in batches[crossed[0] + 1 :]), log
                assert any(b.is_transactional for b in batches[: crossed[0] + 1]), log
        for name in names:
            assert name == "leader-epoch-checkpoint" or SEGMENT_NAME.match(name), name
    assert summary.segments == len(all_segments(root))
    assert summary.bytes_written == sum(p.stat().st_size for p in all_segments(root))
    index_files = [p for p in root.glob("*-*/*") if p.suffix in (".index", ".timeindex", ".txnindex")]
    assert summary.index_bytes == sum(p.stat().st_size for p in index_files)
    assert 3.5e6 < summary.bytes_written < 4.6e6


def test_index_files_follow_kafka(plain):
    root, _ = plain
    checked = Counter()
    for log in all_segments(root):
        base = int(log.stem)
        batches = list(kb.iter_batches(log.read_bytes()))
        at = {b.position: b for b in batches}

        entries = parse(log.with_suffix(".index"), ">ii")
        assert entries or log.stat().st_size < 2 * 4096
        last_pos = -1
        for rel, pos in entries:
            offset = base + rel
            assert pos in at, (log, pos)  # a batch boundary
            assert pos - last_pos > 4096 if last_pos >= 0 else pos > 4096  # index.interval.bytes
            assert at[pos].base_offset <= offset
            # Scanning from pos finds every offset >= the entry's.
            assert all(b.last_offset < offset for b in batches if b.position < pos)
            last_pos = pos
        assert [e[0] for e in entries] == sorted({e[0] for e in entries})
        checked["index entries"] += len(entries)
        assert read_offset_index(log.with_suffix(".index")).column("position").to_pylist() == [p for _, p in entries]

        times = parse(log.with_suffix(".timeindex"), ">qi")
        assert times, log
        assert [t for t, _ in times] == sorted({t for t, _ in times})  # strictly increasing
        assert [r for _, r in times] == sorted(r for _, r in times)
        for ts, rel in times:
            offset = base + rel
            holder = next(b for b in batches if b.base_offset <= offset <= b.last_offset)
            assert holder.max_timestamp == ts
            assert ts == max(b.max_timestamp for b in batches if b.base_offset <= offset)
        assert times[-1][0] == max(b.max_timestamp for b in batches)  # the entry added when the segment closed
        assert read_time_index(log.with_suffix(".timeindex")).column("timestamp").to_pylist() == [t for t, _ in times]

        aborts = [b for b in batches if b.is_control and b.control.type == "ABORT"]
        txn_path = log.with_suffix(".txnindex")
        if not aborts:
            assert not txn_path.exists()
            continue
        txns = parse(txn_path, ">hqqqq")
        assert [(pid, last) for _, pid, _, last, _ in txns] == [(b.producer_id, b.base_offset) for b in aborts]
        for version, pid, first, last, lso in txns:
            assert version == 0 and first < last and lso <= last + 1
            opener = next(b for b in batches if b.base_offset == first)
            assert opener.is_transactional and not opener.is_control and opener.producer_id == pid
            if lso <= last:  # the last stable offset: another transaction, still open at the abort, began there
                other = next(b for b in batches if b.base_offset == lso)
                assert other.is_transactional and not other.is_control and other.producer_id != pid
                end = next(
                    b for b in batches if b.is_control and b.producer_id == other.producer_id and b.base_offset > lso
                )
                assert end.base_offset > last
        assert read_txn_index(txn_path).column("first_offset").to_pylist() == [t[2] for t in txns]
        checked["aborted transactions"] += len(txns)
    assert checked["index entries"] > 200 and checked["aborted transactions"] > 5, checked


# --------------------------------------------------------------------------
# reading it all back
# --------------------------------------------------------------------------


def _check_counts(root: Path, summary: GenerateSummary) -> None:
    records = Counter()
    committed = Counter()
    batches = controls = 0
    for log in all_segments(root):
        topic = log.parent.name.rsplit("-", 1)[0]
        records[topic] += kb.read_segment(log).num_rows
        committed[topic] += kb.read_segment(log, isolation="read_committed").num_rows
        for b in kb.iter_batches(log.read_bytes()):
            batches += 1
            controls += b.is_control
    assert dict(records) == summary.records_per_topic
    assert sum(records.values()) == summary.records
    assert sum(committed.values()) == summary.read_committed_records == summary.records - summary.aborted_records
    assert (batches, controls) == (summary.batches, summary.control_batches)
    for name, t in summary.topics.items():
        assert committed[name] == t.records - t.aborted_records
        for p, n in enumerate(t.partition_records):
            data = b"".join(s.read_bytes() for s in segments_of(root / f"{name}-{p}"))
            assert kb.decode(data).num_rows == n
            assert max(b.next_offset for b in kb.iter_batches(data)) == t.partition_end_offsets[p]


def test_decode_counts_match_the_summary(plain):
    root, summary = plain
    _check_counts(root, summary)
    assert summary.aborted_records > 0 and summary.committed_records > 0
    assert summary.aborted_transactions > 0 and summary.committed_transactions > 0
    assert summary.read_committed_records < summary.records


def test_mixed_codecs(mixed):
    root, summary = mixed
    _check_counts(root, summary)
    assert {t.codec for t in summary.topics.values()} == {"none", "gzip", "snappy", "lz4", "zstd"}
    for log in all_segments(root):
        topic = log.parent.name.rsplit("-", 1)[0]
        data_batches = [b for b in kb.iter_batches(log.read_bytes()) if not b.is_control]
        assert {b.compression for b in data_batches} == {DEFAULT_CODECS[topic]}
        assert {b.magic for b in data_batches} == ({1} if topic == "audit-legacy" else {2})
    print(
        f"\nmixed codecs: {summary.bytes_written / 1e6:.1f} MB in {summary.elapsed:.2f} s, {summary.mb_per_s:.0f} MB/s"
    )


def test_read_committed_hides_exactly_the_aborted_records(plain):
    root, summary = plain
    folder = root / "payments-0"
    data = b"".join(s.read_bytes() for s in segments_of(folder))
    batches = list(kb.iter_batches(data))
    # Which transactional batches end in an ABORT, per producer, from the markers.
    pending: dict[int, list] = {}
    aborted_offsets = set()
    for b in batches:
        if b.is_transactional and b.is_control:
            if b.control.type == "ABORT":
                for t in pending.get(b.producer_id, []):
                    aborted_offsets.update(range(t.base_offset, t.next_offset))
            pending[b.producer_id] = []
        elif b.is_transactional:
            pending.setdefault(b.producer_id, []).append(b)
    assert aborted_offsets
    assert not any(pending.values())  # every transaction ended
    every = kb.decode(data).column("offset").to_pylist()
    committed = kb.decode(data, isolation="read_committed").column("offset").to_pylist()
    assert committed == [o for o in every if o not in aborted_offsets]


def test_the_data_looks_real(plain):
    root, summary = plain
    producers = Counter()
    for name, topic in summary.topics.items():
        table = pa.concat_tables(kb.read_segment(s) for s in all_segments(root) if s.parent.name.startswith(name + "-"))
        values = [v for v in table.column("value").to_pylist() if v is not None]
        sizes = sorted(len(v) for v in values)
        assert 100 <= sizes[len(sizes) // 2] <= 1000, (name, sizes[len(sizes) // 2])
        assert sizes[0] >= 50 and sizes[-1] <= 2000, (name, sizes[0], sizes[-1])
        for v in values[:2000]:
            json.loads(v)
        keys = table.column("key")
        assert keys.null_count == topic.null_keys
        assert table.column("value").null_count == topic.tombstones
        ts = pc.cast(table.column("timestamp"), pa.int64()).to_pylist()
        assert min(ts) >= START_TIMESTAMP * 1000
        headers = table.column("headers").to_pylist()
        if topic.magic == 2:
            counts = Counter(len(h) for h in headers)
            assert set(counts) == {0, 1, 2, 3}, (name, counts)
            assert any(h["value"] is None for hs in headers for h in hs)
            assert any(len({h["key"] for h in hs}) < len(hs) for hs in headers)  # duplicate keys
        else:
            assert counts_none(headers)
        for log in all_segments(root):
            if log.parent.name.startswith(name + "-"):
                for b in kb.iter_batches(log.read_bytes()):
                    producers[(name, b.producer_id >= 0, b.is_transactional)] += 1
    assert summary.topics["customers"].tombstones > 0 and summary.topics["customers"].null_keys == 0
    assert summary.topics["clicks"].null_keys > 0 and summary.topics["clicks"].tombstones == 0
    for name in ("orders", "clicks", "payments", "customers"):
        assert producers[(name, True, False)] and producers[(name, True, True)] and producers[(name, False, False)], (
            name
        )
    assert summary.topics["audit-legacy"].magic == 1 and producers[("audit-legacy", False, False)]


def counts_none(headers: list) -> bool:
    return all(h == [] for h in headers)


def test_timestamps_increase_per_partition(plain):
    root, _ = plain
    for folder in root.iterdir():
        data = b"".join(s.read_bytes() for s in segments_of(folder))
        ts = pc.cast(kb.decode(data).column("timestamp"), pa.int64()).to_numpy()
        assert (ts[1:] >= ts[:-1]).all(), folder.name
        assert ts[0] < (START_TIMESTAMP + 2000) * 1000


def test_kafka_python_reads_the_segments(plain):
    root, _ = plain
    for folder in ("orders-0", "audit-legacy-0", "customers-0"):
        log = segments_of(root / folder)[0]
        data = log.read_bytes()
        batches = rc.reference_batches(data, "kafka-python")
        assert all(b["crc_ok"] for b in batches)
        theirs = [(r["offset"], r["key"], r["value"]) for b in batches if not b["is_control"] for r in b["records"]]
        table = kb.decode(data)
        ours = list(
            zip(table.column("offset").to_pylist(), table.column("key").to_pylist(), table.column("value").to_pylist())
        )
        assert theirs == ours


# --------------------------------------------------------------------------
# arguments, determinism, progress
# --------------------------------------------------------------------------


def _same_tree(a: Path, b: Path) -> bool:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return files_a == files_b and all(filecmp.cmp(a / f, b / f, shallow=False) for f in files_a)


def test_same_seed_same_bytes_whatever_the_threads(tmp_path):
    kwargs = dict(size="1MB", segment_bytes=100_000, progress=False)
    generate(tmp_path / "a", seed=5, threads=1, **kwargs)
    generate(tmp_path / "b", seed=5, threads=3, **kwargs)
    generate(tmp_path / "c", seed=6, **kwargs)
    assert _same_tree(tmp_path / "a", tmp_path / "b")
    assert not _same_tree(tmp_path / "a", tmp_path / "c")


def test_cli_signature_and_overwrite(tmp_path):
    summary = generate(str(tmp_path / "x"), size=300_000, seed=1)  # as `python -m kafkabatch generate` calls it
    assert summary.records > 0
    with pytest.raises(FileExistsError, match="overwrite=True"):
        generate(tmp_path / "x", size=300_000, seed=1)
    again = generate(tmp_path / "x", size=300_000, seed=2, overwrite=True)
    assert again.records != summary.records or again.bytes_written != summary.bytes_written
    assert "MB/s" in str(again)


def test_topics_codecs_and_progress(tmp_path):
    seen = []
    summary = generate(
        tmp_path / "t",
        size="2MB",
        progress=lambda done, total: seen.append((done, total)),
        topics={
            "events": 2,
            "legacy": {"partitions": 1, "magic": 0, "kind": "audit"},
            "shop": TopicSpec("ignored", partitions=1, kind="orders", transactional_producers=0),
        },
        codecs={"events": "zstd", "legacy": "lz4"},
    )
    assert sorted(summary.topics) == ["events", "legacy", "shop"]
    assert [summary.topics[t].codec for t in ("events", "legacy", "shop")] == ["zstd", "lz4", "none"]
    assert summary.topics["shop"].control_batches == 0 and summary.topics["legacy"].magic == 0
    assert summary.topics["events"].control_batches > 0
    assert seen and [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1][0] == summary.bytes_written
    assert {t for _, t in seen} == {2 << 20}
    legacy = kb.read_segment(segments_of(tmp_path / "t" / "legacy-0")[0])
    assert set(pc.cast(legacy.column("timestamp"), pa.int64()).to_pylist()) == {-1000}  # v0: no timestamps
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["events-0", "events-1", "legacy-0", "shop-0"]


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"size": "lots"}, ValueError, "size"),
        ({"size": -1}, ValueError, "size"),
        ({"codecs": "zstd"}, ValueError, "audit-legacy.*zstd needs magic 2"),
        ({"codecs": "brotli"}, ValueError, "unknown codec"),
        ({"topics": {"a": 0}}, ValueError, "partitions"),
        ({"topics": [TopicSpec("a", magic=1, transactional_producers=1)]}, ValueError, "transactions need magic 2"),
        ({"topics": [TopicSpec("a", kind="weather")]}, ValueError, "unknown kind"),
        ({"topics": ["a", "a"]}, ValueError, "twice"),
        ({"segment_bytes": 0}, ValueError, "segment_bytes"),
        ({"threads": 0}, ValueError, "threads"),
    ],
)
def test_bad_arguments(tmp_path, kwargs, error, match):
    with pytest.raises(error, match=match):
        generate(tmp_path / "bad", **kwargs)
    assert not (tmp_path / "bad").exists()


def test_speed(tmp_path):
    """Prints MB/s of .log output (not asserted: the machine is shared)."""
    none = generate(tmp_path / "none", size="64MB", codecs="none", progress=False)
    mixed = generate(tmp_path / "mixed", size="16MB", progress=False)
    print(
        f"\ngenerate codec none: {none.bytes_written / 1e6:.0f} MB in {none.elapsed:.2f} s = {none.mb_per_s:.0f} MB/s"
        f"\ngenerate mixed codecs: {mixed.bytes_written / 1e6:.0f} MB in {mixed.elapsed:.2f} s = "
        f"{mixed.mb_per_s:.0f} MB/s ({mixed.records:,} records)"
    )
    assert none.segments >= 9 and none.records > 0
