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
from kafkabatch._decode import SCHEMA, aborted_pairs, decode
from kafkabatch._kafkabatch import KafkaBatchError
from kafkabatch._util import (
    check_keywords,
    keyword_names,
    mapped_file,
    segment_base_offset,
    topic_partition_of_folder,
)
from kafkabatch.internal import decode_internal_columns, internal_schema, pop_internal
from kafkabatch.log.bounds import Bounds, parse_timestamp
from kafkabatch.log.errors import in_file
from kafkabatch.log.index import base_offset_from_path, read_txn_index
from kafkabatch.log.roots import Roots, root_list
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
    bounded = not (start_offset is None and end_offset is None and start_timestamp is None and end_timestamp is None)
    if options.get("isolation") == "read_committed" and options.get("aborted_transactions") is None:
        options.pop("aborted_transactions", None)
        txn_index = Path(one).with_suffix(".txnindex")
        if txn_index.is_file() and not bounded:
            options["aborted_transactions"] = read_txn_index(txn_index)
            options.setdefault("hide_open_transactions", True)
    with mapped_file(one) as mapped:
        try:
            if not bounded:
                return decode(mapped, topic=topic, partition=partition, **options)
            size = len(mapped)
        except KafkaBatchError as error:
            raise in_file(error, one, 0, bytes(mapped[:512])) from None
    return _read_bounded(one, size, topic, partition, start_offset, end_offset, start_timestamp, end_timestamp, options)


#: What read_segment() takes: its own keywords and decode()'s.
_READ_SEGMENT_KEYWORDS = list(
    dict.fromkeys([*keyword_names(read_segment)[1:], *keyword_names(decode)[1:], "tiered_keys"])  # not path / data
)


def _read_bounded(
    path: str | os.PathLike[str],
    size: int,
    topic: str | None,
    partition: int | None,
    start_offset: int | None,
    end_offset: int | None,
    start_timestamp: Any,
    end_timestamp: Any,
    options: dict[str, Any],
) -> pa.Table:
    """Read the records of one local segment file in the bounds with the
    core's reader: sought with the ``.index``/``.timeindex`` beside it (a bad
    one warns and the whole file is read), batches whose headers rule them
    out left undecoded, rows filtered exactly; under ``read_committed``, the
    core's pre-pass over the file (with its ``.txnindex``, when present)
    decides, or a given ``aborted_transactions`` list (each listed
    transaction hidden until its producer's ABORT marker)."""
    from kafkabatch.log.listing import Segment
    from kafkabatch.log.scan import DEFAULT_MAX_CHUNK_BYTES, SegmentResult, read_in_core
    from kafkabatch.log.txn import Transaction, partition_transactions

    bounds = Bounds(
        start_offset,
        end_offset,
        None if start_timestamp is None else parse_timestamp(start_timestamp),
        None if end_timestamp is None else parse_timestamp(end_timestamp),
    )
    value_options = typed_options({k: v for k, v in options.items() if k in VALUE_OPTIONS})
    rest = {k: v for k, v in options.items() if k != "threads" and k not in VALUE_OPTIONS}
    native: dict[str, Any] = {
        k: rest.pop(k) for k in ("validate_crc", "include_control", "on_error", "max_decompressed_size") if k in rest
    }
    isolation = rest.pop("isolation", "read_uncommitted")
    listed = aborted_pairs(rest.pop("aborted_transactions", None))
    hide_open = rest.pop("hide_open_transactions", None)
    if rest:
        raise TypeError(f"read_segment() got unexpected keyword argument(s): {', '.join(sorted(rest))}")
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ValueError(f"isolation must be 'read_uncommitted' or 'read_committed', not {isolation!r}")
    name = os.fspath(path)
    base_offset = segment_base_offset(Path(name).name)
    if base_offset is None and Path(name).with_suffix(".index").is_file():
        base_offset_from_path(name)  # the index can't be placed: ValueError in the caller's words
    seg = Segment(name, "" if topic is None else topic, 0 if partition is None else partition, base_offset, size)
    transactions: list[Transaction] | None = None
    fetch_aborted = None
    if isolation == "read_committed" and listed is not None:
        # each listed transaction ends at its producer's ABORT marker; the open ones are the pre-pass's
        given = [Transaction(pid, first, None) for pid, first in listed]
        if hide_open:
            given += partition_transactions([seg])
        transactions = sorted(given, key=lambda t: (t.first_offset, t.producer_id))
        fetch_aborted = False
    elif isolation == "read_committed":
        found = set(partition_transactions([seg]))
        txn_index = Path(name).with_suffix(".txnindex")
        if txn_index.is_file():  # what the broker noted aborted here, with the markers walked
            table = read_txn_index(txn_index)
            found.update(
                Transaction(pid, first, last)
                for pid, first, last in zip(
                    table.column("producer_id").to_pylist(),
                    table.column("first_offset").to_pylist(),
                    table.column("last_offset").to_pylist(),
                )
            )
        if hide_open is False:  # transactions with no marker yet shown
            found = {t for t in found if t.last_offset is not None}
        transactions = sorted(found, key=lambda t: (t.first_offset, t.producer_id))
    elif listed is not None:
        raise ValueError("aborted_transactions needs isolation='read_committed'")
    result = SegmentResult(seg)
    batches = read_in_core(
        seg,
        None,
        bounds,
        DEFAULT_MAX_CHUNK_BYTES,
        transactions,
        None,
        result,
        (),
        native,
        fetch_aborted=fetch_aborted,
        index_seek=True,
    )
    table = pa.Table.from_batches(list(batches), schema=SCHEMA)
    for column, known in (("topic", topic), ("partition", partition)):
        if known is None:  # not in the file's name nor given: null, as decode() leaves it
            at = table.schema.get_field_index(column)
            table = table.set_column(at, SCHEMA.field(column), pa.nulls(table.num_rows, SCHEMA.field(column).type))
    return table if value_options is None else parse_columns(table, value_options, options.get("threads"))
