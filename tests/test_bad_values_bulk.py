"""Values that fail in bulk: 200,000 of them, all bad or every other one bad,
in every value format, through ``kb.decode(..., value_format=...)`` on the
default threads, with ``on_value_error`` "null" and "raise".

Each case runs in a fresh interpreter, so a crash (a signal, an abort) is a
failed test with its signal named, not a dead pytest. Good values come from
other people's encoders (fastavro, confluent-kafka's Avro and Protobuf
serializers, google.protobuf, ``json.dumps``), and every row kept is compared
with what their readers give for the same bytes; bad ones are the kinds a
topic read with the wrong schema is full of (an Avro string length past the
end, a Protobuf field number 0, a JSON document cut short, bytes that are
not UTF-8). Good values cycle through a prime number of distinct ones, so a
row kept in the wrong place shows.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kafkabatch as kb

HERE = Path(__file__).resolve().parent
ROWS = 200_000
DISTINCT = 101
#: A short record for the Avro cases: a decoder is made per bad row, and
#: its cost grows with the schema (about 200 us for test_values' Order).
AVRO_SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "long"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
FORMATS = ["json", "avro", "avro-confluent", "protobuf-confluent", "protobuf-plain", "string"]
PATTERNS = ["all-bad", "every-other-bad"]


def run_child(*args: str, script: str = __file__, timeout: float = 300) -> str:
    """``script`` (this file unless given) run as a script with ``args``; its
    stdout. A signal or a non-zero exit fails the calling test with the
    child's stderr."""
    proc = subprocess.run(
        [sys.executable, str(Path(script).resolve()), *args],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        pytest.fail(f"{args}: the process died of {name}\n{proc.stderr[-3000:]}")
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc.stdout


def mostly_bad(good: list[bytes], bad: bytes, every: int, rows: int = ROWS) -> list[bytes]:
    """``rows`` values: row ``i`` is ``good[(i // every) % len(good)]`` when
    ``every`` divides ``i``, else ``bad``."""
    values = [bad] * rows
    values[::every] = [good[k % len(good)] for k in range(len(range(0, rows, every)))]
    return values


def values_table(values: list[bytes]) -> pa.Table:
    """``values`` as the ``value`` column of records to encode (the encoder's
    Arrow input: no dict per record)."""
    return pa.table({"value": pa.array(values, pa.binary())})


def _registry():
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})


def _shop(root: str):
    sys.path.insert(0, root)
    try:
        return importlib.import_module("shop_pb2")
    finally:
        sys.path.remove(root)


def _case(fmt: str, proto_root: str):
    """``(good, bad, options, reference, rows_of, key)``: distinct good
    values, one bad value, decode options, the reference reading of a good
    value, our column's rows in the reference's terms, and the field that
    tells the distinct values apart (``None``: the whole value)."""
    if fmt == "json":
        import test_values as tv

        good = [json.dumps(tv.json_order(k)).encode() for k in range(DISTINCT)]
        options = {"value_format": "json", "value_schema": tv.ORDER_ARROW}
        return good, b'{"order_id": "cut', options, tv.expected_json, lambda c: c.to_pylist(), "order_id"
    if fmt in ("avro", "avro-confluent"):
        import fastavro
        import test_values as tv

        rows = [
            {"id": f"o{k}", "qty": k * 7 - 300, "tags": [f"t{j}" for j in range(k % 3)], "note": [None, f"n{k}"][k % 2]}
            for k in range(DISTINCT)
        ]
        if fmt == "avro":
            parsed = fastavro.parse_schema(AVRO_SCHEMA)
            good = []
            for row in rows:
                buf = io.BytesIO()
                fastavro.schemaless_writer(buf, parsed, row)
                good.append(buf.getvalue())
            options = {"value_format": "avro", "value_schema": AVRO_SCHEMA}
            prefix = b""
        else:
            registry = _registry()
            good = tv.confluent_avro(registry, AVRO_SCHEMA, rows)
            options = {"value_format": "avro", "schema_registry": tv.registry_dict(registry, good)}
            prefix = good[0][:5]
        # The first field, a string, claims 64 bytes where 2 follow.
        bad = prefix + b"\x80\x01ab"
        return good, bad, options, lambda v: tv.fastavro_read(v, AVRO_SCHEMA), lambda c: c.to_pylist(), "id"
    if fmt in ("protobuf-confluent", "protobuf-plain"):
        import test_protobuf as tp

        shop = _shop(proto_root)
        messages = [tp.order(shop, k) for k in range(DISTINCT)]
        if fmt == "protobuf-plain":
            good = [m.SerializeToString() for m in messages]
            options = {"value_format": "protobuf", "value_schema": shop.Order}
            prefix = b""

            def reference(v):
                return tp.expected(shop.Order.FromString(v))
        else:
            registry = _registry()
            good = tp.serialize(registry, shop.Order, messages)
            options = {"value_format": "protobuf", "schema_registry": registry}
            prefix = good[0][:6]  # magic, schema id, message index [0]

            def reference(v):
                return tp.expected(tp.deserialize(shop.Order, [v])[0])

        # Field number 0 (tag 0x00), which no message has.
        return good, prefix + b"\x00\x01", options, reference, tp.rows, "id"
    assert fmt == "string"
    good = [f"héllo {k} ✓".encode() for k in range(DISTINCT)]
    return good, b"caf\xe9 \xff\xfe", {"value_format": "string"}, lambda v: v.decode(), lambda c: c.to_pylist(), None


def child_bulk(fmt: str, pattern: str, proto_root: str) -> None:
    good, bad, options, reference, rows_of, key = _case(fmt, proto_root)
    if pattern == "all-bad":
        values = [bad] * ROWS
        kept = []
    else:
        values = mostly_bad(good, bad, 2)
        kept = list(range(0, ROWS, 2))
    data = kb.encode(values_table(values), compression="lz4")
    table = kb.decode(data, on_value_error="null", **options)
    column = table.column("value")
    assert table.num_rows == ROWS and table.column("offset").to_pylist() == list(range(ROWS))
    valid = column.is_valid()
    assert [i for i, ok in enumerate(valid.to_pylist()) if ok] == kept
    want = [reference(v) for v in good]
    kept_column = column.filter(valid)
    # Every row kept holds its own value (told apart by its key field), and
    # a whole cycle of them equals the reference readings field by field.
    keys = (kept_column if key is None else pc.struct_field(kept_column, key)).to_pylist()
    assert keys == [(w if key is None else w[key]) for i in kept for w in [want[(i // 2) % DISTINCT]]]
    assert rows_of(kept_column.slice(0, 2 * DISTINCT)) == [want[(i // 2) % DISTINCT] for i in kept[: 2 * DISTINCT]]
    with_raise = None
    try:
        kb.decode(data, topic="t", partition=0, **options)
    except kb.ValueDecodeError as error:
        with_raise = error
    assert with_raise is not None, "on_value_error='raise' raised nothing"
    assert (with_raise.offset, with_raise.column) == (0 if pattern == "all-bad" else 1, "value"), str(with_raise)
    print(json.dumps({"kept": len(kept), "error": str(with_raise)[:200]}))


def child_wrong_schema(data_path: str, proto_root: str, message: str, rows: str) -> None:
    """Confluent-framed Protobuf values read as plain ones of ``message``:
    every value starts with the magic byte 0, a field number 0, so every row
    is bad: all null, or the first one named."""
    shop = _shop(proto_root)
    cls = shop.Order if message == "Order" else shop.Order.Item
    data = Path(data_path).read_bytes()
    table = kb.decode(data, value_format="protobuf", value_schema=cls, on_value_error="null")
    assert table.num_rows == int(rows) and table.column("value").null_count == int(rows)
    try:
        kb.decode(data, topic="t", partition=0, value_format="protobuf", value_schema=cls)
    except kb.ValueDecodeError as error:
        assert (error.offset, error.column) == (0, "value") and "field number 0" in str(error), str(error)
    else:
        raise AssertionError("on_value_error='raise' raised nothing")


@pytest.fixture(scope="module")
def proto_root(tmp_path_factory) -> str:
    if importlib.util.find_spec("grpc_tools") is None or importlib.util.find_spec("google.protobuf") is None:
        pytest.skip("grpcio-tools and protobuf are needed")
    import test_protobuf as tp

    return str(tp.make_protos(tmp_path_factory.mktemp("protos")).root)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_200k_bad_values_keep_the_good_rows_and_never_crash(fmt, pattern, proto_root):
    pytest.importorskip("fastavro")
    pytest.importorskip("confluent_kafka.schema_registry")
    out = json.loads(run_child("bulk", fmt, pattern, proto_root))
    assert out["kept"] == (0 if pattern == "all-bad" else ROWS // 2)


@pytest.mark.parametrize("message", ["Order", "Item"])
def test_framed_protobuf_read_with_the_wrong_schema_never_crashes(message, proto_root, tmp_path):
    """Read as plain with the generated class, or with another message: 20
    runs each, each in its own process (the crash was intermittent)."""
    pytest.importorskip("confluent_kafka.schema_registry")
    import test_protobuf as tp

    shop = _shop(proto_root)
    framed = tp.serialize(_registry(), shop.Order, [tp.order(shop, k) for k in range(DISTINCT)])
    rows = 40_000
    data = kb.encode(values_table([framed[i % DISTINCT] for i in range(rows)]), compression="zstd")
    path = tmp_path / "framed.bin"
    path.write_bytes(data)
    for _ in range(20):
        run_child("wrong-schema", str(path), proto_root, message, str(rows))


def test_a_crash_in_the_child_is_a_failure_naming_the_signal():
    with pytest.raises(pytest.fail.Exception, match="SIGABRT"):
        run_child("abort")


if __name__ == "__main__":
    what, *rest = sys.argv[1:]
    if what == "bulk":
        child_bulk(*rest)
    elif what == "wrong-schema":
        child_wrong_schema(*rest)
    elif what == "abort":
        os.abort()
