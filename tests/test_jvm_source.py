"""The JVM data source (``kafka-log-jvm``: Java DataSource V2 over the Rust core through JNI).

Its rows are compared with the Python source's (``kafka-log-python``) on the same
session, over folders of batches written by other clients (kafka-python and
aiokafka, ``test_logdir.build_log``) and by ``kb.generate``; plus a read in a
JVM that never started Python and a Spark SQL-only read. The jar comes from
``make jvm`` (``kafkabatch.spark.jar_path()``; conftest's session loads it).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_logdir import BASE_TS, build_log, expected_table, rows_of, write_segment

import kafkabatch as kb
from kafkabatch.log import list_segments

pytest.importorskip("pyspark")

from test_pushdown import explained  # noqa: E402
from test_spark import SPARK_KAFKA_SCHEMA  # noqa: E402

import kafkabatch.spark as kbs  # noqa: E402

if shutil.which("javac") is None:
    pytest.skip("no javac on PATH: the JVM data source's jar can't be built here", allow_module_level=True)

SOURCE = "kafka-log-jvm"


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    return build_log(tmp_path_factory.mktemp("jvm-logs") / "kafka-data")


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("jvm-generated") / "gen"
    kb.generate(out, size="3MB", segment_bytes="256KB", seed=38)
    return out


def test_jar_holds_the_source_and_this_platforms_library(jar):
    import platform
    import zipfile

    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    os_name = {"Linux": "linux", "Darwin": "darwin", "Windows": "windows"}[platform.system()]
    lib = {"linux": "libkafkabatch_jni.so", "darwin": "libkafkabatch_jni.dylib", "windows": "kafkabatch_jni.dll"}
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        services = z.read("META-INF/services/org.apache.spark.sql.sources.DataSourceRegister").decode()
    assert services.split() == [
        "io.github.kafkabatch.spark.KafkaLogSource",
        "io.github.kafkabatch.spark.KafkaLogJvmSource",
    ]
    library = f"io/github/kafkabatch/native/{os_name}-{arch}/{lib[os_name]}"
    assert library in names
    # its SHA-256 beside it names the folder NativeLoader extracts it to
    with zipfile.ZipFile(jar) as z:
        assert z.read(library + ".sha256").decode().strip() == hashlib.sha256(z.read(library)).hexdigest()


def test_jar_path_names_make_jvm_when_missing(monkeypatch):
    from kafkabatch.spark import jvm

    monkeypatch.setattr(jvm, "JAR_NAME", "not-built.jar")
    with pytest.raises(FileNotFoundError, match="make jvm"):
        kbs.jar_path()


def sorted_rows(table) -> list[tuple]:
    return sorted(rows_of(table), key=lambda r: (r[0], r[1], r[2]))


@pytest.mark.spark
def test_schema_is_the_python_sources(jvm_spark, log):
    jvm = jvm_spark.read.format(SOURCE).load(str(log))
    assert jvm.schema == SPARK_KAFKA_SCHEMA
    assert jvm.schema == jvm_spark.read.format("kafka-log-python").load(str(log)).schema


@pytest.mark.spark
def test_rows_equal_the_python_sources_on_real_clients_batches(jvm_spark, log):
    jvm = sorted_rows(jvm_spark.read.format(SOURCE).load(str(log)).toArrow())
    python = sorted_rows(jvm_spark.read.format("kafka-log-python").load(str(log)).toArrow())
    assert len(jvm) == len(python) > 0
    assert jvm == python
    assert jvm == sorted_rows(expected_table(log))


@pytest.mark.spark
def test_rows_equal_the_python_sources_on_a_generated_folder(jvm_spark, generated):
    jvm = jvm_spark.read.format(SOURCE).load(str(generated))
    python = jvm_spark.read.format("kafka-log-python").load(str(generated))
    # read by Spark's row path too (a projection and a filter over the columnar scan)
    by_topic = "SELECT topic, count(*) AS n, sum(length(value)) AS b, max(timestamp) AS t FROM {} GROUP BY topic"
    jvm.createOrReplaceTempView("jvm_gen")
    python.createOrReplaceTempView("py_gen")
    want = sorted(map(tuple, jvm_spark.sql(by_topic.format("py_gen")).collect()))
    assert sorted(map(tuple, jvm_spark.sql(by_topic.format("jvm_gen")).collect())) == want
    assert {t for t, *_ in want} >= {"orders", "clicks", "audit-legacy"}
    assert sorted_rows(jvm.toArrow()) == sorted_rows(python.toArrow())


@pytest.mark.spark
def test_several_paths(jvm_spark, log):
    paths = [str(log / "orders-0"), str(log / "payments-0")]
    jvm = sorted_rows(jvm_spark.read.format(SOURCE).load(paths).toArrow())
    python = sorted_rows(jvm_spark.read.format("kafka-log-python").load(paths).toArrow())
    assert jvm == python
    assert {(r[0], r[1]) for r in jvm} == {("orders", 0), ("payments", 0)}


@pytest.mark.spark
def test_missing_path_is_a_file_not_found_exception(jvm_spark, tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(Exception) as raised:
        jvm_spark.read.format(SOURCE).load(str(missing)).collect()
    text = str(raised.value)
    assert "java.io.FileNotFoundException" in text and str(missing) in text


BOUNDS = {
    "startingOffsets": '{"orders": {"0": 15, "1": -2}, "payments": {"0": 3}}',
    "endingOffsets": '{"orders": {"0": 55, "1": 1030}}',
    "startingTimestamp": "2023-11-14T22:13:24Z",
    "endingTimestamp": str(BASE_TS + 1_025_000),
}


@pytest.mark.spark
@pytest.mark.parametrize(
    "options",
    [
        BOUNDS,
        {"isolation": "read_committed", "maxBytesPerPartition": "1"},
        {"topic": "renamed", "partition": "7", "validateCrc": "false", "mode": "DROPMALFORMED"},
    ],
    ids=["bounds", "read_committed", "overrides"],
)
def test_options_read_what_the_python_source_reads(jvm_spark, log, options):
    path = str(log / "orders-0") if "topic" in options else str(log)
    jvm = sorted_rows(jvm_spark.read.format(SOURCE).options(**options).load(path).toArrow())
    python = sorted_rows(jvm_spark.read.format("kafka-log-python").options(**options).load(path).toArrow())
    assert len(jvm) > 0
    assert jvm == python


@pytest.mark.spark
def test_read_committed_on_hand_built_transactions(jvm_spark, tmp_path):
    import realclients as rc

    write_segment(tmp_path, "txn-0", 0, rc.transactions_hand_built().data)
    df = jvm_spark.read.format(SOURCE).option("isolation", "read_committed").load(str(tmp_path))
    want = kb.decode(rc.transactions_hand_built().data, isolation="read_committed").column("offset").to_pylist()
    assert [r.offset for r in df.orderBy("offset").select("offset").collect()] == want == [0, 1, 2, 10, 11]


def option_error(spark, source: str, path: str, **options) -> str:
    with pytest.raises(Exception) as raised:  # noqa: PT011 - each source wraps it its own way
        spark.read.format(source).options(**options).load(path).collect()
    return str(raised.value)


@pytest.mark.spark
@pytest.mark.parametrize(
    "options",
    [
        {"isolaton": "read_committed"},
        {"validateCrc": "sometimes"},
        {"startingOffsets": "{oops"},
        {"startingOffsets": '{"nosuch": {"0": 1}}'},
        {"mode": "LENIENT"},
    ],
)
def test_bad_options_give_the_python_sources_words(jvm_spark, log, options):
    jvm = option_error(jvm_spark, SOURCE, str(log), **options)
    python = option_error(jvm_spark, "kafka-log-python", str(log), **options)
    # the core's text, whole, inside each front end's wrapping
    core = jvm.splitlines()[0].strip()
    assert "kafka-log" in core and core in python, (jvm, python)
    if "nosuch" not in str(options):  # names checked against the listing fail at the first action
        with pytest.raises(Exception, match=re.escape(core)):  # noqa: PT011
            jvm_spark.read.format(SOURCE).options(**options).load(str(log))


@pytest.mark.spark
def test_path_glob_filter_reads_what_the_python_source_reads(jvm_spark, log):
    # a glob on file names alone: the first segment of each partition
    options = {"pathGlobFilter": "0000000000000000000[0-9].log"}
    jvm = sorted_rows(jvm_spark.read.format(SOURCE).options(**options).load(str(log)).toArrow())
    python = sorted_rows(jvm_spark.read.format("kafka-log-python").options(**options).load(str(log)).toArrow())
    everything = sorted_rows(expected_table(log))
    assert jvm == python
    assert 0 < len(jvm) < len(everything)
    assert {(r[0], r[1], r[2]) for r in jvm} == {
        (r[0], r[1], r[2])
        for s in list_segments(log)
        if s.name.startswith("0000000000000000000")
        for r in sorted_rows(kb.scan_log(s.path).read_all())
    }


@pytest.mark.spark
@pytest.mark.parametrize("name", ["kafka-log", SOURCE])
def test_spark_sql_only(jvm_spark, log, name):
    jvm_spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW kafka_sql USING `{name}` OPTIONS (path '{log}')")
    got = jvm_spark.sql("SELECT topic, partition, count(*), min(offset), max(offset) FROM kafka_sql GROUP BY 1, 2")
    assert "(Python)" not in got._jdf.queryExecution().executedPlan().toString()
    want = (
        jvm_spark.read.format("kafka-log-python")
        .load(str(log))
        .groupBy("topic", "partition")
        .agg({"*": "count", "offset": "min"})
    )
    counts = {(r[0], r[1]): (r[2], r[3]) for r in got.collect()}
    assert counts == {(r["topic"], r["partition"]): (r["count(1)"], r["min(offset)"]) for r in want.collect()}
    assert len(counts) == 3


MAIN_JAVA = """
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public class Main {
    public static void main(String[] args) {
        SparkSession spark = SparkSession.builder().master("local[1]").appName("kafkabatch-jvm-only")
            .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.session.timeZone", "UTC")
            .getOrCreate();
        for (Row r : spark.read().format("kafka-log").load(args[0])
                .groupBy("topic", "partition").count().orderBy("topic", "partition").collectAsList()) {
            System.out.println("ROW " + r.getString(0) + " " + r.getInt(1) + " " + r.getLong(2));
        }
        spark.stop();
    }
}
"""


@pytest.mark.spark
def test_a_jvm_that_never_saw_python(jar, log, tmp_path):
    import pyspark

    classpath = f"{Path(pyspark.__file__).parent / 'jars'}/*{os.pathsep}{jar}"
    (tmp_path / "Main.java").write_text(MAIN_JAVA)
    subprocess.run(
        ["javac", "--release", "17", "-cp", classpath, "-d", str(tmp_path), str(tmp_path / "Main.java")],
        check=True,
        capture_output=True,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    # What spark-submit adds to every JVM it starts (JavaModuleOptions), for Arrow's direct buffers
    # on Java 17: a plain `java` running Spark needs it whatever the data source.
    opens = ["--add-opens=java.base/java.nio=ALL-UNNAMED", "-Dio.netty.tryReflectionSetAccessible=true"]
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    done = subprocess.run(
        ["java", *opens, f"-Djava.io.tmpdir={tmpdir}", "-cp", f"{tmp_path}{os.pathsep}{classpath}", "Main", str(log)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    got = [line.split()[1:] for line in done.stdout.splitlines() if line.startswith("ROW ")]
    want: dict[tuple[str, int], int] = {}
    for r in rows_of(expected_table(log)):
        want[(r[0], r[1])] = want.get((r[0], r[1]), 0) + 1
    assert [(t, int(p), int(n)) for t, p, n in got] == [(t, p, n) for (t, p), n in sorted(want.items())]
    # the packed library, extracted to a folder named by its SHA-256
    (extracted,) = tmpdir.glob("kafkabatch-*/*kafkabatch_jni*")
    assert extracted.parent.name == "kafkabatch-" + hashlib.sha256(extracted.read_bytes()).hexdigest()
    # -Dkafkabatch.native.path replaces the library packed in the jar
    elsewhere = tmp_path / "elsewhere" / "libkafkabatch_jni.so"
    done = subprocess.run(
        ["java", *opens, f"-Dkafkabatch.native.path={elsewhere}", "-cp", f"{tmp_path}{os.pathsep}{classpath}"]
        + ["Main", str(log)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and str(elsewhere) in done.stderr


@pytest.mark.spark
def test_size_estimate_is_the_planned_segments_bytes(jvm_spark, log):
    df = jvm_spark.read.format(SOURCE).load(str(log))
    estimate = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    # every listed segment, whole (the folder being deleted is not listed)
    assert estimate == sum(Path(s.path).stat().st_size for s in list_segments(log)) > 0


@pytest.mark.spark
def test_a_remote_root_on_an_s3_server(jvm_spark, generated, moto_s3):
    """``s3://`` roots go through the core's object stores (moto's S3 server;
    the endpoint and keys in the URI's query, as pyarrow's URIs take them),
    with the rows of the same folder read in process."""
    from pyarrow import fs as pafs

    filesystem, endpoint, _ = moto_s3
    pafs.copy_files(str(generated), "tiered/gen", destination_filesystem=filesystem)
    uri = f"s3://tiered/gen/?endpoint_override={endpoint}&scheme=http&access_key=test&secret_key=test&region=us-east-1"
    got = jvm_spark.read.format(SOURCE).load(uri).select("topic", "partition", "offset").collect()
    want = kb.scan_log(generated).read_all()
    assert sorted((r.topic, r.partition, r.offset) for r in got) == sorted(
        zip(want["topic"].to_pylist(), want["partition"].to_pylist(), want["offset"].to_pylist())
    )


@pytest.mark.spark
def test_kafka_log_is_the_jvm_source_after_register(jvm_spark, generated):
    """With the jar on the classpath, register() leaves ``kafka-log`` to the JVM
    source: its scan (no Python worker), filters pushed by default, and a loaded
    DataFrame's later query that pushes nothing reads every row."""
    kbs.register(jvm_spark)
    assert kbs.jvm_source_name(jvm_spark) == "kafka-log"
    df = jvm_spark.read.format("kafka-log").load(str(generated))
    plan = explained(df.where("offset < 5"))
    assert "ColumnarToRow" in plan and "pushed=[offset IS NOT NULL, offset < 5]" in plan, plan
    total = df.count()
    assert total == kb.scan_log(generated).read_all().num_rows
    t = df.selectExpr("max(timestamp)").first()[0]
    newest = df.where(df.timestamp >= t).count()
    assert 0 < newest < total
    assert df.count() == total
    python = jvm_spark.read.format("kafka-log-python").load(str(generated))
    assert "(Python)" in python._jdf.queryExecution().executedPlan().toString()
