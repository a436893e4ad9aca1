"""The JVM data source's jar: Java classes plus the native library, built by ``make jvm``.

>>> from pyspark.sql import SparkSession  # doctest: +SKIP
>>> spark = SparkSession.builder.config("spark.jars", jar_path()).getOrCreate()  # doctest: +SKIP
>>> spark.read.format("kafka-log-jvm").load("/var/lib/kafka/data")  # doctest: +SKIP
"""

from __future__ import annotations

from importlib import resources

#: The jar's file name, under ``kafkabatch/spark/jars/``.
JAR_NAME = "kafkabatch-spark.jar"


def jar_path() -> str:
    """The path of the jar holding the ``kafka-log-jvm`` data source (``spark.jars``,
    ``spark-submit --jars``).

    Raises :class:`FileNotFoundError` when this installation has none: a source
    checkout builds it with ``make jvm``.
    """
    jar = resources.files("kafkabatch.spark") / "jars" / JAR_NAME
    if not jar.is_file():
        raise FileNotFoundError(
            f"kafkabatch's Spark jar is not installed ({jar}): in a source checkout build it with `make jvm` "
            "(needs a JDK 17+); a wheel for this platform should carry it"
        )
    return str(jar)
