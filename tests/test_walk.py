"""One header walk per segment: its facts agree with ``iter_batches`` on other people's bytes, its windows
with the window-by-window walk remote sources still use, and a scan walks each file once."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from golden_params import fixture_params

import kafkabatch as kb
import kafkabatch.log.windows as windows
from kafkabatch._kafkabatch import walk_batches
from kafkabatch.log.bounds import Bounds
from kafkabatch.log.fs import MappedSource

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
    """A source that is not memory-mapped: planning walks it window by window."""

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


@pytest.mark.parametrize("name", fixture_params(FIXTURES))
def test_windows_equal_the_window_by_window_walk(golden, name, tmp_path):
    data = golden(name).data + b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x40"  # an incomplete tail
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    batches = list(kb.iter_batches(golden(name).data, validate_crc=False))
    offsets = sorted({b.base_offset for b in batches} | {b.last_offset for b in batches})
    cases = [Bounds()] + [Bounds(start_offset=o) for o in offsets[1::2]] + [Bounds(end_offset=o) for o in offsets[::3]]
    cases += [Bounds(start_offset=a, end_offset=b) for a, b in zip(offsets, offsets[2:])]
    source = MappedSource(str(path))
    try:
        for chunk in (1, 100, 700, 1 << 20):
            for bounds in cases:
                for start in (0, batches[min(1, len(batches) - 1)].position):
                    ours = list(windows.batch_windows(source, start, len(data), chunk, bounds))
                    theirs = list(windows.batch_windows(BytesSource(data), start, len(data), chunk, bounds))
                    assert ours == theirs, (chunk, bounds, start)
            assert windows.batch_ranges(source, 0, len(data), chunk) == windows.batch_ranges(
                BytesSource(data), 0, len(data), chunk
            )
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

    monkeypatch.setattr(windows, "walk_batches", counting)
    windows.forget_recent_walks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kb.IndexFileWarning)
        full = kb.scan_log(str(tmp_path), isolation="read_committed").read_all()
        stamps = sorted(full.column("timestamp").cast("int64").to_pylist())
        walked.clear()
        windows.forget_recent_walks()
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
