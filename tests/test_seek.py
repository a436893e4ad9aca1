"""read_segment bounds with .index/.timeindex seeking: good, old-style, stale,
truncated and garbage indexes must all give exactly the rows of a full read
filtered by the bounds (a bad index may cost time, never rows)."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

import kafkabatch as kb

BASE_OFFSET = 5_000
BASE_TS = 1_700_000_000_000
N_BATCHES = 40
PER_BATCH = 25


def _batch(first_offset: int) -> bytes:
    """An aiokafka-built v2 batch with records at first_offset.., timestamps 10 ms apart
    (a few out of order, as CreateTime allows)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=10**9,
    )
    for i in range(PER_BATCH):
        offset = first_offset + i
        ts = BASE_TS + offset * 10 - (35 if offset % 17 == 0 else 0)
        builder.append(i, timestamp=ts, key=b"k%d" % offset, value=b"v" * (offset % 50), headers=[])
    data = bytearray(builder.build())
    data[0:8] = struct.pack(">q", first_offset)  # base offset sits outside the CRC
    return bytes(data)


@pytest.fixture(scope="module")
def segment(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("seek") / "orders-0"
    folder.mkdir()
    log = folder / f"{BASE_OFFSET:020d}.log"
    log.write_bytes(b"".join(_batch(BASE_OFFSET + b * PER_BATCH) for b in range(N_BATCHES)))
    return log


def _batches(log: Path) -> list[kb.Batch]:
    return list(kb.iter_batches(log.read_bytes()))


def _write_offset_index(log: Path, entries: list[tuple[int, int]]) -> None:
    base = int(log.stem)
    log.with_suffix(".index").write_bytes(b"".join(struct.pack(">ii", o - base, p) for o, p in entries))


def _write_time_index(log: Path, entries: list[tuple[int, int]]) -> None:
    base = int(log.stem)
    log.with_suffix(".timeindex").write_bytes(b"".join(struct.pack(">qi", t, o - base) for t, o in entries))


def _kafka_indexes(log: Path, *, first_offsets: bool = False, every: int = 3) -> None:
    """Index every `every`th batch as a broker does: last offset (0.11+) or
    first offset (<= 0.10) -> position; time index of the max timestamp so far."""
    offsets, times, max_ts = [], [], -1
    for i, b in enumerate(_batches(log)):
        max_ts = max(max_ts, b.max_timestamp)
        if i % every == 0:
            offsets.append((b.base_offset if first_offsets else b.last_offset, b.position))
            times.append((max_ts, b.last_offset))
    _write_offset_index(log, offsets)
    _write_time_index(log, times)


def _expected(log: Path, **bounds) -> pa.Table:
    table = kb.read_segment(log)
    mask = pc.and_(
        pc.greater_equal(table["offset"], bounds.get("start_offset", -1)),
        pc.less(table["offset"], bounds.get("end_offset", 2**62)),
    )
    if "start_timestamp" in bounds:
        mask = pc.and_(mask, pc.greater_equal(table["timestamp"].cast(pa.int64()), bounds["start_timestamp"] * 1000))
    if "end_timestamp" in bounds:
        mask = pc.and_(mask, pc.less(table["timestamp"].cast(pa.int64()), bounds["end_timestamp"] * 1000))
    return table.filter(mask)


BOUNDS = [
    {"start_offset": BASE_OFFSET + 333},
    {"start_offset": BASE_OFFSET + 100, "end_offset": BASE_OFFSET + 101},
    {"end_offset": BASE_OFFSET + 260},
    {"start_offset": 0, "end_offset": BASE_OFFSET},
    {"start_offset": BASE_OFFSET + 10_000},
    {"start_timestamp": BASE_TS + (BASE_OFFSET + 517) * 10},
    {"start_timestamp": BASE_TS + (BASE_OFFSET + 170) * 10, "end_timestamp": BASE_TS + (BASE_OFFSET + 620) * 10},
    {"start_offset": BASE_OFFSET + 300, "start_timestamp": BASE_TS + (BASE_OFFSET + 200) * 10},
]


@pytest.mark.parametrize("first_offsets", [False, True], ids=["kafka-0.11+", "kafka-0.10"])
@pytest.mark.parametrize("bounds", BOUNDS, ids=lambda b: ",".join(f"{k}={v}" for k, v in b.items()))
def test_good_index_gives_exact_rows_without_warning(segment, bounds, first_offsets):
    _kafka_indexes(segment, first_offsets=first_offsets)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kb.IndexFileWarning)
        got = kb.read_segment(segment, **bounds)
    assert got.equals(_expected(segment, **bounds))
    assert got.column("topic").unique().to_pylist() in ([], ["orders"])


def test_index_seek_starts_past_the_start(segment):
    """The seek really skips: the core's read of a bounded segment starts and ends at indexed batches."""
    from kafkabatch.log import SegmentResult
    from kafkabatch.log.bounds import Bounds
    from kafkabatch.log.listing import Segment
    from kafkabatch.log.scan import read_in_core

    _kafka_indexes(segment)
    seg = Segment(str(segment), "orders", 0, BASE_OFFSET, segment.stat().st_size)
    result = SegmentResult(seg)
    bounds = Bounds(start_offset=BASE_OFFSET + 700, end_offset=BASE_OFFSET + 800)
    rows = sum(
        b.num_rows for b in read_in_core(seg, None, bounds, 1 << 20, None, None, result, (), {}, index_seek=True)
    )
    assert rows == 100
    batches = {b.position: b for b in _batches(segment)}
    assert result.start > 0 and batches[result.start].base_offset <= BASE_OFFSET + 700
    assert batches[result.end].base_offset >= BASE_OFFSET + 800


def _corrupt_variants(log: Path):
    """(name, offset index entries, whether the damage is detectable)."""
    batches = _batches(log)
    good = [(b.last_offset, b.position) for b in batches[::3]]
    yield "stale-shifted", [(o, p + 7) for o, p in good], True
    yield "points-past-end", good + [(batches[-1].last_offset + 100, log.stat().st_size + 4096)], True
    yield "out-of-order", list(reversed(good)), True
    yield "garbage", [(BASE_OFFSET + 1 + i * 13, 977 * i + 3) for i in range(1, 20)], True
    # Offsets too high still point at real batches, and starting there is safe:
    # it may read more than needed, never less.
    yield "offsets-too-high", [(o + 200, p) for o, p in good], False


@pytest.mark.parametrize("bounds", BOUNDS[:3] + BOUNDS[5:6], ids=["start", "narrow", "end", "time"])
def test_bad_index_never_costs_rows(segment, bounds):
    for name, entries, detectable in _corrupt_variants(segment):
        _write_offset_index(segment, entries)
        _kafka_time_index_only(segment)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = kb.read_segment(segment, **bounds)
        assert got.equals(_expected(segment, **bounds)), name
        if detectable and bounds.get("start_offset", 0) > BASE_OFFSET:
            assert any(issubclass(w.category, kb.IndexFileWarning) for w in caught), name


def _kafka_time_index_only(log: Path) -> None:
    offsets = log.with_suffix(".index").read_bytes()
    _kafka_indexes(log)
    log.with_suffix(".index").write_bytes(offsets)


@pytest.mark.parametrize("claim", ["too-low", "past-the-log"])
def test_lying_time_index_is_caught(segment, claim):
    """A time index claiming old timestamps for recent batches would skip rows: refused."""
    _kafka_indexes(segment)
    last = _batches(segment)[-1]
    if claim == "too-low":
        entries = [(BASE_TS, last.last_offset)]  # "everything up to the end is older than BASE_TS"
    else:
        entries = [(BASE_TS, last.last_offset + 1000)]
    _write_time_index(segment, entries)
    bounds = {"start_timestamp": BASE_TS + (BASE_OFFSET + 300) * 10}
    with pytest.warns(kb.IndexFileWarning):
        got = kb.read_segment(segment, **bounds)
    assert got.equals(_expected(segment, **bounds))


def test_truncated_and_missing_index(segment):
    _kafka_indexes(segment)
    index = segment.with_suffix(".index")
    index.write_bytes(index.read_bytes()[:-3])  # a partial entry: ignored with a warning
    with pytest.warns(kb.IndexFileWarning):
        got = kb.read_segment(segment, start_offset=BASE_OFFSET + 400)
    assert got.equals(_expected(segment, start_offset=BASE_OFFSET + 400))
    index.unlink()
    with pytest.warns(kb.IndexFileWarning, match="no offset index"):
        got = kb.read_segment(segment, start_offset=BASE_OFFSET + 400)
    assert got.equals(_expected(segment, start_offset=BASE_OFFSET + 400))


def test_preallocated_zero_tail_is_ignored(segment):
    _kafka_indexes(segment)
    index = segment.with_suffix(".index")
    index.write_bytes(index.read_bytes() + bytes(8 * 100))  # Kafka preallocates and zero-fills
    with warnings.catch_warnings():
        warnings.simplefilter("error", kb.IndexFileWarning)
        got = kb.read_segment(segment, start_offset=BASE_OFFSET + 900)
    assert got.equals(_expected(segment, start_offset=BASE_OFFSET + 900))


def test_unbounded_read_ignores_indexes(segment):
    _write_offset_index(segment, [(1, 99999)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", kb.IndexFileWarning)
        assert kb.read_segment(segment).num_rows == N_BATCHES * PER_BATCH
