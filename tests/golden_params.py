"""Parametrizing tests over the golden fixtures of ``realclients``.

A fixture whose writing library can't be imported here is skipped with the
reason (after ``make install`` none are); a cell a library can't write at all
(``realclients.UNSUPPORTED``: aiokafka's magic-0 lz4) is not a test and is
left out.
"""

from __future__ import annotations

import importlib.util

import pytest
import realclients as rc

_SOURCE_MODULE = {
    "kafka-python": "kafka",
    "aiokafka": "aiokafka",
    "librdkafka": "confluent_kafka",
    "hand-built": "kafka",
}


def missing(module: str) -> bool:
    return importlib.util.find_spec(module) is None


def source_of(name: str) -> str:
    for source in _SOURCE_MODULE:
        if name.startswith(source + "-"):
            return source
    raise ValueError(name)


def fixture_params(names):
    """``pytest.param`` per fixture name (id = name), with skip marks where needed."""
    params = []
    for name in names:
        if name.startswith(("kafka-python-v", "aiokafka-v")) and rc.UNSUPPORTED.get(rc._cell(name)):
            continue
        marks = []
        module = _SOURCE_MODULE[source_of(name)]
        if missing(module):
            marks.append(pytest.mark.skip(reason=f"{module} is not importable"))
        elif name.startswith("librdkafka-") and missing("kafka"):
            marks.append(pytest.mark.skip(reason="kafka-python (Fetch request classes) is not importable"))
        else:
            why = rc.skip_reason(name)
            if why:
                marks.append(pytest.mark.skip(reason=why))
        params.append(pytest.param(name, id=name, marks=marks))
    return params


ALL_NAMES = rc.all_fixture_names()
# The mock cluster's raw transaction log carries CRC-0 control batches: tests
# that decode with default options use the CRC-fixed copy instead.
CLEAN_NAMES = [n for n in ALL_NAMES if n != "librdkafka-transactions"]
CONTROL_NAMES = ["hand-built-transactions", "librdkafka-transactions-crcfixed"]
