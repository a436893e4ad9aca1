"""Kafka log folders as a polars ``LazyFrame``: ``scan_polars``, an IO plugin with predicate, projection and row-count pushdown.

>>> import polars as pl
>>> lf = scan_polars("/var/lib/kafka/data", value_format="json")                   # doctest: +SKIP
>>> lf.filter(pl.col("timestamp") >= pl.lit(cutoff)).select("offset", "value").collect()  # doctest: +SKIP

polars is optional: it is imported when :func:`scan_polars` is called.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafkabatch._decode import SCHEMA
from kafkabatch.log.fs import filesystem_of
from kafkabatch.log.prune import NotPushable, RecordFilter
from kafkabatch.log.roots import Roots, list_roots, root_list
from kafkabatch.log.scan import scan_log, typed_schema
from kafkabatch.values.spec import VALUE_OPTIONS, specs, typed_options

if TYPE_CHECKING:
    import polars
    from pyarrow import fs as pafs

#: polars' comparison operators in a serialized expression, as RecordFilter's.
_OPS = {"Eq": "==", "EqValidity": "==", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}

#: The operator with its sides swapped (``5 < col`` is ``col > 5``).
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

#: The operator of ``~(col op value)`` on a column that is never null.
_NEGATED = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<", "in": "not in"}

_TIME_UNITS = {"Milliseconds": 1000, "Microseconds": 1}


def record_filter(predicate: Any) -> RecordFilter:
    """What kafkabatch can prune by in a polars predicate: the conjuncts on
    ``topic``, ``partition``, ``offset`` and ``timestamp`` it recognizes in
    the expression's serialized form. Anything else (or an expression this
    polars serializes differently) prunes nothing; the whole predicate is
    applied to the rows either way.

    >>> import polars as pl
    >>> record_filter((pl.col("offset") >= 10) & (pl.col("topic") == "orders")).describe()
    "offset >= 10 AND topic == 'orders'"
    """
    if predicate is None:
        return RecordFilter()
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # a polars without JSON serialization: no pruning
        return RecordFilter()
    return RecordFilter.all_of(_conjuncts(tree))


def _conjuncts(node: Any) -> list[RecordFilter]:
    """The pushable filters of a tree of ANDs, left to right; a long chain of
    ``&`` is walked with a list, not one call per level."""
    out: list[RecordFilter] = []
    todo = [node]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict):
            continue
        binary = node.get("BinaryExpr")
        if isinstance(binary, dict) and binary.get("op") in ("And", "LogicalAnd"):
            todo += [binary.get("right"), binary.get("left")]  # left is taken first
            continue
        try:
            out.append(_predicate(node))
        except (NotPushable, KeyError, TypeError, ValueError, IndexError):
            pass
    return out


def _predicate(node: dict[str, Any], negated: bool = False) -> RecordFilter:
    if "BinaryExpr" in node:
        binary = node["BinaryExpr"]
        op = _OPS[binary["op"]]
        left, right = binary["left"], binary["right"]
        if "Column" in right and "Literal" in left:
            left, right, op = right, left, _FLIPPED[op]
        column = left["Column"]
        value = _literal(right["Literal"], column)
        if negated:
            op = _NEGATED[op]
        return RecordFilter.where(column, op, value)
    function = node["Function"]
    kind = function["function"]
    inputs = function["input"]
    if kind == {"Boolean": "Not"}:
        if negated:
            raise NotPushable("double negation")
        return _predicate(inputs[0], negated=True)
    if isinstance(kind, dict) and "IsIn" in (kind.get("Boolean") or {}):
        column = inputs[0]["Column"]
        values = _literal(inputs[1]["Literal"], column)
        return RecordFilter.where(column, "not in" if negated else "in", tuple(values))
    if kind in ({"StringExpr": "StartsWith"}, {"StringExpr": "EndsWith"}) and not negated:
        column = inputs[0]["Column"]
        op = "startswith" if kind["StringExpr"] == "StartsWith" else "endswith"
        return RecordFilter.where(column, op, _literal(inputs[1]["Literal"], column))
    raise NotPushable(str(kind))


def _literal(literal: dict[str, Any], column: str) -> Any:
    if "Dyn" in literal:
        dyn = literal["Dyn"]
        if "Int" in dyn:
            return int(dyn["Int"])
        raise NotPushable(str(dyn))
    scalar = literal["Scalar"]
    ((kind, value),) = scalar.items()
    if kind == "String":
        return str(value)
    if kind in ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"):
        return int(value)
    if kind == "Datetime" and column == "timestamp":
        number, unit = value[0], value[1]
        if unit not in _TIME_UNITS:
            raise NotPushable(f"time unit {unit}")
        micros = int(number) * _TIME_UNITS[unit]
        return _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(microseconds=micros)
    if kind == "List":  # an Arrow IPC stream of the values (is_in)
        table = pa.ipc.open_stream(bytes(value)).read_all()
        return table.column(0).to_pylist()
    raise NotPushable(kind)


def scan_polars(path: Roots, *, filesystem: pafs.FileSystem | None = None, **options: Any) -> polars.LazyFrame:
    """A polars ``LazyFrame`` over the Kafka log under ``path`` (what
    :func:`kafkabatch.scan_log` takes: a path, URI or glob, or a list of them;
    with the same keyword options:
    ``topic``, ``partition``, ``start_offset``, ``start_timestamp``,
    ``isolation``, ``value_format``...), read when collected.

    polars hands the scan what the query needs, and the scan reads only that:

    * **predicates** on ``topic``, ``partition``, ``offset`` and
      ``timestamp`` (comparisons, ``is_in``, ``~``, ``str.starts_with``)
      skip folders, segments and batches that can't match (as the Spark
      source's filter pushdown does); the whole predicate is then applied to
      the rows, so results are those of filtering an eager read;
    * **projection**: only the selected columns are handed over, and a
      ``value``/``key`` not selected (nor used by the predicate) is not
      parsed with ``value_format``/``key_format``;
    * **n_rows** (``head``, ``limit``): reading stops once enough rows
      matched; **batch size**: rows per DataFrame handed to polars.

    ``filesystem`` (a :class:`pyarrow.fs.FileSystem`): ``path`` is a path in
    it, listed and read through it (see :func:`kafkabatch.scan_log`).

    >>> import polars as pl
    >>> lf = kb.scan_polars("/var/lib/kafka/data/orders-*")                    # doctest: +SKIP
    >>> lf.filter(pl.col("offset") >= 1000).select("offset", "value").head(5).collect()  # doctest: +SKIP
    >>> from pyarrow import fs
    >>> s3 = fs.S3FileSystem(region="eu-west-1")  # credentials: AWS_PROFILE, ~/.aws, SSO...  # doctest: +SKIP
    >>> kb.scan_polars("my-bucket/kafka/orders-*", filesystem=s3).select(pl.len()).collect()  # doctest: +SKIP
    """
    import polars as pl
    from polars.io.plugins import register_io_source

    value_keywords = {k: options.pop(k) for k in VALUE_OPTIONS if k in options}
    value_options = typed_options(value_keywords)
    filesystem = filesystem_of(filesystem)
    roots = root_list(path, filesystem=filesystem)
    segments = list_roots(
        roots,
        topic=options.get("topic"),
        partition=options.get("partition"),
        tiered_keys=options.get("tiered_keys"),
        filesystem=filesystem,
    )
    value_specs = [] if value_options is None else specs(value_options, topics=sorted({s.topic for s in segments}))
    arrow_schema = typed_schema(SCHEMA, value_specs)
    schema = pl.from_arrow(arrow_schema.empty_table()).schema  # type: ignore[union-attr]
    # check the options now, not when collected
    scan_log(path, filesystem=filesystem, **options, **value_keywords).close()

    def source(
        with_columns: list[str] | None, predicate: Any, n_rows: int | None, batch_size: int | None
    ) -> Iterator[Any]:
        needed = set(arrow_schema.names if with_columns is None else with_columns)
        if predicate is not None:
            needed |= set(predicate.meta.root_names())
        keywords = dict(value_keywords)
        for column in ("value", "key"):
            if column not in needed:  # not selected: not parsed
                for name in (f"{column}_format", f"{column}_schema"):
                    keywords.pop(name, None)
        where = record_filter(predicate)
        reader = scan_log(
            path, where=where, max_records_per_batch=batch_size or None, filesystem=filesystem, **options, **keywords
        )
        remaining = n_rows
        try:
            for batch in reader:
                frame = pl.from_arrow(pa.Table.from_batches([batch]), rechunk=False)
                assert isinstance(frame, pl.DataFrame)
                if predicate is not None:
                    frame = frame.filter(predicate)
                if with_columns is not None:
                    frame = frame.select(with_columns)
                if remaining is not None:
                    frame = frame.head(remaining)
                    remaining -= frame.height
                if frame.height:
                    yield frame
                if remaining == 0:
                    return
        finally:
            reader.close()

    return register_io_source(source, schema=schema, explain_name="kafka-log", explain_detail=", ".join(roots))
