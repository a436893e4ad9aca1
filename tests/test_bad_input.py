"""Truncated, corrupt and otherwise bad input, built from real clients' bytes
with the corruption helpers in ``realclients``.

* a truncated tail is not an error: ``valid_bytes`` is the length of the
  complete leading batches, decode/iter_batches return exactly those;
* a bad CRC raises ``CrcMismatchError`` naming the batch position and base
  offset; ``validate_crc=False`` reads it; ``on_error="skip"`` drops just
  that batch;
* structural damage (bad counts, bad lengths, bad magic, bad codec, garbage
  payload) raises a ``KafkaBatchError`` subclass, never anything else.
"""

from __future__ import annotations

import struct

import pytest
import realclients as rc
from compare import assert_names_batch, assert_same_list, record_view, table_rows
from golden_params import fixture_params
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.errors import CorruptRecordError
from kafka.record.memory_records import MemoryRecords

import kafkabatch as kb


def rows(data, **kw):
    return table_rows(kb.decode(data, **kw))


def rows_without(fx, position):
    return rc.expected_rows(
        [r for b in fx.batches if b["position"] != position and not b["is_control"] for r in b["records"]]
    )


def legacy_offsets(b):
    return (b["base_offset"], b["last_offset"])


# --------------------------------------------------------------------------
# exception hierarchy
# --------------------------------------------------------------------------


def test_exception_hierarchy():
    assert issubclass(kb.KafkaBatchError, ValueError)
    for cls in (kb.CorruptBatchError, kb.CrcMismatchError, kb.UnsupportedFormatError):
        assert issubclass(cls, kb.KafkaBatchError)
    assert issubclass(kb.CrcMismatchError, kb.CorruptBatchError)


# --------------------------------------------------------------------------
# truncation
# --------------------------------------------------------------------------

TRUNCATION_NAMES = [
    "kafka-python-v2-gzip-multibatch",
    "aiokafka-v1-none-multibatch",
    "kafka-python-v0-snappy-multibatch",
    "kafka-python-mixed-magic",
    "hand-built-transactions",
    "librdkafka-transactions-crcfixed",
]


def _cut_points(fx):
    cuts = set()
    for b in fx.batches:
        p, n = b["position"], b["size_in_bytes"]
        cuts.update({p, p + 1, p + 8, p + 11, p + 12, p + 17, p + 20, p + 61, p + n // 2, p + n - 1, p + n})
    return sorted(c for c in cuts if 0 <= c <= len(fx.data))


@pytest.mark.parametrize("name", fixture_params(TRUNCATION_NAMES))
def test_truncated_tail(golden, name):
    fx = golden(name)
    for cut in _cut_points(fx):
        data = rc.truncate(fx.data, cut)
        complete = [b for b in fx.batches if b["position"] + b["size_in_bytes"] <= cut]
        expect_len = sum(b["size_in_bytes"] for b in complete)
        assert kb.valid_bytes(data) == expect_len == rc.complete_length(data), cut
        want = rc.expected_rows([r for b in complete if not b["is_control"] for r in b["records"]])
        assert_same_list(rows(data), want, f"rows(cut={cut})")
        got = list(kb.iter_batches(data))
        assert [b.position for b in got] == [b["position"] for b in complete], cut


def test_valid_bytes_of_complete_input(golden):
    for name in ("kafka-python-v2-none-10k", "aiokafka-v0-none-10k", "kafka-python-mixed-magic"):
        fx = golden(name)
        assert kb.valid_bytes(fx.data) == len(fx.data)


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00" * 11])
def test_shorter_than_a_log_header(data):
    assert kb.valid_bytes(data) == 0
    assert kb.decode(data).num_rows == 0
    assert list(kb.iter_batches(data)) == []


def test_length_past_the_end_in_the_middle_reads_as_truncation(golden):
    """A length that runs past the input can't be told from a cut-off tail."""
    fx = golden("kafka-python-v2-snappy-multibatch")
    b1 = fx.batches[1]
    data = rc.set_length(fx.data, b1["position"], len(fx.data))
    assert kb.valid_bytes(data) == b1["position"]
    assert_same_list(rows(data), rc.expected_rows(fx.batches[0]["records"]))


# --------------------------------------------------------------------------
# CRC
# --------------------------------------------------------------------------

CRC_CASES = [
    "kafka-python-v2-gzip-multibatch",
    "aiokafka-v2-none-multibatch",
    "kafka-python-v1-lz4-multibatch",
    "aiokafka-v1-none-multibatch",
    "kafka-python-v0-gzip-multibatch",
    "librdkafka-v2-zstd-mixed",
]


def _victim(fx):
    """A batch not at position 0 (so its position is unambiguous in messages)."""
    return fx.batches[1] if len(fx.batches) > 1 else fx.batches[0]


def _flip_crc_field(fx, b):
    return rc.flip_bit(fx.data, b["position"] + (17 if b["magic"] == 2 else 12) + 2, 3)


def _flip_payload(fx, b):
    return rc.flip_bit(fx.data, b["position"] + b["size_in_bytes"] - 1, 0)


@pytest.mark.parametrize("how", ["crc-field", "payload"])
@pytest.mark.parametrize("name", fixture_params(CRC_CASES))
def test_crc_mismatch(golden, name, how):
    fx = golden(name)
    b = _victim(fx)
    data = (_flip_crc_field if how == "crc-field" else _flip_payload)(fx, b)
    with pytest.raises(kb.CrcMismatchError) as e:
        kb.decode(data)
    assert isinstance(e.value, kb.CorruptBatchError) and isinstance(e.value, ValueError)
    if b["position"]:
        assert_names_batch(e.value, b["position"], *legacy_offsets(b))
    with pytest.raises(kb.CrcMismatchError):
        for batch in kb.iter_batches(data):
            batch.records()
    # skip keeps every other batch
    assert_same_list(rows(data, on_error="skip"), rows_without(fx, b["position"]))


@pytest.mark.parametrize("name", fixture_params(CRC_CASES))
def test_validate_crc_false_reads_bad_crc_field(golden, name):
    fx = golden(name)
    b = _victim(fx)
    data = _flip_crc_field(fx, b)
    assert_same_list(rows(data, validate_crc=False), fx.rows())
    got = list(kb.iter_batches(data, validate_crc=False))
    assert got[fx.batches.index(b)].crc == b["crc"] ^ (1 << 3 << 8)
    assert [record_view(r) for r in got[fx.batches.index(b)].records()] == b["records"]


def test_validate_crc_false_sees_flipped_value_bit(golden):
    """Uncompressed v2: a flipped bit inside a value shows up in that value only."""
    fx = golden("kafka-python-v2-none-mixed")
    last = fx.records()[-1]
    assert last["value"] == b"end"
    data = rc.flip_bit(fx.data, fx.data.rindex(b"end"), 1)
    want = fx.rows()
    want[-1] = dict(want[-1], value=b"gnd")
    with pytest.raises(kb.CrcMismatchError):
        kb.decode(data)
    assert_same_list(rows(data, validate_crc=False), want)


def test_legacy_inner_message_crc(golden):
    """An uncompressed legacy message's own CRC is checked."""
    fx = golden("kafka-python-v1-none-mixed")
    b = fx.batches[5]
    data = rc.flip_bit(fx.data, b["position"] + b["size_in_bytes"] - 1, 2)
    with pytest.raises(kb.CrcMismatchError) as e:
        kb.decode(data)
    assert_names_batch(e.value, b["position"], b["base_offset"])
    assert_same_list(rows(data, on_error="skip"), rows_without(fx, b["position"]))


# --------------------------------------------------------------------------
# on_error="skip" with damage of other kinds
# --------------------------------------------------------------------------


def _garbage_payload(fx, b, fill=b"\x5a"):
    """Overwrite a compressed batch's payload with junk, CRC recomputed, so the
    error is the codec's and not the CRC's."""
    buf = bytearray(fx.data)
    start = b["position"] + (61 if b["magic"] == 2 else 40)
    end = b["position"] + b["size_in_bytes"]
    buf[start:end] = (fill * (end - start))[: end - start]
    return rc.recompute_crc(bytes(buf), b["position"])


@pytest.mark.parametrize(
    "name",
    fixture_params(
        [
            "kafka-python-v2-gzip-multibatch",
            "aiokafka-v2-lz4-multibatch",
            "kafka-python-v2-zstd-multibatch",
            "aiokafka-v2-snappy-multibatch",
            "kafka-python-v1-gzip-multibatch",
        ]
    ),
)
def test_undecompressable_payload(golden, name):
    fx = golden(name)
    b = fx.batches[1]
    data = _garbage_payload(fx, b)
    with pytest.raises(kb.KafkaBatchError) as e:
        kb.decode(data)
    assert not isinstance(e.value, kb.CrcMismatchError)
    assert_names_batch(e.value, b["position"], *legacy_offsets(b))
    assert_same_list(rows(data, on_error="skip"), rows_without(fx, b["position"]))


@pytest.mark.parametrize("delta", [1, -1])
def test_record_count_disagrees_with_records(golden, delta):
    fx = golden("kafka-python-v2-none-multibatch")
    b = fx.batches[1]
    buf = bytearray(fx.data)
    struct.pack_into(">i", buf, b["position"] + 57, b["record_count"] + delta)
    data = rc.recompute_crc(bytes(buf), b["position"])
    with pytest.raises(kb.CorruptBatchError) as e:
        kb.decode(data)
    assert_names_batch(e.value, b["position"], b["base_offset"])
    assert_same_list(rows(data, on_error="skip"), rows_without(fx, b["position"]))


def _record_with_slack(offset_delta: int, extra: bytes = b"\x00") -> bytes:
    """A v2 record whose length varint also counts ``extra`` bytes after its headers."""
    rec = rc.encode_v2_record(offset_delta, 0, b"k", b"v", [("h", b"x")])
    body = rec[1:]
    assert rec[:1] == rc._zigzag_varint(len(body))  # a one-byte length
    return rc._zigzag_varint(len(body) + len(extra)) + body + extra


@pytest.mark.parametrize("where", ["first", "last"])
def test_record_length_disagrees_with_fields(where):
    """A record whose length says more than its fields hold (Java: "Invalid
    record size"); kafka-python's reader refuses it too."""
    recs = [{"key": b"k", "value": b"v", "headers": [("h", b"x")], "timestamp": rc.BASE_TS}] * 3
    raw = [rc.encode_v2_record(i, 0, b"k", b"v", [("h", b"x")]) for i in range(3)]
    bad = 0 if where == "first" else 2
    raw[bad] = _record_with_slack(bad)
    good = rc.encode_v2_batch(recs, base_offset=0)
    batch = rc.encode_v2_batch(recs, base_offset=3, raw_records=raw)
    data = good + batch
    mr = MemoryRecords(data)
    mr.next_batch()
    with pytest.raises(CorruptRecordError):
        list(mr.next_batch())
    with pytest.raises(kb.CorruptBatchError) as e:
        kb.decode(data)
    assert_names_batch(e.value, len(good), 3)
    assert [r["offset"] for r in rows(data, on_error="skip")] == [0, 1, 2]


@pytest.mark.parametrize("name", fixture_params(["kafka-python-v2-none-multibatch", "kafka-python-v1-none-multibatch"]))
@pytest.mark.parametrize("length", [-1, 0, 5])
def test_length_below_minimum(golden, name, length):
    fx = golden(name)
    b = fx.batches[1]
    data = rc.set_length(fx.data, b["position"], length)
    with pytest.raises(kb.CorruptBatchError) as e:
        kb.decode(data)
    assert_names_batch(e.value, b["position"])


def test_length_one_short(golden):
    fx = golden("aiokafka-v2-none-multibatch")
    b = fx.batches[1]
    data = rc.set_length(fx.data, b["position"], b["size_in_bytes"] - 12 - 1)
    with pytest.raises(kb.CorruptBatchError):
        kb.decode(data)


@pytest.mark.parametrize("magic", [3, 7, 0x7F])
def test_unknown_magic(golden, magic):
    fx = golden("kafka-python-v2-none-multibatch")
    b = fx.batches[1]
    data = rc.set_magic(fx.data, b["position"], magic)
    with pytest.raises(kb.UnsupportedFormatError) as e:
        kb.decode(data)
    assert_names_batch(e.value, b["position"])


@pytest.mark.parametrize("codec_id", [5, 6, 7])
@pytest.mark.parametrize("name", fixture_params(["kafka-python-v2-none-multibatch", "kafka-python-v1-gzip-multibatch"]))
def test_unknown_codec(golden, name, codec_id):
    fx = golden(name)
    b = fx.batches[1]
    data = rc.set_attributes(fx.data, b["position"], (b["attributes"] & ~rc.ATTR_CODEC_MASK) | codec_id)
    with pytest.raises(kb.UnsupportedFormatError) as e:
        kb.decode(data)
    assert_names_batch(e.value, b["position"], *legacy_offsets(b))


def test_zstd_in_legacy_format_is_rejected(golden):
    """Kafka allows zstd only with magic 2."""
    fx = golden("kafka-python-v1-gzip-multibatch")
    b = fx.batches[1]
    data = rc.set_attributes(fx.data, b["position"], 4)
    with pytest.raises(kb.KafkaBatchError):
        kb.decode(data)


# --------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------


def test_bad_arguments(golden):
    data = golden("kafka-python-v2-none-mixed").data
    with pytest.raises(ValueError):
        kb.decode(data, on_error="explode")
    with pytest.raises(ValueError):
        kb.decode(data, isolation="read_most_things")
    with pytest.raises(TypeError):
        kb.decode("not bytes")
    with pytest.raises(TypeError):
        kb.decode(data, "positional-topic")


# --------------------------------------------------------------------------
# properties (hypothesis, derandomized so CI runs are repeatable)
# --------------------------------------------------------------------------

FUZZ_NAMES = ["kafka-python-mixed-magic", "hand-built-transactions", "aiokafka-v2-lz4-multibatch"]
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(which=st.sampled_from(FUZZ_NAMES), frac=st.floats(0, 1))
def test_any_truncation(golden, which, frac):
    fx = golden(which)
    cut = int(frac * len(fx.data))
    data = fx.data[:cut]
    complete = [b for b in fx.batches if b["position"] + b["size_in_bytes"] <= cut]
    assert kb.valid_bytes(data) == sum(b["size_in_bytes"] for b in complete)
    assert_same_list(rows(data), rc.expected_rows([r for b in complete if not b["is_control"] for r in b["records"]]))


@FUZZ
@given(which=st.sampled_from(FUZZ_NAMES), frac=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7))
def test_any_crc_covered_bit_flip_is_caught_and_skippable(golden, which, frac, bit):
    """Every bit a CRC covers (v2: CRC field + attributes..end; legacy: CRC
    field + magic..end, minus the magic byte) is caught by the CRC; skip
    then drops exactly that batch."""
    fx = golden(which)
    i = int(frac * len(fx.data))
    b = next(b for b in fx.batches if b["position"] <= i < b["position"] + b["size_in_bytes"])
    first_covered = b["position"] + (17 if b["magic"] == 2 else 12)
    if i < first_covered or i == b["position"] + 16:
        i = first_covered + (i - b["position"]) % 4  # move into the CRC field
    data = rc.flip_bit(fx.data, i, bit)
    with pytest.raises(kb.CrcMismatchError):
        kb.decode(data)
    assert_same_list(rows(data, on_error="skip"), rows_without(fx, b["position"]))


@FUZZ
@given(
    which=st.sampled_from(FUZZ_NAMES),
    flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 7)), min_size=1, max_size=4),
    cut=st.one_of(st.none(), st.floats(0, 1)),
)
def test_damage_raises_only_kafka_batch_errors(golden, which, flips, cut):
    """Whatever the damage, with CRC checks off: a table, or a KafkaBatchError."""
    fx = golden(which)
    data = fx.data
    for frac, bit in flips:
        data = rc.flip_bit(data, int(frac * len(data)), bit)
    if cut is not None:
        data = data[: int(cut * len(data))]
    for call in (
        lambda: kb.decode(data, validate_crc=False, include_control=True),
        lambda: kb.decode(data, validate_crc=False, on_error="skip", isolation="read_committed"),
        lambda: [b.records() for b in kb.iter_batches(data, validate_crc=False)],
        lambda: kb.valid_bytes(data),
    ):
        try:
            call()
        except kb.KafkaBatchError:
            pass
