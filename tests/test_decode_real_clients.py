"""kb.decode / kb.read_segment against other people's encoders and readers.

Every golden fixture (kafka-python and aiokafka × magic 0/1/2 × every codec ×
{mixed, 10k}, multi-batch at base offset 1e12, LogAppendTime rewrites,
idempotent/transactional batches, a mixed-magic log, hand-built control
batches, librdkafka mock-cluster logs) must decode to exactly the rows its
reference reader gives.
"""

from __future__ import annotations

import mmap

import numpy as np
import pyarrow as pa
import pytest
import realclients as rc
from compare import CONTRACT_SHAPE, assert_names_batch, assert_same_list, schema_shape, table_rows
from golden_params import CLEAN_NAMES, CONTROL_NAMES, fixture_params

import kafkabatch as kb

TOPIC, PARTITION = "orders", 3


def decode_rows(data, **kw) -> list[dict]:
    table = kb.decode(data, **kw)
    assert isinstance(table, pa.Table)
    assert schema_shape(table.schema) == CONTRACT_SHAPE
    return table_rows(table)


# --------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------


def test_schema_constant_is_the_contract():
    assert schema_shape(kb.SCHEMA) == CONTRACT_SHAPE


def test_table_schema_equals_kb_schema(golden):
    fx = golden("kafka-python-v2-none-mixed")
    assert kb.decode(fx.data).schema.equals(kb.SCHEMA)
    assert kb.decode(b"").schema.equals(kb.SCHEMA)


def test_empty_input_gives_empty_table():
    table = kb.decode(b"")
    assert table.num_rows == 0
    assert schema_shape(table.schema) == CONTRACT_SHAPE


# --------------------------------------------------------------------------
# the whole matrix
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", fixture_params(CLEAN_NAMES))
def test_decode_matches_reference(golden, name):
    fx = golden(name)
    assert_same_list(decode_rows(fx.data, topic=TOPIC, partition=PARTITION), fx.rows(TOPIC, PARTITION))


@pytest.mark.parametrize(
    "name", fixture_params(["kafka-python-v2-gzip-mixed", "kafka-python-v0-none-mixed", "kafka-python-mixed-magic"])
)
def test_topic_and_partition_default_to_null(golden, name):
    fx = golden(name)
    rows = decode_rows(fx.data)
    assert rows and all(r["topic"] is None and r["partition"] is None for r in rows)
    assert_same_list(rows, fx.rows(None, None))


def test_mixed_data_set_edge_values(golden):
    """Spot checks of the mixed data set, independent of any reader."""
    rows = decode_rows(golden("kafka-python-v2-none-mixed").data)
    inputs = rc.dataset("mixed", 2)
    assert rows[0]["key"] is None and rows[0]["value"] == b"null key"
    assert rows[1]["key"] == b"" and rows[1]["value"] == b"empty key"
    assert rows[2]["value"] is None and rows[3]["value"] == b""
    assert rows[4]["key"] is None and rows[4]["value"] is None
    assert rows[5]["key"] == b"" and rows[5]["value"] == b""
    assert rows[7]["headers"] == [
        {"key": "dup", "value": b"1"},
        {"key": "dup", "value": b"2"},
        {"key": "other", "value": b"x"},
        {"key": "dup", "value": b"3"},
    ]
    assert rows[8]["headers"] == [{"key": "n", "value": None}, {"key": "e", "value": b""}, {"key": "n", "value": None}]
    assert rows[9]["headers"][0] == {"key": "ключ-🔑", "value": "значение".encode()}
    assert rows[10]["timestamp"] == (rc.BASE_TS - 5_000) * 1000  # negative delta
    assert len(rows[14]["value"]) == 100 * 1024
    assert [r["timestamp"] for r in rows] == [i["timestamp"] * 1000 for i in inputs]
    assert all(r["timestampType"] == 0 for r in rows)
    assert [r["offset"] for r in rows] == list(range(len(inputs)))


@pytest.mark.parametrize("name", fixture_params([n for n in CLEAN_NAMES if n.endswith("-10k")]))
def test_ten_thousand_records(golden, name):
    fx = golden(name)
    table = kb.decode(fx.data)
    assert table.num_rows == 10_000
    assert table.column("offset").to_pylist() == list(range(10_000))


# --------------------------------------------------------------------------
# legacy formats
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", fixture_params([f"{s}-v0-{c}-mixed" for s in ("kafka-python", "aiokafka") for c in rc.codecs_for(0)])
)
def test_v0_has_no_timestamp(golden, name):
    rows = decode_rows(golden(name).data)
    assert {(r["timestamp"], r["timestampType"]) for r in rows} == {(rc.timestamp_us(-1), -1)}


@pytest.mark.parametrize(
    "name",
    fixture_params([f"{s}-v1-{c}-multibatch" for s in ("kafka-python", "aiokafka") for c in ("gzip", "snappy", "lz4")]),
)
def test_v1_relative_inner_offsets_become_absolute(golden, name):
    fx = golden(name)
    rows = decode_rows(fx.data)
    assert [r["offset"] for r in rows] == [10**12 + i for i in range(len(rows))]
    for b in fx.batches:  # the wrappers really hold relative inner offsets
        wrapper = fx.data[b["position"] : b["position"] + b["size_in_bytes"]]
        inner = rc.legacy_inner_messages(wrapper)
        assert [h["offset"] for h in inner] == list(range(len(inner)))


def test_mixed_magic_log(golden):
    fx = golden("kafka-python-mixed-magic")
    rows = decode_rows(fx.data, topic=TOPIC, partition=PARTITION)
    assert_same_list(rows, fx.rows(TOPIC, PARTITION))
    assert [r["offset"] for r in rows] == list(range(len(rows)))
    types = [r["timestampType"] for r in rows]
    magics = [b["magic"] for b in fx.batches for _ in b["records"]]
    assert types == [-1 if m == 0 else 0 for m in magics]


# --------------------------------------------------------------------------
# broker rewrites
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", fixture_params([n for n in CLEAN_NAMES if n.endswith("-logappendtime")]))
def test_log_append_time(golden, name):
    fx = golden(name)
    rows = decode_rows(fx.data)
    lat = (rc.BASE_TS + 999_999) * 1000
    assert rows and all(r["timestampType"] == 1 and r["timestamp"] == lat for r in rows)
    assert_same_list(rows, fx.rows())


@pytest.mark.parametrize("name", fixture_params([n for n in CLEAN_NAMES if n.endswith("-multibatch")]))
def test_nonzero_base_offset(golden, name):
    fx = golden(name)
    rows = decode_rows(fx.data)
    assert [r["offset"] for r in rows] == [10**12 + i for i in range(len(rows))]


def test_base_offset_rewrite_moves_offsets_only(golden):
    fx = golden("aiokafka-v2-zstd-mixed")
    moved = rc.set_base_offset(fx.data, 0, 2**40)
    want = [dict(r, offset=r["offset"] + 2**40) for r in fx.rows()]
    assert_same_list(decode_rows(moved), want)


def test_partition_leader_epoch_does_not_change_rows(golden):
    fx = golden("kafka-python-v2-lz4-mixed")
    assert_same_list(decode_rows(rc.set_partition_leader_epoch(fx.data, 0, 123)), fx.rows())


# --------------------------------------------------------------------------
# transactions and control batches
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", fixture_params(CONTROL_NAMES))
def test_control_records_excluded_by_default(golden, name):
    fx = golden(name)
    rows = decode_rows(fx.data)
    control_offsets = {r["offset"] for b in fx.batches if b["is_control"] for r in b["records"]}
    assert control_offsets and not control_offsets & {r["offset"] for r in rows}
    assert_same_list(rows, fx.rows())


@pytest.mark.parametrize("name", fixture_params(CONTROL_NAMES))
def test_control_records_included_on_request(golden, name):
    fx = golden(name)
    rows = decode_rows(fx.data, include_control=True)
    assert_same_list(rows, fx.rows(include_control=True))
    assert len(rows) == sum(len(b["records"]) for b in fx.batches)


@pytest.mark.parametrize("name", fixture_params(CONTROL_NAMES))
def test_read_committed_drops_aborted(golden, name):
    fx = golden(name)
    rows = decode_rows(fx.data, isolation="read_committed")
    assert_same_list(rows, fx.rows(isolation="read_committed"))
    assert len(rows) < len(fx.rows())


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_librdkafka_transactions_against_what_was_produced(librdkafka, isolation):
    fx = librdkafka["librdkafka-transactions-crcfixed"]
    rows = decode_rows(fx.data, isolation=isolation)
    want = [p for p in fx.produced if isolation == "read_uncommitted" or p["txn"] == "commit"]
    got = [
        {
            "key": r["key"],
            "value": r["value"],
            "timestamp": r["timestamp"],
            "headers": [(h["key"], h["value"]) for h in r["headers"]],
        }
        for r in rows
    ]
    assert got == [
        {"key": p["key"], "value": p["value"], "timestamp": p["timestamp"] * 1000, "headers": list(p["headers"])}
        for p in want
    ]


def test_hand_built_read_committed_offsets(golden):
    rows = decode_rows(golden("hand-built-transactions").data, isolation="read_committed")
    assert [r["offset"] for r in rows] == [0, 1, 2, 10, 11]


def test_mock_cluster_control_batches_fail_crc(librdkafka):
    """librdkafka's mock cluster writes control batches with CRC 0: the default
    decode must refuse them; validate_crc=False reads them."""
    fx = librdkafka["librdkafka-transactions"]
    first_bad = fx.bad_crc_positions[0]
    with pytest.raises(kb.CrcMismatchError) as e:
        kb.decode(fx.data)
    bad = next(b for b in fx.batches if b["position"] == first_bad)
    assert_names_batch(e.value, first_bad, bad["base_offset"])
    assert_same_list(decode_rows(fx.data, validate_crc=False), fx.rows())
    assert_same_list(decode_rows(fx.data, validate_crc=False, include_control=True), fx.rows(include_control=True))
    assert_same_list(
        decode_rows(fx.data, validate_crc=False, isolation="read_committed"), fx.rows(isolation="read_committed")
    )


def test_librdkafka_matches_what_was_produced(librdkafka):
    for codec in rc.CODECS:
        fx = librdkafka[f"librdkafka-v2-{codec}-mixed"]
        rows = decode_rows(fx.data)
        assert [
            (r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"]], r["timestamp"]) for r in rows
        ] == [(p["key"], p["value"], list(p["headers"]), p["timestamp"] * 1000) for p in fx.produced], codec


# --------------------------------------------------------------------------
# input types
# --------------------------------------------------------------------------


def _inputs(data: bytes, tmp_path):
    path = tmp_path / "buf.bin"
    path.write_bytes(data)
    f = open(path, "rb")
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    padded = b"\xaa" * 7 + data + b"\xbb" * 5
    return (
        f,
        mm,
        {
            "bytes": data,
            "bytearray": bytearray(data),
            "memoryview": memoryview(data),
            "memoryview-slice": memoryview(padded)[7 : 7 + len(data)],
            "mmap": mm,
            "numpy-uint8": np.frombuffer(data, dtype=np.uint8),
            "numpy-uint8-copy": np.array(np.frombuffer(data, dtype=np.uint8)),
        },
    )


@pytest.mark.parametrize(
    "kind", ["bytes", "bytearray", "memoryview", "memoryview-slice", "mmap", "numpy-uint8", "numpy-uint8-copy"]
)
@pytest.mark.parametrize("name", fixture_params(["kafka-python-mixed-magic", "aiokafka-v2-snappy-mixed"]))
def test_buffer_protocol_inputs(golden, tmp_path, kind, name):
    fx = golden(name)
    f, mm, inputs = _inputs(fx.data, tmp_path)
    try:
        assert_same_list(decode_rows(inputs[kind], topic=TOPIC, partition=PARTITION), fx.rows(TOPIC, PARTITION))
        assert kb.valid_bytes(inputs[kind]) == len(fx.data)
        assert [b.position for b in kb.iter_batches(inputs[kind])] == [b["position"] for b in fx.batches]
    finally:
        del inputs
        mm.close()
        f.close()


def test_input_is_not_modified(golden):
    fx = golden("kafka-python-v2-gzip-mixed")
    buf = bytearray(fx.data)
    kb.decode(buf)
    assert bytes(buf) == fx.data


# --------------------------------------------------------------------------
# read_segment
# --------------------------------------------------------------------------


def test_read_segment_names_topic_and_partition_from_folder(golden, tmp_path):
    fx = golden("kafka-python-mixed-magic")
    path = rc.write_segment(tmp_path, "orders", 3, fx.data)
    assert path == tmp_path / "orders-3" / "00000000000000000000.log"
    table = kb.read_segment(path)
    assert schema_shape(table.schema) == CONTRACT_SHAPE
    assert_same_list(table_rows(table), fx.rows("orders", 3))
    assert_same_list(table_rows(kb.read_segment(str(path))), fx.rows("orders", 3))


def test_read_segment_topic_with_dashes(golden, tmp_path):
    fx = golden("aiokafka-v2-gzip-mixed")
    path = rc.write_segment(tmp_path, "orders-eu-west", 12, fx.data, base_offset=0)
    assert_same_list(table_rows(kb.read_segment(path)), fx.rows("orders-eu-west", 12))


def test_read_segment_explicit_topic_partition_win(golden, tmp_path):
    fx = golden("kafka-python-v1-gzip-mixed")
    path = rc.write_segment(tmp_path, "orders", 3, fx.data)
    assert_same_list(table_rows(kb.read_segment(path, topic="other", partition=9)), fx.rows("other", 9))


def test_read_segment_passes_decode_options(golden, tmp_path):
    fx = golden("hand-built-transactions")
    path = rc.write_segment(tmp_path, "orders", 3, fx.data)
    assert_same_list(
        table_rows(kb.read_segment(path, include_control=True)), fx.rows("orders", 3, include_control=True)
    )
    assert_same_list(
        table_rows(kb.read_segment(path, isolation="read_committed")), fx.rows("orders", 3, isolation="read_committed")
    )


def test_read_segment_truncated_tail(golden, tmp_path):
    """A segment whose last batch was cut short (crash mid-append)."""
    fx = golden("kafka-python-v2-zstd-multibatch")
    last = fx.batches[-1]
    path = rc.write_segment(tmp_path, "orders", 3, fx.data[: last["position"] + last["size_in_bytes"] // 2])
    want = [r for b in fx.batches[:-1] for r in rc.expected_rows(b["records"], "orders", 3)]
    assert_same_list(table_rows(kb.read_segment(path)), want)


def test_read_segment_empty_file(tmp_path):
    path = rc.write_segment(tmp_path, "orders", 3, b"")
    assert kb.read_segment(path).num_rows == 0
