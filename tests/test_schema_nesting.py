"""Schemas given as text nest at most so deep: a deeper one is a ValueError
naming the limit, never Python's RecursionError (the parser's recursion
follows the text)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark")

from kafkabatch.values.ddl import MAX_NESTING, spark_schema_of  # noqa: E402


def nested_ddl(levels: int) -> str:
    return "v " + "array<" * levels + "int" + ">" * levels


def test_ddl_at_the_limit_is_read():
    schema = spark_schema_of(nested_ddl(MAX_NESTING - 1))
    depth, t = 0, schema.fields[0].dataType
    while hasattr(t, "elementType"):
        depth, t = depth + 1, t.elementType
    assert depth == MAX_NESTING - 1


@pytest.mark.parametrize("levels", [MAX_NESTING + 1, 50_000])
def test_ddl_past_the_limit_is_a_value_error(levels):
    with pytest.raises(ValueError, match=f"nest more than {MAX_NESTING} deep"):
        spark_schema_of(nested_ddl(levels))


def test_json_schema_too_deep_is_a_value_error():
    deep = {"type": "struct", "fields": []}
    text = json.dumps(deep)[:-2] + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(ValueError, match="nested too deeply"):
        spark_schema_of(text)
