"""What the Spark benches share: one local session builder and the generated log folder.

The session has the test suite's settings (``tests/conftest.py``'s ``spark`` fixture):
``local[2]``, no UI or console progress, two shuffle partitions, UTC, the driver on
127.0.0.1; a bench adds its own settings (driver memory, ...) with ``conf``. Only public
kafkabatch names are used (``kafkabatch.spark.register``, ``kafkabatch.generate``)::

    from _spark import ensure_folder, spark_session

    spark = spark_session("kafkabatch-bench-x", conf={"spark.driver.memory": "4g"})
    spark.read.format("kafka-log").load(folder).count()

Code that runs in Spark's Python workers (UDF bodies) stays in the bench script itself,
which Spark ships by value; this module is imported on the driver only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

#: The settings every session gets, as the test suite's ``spark`` fixture has them.
BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def spark_session(app_name: str, conf: dict[str, str] | None = None, log_level: str = "ERROR") -> Any:
    """A ``local[2]`` SparkSession with :data:`BASE_CONF` plus ``conf``, its Python
    workers on this interpreter, and kafkabatch's data sources registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kafkabatch.spark as kbs

    builder = SparkSession.builder.master("local[2]").appName(app_name)
    for key, value in {**BASE_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    kbs.register(session)
    return session


def ensure_folder(folder: Path, size: str, seed: int) -> None:
    """Generate a log folder of about ``size`` (magic-2 topics) unless ``folder`` holds one."""
    if folder.exists() and any(folder.iterdir()):
        return
    import kafkabatch as kb
    from kafkabatch.generate import DEFAULT_TOPICS

    summary = kb.generate(
        folder, size=size, seed=seed, topics=[t for t in DEFAULT_TOPICS if t.magic == 2], progress=False
    )
    print(summary, file=sys.stderr)


def log_bytes(folder: Path) -> int:
    """The bytes of the ``<topic>-<partition>/*.log`` segments under ``folder``."""
    return sum(f.stat().st_size for f in folder.glob("*/*.log"))
