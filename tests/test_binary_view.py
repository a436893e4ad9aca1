"""decode(..., binary_view=True): key and value point into the input.

The rows must be exactly those of the other clients' readers (every golden
fixture), the views of uncompressed batches must reference the caller's
buffer, and the table must keep that buffer alive and unresizable.
"""

from __future__ import annotations

import gc

import duckdb
import polars as pl
import pyarrow as pa
import pytest
import realclients as rc
from compare import assert_same_list, table_rows
from golden_params import CLEAN_NAMES, fixture_params

import kafkabatch as kb

TOPIC, PARTITION = "orders", 3


def view_rows(data, **kw) -> list[dict]:
    table = kb.decode(data, binary_view=True, **kw)
    assert table.schema == kb.VIEW_SCHEMA
    assert table.schema.field("value").type == pa.binary_view()
    return table_rows(table.cast(kb.SCHEMA))


def test_view_schema_differs_from_schema_only_in_key_and_value():
    for name in kb.SCHEMA.names:
        expected = pa.binary_view() if name in ("key", "value") else kb.SCHEMA.field(name).type
        assert kb.VIEW_SCHEMA.field(name).type == expected
        assert kb.VIEW_SCHEMA.field(name).nullable


@pytest.mark.parametrize("name", fixture_params(CLEAN_NAMES))
def test_views_match_reference(golden, name):
    fx = golden(name)
    assert_same_list(view_rows(fx.data, topic=TOPIC, partition=PARTITION), fx.rows(TOPIC, PARTITION))


def test_uncompressed_values_reference_the_input(golden):
    data = golden("aiokafka-v2-none-10k").data
    values = kb.decode(data, binary_view=True, threads=1).column("value").chunk(0)
    # Buffers of a view array: validity, views, then the data buffers.
    data_buffers = [b for b in values.buffers()[2:] if b is not None and b.size]
    input_address = pa.py_buffer(data).address
    assert any(b.address == input_address for b in data_buffers)
    # Nothing was copied: the only owned buffer is empty.
    assert sum(b.size for b in data_buffers if b.address != input_address) == 0


def test_compressed_values_are_copied_once(golden):
    fx = golden("kafka-python-v2-zstd-10k")
    table = kb.decode(fx.data, binary_view=True)
    assert_same_list(table_rows(table.cast(kb.SCHEMA)), fx.rows(None, None))


def test_table_keeps_the_input_alive_and_unresizable(golden):
    fx = golden("kafka-python-v2-none-mixed")
    data = bytearray(fx.data)
    table = kb.decode(data, binary_view=True)
    with pytest.raises(BufferError):
        data.extend(b"more")
    del data
    gc.collect()
    assert_same_list(table_rows(table.cast(kb.SCHEMA)), fx.rows(None, None))
    # Once the table is gone the buffer is released: a new bytearray over
    # the same bytes resizes freely.
    again = bytearray(fx.data)
    table = kb.decode(again, binary_view=True)
    del table
    gc.collect()
    again.extend(b"more")


def test_skip_mode_and_threads_give_the_same_rows_as_binary(golden):
    good = golden("aiokafka-v2-none-10k").data
    spans = rc.batch_spans(good)
    start, end = spans[len(spans) // 2]
    corrupt = bytearray(good)
    corrupt[end - 1] ^= 0xFF  # inside the middle batch's CRC-covered records
    for threads in (1, 2):
        expected = kb.decode(bytes(corrupt), on_error="skip", threads=threads)
        viewed = kb.decode(bytes(corrupt), on_error="skip", threads=threads, binary_view=True)
        assert viewed.num_rows == expected.num_rows < kb.decode(good).num_rows
        assert viewed.cast(kb.SCHEMA).equals(expected)


def test_empty_input_has_the_view_schema():
    table = kb.decode(b"", binary_view=True)
    assert table.num_rows == 0 and table.schema == kb.VIEW_SCHEMA


def test_polars_and_duckdb_read_views(golden):
    fx = golden("aiokafka-v2-none-10k")
    records = kb.decode(fx.data, binary_view=True)
    expected = sum(len(r["value"] or b"") for r in fx.rows(None, None))
    assert pl.from_arrow(records)["value"].bin.size().sum() == expected
    assert duckdb.sql("select sum(octet_length(value)) from records").fetchall() == [(expected,)]


def test_the_c_stream_of_view_output_has_the_view_schema(golden):
    from kafkabatch import _kafkabatch as native

    fx = golden("aiokafka-v2-none-10k")
    table = pa.RecordBatchReader.from_stream(native.decode(fx.data, binary_view=True)).read_all()
    assert table.schema == kb.VIEW_SCHEMA
    assert table.cast(kb.SCHEMA).equals(kb.decode(fx.data))
