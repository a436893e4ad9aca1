"""kb.iter_batches: batch-level facts and per-batch records against the
reference readers (kafka-python's / aiokafka's MemoryRecords, plus a raw
header parse of the same bytes).

Legacy formats follow Kafka's Java client: each uncompressed message, or
each compressed wrapper, is one Batch; base_offset is the first inner
offset, last_offset the wrapper offset, partition_leader_epoch None, and
max_timestamp the wrapper timestamp (-1 for v0).
"""

from __future__ import annotations

import pytest
import realclients as rc
from compare import assert_same_list, batch_view, expected_batch_view, record_view
from golden_params import CLEAN_NAMES, CONTROL_NAMES, fixture_params

import kafkabatch as kb


def batches_of(data, **kw):
    return list(kb.iter_batches(data, **kw))


@pytest.mark.parametrize("name", fixture_params(CLEAN_NAMES))
def test_batches_match_reference(golden, name):
    fx = golden(name)
    got = batches_of(fx.data)
    assert len(got) == len(fx.batches)
    assert_same_list([batch_view(b, b.magic) for b in got], [expected_batch_view(r) for r in fx.batches], "batches")
    for b, ref in zip(got, fx.batches):
        assert_same_list([record_view(r) for r in b.records()], ref["records"], f"batch@{ref['position']}.records")


@pytest.mark.parametrize("name", fixture_params(CLEAN_NAMES))
def test_batches_tile_the_input(golden, name):
    fx = golden(name)
    pos = 0
    for b in batches_of(fx.data):
        assert b.position == pos
        pos += b.size_in_bytes
    assert pos == len(fx.data) == kb.valid_bytes(fx.data)


@pytest.mark.parametrize("name", fixture_params([n for n in CLEAN_NAMES if "-v0-" in n or "-v1-" in n]))
def test_legacy_batch_defaults(golden, name):
    for b in batches_of(golden(name).data):
        assert b.partition_leader_epoch is None
        assert b.is_control is False and b.is_transactional is False and b.control is None
        assert b.producer_id in (None, -1) and b.producer_epoch in (None, -1) and b.base_sequence in (None, -1)
        if b.magic == 0:
            assert b.timestamp_type == -1
            assert all(r.timestamp == -1 and r.timestamp_type == -1 for r in b.records())


@pytest.mark.parametrize(
    "name",
    fixture_params([n for n in CLEAN_NAMES if n.endswith("-10k") and "-v0-none" not in n and "-v1-none" not in n]),
)
def test_ten_thousand_record_batch(golden, name):
    (b,) = batches_of(golden(name).data)
    assert b.record_count == 10_000
    assert (b.base_offset, b.last_offset) == (0, 9_999)
    recs = b.records()
    assert len(recs) == 10_000 and [r.offset for r in recs[::999]] == list(range(0, 10_000, 999))


@pytest.mark.parametrize("source", ["kafka-python", "aiokafka"])
def test_idempotent_producer_fields(golden, source):
    fx = golden(f"{source}-v2-zstd-idempotent")
    b0, b1 = batches_of(fx.data)
    assert (b0.producer_id, b0.producer_epoch, b0.base_sequence) == (123_456_789_012, 17, 1_000)
    assert b1.base_sequence == 1_000 + b0.record_count
    assert not b0.is_transactional and b0.compression == "zstd"
    assert b0.base_offset == 42 and b1.base_offset == 42 + b0.record_count


@pytest.mark.parametrize("source", ["kafka-python", "aiokafka"])
def test_transactional_flag(golden, source):
    (b,) = batches_of(golden(f"{source}-v2-none-transactional").data)
    assert b.is_transactional and not b.is_control and b.control is None
    assert b.attributes & rc.ATTR_TRANSACTIONAL
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (77, 1, 0)


@pytest.mark.parametrize("name", fixture_params([n for n in CLEAN_NAMES if n.endswith("-logappendtime")]))
def test_log_append_time_batches(golden, name):
    ts = rc.BASE_TS + 999_999
    for b in batches_of(golden(name).data):
        assert b.timestamp_type == 1 and b.max_timestamp == ts
        assert b.attributes & rc.ATTR_LOG_APPEND_TIME
        assert {(r.timestamp, r.timestamp_type) for r in b.records()} == {(ts, 1)}


@pytest.mark.parametrize("name", fixture_params([n for n in CLEAN_NAMES if n.endswith("-multibatch")]))
def test_multibatch_offsets_and_leader_epoch(golden, name):
    fx = golden(name)
    got = batches_of(fx.data)
    assert got[0].base_offset == 10**12
    for prev, nxt in zip(got, got[1:]):
        assert nxt.base_offset == prev.last_offset + 1
    if fx.magic == 2:
        assert {b.partition_leader_epoch for b in got} == {7}


def test_hand_built_control_batches(golden):
    fx = golden("hand-built-transactions")
    got = batches_of(fx.data)
    controls = [b for b in got if b.is_control]
    assert [
        (b.base_offset, b.control.type, b.control.version, b.control.coordinator_epoch, b.producer_id) for b in controls
    ] == [(5, "COMMIT", 0, 11, 1000), (8, "ABORT", 0, 12, 2000), (9, "ABORT", 0, 11, 1000)]
    for b in controls:
        assert b.is_transactional and b.record_count == 1 and b.base_sequence == -1
        assert b.attributes & (rc.ATTR_CONTROL | rc.ATTR_TRANSACTIONAL) == rc.ATTR_CONTROL | rc.ATTR_TRANSACTIONAL
        (r,) = b.records()
        assert r.offset == b.base_offset
        assert r.key == b"\x00\x00" + (b"\x00\x01" if b.control.type == "COMMIT" else b"\x00\x00")
    assert [b.control for b in got if not b.is_control] == [None] * 4


def test_librdkafka_control_batches(librdkafka):
    fx = librdkafka["librdkafka-transactions-crcfixed"]
    got = batches_of(fx.data)
    assert [b.control.type for b in got if b.is_control] == ["COMMIT", "ABORT", "COMMIT"]
    pids = {b.producer_id for b in got}
    assert len(pids) == 1 and pids.pop() >= 0


def test_mock_control_batches_need_validate_crc_false(librdkafka):
    """The mock cluster stores control batches with CRC 0."""
    fx = librdkafka["librdkafka-transactions"]
    with pytest.raises(kb.CrcMismatchError):
        for b in kb.iter_batches(fx.data):
            b.records()
    got = batches_of(fx.data, validate_crc=False)
    assert_same_list([batch_view(b, 2) for b in got], [expected_batch_view(r) for r in fx.batches], "batches")
    assert [b.crc for b in got if b.is_control] == [0, 0, 0]
    for b, ref in zip(got, fx.batches):
        assert_same_list([record_view(r) for r in b.records()], ref["records"])


@pytest.mark.parametrize("name", fixture_params(CONTROL_NAMES))
def test_iter_batches_keeps_aborted_and_control(golden, name):
    """iter_batches is the raw view: no isolation filtering, control records listed."""
    fx = golden(name)
    got = [record_view(r) for b in batches_of(fx.data) for r in b.records()]
    assert_same_list(got, fx.records(include_control=True))


def test_mixed_magic_batches(golden):
    fx = golden("kafka-python-mixed-magic")
    got = batches_of(fx.data)
    assert [(b.magic, b.compression) for b in got] == [(r["magic"], r["compression"]) for r in fx.batches]
    assert [b.magic for b in got] == sorted(b.magic for b in got)


def test_crc_is_unsigned(golden):
    crcs = [
        b.crc
        for n in ("kafka-python-v2-none-multibatch", "kafka-python-v1-none-mixed")
        for b in batches_of(golden(n).data)
    ]
    assert all(0 <= c <= 0xFFFFFFFF for c in crcs)
    assert any(c >= 0x80000000 for c in crcs)


@pytest.mark.parametrize("name", fixture_params([n for n in CLEAN_NAMES if n.endswith("-compacted")]))
def test_compacted_log(golden, name):
    """Offset gaps; v2 also: last_offset from the header (past the last
    surviving record) and an empty batch."""
    fx = golden(name)
    got = batches_of(fx.data)
    recs = [record_view(r) for b in got for r in b.records()]
    assert [r["offset"] for r in recs] == [100 + d for d in rc.COMPACTED_DELTAS] + [
        300 + d for d in rc.COMPACTED_DELTAS
    ]
    if fx.magic == 2:
        first, empty, last = got
        assert (first.base_offset, first.last_offset) == (100, 100 + rc.COMPACTED_DELTAS[-1] + 5)
        assert (empty.base_offset, empty.last_offset, empty.record_count, empty.records()) == (200, 209, 0, [])
        assert (empty.producer_id, empty.base_sequence) == (5, 0)
        assert (last.base_offset, last.last_offset) == (300, 300 + rc.COMPACTED_DELTAS[-1])
    elif fx.codec != "none":
        assert [(b.base_offset, b.last_offset) for b in got] == [(100, 150), (300, 350)]
