"""Typed values: JSON and Avro written by other people's serializers, read by kafkabatch.

Values come from confluent-kafka's ``AvroSerializer`` / ``JSONSerializer``
against its in-process mock Schema Registry, fastavro's
``schemaless_writer`` and ``json.dumps``; every decoded row is compared
with what fastavro / ``json.loads`` read from the same bytes.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import io
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkabatch as kb

fastavro = pytest.importorskip("fastavro")
sr = pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "int"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {
            "name": "items",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Item",
                    "fields": [{"name": "sku", "type": "string"}, {"name": "n", "type": "long"}],
                },
            },
        },
        {"name": "attrs", "type": {"type": "map", "values": "string"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "score", "type": ["null", "double", "string"], "default": None},
    ],
}

# Version 2: qty promoted int -> long, a field added with a default, note gone.
ORDER_V2 = {
    **ORDER_V1,
    "fields": [f if f["name"] != "qty" else {"name": "qty", "type": "long"} for f in ORDER_V1["fields"]]
    + [{"name": "channel", "type": "string", "default": "web"}],
}
ORDER_V2["fields"] = [f for f in ORDER_V2["fields"] if f["name"] != "note"]


def order(i: int) -> dict:
    return {
        "id": f"o{i}",
        "qty": i * 7 - 3,
        "price": decimal.Decimal(f"{i}.{i % 100:02d}"),
        "ts": dt.datetime(2024, 5, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=i * 1001),
        "day": dt.date(2024, 1, 1) + dt.timedelta(days=i),
        "uid": str(uuid.UUID(int=i * 7919)),
        "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "items": [{"sku": f"s{j}", "n": j * i} for j in range(i % 4)],
        "attrs": {f"k{j}": f"v{i}" for j in range(i % 3)},
        "note": None if i % 2 else f"note {i}",
        "score": [None, 1.5 * i, f"s{i}"][i % 3],
    }


def normalised(row: dict | None) -> dict | None:
    """Our row in fastavro's Python types (maps as dicts, uuids as UUID)."""
    if row is None:
        return None
    out = dict(row)
    if "attrs" in out:
        out["attrs"] = dict(out["attrs"])
    if isinstance(out.get("uid"), bytes):
        out["uid"] = uuid.UUID(bytes=out["uid"])
    return out


def fastavro_read(value: bytes, writer: dict, reader: dict | None = None) -> dict:
    payload = value[5:] if value[:1] == b"\0" and len(value) > 5 else value
    row = fastavro.schemaless_reader(
        io.BytesIO(payload), fastavro.parse_schema(writer), None if reader is None else fastavro.parse_schema(reader)
    )
    if isinstance(row.get("uid"), str):
        row["uid"] = uuid.UUID(row["uid"])
    return row


@pytest.fixture()
def registry(request):
    """confluent-kafka's in-process mock Schema Registry, one per test."""
    return sr.SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})


def confluent_avro(registry, schema: dict, rows: list[dict], topic: str = "orders") -> list[bytes]:
    serializer = AvroSerializer(registry, json.dumps(schema))
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [serializer(row, ctx) for row in rows]


def schema_id(value: bytes) -> int:
    return int.from_bytes(value[1:5], "big")


def registry_dict(registry, values: list[bytes]) -> dict[int, str]:
    return {i: registry.get_schema(i).schema_str for i in {schema_id(v) for v in values}}


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_avro_rows_match_fastavro(registry, codec):
    rows = [order(i) for i in range(300)]
    values = confluent_avro(registry, ORDER_V1, rows)
    records = [{"key": f"k{i}".encode(), "value": v} for i, v in enumerate(values)]
    records.insert(17, {"key": b"gone", "value": None})  # a tombstone
    data = kb.encode(records, compression=codec, records_per_batch=64, base_offset=1000)
    table = kb.decode(
        data, topic="orders", partition=2, value_format="avro", schema_registry=registry_dict(registry, values)
    )
    plain = kb.decode(data, topic="orders", partition=2)
    assert table.drop_columns(["value"]).equals(plain.drop_columns(["value"])), "every other column is unchanged"
    got = table.column("value").to_pylist()
    assert got[17] is None
    del got[17]
    assert [normalised(g) for g in got] == [fastavro_read(v, ORDER_V1) for v in values]
    assert pa.types.is_struct(table.schema.field("value").type)


def test_two_writer_versions_read_with_one_reader_schema(registry):
    v1 = confluent_avro(registry, ORDER_V1, [order(i) for i in range(50)])
    v2_rows = [{**order(i), "channel": "app"} for i in range(50, 80)]
    for r in v2_rows:
        r.pop("note")
    v2 = confluent_avro(registry, ORDER_V2, v2_rows)
    assert schema_id(v1[0]) != schema_id(v2[0])
    data = kb.encode([{"value": v} for v in v1 + v2])
    writers = registry_dict(registry, v1 + v2)
    expected = [fastavro_read(v, ORDER_V1, ORDER_V2) for v in v1] + [fastavro_read(v, ORDER_V2) for v in v2]
    for reader in (ORDER_V2, json.dumps(ORDER_V2), None):  # None: the newest writer schema
        table = kb.decode(data, value_format="avro", value_schema=reader, schema_registry=writers)
        got = [normalised(r) for r in table.column("value").to_pylist()]
        assert got == expected
        assert got[0]["channel"] == "web", "an added field takes its default"
    assert table.schema.field("value").type.field("qty").type == pa.int64(), "int promoted to long"


def test_plain_avro_datums_from_fastavro():
    parsed = fastavro.parse_schema(ORDER_V1)
    values = []
    for i in range(200):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, order(i))
        values.append(buf.getvalue())
    data = kb.encode([{"value": v} for v in values], compression="zstd")
    table = kb.decode(data, value_format="avro", value_schema=ORDER_V1)
    assert [normalised(r) for r in table.column("value").to_pylist()] == [fastavro_read(v, ORDER_V1) for v in values]


def test_bad_avro_values_raise_with_their_offset_or_become_null(registry):
    values = confluent_avro(registry, ORDER_V1, [order(i) for i in range(10)])
    bad = list(values)
    bad[3] = values[3][:-4]  # truncated datum
    bad[6] = b"\0\x7f\xff\xff\xff" + values[6][5:]  # unknown schema id
    bad[8] = b"not avro at all"
    data = kb.encode([{"value": v} for v in bad], base_offset=500)
    writers = registry_dict(registry, values)
    with pytest.raises(kb.ValueDecodeError) as info:
        kb.decode(data, topic="orders", partition=4, value_format="avro", schema_registry=writers)
    err = info.value
    assert isinstance(err, kb.KafkaBatchError)
    assert (err.topic, err.partition, err.offset, err.column) == ("orders", 4, 503, "value")
    assert "offset 503" in str(err) and "truncated" in str(err)
    table = kb.decode(data, value_format="avro", schema_registry=writers, on_value_error="null")
    got = table.column("value").to_pylist()
    assert [i for i, g in enumerate(got) if g is None] == [3, 6, 8]
    assert [normalised(got[i]) for i in (0, 1, 2, 4, 5, 7, 9)] == [
        fastavro_read(values[i], ORDER_V1) for i in (0, 1, 2, 4, 5, 7, 9)
    ]
    with pytest.raises(kb.ValueDecodeError, match="unknown schema id 2147483647"):
        kb.decode(kb.encode([{"value": bad[6]}]), value_format="avro", schema_registry=writers)


ORDER_JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "qty": {"type": "integer"},
        "price": {"type": "number"},
        "paid": {"type": "boolean"},
        "items": {"type": "array", "items": {"type": "object"}},
        "customer": {"type": "object"},
    },
}

ORDER_ARROW = pa.struct(
    [
        ("order_id", pa.string()),
        ("qty", pa.int64()),
        ("price", pa.float64()),
        ("paid", pa.bool_()),
        ("items", pa.list_(pa.struct([("sku", pa.string()), ("n", pa.int64())]))),
        ("customer", pa.struct([("name", pa.string()), ("vip", pa.bool_())])),
        ("missing", pa.string()),
        ("at", pa.timestamp("us", "UTC")),
    ]
)


def json_order(i: int) -> dict:
    doc = {
        "order_id": f"o-{i}",
        "qty": i,
        "price": i * 1.25,
        "paid": i % 2 == 0,
        "items": [{"sku": f"s{j}", "n": j} for j in range(i % 3)],
        "customer": {"name": f"c{i}", "vip": i % 5 == 0},
        "ignored": {"deep": [1, 2, 3]},
        "at": f"2024-05-01T12:{i % 60:02d}:07.{i % 1000:03d}Z",
    }
    if i % 4 == 0:
        del doc["customer"]
    return doc


def expected_json(value: bytes | None, prefix: int = 0) -> dict | None:
    if value is None:
        return None
    doc = json.loads(value[prefix:])
    return {name: _project(doc.get(name), ORDER_ARROW.field(name).type) for name in ORDER_ARROW.names}


def _project(value, arrow_type):
    if value is None:
        return None
    if pa.types.is_struct(arrow_type):
        return {f.name: _project(value.get(f.name), f.type) for f in arrow_type}
    if pa.types.is_list(arrow_type):
        return [_project(v, arrow_type.value_type) for v in value]
    if pa.types.is_timestamp(arrow_type):
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


@pytest.mark.parametrize("codec", CODECS)
def test_json_values_match_json_loads(codec):
    values = [json.dumps(json_order(i)).encode() for i in range(400)]
    values[5] = None
    data = kb.encode([{"value": v} for v in values], compression=codec, records_per_batch=50)
    table = kb.decode(data, value_format="json", value_schema=ORDER_ARROW)
    assert table.schema.field("value").type == ORDER_ARROW
    assert table.column("value").to_pylist() == [expected_json(v) for v in values]
    schema_form = kb.decode(data, value_format="json", value_schema=pa.schema(list(ORDER_ARROW)))
    assert schema_form.equals(table)


def test_confluent_json_serializer_prefix_is_stripped(registry):
    serializer = JSONSerializer(json.dumps(ORDER_JSON_SCHEMA), registry)
    ctx = SerializationContext("orders", MessageField.VALUE)
    values = [serializer(json_order(i), ctx) for i in range(100)]
    assert values[0][:1] == b"\0"
    data = kb.encode([{"value": v} for v in values])
    table = kb.decode(
        data, value_format="json", value_schema=ORDER_ARROW, schema_registry=registry_dict(registry, values)
    )
    assert table.column("value").to_pylist() == [expected_json(v, prefix=5) for v in values]


def test_json_numbers_convert_as_spark_from_json():
    schema = pa.struct([("i", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
    values = [b'{"i": 3, "f": 4, "s": 5}', b'{"i": -1, "f": 2.5e3, "s": true}', b'{"s": "text"}']
    table = kb.decode(kb.encode([{"value": v} for v in values]), value_format="json", value_schema=schema)
    assert table.column("value").to_pylist() == [
        {"i": 3, "f": 4.0, "s": "5"},
        {"i": -1, "f": 2500.0, "s": "true"},
        {"i": None, "f": None, "s": "text"},
    ]


def test_malformed_json_raises_with_offset_or_becomes_null():
    values = [b'{"qty": 1}', b'{"qty": ', b'{"qty": 3}', b'{"qty": "three"}', b"", b'{"qty": 6} {"qty": 7}']
    data = kb.encode([{"value": v} for v in values], base_offset=40)
    schema = pa.struct([("qty", pa.int64())])
    with pytest.raises(kb.ValueDecodeError) as info:
        kb.decode(data, topic="t", partition=0, value_format="json", value_schema=schema)
    assert info.value.offset == 41 and "malformed JSON" in str(info.value)
    table = kb.decode(data, value_format="json", value_schema=schema, on_value_error="null")
    assert table.column("value").to_pylist() == [{"qty": 1}, None, {"qty": 3}, None, None, None]
    assert table.column("offset").to_pylist() == list(range(40, 46))


def test_string_values_and_json_keys():
    records = [{"key": json.dumps({"user": i}).encode(), "value": f"héllo {i}".encode()} for i in range(20)]
    records.append({"key": b'{"user": 99}', "value": b"\xff\xfe"})
    data = kb.encode(records, base_offset=7)
    with pytest.raises(kb.ValueDecodeError, match="offset 27.*UTF-8"):
        kb.decode(data, value_format="string")
    table = kb.decode(
        data,
        value_format="string",
        key_format="json",
        key_schema=pa.struct([("user", pa.int32())]),
        on_value_error="null",
    )
    assert table.column("value").to_pylist() == [f"héllo {i}" for i in range(20)] + [None]
    assert table.column("key").to_pylist() == [{"user": i} for i in range(20)] + [{"user": 99}]
    assert table.schema.field("value").type == pa.string()


def test_parse_values_on_any_binary_column(tmp_path):
    values = [json.dumps(json_order(i)).encode() for i in range(100)] + [None]
    pq.write_table(pa.table({"value": pa.array(values, pa.binary())}), tmp_path / "v.parquet")
    column = pq.read_table(tmp_path / "v.parquet").column("value")
    parsed = kb.parse_values(column, format="json", schema=ORDER_ARROW)
    assert parsed.to_pylist() == [expected_json(v) for v in values]
    large = kb.parse_values(column.cast(pa.large_binary()), format="json", schema=ORDER_ARROW)
    assert large.to_pylist() == parsed.to_pylist()
    with pytest.raises(kb.ValueDecodeError) as info:
        kb.parse_values(pa.array([b"{}", b"nope"]), format="json", schema=ORDER_ARROW)
    assert info.value.row == 1


def test_read_segment_and_scan_log_take_the_same_options(tmp_path, registry):
    values = confluent_avro(registry, ORDER_V1, [order(i) for i in range(120)])
    folder = tmp_path / "orders-0"
    folder.mkdir()
    kb.write_segment(folder / "00000000000000000000.log", [{"value": v} for v in values], records_per_batch=16)
    writers = registry_dict(registry, values)
    expected = [fastavro_read(v, ORDER_V1) for v in values]
    seg = kb.read_segment(folder / "00000000000000000000.log", value_format="avro", schema_registry=writers)
    assert [normalised(r) for r in seg.column("value").to_pylist()] == expected
    bounded = kb.read_segment(
        folder / "00000000000000000000.log",
        start_offset=10,
        end_offset=20,
        value_format="avro",
        schema_registry=writers,
    )
    assert [normalised(r) for r in bounded.column("value").to_pylist()] == expected[10:20]
    reader = kb.scan_log(tmp_path, value_format="avro", schema_registry=writers, max_chunk_bytes=4096)
    assert pa.types.is_struct(reader.schema.field("value").type)
    assert [normalised(r) for r in reader.read_all().column("value").to_pylist()] == expected


class _RegistryHandler(BaseHTTPRequestHandler):
    """The read side of the Schema Registry REST API, over the schemas of a
    confluent-kafka client (the mock registry has no HTTP face)."""

    subjects: dict[str, list[tuple[int, str]]] = {}
    auth: str | None = None
    seen_auth: list[str | None] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        type(self).seen_auth.append(self.headers.get("Authorization"))
        if self.auth is not None and self.headers.get("Authorization") != self.auth:
            return self._send(401, {"error_code": 401, "message": "Unauthorized"})
        parts = [p for p in self.path.split("/") if p]
        by_id = {i: s for versions in self.subjects.values() for i, s in versions}
        if parts == ["subjects"]:
            return self._send(200, list(self.subjects))
        if parts[:2] == ["schemas", "ids"] and int(parts[2]) in by_id:
            sid = int(parts[2])
            if parts[3:] == ["versions"]:
                found = [
                    {"subject": s, "version": n + 1}
                    for s, v in self.subjects.items()
                    for n, (i, _) in enumerate(v)
                    if i == sid
                ]
                return self._send(200, found)
            return self._send(200, {"schema": by_id[sid]})
        if parts[:1] == ["subjects"] and parts[1] in self.subjects and parts[2:3] == ["versions"]:
            versions = self.subjects[parts[1]]
            if len(parts) == 3:
                return self._send(200, list(range(1, len(versions) + 1)))
            n = len(versions) if parts[3] == "latest" else int(parts[3])
            sid, schema = versions[n - 1]
            return self._send(200, {"subject": parts[1], "version": n, "id": sid, "schema": schema})
        return self._send(404, {"error_code": 40401, "message": "not found"})

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def registry_server(registry):
    _RegistryHandler.subjects = {}
    _RegistryHandler.auth = None
    _RegistryHandler.seen_auth = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RegistryHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _publish(registry, subject: str) -> None:
    versions = sorted(registry.get_versions(subject))  # the mock answers in no set order
    _RegistryHandler.subjects[subject] = [
        (registry.get_version(subject, v).schema_id, registry.get_version(subject, v).schema.schema_str)
        for v in versions
    ]


def test_registry_url_fetches_ids_once_with_auth(registry, registry_server):
    v1 = confluent_avro(registry, ORDER_V1, [order(i) for i in range(30)])
    v2_rows = [{k: v for k, v in order(i).items() if k != "note"} for i in range(30, 40)]
    v2 = confluent_avro(registry, ORDER_V2, v2_rows)
    _publish(registry, "orders-value")
    _RegistryHandler.auth = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    data = kb.encode([{"value": v} for v in v1 + v2])
    with pytest.raises(kb.SchemaRegistryError, match="401"):
        kb.decode(data, value_format="avro", schema_registry=registry_server)
    url = registry_server.replace("http://", "http://alice:s3cret@")
    table = kb.decode(data, value_format="avro", schema_registry=url)
    expected = [fastavro_read(v, ORDER_V1, ORDER_V2) for v in v1] + [fastavro_read(v, ORDER_V2) for v in v2]
    assert [normalised(r) for r in table.column("value").to_pylist()] == expected, "read as the subject's latest"
    config = {"url": registry_server, "basic.auth.user.info": "alice:s3cret"}
    assert kb.decode(data, value_format="avro", schema_registry=config).equals(table)
    _RegistryHandler.auth = "Bearer t0k3n"
    bearer = {"url": registry_server, "bearer.auth.token": "t0k3n"}
    assert kb.decode(data, value_format="avro", schema_registry=bearer).equals(table)


def test_unreachable_registry_is_a_clear_error_before_any_work():
    data = kb.encode([{"value": b"\0\0\0\0\1\2"}])
    with pytest.raises(kb.SchemaRegistryError, match="cannot be reached"):
        kb.decode(data, value_format="avro", schema_registry="http://127.0.0.1:9")
    with pytest.raises(kb.SchemaRegistryError, match="cannot be reached"):
        kb.decode(data, value_format="json", value_schema=ORDER_ARROW, schema_registry="http://127.0.0.1:9")


def test_option_errors_are_clear():
    data = kb.encode([{"value": b"{}"}])
    with pytest.raises(ValueError, match="value_format must be one of"):
        kb.decode(data, value_format="xml")
    with pytest.raises(ValueError, match="needs value_schema"):
        kb.decode(data, value_format="json")
    with pytest.raises(ValueError, match="on_value_error"):
        kb.decode(data, value_format="string", on_value_error="skip")
    with pytest.raises(ValueError, match="Avro"):
        kb.decode(data, value_format="avro", value_schema='{"type": "nonsense"}')


json_docs = st.fixed_dictionaries(
    {},
    optional={
        "a": st.none() | st.integers(-(2**63), 2**63 - 1),
        "b": st.none() | st.text(),
        "c": st.none() | st.lists(st.integers(-(2**31), 2**31)),
        "d": st.none() | st.fixed_dictionaries({"x": st.booleans()}),
    },
)
HYPO_ARROW = pa.struct(
    [("a", pa.int64()), ("b", pa.string()), ("c", pa.list_(pa.int64())), ("d", pa.struct([("x", pa.bool_())]))]
)
HYPO_AVRO = {
    "type": "record",
    "name": "H",
    "fields": [
        {"name": "a", "type": ["null", "long"]},
        {"name": "b", "type": "string"},
        {"name": "c", "type": {"type": "array", "items": "int"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "double"]}},
    ],
}
avro_rows = st.fixed_dictionaries(
    {
        "a": st.none() | st.integers(-(2**63), 2**63 - 1),
        "b": st.text(),
        "c": st.lists(st.integers(-(2**31), 2**31 - 1)),
        "m": st.dictionaries(st.text(max_size=5), st.none() | st.floats(allow_nan=False)),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.none() | json_docs, max_size=40))
def test_json_round_trip(docs):
    values = [None if d is None else json.dumps(d).encode() for d in docs]
    table = kb.decode(kb.encode([{"value": v} for v in values]), value_format="json", value_schema=HYPO_ARROW)
    expected = [None if d is None else {k: d.get(k) for k in HYPO_ARROW.names} for d in docs]
    assert table.column("value").to_pylist() == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.none() | avro_rows, max_size=40))
def test_avro_round_trip(rows):
    parsed = fastavro.parse_schema(HYPO_AVRO)
    values = []
    for row in rows:
        if row is None:
            values.append(None)
            continue
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, row)
        values.append(buf.getvalue())
    table = kb.decode(kb.encode([{"value": v} for v in values]), value_format="avro", value_schema=HYPO_AVRO)
    got = [None if r is None else {**r, "m": dict(r["m"])} for r in table.column("value").to_pylist()]
    assert got == rows


def test_cli_convert_writes_typed_parquet_and_json_lines(tmp_path, registry):
    import subprocess
    import sys

    values = confluent_avro(registry, ORDER_V1, [order(i) for i in range(60)])
    folder = tmp_path / "logs" / "orders-0"
    folder.mkdir(parents=True)
    kb.write_segment(folder / "00000000000000000000.log", [{"value": v} for v in values], compression="lz4")
    writers = tmp_path / "writers.json"
    writers.write_text(json.dumps({str(k): v for k, v in registry_dict(registry, values).items()}))
    out = tmp_path / "orders.parquet"
    # Parquet has no unions: read through a reader schema without the three-way "score" union.
    reader = {**ORDER_V1, "fields": [f for f in ORDER_V1["fields"] if f["name"] != "score"]}
    cli = [sys.executable, "-m", "kafkabatch", "convert", str(tmp_path / "logs")]
    args = ["--value-format", "avro", "--schema-registry", str(writers), "--value-schema", json.dumps(reader), "-q"]
    done = subprocess.run([*cli, str(out), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    table = pq.read_table(out)
    expected = [fastavro_read(v, ORDER_V1, reader) for v in values]
    assert [normalised(r) for r in table.column("value").to_pylist()] == expected

    docs = [json.dumps(json_order(i)).encode() for i in range(30)] + [b"{broken"]
    (tmp_path / "logs" / "orders-1").mkdir()
    kb.write_segment(tmp_path / "logs" / "orders-1" / "00000000000000000000.log", [{"value": d} for d in docs])
    avsc = tmp_path / "order.avsc"
    avsc.write_text(
        json.dumps(
            {
                "type": "record",
                "name": "O",
                "fields": [{"name": "order_id", "type": "string"}, {"name": "qty", "type": "long"}],
            }
        )
    )
    json_cli = [
        *cli[:-1],
        str(tmp_path / "logs" / "orders-1"),
        "-",
        "--value-format",
        "json",
        "--value-schema",
        str(avsc),
        "-q",
    ]
    failed = subprocess.run(json_cli, capture_output=True, text=True)
    assert failed.returncode != 0 and "offset 30 of orders-1" in failed.stderr
    lines = subprocess.run([*json_cli, "--on-value-error", "null"], capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line) for line in lines.splitlines()]
    assert [r["value"] for r in rows] == [{"order_id": f"o-{i}", "qty": i} for i in range(30)] + [None]
    assert rows[0]["value_encoding"] == "parsed"


ORDER_JSON_SCHEMA_FULL = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "qty": {"type": "integer"},
        "price": {"type": ["number", "null"]},
        "paid": {"type": "boolean"},
        "items": {"type": "array", "items": {"$ref": "#/definitions/item"}},
        "customer": {"type": "object", "properties": {"name": {"type": "string"}, "vip": {"type": "boolean"}}},
        "ignored": {"type": "object"},
        "at": {"type": "string", "format": "date-time"},
    },
    "definitions": {"item": {"type": "object", "properties": {"sku": {"type": "string"}, "n": {"type": "integer"}}}},
}


def test_a_json_schema_is_a_value_schema(registry, tmp_path):
    """The JSON Schema a JSONSerializer registers types the values it wrote."""
    serializer = JSONSerializer(json.dumps(ORDER_JSON_SCHEMA_FULL), registry)
    ctx = SerializationContext("orders", MessageField.VALUE)
    docs = [json_order(i) for i in range(50)]
    values = [serializer(d, ctx) for d in docs]
    data = kb.encode([{"value": v} for v in values])
    table = kb.decode(data, value_format="json", value_schema=ORDER_JSON_SCHEMA_FULL, schema_registry={})
    value_type = table.schema.field("value").type
    assert value_type.field("items").type == pa.list_(pa.struct([("sku", pa.string()), ("n", pa.int64())]))
    assert value_type.field("at").type == pa.timestamp("us", "UTC")
    got = table.column("value").to_pylist()
    for doc, row in zip(docs, got, strict=True):
        assert row["order_id"] == doc["order_id"] and row["qty"] == doc["qty"] and row["items"] == doc["items"]
        assert row["customer"] == doc.get("customer")
        assert row["ignored"] == json.dumps(doc["ignored"], separators=(",", ":")), "a free-form object as JSON text"
        assert row["at"] == dt.datetime.fromisoformat(doc["at"].replace("Z", "+00:00"))
    assert kb.decode(
        data, value_format="json", value_schema=json.dumps(ORDER_JSON_SCHEMA_FULL), schema_registry={}
    ).equals(table)


def test_a_writer_version_the_reader_cannot_read_fails_only_its_values(registry):
    """A subject with a breaking change (compatibility NONE): old values stay readable."""
    v1 = confluent_avro(registry, ORDER_V1, [order(i) for i in range(5)])
    breaking = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}
    v3 = confluent_avro(registry, breaking, [{"id": 7}], topic="orders-breaking")
    data = kb.encode([{"value": v} for v in v1 + v3], base_offset=10)
    writers = registry_dict(registry, v1 + v3)
    with pytest.raises(kb.ValueDecodeError, match=r"offset 15.*can't be read as the reader schema"):
        kb.decode(data, value_format="avro", value_schema=ORDER_V1, schema_registry=writers)
    table = kb.decode(data, value_format="avro", value_schema=ORDER_V1, schema_registry=writers, on_value_error="null")
    got = table.column("value").to_pylist()
    assert [normalised(r) for r in got[:5]] == [fastavro_read(v, ORDER_V1) for v in v1] and got[5] is None


def test_module_doctests():
    import doctest

    import kafkabatch.values.registry
    import kafkabatch.values.spec

    for module in (kafkabatch.values.spec, kafkabatch.values.registry):
        failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert failures == 0, module.__name__


def test_decode_report_takes_the_value_options():
    data = kb.encode([{"value": json.dumps({"a": i}).encode()} for i in range(3)] + [{"value": b"bad"}], base_offset=3)
    schema = pa.struct([("a", pa.int64())])
    report = kb.decode_report(data, value_format="json", value_schema=schema, on_value_error="null")
    assert report.table.column("value").to_pylist() == [{"a": 0}, {"a": 1}, {"a": 2}, None]
    assert report.records == 4
    with pytest.raises(kb.ValueDecodeError, match="offset 6"):
        kb.decode_report(data, value_format="json", value_schema=schema)


def test_a_confluent_registry_client_is_a_schema_registry(registry):
    """confluent-kafka's own client (here its mock) answers for the registry, newest version as reader."""
    v1 = confluent_avro(registry, ORDER_V1, [order(i) for i in range(20)])
    v2_rows = [{k: v for k, v in order(i).items() if k != "note"} | {"channel": "app"} for i in range(20, 30)]
    v2 = confluent_avro(registry, ORDER_V2, v2_rows)
    data = kb.encode([{"value": v} for v in v1 + v2])
    table = kb.decode(data, value_format="avro", schema_registry=registry)
    expected = [fastavro_read(v, ORDER_V1, ORDER_V2) for v in v1] + [fastavro_read(v, ORDER_V2) for v in v2]
    assert [normalised(r) for r in table.column("value").to_pylist()] == expected


def test_values_outside_the_bounds_are_not_parsed(tmp_path):
    """A bad value before start_offset is not read, so it can't fail the read (nor cost a parse)."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    values = [b"{broken", b'{"n": 1}', b'{"n": 2}']
    kb.write_segment(folder / "00000000000000000000.log", [{"value": v} for v in values])
    schema = pa.struct([("n", pa.int64())])
    table = kb.scan_log(tmp_path, start_offset=1, value_format="json", value_schema=schema).read_all()
    assert table.column("value").to_pylist() == [{"n": 1}, {"n": 2}]
    with pytest.raises(kb.ValueDecodeError, match="offset 0 of t-0"):
        kb.scan_log(tmp_path, value_format="json", value_schema=schema).read_all()


@pytest.mark.parametrize("on_value_error", ["raise", "null"])
def test_deep_nesting_in_any_field_fails_only_its_value(on_value_error):
    # Jackson (Spark's from_json) refuses documents nested deeper than 1000 levels;
    # 100,000 levels once overflowed the stack rendering a string field as JSON text.
    deep = "[" * 100_000 + "]" * 100_000
    schema = pa.struct(
        [("s", pa.string()), ("l", pa.list_(pa.int64())), ("r", pa.struct([("x", pa.int64())])), ("b", pa.int64())]
    )
    docs = [
        '{"b": 0}',
        f'{{"s": {deep}, "b": 1}}',
        f'{{"l": {deep}, "b": 2}}',
        f'{{"r": {{"x": {deep}}}, "b": 3}}',
        f'{{"unnamed": {deep}, "b": 4}}',
        f"{deep}",
        '{"s": ' + "[" * 999 + "]" * 999 + ', "b": 6}',
    ]
    data = kb.encode([{"value": d.encode()} for d in docs], base_offset=100)
    if on_value_error == "raise":
        with pytest.raises(kb.ValueDecodeError) as info:
            kb.decode(data, value_format="json", value_schema=schema)
        assert info.value.offset == 101 and "deeper than 1000 levels" in str(info.value)
        for i in range(2, 6):
            # A list or struct field fails at the first level that doesn't fit, if that comes first.
            alone = kb.encode([{"value": docs[i].encode()}], base_offset=100 + i)
            with pytest.raises(kb.ValueDecodeError, match="deeper than 1000|does not fit") as info:
                kb.decode(alone, value_format="json", value_schema=schema)
            assert info.value.offset == 100 + i
        return
    table = kb.decode(data, value_format="json", value_schema=schema, on_value_error="null")
    values = table.column("value").to_pylist()
    assert values[1:6] == [None] * 5
    assert values[0] == {"s": None, "l": None, "r": None, "b": 0}
    assert values[6] == {"s": "[" * 999 + "]" * 999, "l": None, "r": None, "b": 6}


def _many_values(kind: str, n: int) -> tuple[list[bytes | None], dict]:
    """``n`` values of ``kind`` (over 4 MiB, so several decode chunks), with
    tombstones and values that do not parse scattered through them."""
    if kind == "json":
        values: list[bytes | None] = [json.dumps(json_order(i)).encode() for i in range(n)]
        options = {"value_format": "json", "value_schema": ORDER_ARROW}
    elif kind == "avro":
        parsed = fastavro.parse_schema(ORDER_V1)
        values = []
        for i in range(n):
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, order(i))
            values.append(buf.getvalue())
        options = {"value_format": "avro", "value_schema": ORDER_V1}
    else:
        values = [f"héllo {i} ".encode() * 20 for i in range(n)]
        options = {"value_format": "string"}
    for i in range(7, n, n // 9):
        values[i] = None
    for i in range(n // 3, n, n // 4):
        values[i] = b"\xff{not " + kind.encode()
    return values, options


def _plain(array: pa.Array) -> pa.Array:
    """``array`` with its top-level dictionary fields (Avro enums) decoded:
    chunks parsed apart have dictionaries in their own order."""
    if not pa.types.is_struct(array.type):
        return array
    fields = [array.field(i) for i in range(array.type.num_fields)]
    fields = [f.dictionary_decode() if pa.types.is_dictionary(f.type) else f for f in fields]
    return pa.StructArray.from_arrays(fields, names=[f.name for f in array.type], mask=array.is_null())


@pytest.mark.parametrize("kind", ["json", "avro", "string"])
def test_values_parsed_while_decoding_equal_the_column_parsed_after(kind):
    """decode(value_format=...) parses each few-megabyte chunk on the thread
    that decoded it; rows, nulls, types and errors are those of parsing the
    whole decoded column after."""
    values, options = _many_values(kind, 60_000 if kind == "avro" else 30_000)
    records = [{"key": b"k%d" % i, "value": v} for i, v in enumerate(values)]
    data = kb.encode(records, compression="lz4", records_per_batch=200)
    bad = [i for i, v in enumerate(values) if v is not None and v.startswith(b"\xff")]
    for binary_view in (False, True):
        raw = kb.decode(data, binary_view=binary_view)
        after = kb.parse_values(
            raw.column("value"),
            format=options["value_format"],
            schema=options.get("value_schema"),
            on_value_error="null",
        )
        for threads in (1, 2):
            table = kb.decode(data, threads=threads, binary_view=binary_view, on_value_error="null", **options)
            assert table.column("value").num_chunks > 1, "the values span several chunks"
            assert table.schema == raw.schema.set(1, pa.field("value", after.type))
            assert table.drop_columns(["value"]).equals(raw.drop_columns(["value"]))
            # Null rows may hide different child values (a null struct row of
            # the column way repeats a parsed row's children): compare which
            # rows are null, then the rows that are not.
            parsed = table.column("value")
            assert parsed.is_valid().equals(after.is_valid())
            good = parsed.filter(parsed.is_valid()).combine_chunks()
            assert _plain(good).equals(_plain(after.filter(after.is_valid()).combine_chunks()))
            assert [table.column("value")[i].is_valid for i in bad] == [False] * len(bad)
            with pytest.raises(kb.ValueDecodeError) as info:
                kb.decode(data, topic="t", partition=0, threads=threads, binary_view=binary_view, **options)
            assert info.value.offset == bad[0]
    if kind == "json":
        assert table.column("value")[8].as_py() == expected_json(values[8])


def test_a_corrupt_batch_wins_over_a_bad_value_wherever_they_are():
    """As when the column is parsed after decoding: a corrupt batch raises
    its batch error even when a bad value comes first in the input."""
    values, options = _many_values("json", 30_000)
    data = bytearray(kb.encode([{"value": v} for v in values], records_per_batch=500))
    batches = list(kb.iter_batches(bytes(data)))
    first_bad = next(i for i, v in enumerate(values) if v is not None and v.startswith(b"\xff"))
    late = next(b for b in batches if b.base_offset > first_bad + 5000)
    data[late.position + 70] ^= 0xFF  # a byte of the records: the CRC no longer matches
    for threads in (1, 2):
        with pytest.raises(kb.CrcMismatchError) as info:
            kb.decode(bytes(data), threads=threads, **options)
        assert info.value.base_offset == late.base_offset


def test_scan_log_parses_values_as_it_decodes_them_with_the_same_rows_and_errors(tmp_path):
    """scan_log (the Spark source's reader too) parses each window's values
    as they are decoded when every record is kept; rows and errors are those
    of decoding the segment and parsing the column after."""
    values, options = _many_values("json", 30_000)
    folder = tmp_path / "orders-0"
    folder.mkdir()
    records = [{"value": v} for v in values]
    kb.write_segment(folder / "00000000000000000000.log", records, compression="lz4", records_per_batch=200)
    data = (folder / "00000000000000000000.log").read_bytes()
    raw = kb.decode(data, topic="orders", partition=0)
    after = kb.parse_values(raw.column("value"), format="json", schema=ORDER_ARROW, on_value_error="null")
    scanned = kb.scan_log(tmp_path, on_value_error="null", **options).read_all()
    assert scanned.drop_columns(["value"]).equals(raw.drop_columns(["value"]))
    assert scanned.column("value").to_pylist() == after.to_pylist()
    first_bad = next(i for i, v in enumerate(values) if v is not None and v.startswith(b"\xff"))
    with pytest.raises(kb.ValueDecodeError, match=f"offset {first_bad} of orders-0"):
        kb.scan_log(tmp_path, **options).read_all()
