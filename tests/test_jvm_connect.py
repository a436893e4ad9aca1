"""The JVM data source behind a Spark Connect server.

A Spark Connect server started with ``--jars <kafkabatch jar>`` (and no
Python worker configured) serves ``kafka-log-jvm`` to a Connect client that
has no kafkabatch at all: the client below makes ``import kafkabatch`` fail
before it starts, so only PySpark's Connect client runs there. Its rows are compared with the same read
in process.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_logdir import build_log, expected_table, rows_of

pytest.importorskip("pyspark")
try:  # the Connect client's own dependencies (pyspark[connect])
    import grpc_status  # noqa: F401
    import pyspark.sql.connect.session  # noqa: F401
except ImportError as error:
    pytest.skip(f"no Spark Connect client here ({error})", allow_module_level=True)

import kafkabatch.spark as kbs  # noqa: E402

if shutil.which("javac") is None:
    pytest.skip("no javac on PATH: the JVM data source's jar can't be built here", allow_module_level=True)

pytestmark = pytest.mark.spark

#: Seconds a Connect server may take to start on a loaded 2-core machine.
START_TIMEOUT = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """``sc://127.0.0.1:<port>`` of a Spark Connect server holding kafkabatch's jar."""
    import pyspark

    home = Path(pyspark.__file__).parent
    port = _free_port()
    work = tmp_path_factory.mktemp("connect")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["SPARK_HOME"] = str(home)
    log = (work / "server.log").open("w")
    server = subprocess.Popen(
        [str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
        + ["--master", "local[2]", "--jars", kbs.jar_path()]
        + ["--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false"]
        + ["--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1"]
        + ["--conf", "spark.sql.session.timeZone=UTC", "spark-internal"],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while "Spark Connect server started" not in (work / "server.log").read_text(errors="replace"):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the Spark Connect server did not start:\n" + (work / "server.log").read_text()[-4000:])
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


CLIENT = textwrap.dedent(
    """
    import json, sys
    sys.modules["kafkabatch"] = None  # this client has no kafkabatch: importing it raises ImportError
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    df = spark.read.format("kafka-log-jvm").load(sys.argv[2])
    rows = [[r.topic, r.partition, r.offset, r.value.hex() if r.value is not None else None] for r in df.collect()]
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW logs USING `kafka-log-jvm` OPTIONS (path '{sys.argv[2]}')")
    counts = [[r[0], r[1]] for r in spark.sql("SELECT topic, count(*) FROM logs GROUP BY topic ORDER BY topic").collect()]
    print(json.dumps({"rows": rows, "counts": counts}))
    """
)


def test_a_connect_client_without_kafkabatch_reads_through_the_server(connect_server, tmp_path):
    log = build_log(tmp_path / "kafka-data")
    client = tmp_path / "client"
    client.mkdir()
    (client / "read.py").write_text(CLIENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK") and k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(client / "read.py"), connect_server, str(log)],
        cwd=client,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    want = sorted([r[0], r[1], r[2], r[4].hex() if r[4] is not None else None] for r in rows_of(expected_table(log)))
    assert sorted(got["rows"]) == want
    per_topic: dict[str, int] = {}
    for topic, *_ in want:
        per_topic[topic] = per_topic.get(topic, 0) + 1
    assert got["counts"] == [[t, n] for t, n in sorted(per_topic.items())]
