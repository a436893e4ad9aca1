"""Shared fixtures for the tests that hold kafkabatch against other people's code.

Golden data comes from ``realclients`` (kafka-python, aiokafka, librdkafka's
mock cluster, hand-built spec layouts).  Everything is built lazily and
cached for the whole session (``realclients.get`` is an lru_cache; the mock
cluster runs once per session, ~2 s).  Parametrization helpers live in
``golden_params``.
"""

from __future__ import annotations

import os
import sys

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


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    from kafkabatch.spark.jvm import jar_path

    try:  # the JVM data source (kafka-log-jvm), where `make jvm` built it
        builder = builder.config("spark.jars", jar_path())
    except FileNotFoundError:
        pass
    session = (
        builder.master("local[2]")
        .appName("kafkabatch-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    import kafkabatch.spark as kbs

    kbs.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def jar() -> str:
    """The JVM source's jar. With a JDK it is part of the build (make install / make jvm): missing is a
    failure, not a skip."""
    from kafkabatch.spark.jvm import jar_path

    return jar_path()


@pytest.fixture(scope="session")
def jvm_spark(spark, jar):
    """The shared session, checked to have the JVM source's jar (``spark`` adds it when it exists)."""
    try:
        spark._jvm.java.lang.Class.forName(
            "io.github.kafkabatch.spark.KafkaLogSource", True, spark._jvm.Thread.currentThread().getContextClassLoader()
        )
    except Exception as e:  # noqa: BLE001 - py4j's error type depends on the version
        pytest.fail(f"the session was started without {jar} (spark.jars): {e}")
    return spark


#: The two implementations of ``kafka-log`` under their own names: the Python
#: data source and the JVM one (its jar built by ``make jvm``).
SOURCES = ("kafka-log-python", "kafka-log-jvm")


@pytest.fixture(params=SOURCES)
def kafka_log(request, spark):
    """The name of one ``kafka-log`` source, for ``spark.read.format(...)``:
    every test that takes it runs against both sources and expects the same
    rows and errors of each. A test marked ``jvm_lacks("...")`` says which
    feature the JVM source does not have yet; its JVM run is skipped with that
    reason."""
    if request.param == "kafka-log-jvm":
        from kafkabatch.spark.session import jvm_source_name

        if jvm_source_name(spark) is None:
            pytest.skip("the JVM source's jar is not built (make jvm)")
        lacks = request.node.get_closest_marker("jvm_lacks")
        if lacks is not None:
            pytest.skip(f"the JVM source does not do {lacks.args[0]} yet")
    return request.param


@pytest.fixture()
def moto_s3(tmp_path, monkeypatch):
    """A real S3 protocol server (moto's) on loopback with a bucket ``tiered``,
    recording every request it serves: ``(pyarrow filesystem, "host:port",
    path of the request recording)``."""
    pytest.importorskip("moto")
    import tiered_fixtures as tf

    for name, value in tf.S3_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    with tf.moto_s3_server(tmp_path) as server:
        yield server
