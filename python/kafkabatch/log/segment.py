"""One segment file read whole or by offset/time bounds (``kb.read_segment``).

>>> kb.read_segment("orders-0/00000000000000000000.log", start_offset=100).num_rows  # doctest: +SKIP
900
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

import kafkabatch.log.fs as fs
import kafkabatch.log.tiered as tiered
from kafkabatch import _kafkabatch as _native
from kafkabatch._decode import DEFAULT_MAX_DECOMPRESSED_SIZE, SCHEMA, aborted_pairs, decode, stream_table
from kafkabatch._kafkabatch import KafkaBatchError
from kafkabatch._util import check_keywords, keyword_names, mapped_file, topic_partition_of_folder
from kafkabatch.internal import decode_internal_columns, internal_schema, pop_internal
from kafkabatch.log.bounds import parse_timestamp
from kafkabatch.log.errors import in_file
from kafkabatch.log.index import read_txn_index
from kafkabatch.log.roots import Roots, root_list
from kafkabatch.log.seek import seek_range
from kafkabatch.values.spec import VALUE_OPTIONS, parse_columns, typed_options

if TYPE_CHECKING:
    from pyarrow import fs as pafs


def topic_partition_from_path(path: str | os.PathLike[str]) -> tuple[str, int] | None:
    """The ``(topic, partition)`` of a segment from its folder ``<topic>-<partition>``.

    >>> topic_partition_from_path("/data/orders-3/00000000000000000000.log")
    ('orders', 3)
    """
    return topic_partition_of_folder(Path(path).absolute().parent.name)


def read_segment(
    path: Roots,
    *,
    topic: str | None = None,
    partition: int | None = None,
    start_offset: int | None = None,
    end_offset: int | None = None,
    start_timestamp: Any = None,
    end_timestamp: Any = None,
    filesystem: pafs.FileSystem | None = None,
    **options: Any,
) -> pa.Table:
    """Decode a Kafka log segment file (memory-mapped) into a table.

    Topic and partition come from the parent folder ``<topic>-<partition>``
    unless given. Other keyword arguments are those of :func:`decode`. With
    ``isolation="read_committed"`` and no ``aborted_transactions``, the
    segment's ``.txnindex`` (when present) adds its aborted transactions to
    the markers found in the data; transactions still open stay hidden.

    >>> kb.read_segment("orders-0/00000000000000000000.log").num_rows  # doctest: +SKIP
    1000

    A list of segments (paths or URIs) is read as :func:`scan_log` reads a list:
    in topic, partition, offset order, each offset once.

    A remote segment is read where it lives: an Aiven remote-storage segment
    by its ``.log`` or ``.rsm-manifest`` key (local path or URI; encrypted
    ones need ``tiered_keys``, key-pair id → PEM private key), a
    LocalTieredStorage segment by its ``.log``, any segment by a URI. Only
    the chunks and index slices the bounds need are fetched.

    >>> kb.read_segment("s3://b/t/orders-MWJ6FHTfRYy67jzwZdeqSQ/0/00000000000000000000-tqimKeZwStOEOwRzT3L5oQ.rsm-manifest",
    ...                 tiered_keys={"key-1": "private.pem"}).num_rows  # doctest: +SKIP
    1000

    ``filesystem`` (a :class:`pyarrow.fs.FileSystem`): ``path`` is a path in
    it, read through it as :func:`scan_log` reads (see there).

    >>> from pyarrow import fs
    >>> s3 = fs.S3FileSystem(region="eu-west-1")  # credentials: AWS_PROFILE, ~/.aws, SSO...  # doctest: +SKIP
    >>> kb.read_segment("my-bucket/kafka/orders-0/00000000000000000000.log", filesystem=s3).num_rows  # doctest: +SKIP
    1000
    """
    check_keywords("read_segment", options, _READ_SEGMENT_KEYWORDS)
    filesystem = fs.filesystem_of(filesystem)
    paths = root_list(path, filesystem=filesystem)
    several = len(paths) > 1 or filesystem is not None  # a caller's file system: read by scan_log, through it
    text = paths[0]
    one: str | os.PathLike[str] = path if isinstance(path, (str, os.PathLike)) else text
    internal = pop_internal(options)
    if internal is not None and not several and not (tiered.remote_name(text) is not None or fs.is_remote(text)):
        if options.get("value_format", "binary") != "binary" or options.get("key_format", "binary") != "binary":
            raise ValueError("internal= decodes the raw key and value: leave value_format and key_format binary")
        table = read_segment(
            one,
            topic=topic,
            partition=partition,
            start_offset=start_offset,
            end_offset=end_offset,
            start_timestamp=start_timestamp,
            end_timestamp=end_timestamp,
            **options,
        )
        if topic is None:
            found = topic_partition_from_path(one)
            topic = None if found is None else found[0]
        kind = internal.kind_for(topic)
        return decode_internal_columns(table, internal, None if kind is None else internal_schema(kind, internal))
    if internal is not None:  # remote: scan_log decodes them
        options.update(internal=internal.kind or dict(internal.topics), definitions=internal.definitions)
        options["internal_json"] = internal.json
    if several or tiered.remote_name(text) is not None or fs.is_remote(text) or "tiered_keys" in options:
        from kafkabatch.log.scan import scan_log

        return scan_log(
            paths if several else text,
            filesystem=filesystem,
            topic=topic,
            partition=partition,
            start_offset=start_offset,
            end_offset=end_offset,
            start_timestamp=start_timestamp,
            end_timestamp=end_timestamp,
            **options,
        ).read_all()
    if topic is None or partition is None:
        found = topic_partition_from_path(one)
        if found is not None:
            topic = found[0] if topic is None else topic
            partition = found[1] if partition is None else partition
    if options.get("isolation") == "read_committed" and options.get("aborted_transactions") is None:
        txn_index = Path(one).with_suffix(".txnindex")
        if txn_index.is_file():
            options["aborted_transactions"] = read_txn_index(txn_index)
            options.setdefault("hide_open_transactions", True)
    with mapped_file(one) as mapped:
        try:
            if start_offset is None and end_offset is None and start_timestamp is None and end_timestamp is None:
                return decode(mapped, topic=topic, partition=partition, **options)
            return _read_bounded(
                one, mapped, topic, partition, start_offset, end_offset, start_timestamp, end_timestamp, options
            )
        except KafkaBatchError as error:
            raise in_file(error, one, 0, bytes(mapped[:512])) from None


#: What read_segment() takes: its own keywords and decode()'s.
_READ_SEGMENT_KEYWORDS = list(
    dict.fromkeys([*keyword_names(read_segment)[1:], *keyword_names(decode)[1:], "tiered_keys"])  # not path / data
)


def _read_bounded(
    path: str | os.PathLike[str],
    data: Any,
    topic: str | None,
    partition: int | None,
    start_offset: int | None,
    end_offset: int | None,
    start_timestamp: Any,
    end_timestamp: Any,
    options: dict[str, Any],
) -> pa.Table:
    """Seek with the index files, decode that range, then filter exactly."""
    import pyarrow.compute as pc

    start_us = None if start_timestamp is None else parse_timestamp(start_timestamp)
    end_us = None if end_timestamp is None else parse_timestamp(end_timestamp)
    start, end = seek_range(
        path,
        data,
        start_offset=start_offset,
        end_offset=end_offset,
        start_timestamp_ms=None if start_us is None else start_us // 1000,
    )
    value_options = typed_options({k: v for k, v in options.items() if k in VALUE_OPTIONS})
    report_options = {k: v for k, v in options.items() if k != "threads" and k not in VALUE_OPTIONS}
    stream = _native.decode(
        data,
        topic=topic,
        partition=partition,
        start=start,
        end=end,
        validate_crc=report_options.pop("validate_crc", True),
        include_control=report_options.pop("include_control", False),
        on_error=report_options.pop("on_error", "raise"),
        max_decompressed_size=report_options.pop("max_decompressed_size", DEFAULT_MAX_DECOMPRESSED_SIZE),
        isolation=report_options.pop("isolation", "read_uncommitted"),
        aborted_transactions=aborted_pairs(report_options.pop("aborted_transactions", None)),
        hide_open_transactions=report_options.pop("hide_open_transactions", None),
        threads=options.get("threads"),
    )
    if report_options:
        raise TypeError(f"read_segment() got unexpected keyword argument(s): {', '.join(sorted(report_options))}")
    table = stream_table(stream)
    conditions = []
    if start_offset is not None:
        conditions.append(pc.greater_equal(table["offset"], start_offset))
    if end_offset is not None:
        conditions.append(pc.less(table["offset"], end_offset))
    ts_type = SCHEMA.field("timestamp").type
    if start_us is not None:
        conditions.append(pc.greater_equal(table["timestamp"], pa.scalar(start_us, ts_type)))
    if end_us is not None:
        conditions.append(pc.less(table["timestamp"], pa.scalar(end_us, ts_type)))
    mask = conditions[0]
    for condition in conditions[1:]:
        mask = pc.and_(mask, condition)
    table = table.filter(mask)
    return table if value_options is None else parse_columns(table, value_options, options.get("threads"))
