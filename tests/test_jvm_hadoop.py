"""The JVM source (``kafka-log-jvm``) reading remote roots through Hadoop's ``FileSystem``.

PySpark ships no ``hadoop-aws`` (and no connector jar can be fetched here), so a
real Hadoop ``FileSystem`` is compiled at test time against PySpark's jars:
``tests/java/KbTestFileSystem.java`` serves ``kbtest://any/x`` from a local
folder named by ``fs.kbtest.root`` in the Hadoop configuration of the read, and
records every file it lists and opens. It is registered as S3A would be
(``fs.kbtest.impl``), with its settings from read options or the session's
conf, the way a Spark user passes ``fs.s3a.*``. Rows are compared with the
same folders read in process (``scan_log``), which never touches Hadoop.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_logdir import build_log, rows_of

import kafkabatch as kb
from kafkabatch.log import list_segments

pytest.importorskip("pyspark")

if shutil.which("javac") is None:
    pytest.skip("no javac on PATH: the JVM data source's jar can't be built here", allow_module_level=True)

pytestmark = pytest.mark.spark

SOURCE = "kafka-log-jvm"
KBTEST = "kbtest.KbTestFileSystem"


@pytest.fixture(scope="module")
def kbtest(jvm_spark, tmp_path_factory) -> str:
    """The test FileSystem's class, compiled and added to the running session (the driver's class
    loader, which Hadoop's configuration loads FileSystem classes with, and the executors')."""
    import pyspark

    out = tmp_path_factory.mktemp("kbtest-fs")
    source = Path(__file__).parent / "java" / "KbTestFileSystem.java"
    classpath = f"{Path(pyspark.__file__).parent / 'jars'}/*"
    subprocess.run(
        ["javac", "--release", "17", "-cp", classpath, "-d", str(out / "classes"), str(source)],
        check=True,
        capture_output=True,
    )
    jar = out / "kbtest.jar"
    subprocess.run(["jar", "--create", "--file", str(jar), "-C", str(out / "classes"), "."], check=True)
    jvm = jvm_spark._jvm
    jvm.Thread.currentThread().getContextClassLoader().addURL(jvm.java.net.URL(jar.as_uri()))
    jvm_spark._jsc.sc().addJar(str(jar))
    return KBTEST


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hadoop-gen") / "gen"
    kb.generate(out, size="2MB", segment_bytes="256KB", seed=38)
    return out


@pytest.fixture(scope="module")
def real_clients(tmp_path_factory) -> Path:
    return build_log(tmp_path_factory.mktemp("hadoop-logs") / "kafka-data")


def options_for(root: Path, log: Path | None = None, **more: str) -> dict[str, str]:
    """Read options putting the test FileSystem into the read's Hadoop configuration."""
    options = {
        "fs.kbtest.impl": KBTEST,
        # Hadoop caches FileSystems by scheme and authority: each read gets its own settings
        "fs.kbtest.impl.disable.cache": "true",
        "fs.kbtest.root": str(root),
        **more,
    }
    if log is not None:
        options["fs.kbtest.log"] = str(log)
    return options


def calls(log: Path) -> list[tuple[str, str]]:
    return [tuple(line.split(" ", 1)) for line in log.read_text().splitlines()] if log.exists() else []


def sorted_rows(table) -> list[tuple]:
    return sorted(rows_of(table), key=lambda r: (r[0], r[1], r[2]))


@pytest.mark.parametrize("folder", ["generated", "real_clients"])
def test_a_hadoop_filesystem_reads_what_the_folder_holds(jvm_spark, kbtest, request, folder, tmp_path):
    root = request.getfixturevalue(folder)
    log = tmp_path / "calls.txt"
    df = jvm_spark.read.format(SOURCE).options(**options_for(root.parent, log)).load(f"kbtest://bucket/{root.name}/")
    got = sorted_rows(df.toArrow())
    want = sorted_rows(kb.scan_log(root).read_all())
    assert len(got) == len(want) > 0
    assert got == want
    # every listed segment holding bytes came through the test FileSystem, none through the local disk
    opened = {uri for what, uri in calls(log) if what == "open"}
    listed = [Path(s.path) for s in list_segments(root)]
    segments = {f"kbtest://bucket/{p.relative_to(root.parent)}" for p in listed if p.stat().st_size > 0}
    assert segments <= opened
    assert all(uri.startswith("kbtest://bucket/") for uri in opened)


def test_settings_from_the_sessions_conf(jvm_spark, kbtest, generated, tmp_path):
    """``fs.*`` settings of the session (``spark.conf.set``, as for Parquet) reach the driver's
    listing and the executors' readers (a task has no session: its configuration is broadcast)."""
    log = tmp_path / "calls.txt"
    settings = {k: v for k, v in options_for(generated.parent, log).items()}
    for name, value in settings.items():
        jvm_spark.conf.set(name, value)
    try:
        df = jvm_spark.read.format(SOURCE).load(f"kbtest://conf/{generated.name}")
        got = df.groupBy("topic").count().collect()
    finally:
        for name in settings:
            jvm_spark.conf.unset(name)
    want: dict[str, int] = {}
    for r in rows_of(kb.scan_log(generated).read_all()):
        want[r[0]] = want.get(r[0], 0) + 1
    assert {r["topic"]: r["count"] for r in got} == want
    assert any(what == "open" for what, _ in calls(log))


def test_bounds_open_only_the_segments_they_need(jvm_spark, kbtest, tmp_path):
    """The planner is the same over Hadoop: an offset bound leaves earlier segments' bytes unread."""
    data = tmp_path / "data"
    kb.generate(data, size="400KB", topics=[kb.TopicSpec("orders", 1, codec="lz4")], segment_bytes="64KB")
    log = tmp_path / "calls.txt"
    orders = sorted((data / "orders-0").glob("*.log"))
    assert len(orders) >= 3
    last_base = int(orders[-1].stem)
    options = options_for(tmp_path, log, startingOffsets=json.dumps({"orders": {"0": last_base}}))
    df = jvm_spark.read.format(SOURCE).options(**options).load("kbtest://b/data/orders-0")
    got = sorted(r.offset for r in df.select("offset").collect())
    table = kb.scan_log(data / "orders-0", start_offset=last_base).read_all()
    assert got == sorted(table["offset"].to_pylist())
    assert len(got) > 0
    opened = {uri.rsplit("/", 1)[-1] for what, uri in calls(log) if what == "open"}
    assert orders[-1].name in opened
    assert orders[0].name not in opened


def test_a_tiered_bucket_through_hadoop(jvm_spark, kbtest, tmp_path):
    """Aiven's layout (manifests, zstd chunks, encrypted data keys) read through the FileSystem."""
    pytest.importorskip("Crypto")
    pytest.importorskip("cryptography")
    import tiered_fixtures as tf

    broker = tmp_path / "broker"
    kb.generate(broker, size="400KB", topics=[kb.TopicSpec("orders", 1, codec="lz4")], segment_bytes="96KB")
    key = tf.make_key_pair("key-1")
    bucket = tmp_path / "bucket"
    uploader = tf.Uploader(bucket, "zstd+encrypted", 8 << 10, key, prefix="tiered/")
    for log in tf.broker_segments(broker / "orders-0"):
        batches = list(kb.iter_batches(log.read_bytes(), validate_crc=False))
        uploader.upload(
            log, "orders", 0, end_offset=batches[-1].last_offset, max_timestamp=max(b.max_timestamp for b in batches)
        )
    options = options_for(bucket, tieredKeys=json.dumps({key.key_id: key.private_pem}))
    df = jvm_spark.read.format(SOURCE).options(**options).load("kbtest://b/tiered/")
    got = sorted((r.topic, r.partition, r.offset) for r in df.select("topic", "partition", "offset").collect())
    want = kb.scan_log(broker).read_all()
    assert got == sorted(zip(want["topic"].to_pylist(), want["partition"].to_pylist(), want["offset"].to_pylist()))
    assert len(got) > 0


def error_of(spark, path: str, **options: str) -> str:
    with pytest.raises(Exception) as raised:  # noqa: PT011 - py4j wraps the Java exception
        spark.read.format(SOURCE).options(**options).load(path).collect()
    return str(raised.value)


def test_a_missing_folder_names_it(jvm_spark, kbtest, generated):
    text = error_of(jvm_spark, "kbtest://b/nowhere/", **options_for(generated.parent))
    assert "java.io.FileNotFoundException" in text and "kbtest://b/nowhere" in text


def test_a_filesystem_exception_names_the_file(jvm_spark, kbtest, generated):
    first = sorted((generated / "orders-0").glob("*.log"))[0]
    options = options_for(generated.parent, **{"fs.kbtest.fail": first.name})
    text = error_of(jvm_spark, f"kbtest://b/{generated.name}/orders-0", **options)
    assert f"kbtest://b/{generated.name}/orders-0/{first.name}" in text
    assert "kbtest refuses to open" in text and "java.io.IOException" in text


def test_a_scheme_without_a_filesystem(jvm_spark, generated):
    # storage=hadoop: no FileSystem for s3:// in PySpark's jars, said in the option's words
    text = error_of(jvm_spark, "s3://bucket/data/", storage="hadoop")
    assert "kafka-log option 'storage' is hadoop" in text and "s3://" in text
    # storage=native: the core's object stores serve no kbtest://
    text = error_of(jvm_spark, f"kbtest://b/{generated.name}/", storage="native", **options_for(generated.parent))
    assert "no object store serves this location" in text


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("hdfs", "kafka-log option 'storage' must be auto, hadoop or native, not 'hdfs'"),
    ],
)
def test_storage_option_values(jvm_spark, generated, value, words):
    assert words in error_of(jvm_spark, str(generated), storage=value)


def test_storage_option_misspelled(jvm_spark, generated):
    assert "did you mean 'storage'?" in error_of(jvm_spark, str(generated), storrage="hadoop")


def test_local_roots_never_ask_hadoop(jvm_spark, generated):
    """A local folder is memory-mapped by the core whatever ``storage`` says."""
    for storage in ("auto", "hadoop", "native"):
        df = jvm_spark.read.format(SOURCE).option("storage", storage).load(str(generated))
        assert df.count() == kb.scan_log(generated).read_all().num_rows


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"storage": "hadoop"}, "kafka-log option 'storage' is hadoop, but this source has no Hadoop FileSystem"),
        ({"fs.s3a.access.key": "AK"}, "kafka-log options 'fs.s3a.access.key' are Hadoop settings"),
    ],
)
def test_the_python_source_refuses_hadoop_settings(options, words):
    """The Python source has no Hadoop: it says so rather than ignore the settings."""
    from kafkabatch.spark.options import Options

    with pytest.raises(ValueError, match=re.escape(words)):
        Options({"path": "s3://bucket/data/", **options})
    assert Options({"path": "s3://bucket/data/", "storage": "native"}).paths == ["s3://bucket/data/"]
