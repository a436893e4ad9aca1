"""The Python surface: Arrow consumers through the PyCapsule interface, buffer
types, the schema constant, reports, errors' attributes, threads."""

from __future__ import annotations

import array

import numpy as np
import pyarrow as pa
import pytest
import realclients as rc

import kafkabatch as kb
from kafkabatch import _kafkabatch as native


@pytest.fixture(scope="module")
def data() -> bytes:
    return rc.get("aiokafka-v2-zstd-multibatch").data


def test_schema_is_sparks_kafka_source_schema():
    assert kb.SCHEMA.names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    assert kb.SCHEMA.types == [
        pa.binary(),
        pa.binary(),
        pa.string(),
        pa.int32(),
        pa.int64(),
        pa.timestamp("us", tz="UTC"),
        pa.int32(),
        pa.list_(header),
    ]
    assert all(f.nullable for f in kb.SCHEMA)


def test_polars_and_duckdb_take_the_stream_without_pyarrow_tables(data):
    polars = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    expected = kb.decode(data, topic="t", partition=1)
    frame = polars.DataFrame(native.decode(data, topic="t", partition=1))  # __arrow_c_stream__
    assert frame.height == expected.num_rows
    assert frame["value"].to_list() == expected.column("value").to_pylist()
    stream = native.decode(data, topic="t", partition=1)
    reader = pa.RecordBatchReader.from_stream(stream)  # noqa: F841 (duckdb scans it by name)
    rows = duckdb.sql("select count(*), sum(octet_length(value)) from reader").fetchall()[0]
    assert rows == (expected.num_rows, sum(len(v or b"") for v in expected.column("value").to_pylist()))
    with pytest.raises(RuntimeError, match="already consumed"):
        stream.__arrow_c_stream__()


def test_pandas_round_trip(data):
    frame = kb.decode(data).to_pandas()
    assert list(frame.columns) == kb.SCHEMA.names
    assert len(frame) == kb.decode(data).num_rows


@pytest.mark.parametrize(
    "wrap",
    [
        bytes,
        bytearray,
        memoryview,
        lambda b: np.frombuffer(b, dtype=np.uint8),
        lambda b: np.frombuffer(b, dtype=np.int8),
        pa.py_buffer,
        lambda b: array.array("B", b),
    ],
    ids=["bytes", "bytearray", "memoryview", "numpy-uint8", "numpy-int8", "pyarrow-buffer", "array"],
)
def test_any_byte_buffer(data, wrap):
    assert kb.decode(wrap(data)).equals(kb.decode(data))
    assert kb.valid_bytes(wrap(data)) == len(data)
    assert len(list(kb.iter_batches(wrap(data)))) == len(list(kb.iter_batches(data)))


def test_non_byte_and_non_contiguous_buffers_are_type_errors(data):
    with pytest.raises(TypeError):
        kb.decode("a string")
    with pytest.raises(TypeError):
        kb.decode(np.zeros(4, dtype=np.int32))
    with pytest.raises(TypeError, match="contiguous"):
        kb.decode(np.frombuffer(data, dtype=np.uint8)[::2])


def test_bad_arguments_name_themselves(data):
    for kwargs, word in [
        ({"on_error": "ignore"}, "on_error"),
        ({"isolation": "serializable"}, "isolation"),
        ({"max_decompressed_size": 0}, "max_decompressed_size"),
        ({"threads": 0}, "threads"),
    ]:
        with pytest.raises(ValueError, match=word):
            kb.decode(data, **kwargs)
    with pytest.raises(ValueError, match="read_committed"):
        kb.decode(data, aborted_transactions=[(1, 0)])


def test_errors_carry_where_and_why(data):
    spans = rc.batch_spans(data)
    pos, size = spans[1]
    bad = rc.flip_bit(data, pos + size - 1, 3)
    with pytest.raises(kb.CrcMismatchError) as e:
        kb.decode(bad)
    err = e.value
    assert isinstance(err, kb.CorruptBatchError) and isinstance(err, kb.KafkaBatchError) and isinstance(err, ValueError)
    assert err.batch_position == pos and err.base_offset == rc.parse_header(data, pos)["base_offset"]
    assert f"at byte {pos}" in str(err) and err.reason
    report = kb.decode_report(bad, on_error="skip")
    assert report.batches == len(spans) - 1 and report.skipped_bytes == size
    assert [s.batch_position for s in report.skipped] == [pos]
    assert report.end == "clean" and report.trailing_bytes == 0


def test_truncated_tail_is_reported_not_raised(data):
    report = kb.decode_report(data[:-5])
    assert report.end == "truncated" and report.trailing_bytes == rc.batch_spans(data)[-1][1] - 5
    it = kb.iter_batches(data[:-5])
    assert len(list(it)) == len(rc.batch_spans(data)) - 1
    assert it.end == "truncated" and it.trailing_bytes == report.trailing_bytes


def test_threads_give_the_same_table(data):
    big = b"".join([data] * 400)
    one = kb.decode(big, threads=1)
    assert kb.decode(big, threads=2).equals(one)
    assert kb.decode(big).equals(one)


def test_empty_input():
    table = kb.decode(b"")
    assert table.num_rows == 0 and table.schema == kb.SCHEMA
    assert kb.valid_bytes(b"") == 0
    assert list(kb.iter_batches(b"")) == []


def test_iter_batches_keep_mode_yields_the_bad_batch(data):
    pos, size = rc.batch_spans(data)[1]
    bad = rc.flip_bit(data, pos + size - 1, 0)
    batches = list(kb.iter_batches(bad, on_error="keep"))
    assert [b.error is not None for b in batches] == [False, True, False]
    assert batches[1].compression == "zstd" and not batches[1].crc_valid
    assert len(list(kb.iter_batches(bad, on_error="skip"))) == 2


def test_each_native_table_is_taken_once(data):
    """decode's stream (through the C stream or as exported arrays), an
    internal-topic table and a parsed column: the second take is a RuntimeError."""
    for first, second in [
        (pa.table, pa.table),
        (lambda s: s._export_arrays(), pa.table),
        (pa.table, lambda s: s._export_arrays()),
    ]:
        stream = native.decode(data, topic="t", partition=1)
        first(stream)
        with pytest.raises(RuntimeError, match="already consumed"):
            second(stream)
    empty = pa.array([], pa.binary())
    internal = native.decode_internal("consumer_offsets", empty, empty)
    assert pa.table(internal).num_rows == 0
    with pytest.raises(RuntimeError, match="already consumed"):
        pa.table(internal)
    parsed = native.value_parser(format="string").parse(pa.table({"value": pa.array([b"a", b"b"])}))
    assert pa.table(parsed).column(0).to_pylist() == ["a", "b"]
    with pytest.raises(RuntimeError, match="already consumed"):
        pa.table(parsed)
