"""One ``.index`` parser, with Kafka's rules, behind both readers that use
offset indexes: seeking (``read_segment``/``scan_log`` with offset bounds)
and Spark's task planning (the core's cuts of a remote segment at its ``.index``). Both must
agree on zero-tailed, stale and garbage indexes: use the same entries, or
both ignore the index (a warning, never lost rows).

The log is kafka-python's batches; the index is written as a broker does
(``OffsetIndex.append(lastOffset, position)`` every ~``index.interval.bytes``).
"""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

import pytest
import realclients as rc

import kafkabatch as kb
from kafkabatch.log.index import IndexFileWarning, InvalidIndexError, offset_index_entries

BASE = 5_000
INTERVAL = 4096


def build_segment(root: Path) -> tuple[Path, list[tuple[int, int]]]:
    """A segment of 120 batches of 10 records at base offset BASE, and the
    (relative offset, position) entries a broker would index."""
    from kafka.record.memory_records import MemoryRecordsBuilder

    data = bytearray()
    entries = []
    since_entry = 0
    for i in range(120):
        builder = MemoryRecordsBuilder(2, 0, batch_size=1 << 20, offset=BASE + 10 * i)
        for j in range(10):
            builder.append(rc.BASE_TS + j, None, b"x" * 90 + b"%04d" % j, [])
        builder.close()
        batch = bytes(builder.buffer())
        if since_entry > INTERVAL:  # LogSegment.append: after index.interval.bytes
            entries.append((10 * i + 9, len(data)))
            since_entry = 0
        data += batch
        since_entry += len(batch)
    path = rc.write_segment(root, "orders", 0, bytes(data), base_offset=BASE)
    return path, entries


def index_bytes(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", r, p) for r, p in entries)


def cases(entries: list[tuple[int, int]]) -> dict[str, tuple[bytes, bool]]:
    """name -> (index bytes, whether a reader may use it)."""
    good = index_bytes(entries)
    shifted = [(r, p + 7) for r, p in entries]  # from another version of the log
    return {
        "exact": (good, True),
        "zero-tailed": (good + bytes(8 * 64), True),  # the active segment's preallocation
        "partial-entry": (good + b"\x00\x00\x01", False),  # sanityCheck: corrupt
        "stale": (index_bytes(shifted), False),
        "out-of-order": (index_bytes([entries[1], entries[0], *entries[2:]]), False),
        "garbage": (bytes(range(7, 255)) * 3, False),
    }


@pytest.fixture(scope="module")
def segment(tmp_path_factory):
    return build_segment(tmp_path_factory.mktemp("index-parsers"))


def test_the_parser_on_broker_entries(segment):
    _, entries = segment
    data = index_bytes(entries) + bytes(80)
    offsets, positions = offset_index_entries(data, BASE)
    assert offsets == [BASE + r for r, _ in entries]
    assert positions == [p for _, p in entries]
    # entry 0 may be (0, 0): index.interval.bytes=0 and a one-record first batch
    assert offset_index_entries(struct.pack(">ii", 0, 0) + struct.pack(">ii", 4, 70), 0) == ([0, 4], [0, 70])
    with pytest.raises(InvalidIndexError):
        offset_index_entries(index_bytes([entries[1], entries[0]]), BASE)
    with pytest.raises(InvalidIndexError):
        offset_index_entries(struct.pack(">ii", -3, 10), BASE)


def seek_uses_index(path: Path, start_offset: int) -> tuple[bool, list[int]]:
    """(no IndexFileWarning, offsets read) for a read from ``start_offset``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = kb.read_segment(path, start_offset=start_offset)
    used = not any(issubclass(w.category, IndexFileWarning) for w in caught)
    return used, table.column("offset").to_pylist()


def planning_uses_index(path: Path, max_bytes: int) -> tuple[bool, list[int]]:
    """(cuts made without a warning, the cuts) of the Spark source's plan for
    the segment read as a remote object (a local folder read through
    pyarrow.fs stands in for S3): tasks cut at its ``.index`` entries."""
    pytest.importorskip("kafkabatch.spark")
    from pyarrow import fs as pafs

    import kafkabatch.spark as kbs
    from kafkabatch.log import fs
    from kafkabatch.spark.planning import splits_of

    local = pafs.LocalFileSystem()
    options = {
        "path": f"mock://{path.parent.as_posix()}",
        "maxbytesperpartition": str(max_bytes),
        "minpartitions": "1000",
    }
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings(record=True) as caught:
        patch.setattr(fs, "resolve_remote", lambda uri: (local, uri.split("://", 1)[1].split("?")[0]))
        warnings.simplefilter("always")
        source = kbs.KafkaLogDataSource(options)
        tasks = source.reader(source.schema()).partitions()
    cuts = [s.start for task in tasks for s in splits_of(task) if s.start > 0]
    warned = any(issubclass(w.category, IndexFileWarning) for w in caught)
    return bool(cuts) and not warned, cuts


@pytest.mark.parametrize("case", ["exact", "zero-tailed", "partial-entry", "stale", "out-of-order", "garbage"])
def test_seek_and_spark_planning_agree(segment, case):
    path, entries = segment
    data, usable = cases(entries)[case]
    path.with_suffix(".index").write_bytes(data)
    try:
        start = BASE + 555
        seek_used, offsets = seek_uses_index(path, start)
        plan_used, cuts = planning_uses_index(path, 3 * INTERVAL)
        assert offsets == list(range(start, BASE + 1200))  # never a row lost
        assert seek_used == plan_used == usable
        if usable:
            positions = set(offset_index_entries(data, BASE)[1])
            assert cuts and set(cuts) <= positions
            batch_starts = {b.position for b in kb.iter_batches(path.read_bytes())}
            assert set(cuts) <= batch_starts
    finally:
        path.with_suffix(".index").unlink()
