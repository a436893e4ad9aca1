"""Registering the source with a SparkSession, and checking that Spark's Python workers import this kafkabatch.

>>> kbs.register(spark)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from typing import Any

from kafkabatch._kafkabatch import __version__
from kafkabatch.spark.batch import KafkaLogPushdownReader
from kafkabatch.spark.options import FALSE
from kafkabatch.spark.source import (
    PYTHON_SOURCE_NAME,
    KafkaLogDataSource,
    KafkaLogDataSourceWithoutPushdown,
    KafkaLogPythonDataSource,
    KafkaLogPythonDataSourceWithoutPushdown,
)

log = logging.getLogger("kafkabatch.spark")


class WorkerImportError(RuntimeError):
    """Spark's Python workers can't import this kafkabatch (see :func:`register`)."""


#: Spark applications whose Python workers were found to import this kafkabatch.
_CHECKED_APPLICATIONS: set[str] = set()


#: Spark's switch for Python data sources' filter pushdown (PySpark 4.1+).
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any = None, *, check_workers: bool | None = None, filter_pushdown: bool | None = None) -> None:
    """Register the ``kafka-log`` data source with a SparkSession (the active
    one by default), saying once per Spark application which source it is.

    With the jar of :func:`kafkabatch.spark.jar_path` on the session's
    classpath, ``kafka-log`` is the JVM source (the jar registers it; Spark
    resolves the name to it) and this registers the Python source as
    ``kafka-log-python`` only. Without the jar, ``kafka-log`` is the Python
    source, registered here under both names.

    Where ``kafka-log`` is the Python source, register also checks once per
    Spark application that its Python workers import this same kafkabatch
    version. A worker started with another interpreter would otherwise fail
    deep inside the first task (``ModuleNotFoundError: No module named
    'kafkabatch'``); the check runs one tiny task and raises
    :class:`WorkerImportError` saying what to set instead. Turn it off with
    ``check_workers=False`` or the Spark conf
    ``spark.kafkabatch.checkWorkers=false`` (clusters where starting a task
    at registration is unwanted); turn it on where the JVM source is
    ``kafka-log`` with ``check_workers=True`` or the conf set to ``true``
    (for ``kafka-log-python`` and the UDFs of :mod:`kafkabatch.spark`).

    Filter pushdown: ``WHERE`` clauses on ``topic``, ``partition``,
    ``offset`` and ``timestamp`` skip folders, segments and batches that
    can't match. The JVM source always takes them (Spark keeps each
    query's pushed read to that query). Spark hands filters to Python sources only with
    ``spark.sql.python.filterPushdown.enabled=true``, so ``register`` sets
    it for the session, unless ``filter_pushdown=False`` or the session
    already sets it to ``false`` explicitly. Turning it off (either way, or
    setting the conf to false later) costs speed, never rows: Spark then
    filters every row itself.

    ``filter_pushdown=None`` (the default) pushes filters only where Spark
    keeps each query's planned read to that query (PySpark builds with
    ``DataSourceReader.pushLimit``, Spark 5.0+). PySpark 4.1-4.3 store the
    read planned with pushed filters on the loaded DataFrame's source and
    reuse it for a later query on the same DataFrame that pushes no filter
    (a plain ``count()``, an ``OR``), returning the earlier query's rows
    only; there pushdown is opt-in, ``filter_pushdown=True``, for code that
    loads a DataFrame per query.

    >>> import kafkabatch.spark as kbs
    >>> kbs.register(spark)                                                  # doctest: +SKIP
    >>> df = spark.read.format("kafka-log").load("/var/lib/kafka/data")     # doctest: +SKIP
    """
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:
            raise RuntimeError("no active SparkSession: pass one, kbs.register(spark)")
    if filter_pushdown is None:
        filter_pushdown = scan_scoped_reads() and not _set_false(spark, FILTER_PUSHDOWN_CONF)
        if KafkaLogPushdownReader is not None and not scan_scoped_reads():
            log.info(
                "kafkabatch.spark: filter pushdown is opt-in on PySpark %s (register(spark, filter_pushdown=True), "
                "then load() a DataFrame per query): this Spark reuses a loaded DataFrame's read planned with "
                "pushed filters for its later queries that push none",
                _pyspark_version(),
            )
    elif filter_pushdown and KafkaLogPushdownReader is not None and not scan_scoped_reads():
        log.warning(
            "kafkabatch.spark: filter pushdown on PySpark %s: Spark reuses a loaded DataFrame's last read "
            "planned with pushed filters for its later queries that push none; load() a DataFrame per query",
            _pyspark_version(),
        )
    if filter_pushdown and KafkaLogPushdownReader is not None:
        try:
            spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
        except Exception as error:  # a cluster that forbids it: correct, only slower
            log.warning(
                "kafkabatch.spark: could not set %s=true (%s); filters are not pushed", FILTER_PUSHDOWN_CONF, error
            )
    jvm_name = jvm_source_name(spark)
    if jvm_name != KAFKA_LOG:  # Spark refuses a Python source named as a JVM one
        try:
            spark.dataSource.register(KafkaLogDataSource if filter_pushdown else KafkaLogDataSourceWithoutPushdown)
        except Exception as error:  # a Spark Connect server with the jar: its classpath is unseen from here
            if "DATA_SOURCE_ALREADY_EXISTS" not in str(error):
                raise
            jvm_name = KAFKA_LOG
    jvm_is_kafka_log = jvm_name == KAFKA_LOG
    spark.dataSource.register(KafkaLogPythonDataSource if filter_pushdown else KafkaLogPythonDataSourceWithoutPushdown)
    _say_which_source(spark, jvm_name)
    if check_workers is None:
        default = "false" if jvm_is_kafka_log else "true"
        setting = str(spark.conf.get("spark.kafkabatch.checkWorkers", default)).strip().lower()
        check_workers = setting not in FALSE
    if check_workers:
        check_worker_import(spark)


#: The JVM source's class, in the jar of :func:`kafkabatch.spark.jar_path`.
JVM_SOURCE_CLASS = "io.github.kafkabatch.spark.KafkaLogSource"

#: The name users read with: the JVM source where its jar is on the classpath.
KAFKA_LOG = "kafka-log"

#: Spark applications already told which source ``kafka-log`` is.
_TOLD_APPLICATIONS: set[str] = set()


def jvm_source_name(spark: Any) -> str | None:
    """The short name of the JVM source (``kafka-log``; it also answers to
    ``kafka-log-jvm``) when its jar is on ``spark``'s classpath, else None (no
    jar, or a Spark Connect client, which can't see the server's classpath).

    >>> kbs.jvm_source_name(spark)  # doctest: +SKIP
    'kafka-log'
    """
    try:
        jvm = spark._jvm  # a classic session's py4j gateway; Spark Connect has none
        if jvm is None:
            return None
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        source = jvm.java.lang.Class.forName(JVM_SOURCE_CLASS, False, loader)
        return str(source.getField("SHORT_NAME").get(None))
    except Exception:  # no gateway, or no such class: the Python source only
        return None


def _say_which_source(spark: Any, jvm_name: str | None) -> None:
    """Log once per Spark application which source ``kafka-log`` names
    (``jvm_name``: :func:`jvm_source_name`'s answer)."""
    try:
        application = str(spark.sparkContext.applicationId)
    except Exception:  # Spark Connect
        application = "connect"
    if application in _TOLD_APPLICATIONS:
        return
    _TOLD_APPLICATIONS.add(application)
    if jvm_name is None:
        log.info(
            "kafkabatch.spark: kafka-log is the Python source (kafkabatch %s); add kafkabatch.spark.jar_path() to "
            "spark.jars for the JVM source",
            __version__,
        )
    elif jvm_name == KAFKA_LOG:
        log.info(
            "kafkabatch.spark: kafka-log is the JVM source (%s on the classpath); the Python source is %s",
            JVM_SOURCE_CLASS,
            PYTHON_SOURCE_NAME,
        )
    else:
        log.info(
            "kafkabatch.spark: kafka-log is the Python source (also %s); the JVM source is %s",
            PYTHON_SOURCE_NAME,
            jvm_name,
        )


def scan_scoped_reads() -> bool:
    """Whether this PySpark keeps the read planned with pushed filters to its
    own scan (Spark 5.0+, which also brought ``DataSourceReader.pushLimit``).
    Before, the source's planned read outlives the query that pushed the
    filters (see :func:`register`)."""
    from pyspark.sql.datasource import DataSourceReader

    return hasattr(DataSourceReader, "pushLimit")


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def _set_false(spark: Any, key: str) -> bool:
    """Whether the session sets ``key`` to false explicitly (not by default)."""
    try:
        explicit = spark.conf.getAll
        value = explicit.get(key) if isinstance(explicit, dict) else None
    except Exception:  # an older PySpark without RuntimeConfig.getAll
        value = None
    return value is not None and str(value).strip().lower() in FALSE


def _probe_worker(_: Any) -> tuple[str, str, str | None, str | None]:
    """Runs in a Spark Python worker: its interpreter, Python version, and
    kafkabatch version or import error. Pickled by value (see
    :func:`check_worker_import`), so unpickling it needs no kafkabatch."""
    import sys

    try:
        import kafkabatch
    except BaseException as error:  # any failure to import is the answer
        return sys.executable, sys.version.split()[0], None, f"{type(error).__name__}: {error}"
    return sys.executable, sys.version.split()[0], str(kafkabatch.__version__), None


def _interpreter_advice(spark: Any) -> str:
    """What makes Spark's Python workers run a given interpreter: the
    ``PYSPARK_PYTHON`` environment variable, read when the SparkContext
    starts. ``spark.pyspark.python`` reaches them only through
    ``spark-submit``; set in a session builder it is ignored, so say so when
    it is set."""
    try:
        conf = spark.sparkContext.getConf().get("spark.pyspark.python")
    except Exception:  # no SparkContext to ask
        conf = None
    advice = (
        f"set the PYSPARK_PYTHON environment variable to a Python with kafkabatch {__version__} installed before "
        'the SparkSession starts (os.environ["PYSPARK_PYTHON"] = sys.executable, or spark-submit --conf '
        "spark.pyspark.python=...)"
    )
    if conf:
        advice += f"; spark.pyspark.python={conf} set in a session builder does not reach the workers"
    return advice


def check_worker_import(spark: Any) -> None:
    """Run one task in ``spark``'s Python workers and raise
    :class:`WorkerImportError` unless they import kafkabatch
    ``kafkabatch.__version__``. Cached per Spark application.

    >>> kbs.check_worker_import(spark)                                      # doctest: +SKIP
    """
    import sys

    from pyspark import cloudpickle  # the pickler PySpark ships functions with

    try:
        context = spark.sparkContext
        application = f"{context.applicationId}"
    except Exception:  # Spark Connect: no SparkContext (nor RDDs) on the client
        log.info("kafkabatch.spark: Spark Connect session, the worker check is skipped")
        return
    if application in _CHECKED_APPLICATIONS:
        return
    import pickle

    # By value, not by reference to kafkabatch.spark: a worker without
    # kafkabatch must still be able to run it and say so.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        probe = pickle.loads(cloudpickle.dumps(_probe_worker))
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    try:
        executable, version, found, error = context.parallelize([0], 1).map(probe).collect()[0]
    except Exception as failure:
        first = next((line for line in str(failure).splitlines() if line.strip()), type(failure).__name__)
        raise WorkerImportError(
            f"kafkabatch.spark.register: Spark could not run a Python task to check its workers ({first[:300]}). "
            f"S{_interpreter_advice(spark)[1:]} (this driver runs {sys.executable}); or skip the check "
            "with register(spark, check_workers=False)"
        ) from None
    if found != __version__:
        problem = f"can't import kafkabatch ({error})" if found is None else f"import kafkabatch {found}"
        raise WorkerImportError(
            f"Spark's Python workers ({executable}, Python {version}) {problem}, but this driver runs kafkabatch "
            f"{__version__} ({sys.executable}): {_interpreter_advice(spark)}, or install that wheel on the "
            "cluster's workers. "
            "Skip this check with register(spark, check_workers=False) or spark.kafkabatch.checkWorkers=false"
        )
    _CHECKED_APPLICATIONS.add(application)
