"""One header walk per segment: its facts agree with ``iter_batches`` on other people's bytes, the core's
reads of a byte range in windows give the rows of a whole decode whatever the window and the source, and
a scan walks no file in Python."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from golden_params import fixture_params

import kafkabatch as kb
import kafkabatch.log.scan as scan
from kafkabatch._kafkabatch import walk_batches
from kafkabatch.log import batch_ranges, decode_range
from kafkabatch.log.bounds import Bounds
from kafkabatch.log.fs import MappedSource
from kafkabatch.log.listing import Segment

FIXTURES = [
    "kafka-python-v2-zstd-multibatch",
    "aiokafka-v1-gzip-multibatch",
    "kafka-python-v1-none-mixed",
    "kafka-python-v0-snappy-multibatch",
    "kafka-python-mixed-magic",
    "kafka-python-v1-lz4-compacted",
    "hand-built-transactions",
]


class BytesSource:
    """A source that is not memory-mapped: the core reads it piece by piece through ``read``."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)

    def read(self, position: int, length: int) -> memoryview:
        return memoryview(self.data)[position : position + length]

    def release(self) -> None:
        pass


@pytest.mark.parametrize("name", fixture_params(FIXTURES))
def test_walk_facts_agree_with_iter_batches(golden, name):
    data = golden(name).data
    walk = walk_batches(data)
    cols = walk.columns()
    batches = list(kb.iter_batches(data, validate_crc=False))
    assert walk.valid_end == len(data) and len(walk) == len(batches)
    for i, b in enumerate(batches):
        assert (cols["position"][i], cols["size"][i], cols["magic"][i]) == (b.position, b.size_in_bytes, b.magic)
        assert cols["last_offset"][i] == b.last_offset  # a legacy wrapper's: its own offset
        assert cols["max_timestamp"][i] == b.max_timestamp
        if b.magic == 2:
            assert cols["base_offset"][i] == b.base_offset
            assert (cols["record_count"][i], cols["producer_id"][i]) == (b.record_count, b.producer_id)
        elif cols["record_count"][i] != -1:  # a plain legacy message; -1: a wrapper, unknown without inflating
            assert cols["record_count"][i] == b.record_count == 1


def _rows(table) -> list[tuple]:
    return list(zip(*(table.column(c).to_pylist() for c in ("offset", "timestamp", "key", "value"))))


@pytest.mark.parametrize("name", fixture_params(FIXTURES))
def test_windows_give_the_rows_of_a_whole_decode(golden, name, tmp_path):
    """decode_range in windows of any size, from a mapped file or from bytes, from the start or the
    second batch, under offset bounds: the rows a whole decode of those bytes gives, filtered."""
    whole = golden(name).data
    data = whole + b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x40"  # an incomplete tail
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    batches = list(kb.iter_batches(whole, validate_crc=False))
    spans = [(b.position, b.position + b.size_in_bytes) for b in batches]
    offsets = sorted({b.base_offset for b in batches} | {b.last_offset for b in batches})
    cases = [Bounds()] + [Bounds(start_offset=o) for o in offsets[1::2]] + [Bounds(end_offset=o) for o in offsets[::3]]
    cases += [Bounds(start_offset=a, end_offset=b) for a, b in zip(offsets, offsets[2:])]
    seg = Segment(str(path), "t", 0, 0, len(data))
    source = MappedSource(str(path))
    try:
        for start in (0, spans[min(1, len(spans) - 1)][0]):
            decoded = kb.decode(whole[start:], topic="t", partition=0)
            for bounds in cases:
                want = [
                    row
                    for row in _rows(decoded)
                    if (bounds.start_offset is None or row[0] >= bounds.start_offset)
                    and (bounds.end_offset is None or row[0] < bounds.end_offset)
                ]
                assert want or bounds != Bounds()
                for chunk in (1, 100, 700, 1 << 20):
                    for opened in (source, BytesSource(data)):
                        got = list(decode_range(opened, seg, start=start, max_chunk_bytes=chunk, bounds=bounds))
                        rows = [row for batch in got for row in _rows(batch)]
                        assert rows == want, (chunk, bounds, start, type(opened).__name__)
        for chunk in (1, 100, 700, 1 << 20):
            ranges = batch_ranges(source, 0, len(data), chunk)
            assert ranges == batch_ranges(BytesSource(data), 0, len(data), chunk)
            cuts = {a for a, _ in spans} | {len(whole)}
            assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
            assert all(b == c for (_, b), (c, _) in zip(ranges, ranges[1:]))  # contiguous
            assert all(a in cuts for a, _ in ranges)  # cut at batch starts
            assert all(b - a <= chunk or sum(1 for x in cuts if a < x < b) == 0 for a, b in ranges[:-1])
    finally:
        source.close()


def _partition(root: Path) -> list[Path]:
    """A partition of three segments with transactions (kafkabatch's generator)."""
    from kafkabatch.generate import DEFAULT_TOPICS

    spec = next(t for t in DEFAULT_TOPICS if t.magic == 2)
    kb.generate(root, size="3MB", topics=[spec], segment_bytes=1 << 20, progress=False)
    return sorted(root.glob("*/*.log"))


def test_a_scan_walks_each_file_once(tmp_path, monkeypatch):
    segments = _partition(tmp_path)
    assert len(segments) >= 3
    walked: list[int] = []

    def counting(data, start=0):
        walked.append(start)
        return walk_batches(data, start)

    monkeypatch.setattr(scan, "walk_batches", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kb.IndexFileWarning)
        full = kb.scan_log(str(tmp_path), isolation="read_committed").read_all()
        stamps = sorted(full.column("timestamp").cast("int64").to_pylist())
        walked.clear()
        # read_committed: the core plans each partition with one header walk per file (kept ranges and the
        # transaction pre-pass from the same walk) and reads the planned ranges: Python walks no file
        results: list = []
        got = kb.scan_log(
            str(tmp_path),
            isolation="read_committed",
            start_timestamp=stamps[len(stamps) // 2] // 1000,
            on_segment=results.append,
        )
        rows = got.read_all()
    assert walked == []
    assert sorted(Path(r.segment.path) for r in results) == segments, "each file reported once"
    assert rows.num_rows == sum(1 for t in stamps if t >= stamps[len(stamps) // 2] // 1000 * 1000)
