"""Typed JSON values on random schemas and documents, against ``json.loads``.

Each document is written by ``json.dumps`` (ASCII-escaped or not, compact or
spaced) from a value that mostly fits a random schema; the expected row is
what Spark's ``from_json`` makes of the ``json.loads`` result (a string field
takes any value as its JSON text, integers refuse floats and strings, floats
take the NaN/Infinity strings, a value that doesn't fit nulls its row under
``on_value_error="null"`` and fails at its offset under ``"raise"``).
"""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkabatch as kb

NAMES = ["a", "b", "é", "order_id", "x y"]
SCALARS = [pa.bool_(), pa.int64(), pa.int32(), pa.float64(), pa.string()]

json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["NaN", "Infinity", "-Infinity", "5"])
)
any_json = st.recursive(
    json_leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)
)


def types(depth: int = 2) -> st.SearchStrategy[pa.DataType]:
    leaf = st.sampled_from(SCALARS)
    if depth == 0:
        return leaf
    inner = types(depth - 1)
    fields = st.lists(st.tuples(st.sampled_from(NAMES), inner), min_size=1, max_size=4, unique_by=lambda f: f[0])
    return leaf | st.builds(pa.list_, inner) | fields.map(lambda fs: pa.struct([pa.field(n, t) for n, t in fs]))


class Bad(Exception):
    """The value does not fit: Spark's from_json nulls the row."""


def fitting(t: pa.DataType) -> st.SearchStrategy:
    """Values made for `t`, now and then anything at all."""
    if pa.types.is_boolean(t):
        made = st.booleans()
    elif pa.types.is_integer(t):
        bits = t.bit_width
        made = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    elif pa.types.is_floating(t):
        made = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(["NaN", "Infinity", "-Infinity"])
    elif pa.types.is_string(t):
        made = st.text(max_size=12)
    elif pa.types.is_list(t):
        made = st.lists(st.none() | fitting(t.value_type), max_size=4)
    else:
        made = st.fixed_dictionaries({}, optional={f.name: st.none() | fitting(f.type) for f in t})
        made = st.tuples(made, st.dictionaries(st.sampled_from(["zz", "unknown"]), any_json, max_size=2)).map(
            lambda both: {**both[1], **both[0]}
        )
    return st.one_of(made, made, made, any_json)


def spark(value, t: pa.DataType):
    """`value` (from json.loads) read as Spark's from_json reads it into `t`."""
    if value is None:
        return None
    if pa.types.is_string(t):
        if isinstance(value, str):
            return value
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if pa.types.is_boolean(t):
        if isinstance(value, bool):
            return value
        raise Bad
    if pa.types.is_integer(t):
        bits = t.bit_width
        if isinstance(value, int) and not isinstance(value, bool) and -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            return value
        raise Bad
    if pa.types.is_floating(t):
        special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
        if isinstance(value, str) and value in special:
            return special[value]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise Bad
    if pa.types.is_list(t):
        if isinstance(value, list):
            return [spark(v, t.value_type) for v in value]
        raise Bad
    if isinstance(value, dict):
        return {f.name: spark(value.get(f.name), f.type) for f in t}
    raise Bad


def expected_row(value, t: pa.DataType):
    try:
        return spark(value, t)
    except Bad:
        return None


def same(a, b) -> bool:
    """Equal, with NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@st.composite
def cases(draw):
    t = draw(types())
    rows = draw(st.lists(st.none() | st.tuples(fitting(t), st.booleans(), st.booleans()), max_size=30))
    values = []
    for row in rows:
        if row is None:
            values.append(None)
            continue
        value, ascii_only, compact = row
        separators = (",", ":") if compact else (", ", ": ")
        values.append((value, json.dumps(value, ensure_ascii=ascii_only, separators=separators).encode()))
    return t, values


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_random_documents_read_as_spark_from_json(case):
    t, values = case
    data = kb.encode([{"value": None if v is None else v[1]} for v in values], base_offset=1000)
    table = kb.decode(data, value_format="json", value_schema=t, on_value_error="null")
    assert table.schema.field("value").type == t
    got = table.column("value").to_pylist()
    want = [None if v is None else expected_row(v[0], t) for v in values]
    assert same(got, want), (got, want)
    bad = [i for i, v in enumerate(values) if v is not None and v[0] is not None and expected_row(v[0], t) is None]
    if bad:
        with pytest.raises(kb.ValueDecodeError) as info:
            kb.decode(data, value_format="json", value_schema=t)
        assert info.value.offset == 1000 + bad[0]
    else:
        assert same(kb.decode(data, value_format="json", value_schema=t).column("value").to_pylist(), want)


def test_a_repeated_name_keeps_the_last_and_the_rest_of_the_column():
    schema = pa.struct([("a", pa.int64()), ("s", pa.string())])
    docs = [b'{"a": 1, "s": "x"}', b'{"a": "no", "a": 2, "s": {"k": [1, "\\u00e9"]}}', b'{"a": 3}', b"[1]"]
    data = kb.encode([{"value": d} for d in docs])
    table = kb.decode(data, value_format="json", value_schema=schema, on_value_error="null")
    assert table.column("value").to_pylist() == [
        {"a": 1, "s": "x"},
        {"a": 2, "s": '{"k":[1,"é"]}'},
        {"a": 3, "s": None},
        None,
    ]


def test_text_that_is_not_json_fails_its_row():
    # Jackson's grammar (Spark's from_json): no missing or doubled commas, raw control characters or leading zeros.
    schema = pa.struct([("a", pa.list_(pa.int64())), ("s", pa.string())])
    docs = [b'{"a": [1 2]}', b'{"a": [1,,2]}', b'{"s": "tab\there"}', b'{"a": [01]}', b'{"a": [1, 2], "s": "ok"}']
    data = kb.encode([{"value": d} for d in docs], base_offset=5)
    table = kb.decode(data, value_format="json", value_schema=schema, on_value_error="null")
    assert table.column("value").to_pylist() == [None, None, None, None, {"a": [1, 2], "s": "ok"}]
    with pytest.raises(kb.ValueDecodeError, match="malformed JSON") as info:
        kb.decode(data, value_format="json", value_schema=schema)
    assert info.value.offset == 5
