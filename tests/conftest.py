"""Shared fixtures for the tests that hold kafkabatch against other people's code.

Golden data comes from ``realclients`` (kafka-python, aiokafka, librdkafka's
mock cluster, hand-built spec layouts).  Everything is built lazily and
cached for the whole session (``realclients.get`` is an lru_cache; the mock
cluster runs once per session, ~2 s).  Parametrization helpers live in
``golden_params``.
"""

from __future__ import annotations

import pytest
import realclients as rc
from golden_params import missing


def pytest_configure(config):
    # kafka-python 3.x loads its protocol schemas with deprecated importlib.resources calls
    config.addinivalue_line("filterwarnings", "ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")


@pytest.fixture(scope="session")
def golden():
    """``golden(name) -> realclients.Fixture``, cached for the session."""
    return rc.get


@pytest.fixture(scope="session")
def librdkafka():
    """All librdkafka mock-cluster fixtures, built once per session."""
    if missing("confluent_kafka"):
        pytest.skip("confluent_kafka is not importable")
    return rc.librdkafka_fixtures()
