"""Time pruning of legacy (magic 1) message sets, proven on other people's bytes first.

The rule (the core's ``kept_ranges``): a CreateTime v1 wrapper
carries its inner messages' largest timestamp as a broker writes it, so a
wrapper whose timestamp is below ``start_timestamp`` is skipped undecoded
when its offset shows a broker assigned it. The tests check that claim on
kafka-python's and aiokafka's wrappers with Kafka's in-place rewrite applied
(``realclients.legacy_broker_assign``; no broker-written v1 log is recorded
here), read back with the clients' own inner-message readers; and that the
wrappers those producers send (offset 0, timestamp 0: not the maximum) are
never dropped. Every selective read is compared with the full read filtered.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pyarrow.compute as pc
import pytest
import realclients as rc
from golden_params import fixture_params

import kafkabatch as kb
from kafkabatch.log import SegmentResult

V1_COMPRESSED = [
    f"{source}-v1-{codec}-multibatch" for source in ("kafka-python", "aiokafka") for codec in ("gzip", "snappy", "lz4")
]


def _wrappers(data: bytes) -> list[tuple[int, dict]]:
    return [(pos, rc.parse_header(data, pos)) for pos, _ in rc.batch_spans(data)]


def _selective(root: Path, start_ms: int) -> tuple[list[tuple[int, int]], list[SegmentResult]]:
    """(offset, timestamp) rows of a read from ``start_ms``, and its segment results."""
    results: list[SegmentResult] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kb.IndexFileWarning)  # these folders have no index files
        table = kb.scan_log(str(root), start_timestamp=start_ms, on_segment=results.append).read_all()
    return list(
        zip(table.column("offset").to_pylist(), pc.cast(table.column("timestamp"), "int64").to_pylist())
    ), results


def _full_from(root: Path, start_ms: int) -> list[tuple[int, int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kb.IndexFileWarning)
        table = kb.scan_log(str(root)).read_all()
    rows = zip(table.column("offset").to_pylist(), pc.cast(table.column("timestamp"), "int64").to_pylist())
    return [(o, t) for o, t in rows if t >= start_ms * 1000]


@pytest.mark.parametrize("name", fixture_params(V1_COMPRESSED))
def test_broker_assigned_wrappers_carry_their_maximum_and_prune(golden, name, tmp_path):
    fx = golden(name)
    wrappers = _wrappers(fx.data)
    assert len(wrappers) == 3
    maxima = []
    for pos, header in wrappers:
        end = pos + 12 + header["length"]
        inner = rc.legacy_inner_messages(fx.data[pos:end])  # the client's own codecs and parser
        assert header["timestamp"] == max(m["timestamp"] for m in inner), (name, pos)
        assert header["offset"] == fx.batches[[b["position"] for b in fx.batches].index(pos)]["last_offset"]
        maxima.append(header["timestamp"])
    rc.write_segment(tmp_path, "t", 0, fx.data, base_offset=10**12)
    counts = [len(b["records"]) for b in fx.batches]
    # from just above the second wrapper's maximum: the second wrapper holds no
    # match and is skipped undecoded (a broker assigned it: its offset is above
    # the first's), so is the third if its maximum is below too; the first is
    # decoded (nothing before it shows who wrote it)
    start_ms = maxima[1] + 1
    rows, results = _selective(tmp_path, start_ms)
    assert rows == _full_from(tmp_path, start_ms)
    assert results[0].records == counts[0] + (counts[2] if maxima[2] >= start_ms else 0)


@pytest.mark.parametrize("source", ["kafka-python", "aiokafka"])
@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_producer_written_wrappers_are_never_dropped(source, codec, tmp_path):
    """Wrappers as the producers send them: the timestamp is 0, not the
    maximum, and the offset 0 in every wrapper; a read from any time keeps
    every wrapper and finds every record at or after it."""
    pytest.importorskip("kafka" if source == "kafka-python" else "aiokafka")
    recs = rc.dataset("mixed", 1)
    chunks = [recs[i : i + 4] for i in range(0, len(recs), 4)]
    data = b""
    for chunk in chunks:
        if source == "kafka-python":
            from kafka.record.memory_records import MemoryRecordsBuilder

            builder = MemoryRecordsBuilder(1, rc.CODEC_ID[codec], batch_size=1 << 30, offset=0)
            for r in chunk:
                assert builder.append(r["timestamp"], r["key"], r["value"]) is not None
            builder.close()
            wrapper = bytes(builder.buffer())
        else:
            from aiokafka.record.legacy_records import LegacyRecordBatchBuilder

            abuilder = LegacyRecordBatchBuilder(1, rc.CODEC_ID[codec], 1 << 30)
            for i, r in enumerate(chunk):
                assert abuilder.append(i, r["timestamp"], r["key"], r["value"]) is not None
            wrapper = bytes(abuilder.build())
        header = rc.parse_header(wrapper)
        inner_max = max(m["timestamp"] for m in rc.legacy_inner_messages(wrapper))
        assert (header["offset"], header["timestamp"]) == (0, 0) and inner_max > 0  # not the maximum
        data += wrapper
    rc.write_segment(tmp_path, "t", 0, data)
    stamps = sorted(r["timestamp"] for r in recs)
    for start_ms in (stamps[0], stamps[len(stamps) // 2], stamps[-1]):
        rows, results = _selective(tmp_path, start_ms)
        assert rows == _full_from(tmp_path, start_ms)
        assert rows and results[0].pruned_bytes == 0


@pytest.mark.parametrize("name", fixture_params(["kafka-python-mixed-magic", "kafka-python-v1-none-mixed"]))
def test_plain_v1_and_mixed_magic_logs_read_the_same(golden, name, tmp_path):
    """A format upgrade v0 -> v1 -> v2, and plain v1 messages (each timestamp
    exact): every start time gives the full read's rows from it, and the
    plain v1 messages before it are skipped."""
    fx = golden(name)
    rc.write_segment(tmp_path, "t", 0, fx.data, base_offset=fx.batches[0]["base_offset"])
    stamps = sorted({r["timestamp"] for b in fx.batches for r in b["records"] if r["timestamp"] >= 0})
    total = sum(len(b["records"]) for b in fx.batches)
    decoded = []
    for start_ms in stamps[:: max(1, len(stamps) // 7)] + [stamps[-1] + 1]:
        rows, results = _selective(tmp_path, start_ms)
        assert rows == _full_from(tmp_path, start_ms)
        decoded.append(results[0].records if results else 0)
    assert min(decoded) < total  # some messages skipped by their timestamps


def test_generated_legacy_topic_wrappers_carry_their_maximum(tmp_path):
    """kafkabatch's own encoder (``generate``'s magic-1 topic) writes v1
    wrappers as brokers do: each wrapper's timestamp is its records' maximum."""
    from kafkabatch.generate import DEFAULT_TOPICS

    kb.generate(tmp_path, size="300KB", topics=[t for t in DEFAULT_TOPICS if t.magic == 1], progress=False)
    segments = sorted(tmp_path.glob("*/*.log"))
    assert segments
    checked = 0
    for segment in segments:
        for batch in kb.iter_batches(segment.read_bytes()):
            stamps = [r.timestamp for r in batch.records()]
            assert batch.magic == 1 and batch.max_timestamp == max(stamps)
            checked += 1
    assert checked > 10
