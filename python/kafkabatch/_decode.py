"""The decoding API: thin wrappers that validate arguments and hand back pyarrow objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa

from kafkabatch import _kafkabatch as _native
from kafkabatch._util import suggest_keywords
from kafkabatch.internal import InternalOption, decode_internal_columns, resolve_internal
from kafkabatch.values.mismatch import warn_unmatched
from kafkabatch.values.spec import (
    OnValueError,
    ValueFormat,
    ValueSpec,
    parse_columns,
    parsed_while_decoding,
    typed_options,
)

#: Default cap on one batch's decompressed size (256 MiB): far above Kafka's
#: largest legal batches, small enough that a decompression bomb is refused.
DEFAULT_MAX_DECOMPRESSED_SIZE: int = _native.DEFAULT_MAX_DECOMPRESSED_SIZE

#: The output schema, the same as Spark's Kafka source (with headers):
#: key binary, value binary, topic string, partition int32, offset int64,
#: timestamp timestamp[us, UTC], timestampType int32,
#: headers list<struct<key: string, value: binary>>.
SCHEMA: pa.Schema = pa.schema(_native.ArrowSchema())

#: The schema of ``decode(..., binary_view=True)``: key and value are
#: ``binary_view`` columns pointing into the input; the rest as :data:`SCHEMA`.
VIEW_SCHEMA: pa.Schema = pa.schema(_native.ArrowSchema(binary_view=True))

Isolation = Literal["read_uncommitted", "read_committed"]
OnError = Literal["raise", "skip"]


AbortedTransactions = Any
"""An aborted-transaction list: ``(producer_id, first_offset)`` pairs, as a Fetch
response carries them, or a table with ``producer_id``/``first_offset`` (or
Kafka's ``producerId``/``firstOffset``) columns such as :func:`read_txn_index` returns."""


def aborted_pairs(aborted: AbortedTransactions) -> list[tuple[int, int]] | None:
    """Normalise an aborted-transaction list to ``[(producer_id, first_offset), ...]``."""
    if aborted is None:
        return None
    if isinstance(aborted, (pa.Table, pa.RecordBatch)):
        names = set(aborted.column_names)
        for pid, first in (("producer_id", "first_offset"), ("producerId", "firstOffset")):
            if pid in names and first in names:
                return list(zip(aborted.column(pid).to_pylist(), aborted.column(first).to_pylist()))
        raise ValueError(
            f"aborted_transactions table needs producer_id and first_offset columns, found {sorted(names)}"
        )
    pairs: list[tuple[int, int]] = []
    for item in aborted:
        if isinstance(item, dict):
            pairs.append((int(item["producer_id"]), int(item["first_offset"])))
        else:
            producer_id, first_offset = item
            pairs.append((int(producer_id), int(first_offset)))
    return pairs


def stream_table(stream: _native.DecodedStream, schema: pa.Schema = SCHEMA) -> pa.Table:
    """The decoded chunks as one table.

    Imports each chunk's C Data Interface array against the schema imported
    once at start-up: ~10 µs per call less than reading the C stream, which
    counts when every fetch is decoded by its own call. ``stream`` holds the
    arrays until pyarrow has moved them out.
    """
    batches = [pa.RecordBatch._import_from_c(address, schema) for address in stream._export_arrays()]
    return pa.Table.from_batches(batches, schema=schema)


@dataclass(frozen=True)
class DecodeReport:
    """What :func:`decode_report` found: the table and an account of the input.

    ``skipped`` holds one :class:`KafkaBatchError` per batch dropped under
    ``on_error="skip"``; ``trailing_bytes`` counts bytes after the last complete
    batch (an incomplete tail, or everything from broken framing on) and
    ``valid_bytes`` counts the rest (Kafka's ``validBytes``, skipped batches
    included). ``end`` says which: ``"clean"``, ``"truncated"`` or ``"broken"``, with
    ``end_error`` saying why the framing broke. Bytes that are not a batch
    (an unknown magic byte, a size below the minimum) are broken framing; an
    incomplete last batch, an empty input and a zero-filled tail (a segment
    preallocated with ``log.preallocate=true``) are a truncated tail.
    """

    table: pa.Table
    batches: int
    records: int
    hidden_batches: int = 0
    skipped: list[Exception] = field(default_factory=list)
    skipped_bytes: int = 0
    trailing_bytes: int = 0
    end: str = "clean"
    end_error: Exception | None = None
    valid_bytes: int = 0

    def __repr__(self) -> str:
        """One line: rows, skipped batches with their reasons, valid and trailing bytes.

        >>> kb.decode_report(data)                                       # doctest: +SKIP
        DecodeReport(rows=990, batches=9, skipped=1 [byte 61: CRC mismatch ...], valid_bytes=5120, end='clean')
        """
        parts = [f"rows={self.table.num_rows}", f"batches={self.batches}"]
        if self.hidden_batches:
            parts.append(f"hidden_batches={self.hidden_batches}")
        if self.skipped:
            reasons = [
                f"byte {getattr(e, 'batch_position', '?')}: {getattr(e, 'reason', None) or e}" for e in self.skipped[:3]
            ]
            more = f", and {len(self.skipped) - 3} more" if len(self.skipped) > 3 else ""
            parts.append(f"skipped={len(self.skipped)} [{'; '.join(reasons)}{more}]")
        parts.append(f"valid_bytes={self.valid_bytes}")
        if self.trailing_bytes:
            parts.append(f"trailing_bytes={self.trailing_bytes}")
        parts.append(f"end={self.end!r}")
        if self.end_error is not None:
            parts.append(f"end_error={getattr(self.end_error, 'reason', None) or self.end_error!s}")
        return f"DecodeReport({', '.join(parts)})"


@suggest_keywords
def decode_report(
    data: Any,
    *,
    topic: str | None = None,
    partition: int | None = None,
    validate_crc: bool = True,
    include_control: bool = False,
    isolation: Isolation = "read_uncommitted",
    on_error: OnError = "skip",
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    aborted_transactions: AbortedTransactions = None,
    hide_open_transactions: bool | None = None,
    threads: int | None = None,
    value_format: ValueFormat = "binary",
    value_schema: Any = None,
    key_format: ValueFormat = "binary",
    key_schema: Any = None,
    schema_registry: Any = None,
    on_value_error: OnValueError = "raise",
) -> DecodeReport:
    """Like :func:`decode`, but also report skipped batches and trailing bytes.

    A report reports: by default (``on_error="skip"``) a damaged batch is
    dropped and listed in ``skipped`` with its reason, and broken framing
    ends the input with ``end="broken"`` and ``end_error``; every good batch
    around them is kept. ``on_error="raise"`` raises at the first damaged
    batch as :func:`decode` does. A value that does not parse still raises
    :class:`ValueDecodeError` unless ``on_value_error="null"``.

    >>> report = kb.decode_report(data)                              # doctest: +SKIP
    >>> report.records, len(report.skipped), report.trailing_bytes  # doctest: +SKIP
    (1000, 1, 0)
    """
    value_options = typed_options(
        {
            "value_format": value_format,
            "value_schema": value_schema,
            "key_format": key_format,
            "key_schema": key_schema,
            "schema_registry": schema_registry,
            "on_value_error": on_value_error,
        }
    )
    stream, table = decode_typed(
        data,
        value_options,
        **native_kwargs(
            topic=topic,
            partition=partition,
            validate_crc=validate_crc,
            include_control=include_control,
            on_error=on_error,
            max_decompressed_size=max_decompressed_size,
            isolation=isolation,
            aborted_transactions=aborted_transactions,
            hide_open_transactions=hide_open_transactions,
            threads=threads,
        ),
    )
    return report_of(data, stream, table)


def report_of(data: Any, stream: _native.DecodedStream, table: pa.Table) -> DecodeReport:
    """The :class:`DecodeReport` of decoding ``data`` into ``stream``, whose table is ``table``."""
    return DecodeReport(
        table=table,
        batches=stream.batches,
        records=stream.records,
        hidden_batches=stream.hidden_batches,
        skipped=list(stream.skipped),
        skipped_bytes=stream.skipped_bytes,
        trailing_bytes=stream.trailing_bytes,
        end=stream.end,
        end_error=stream.end_error,
        valid_bytes=memoryview(data).nbytes - stream.trailing_bytes,
    )


def native_kwargs(
    *,
    topic: str | None = None,
    partition: int | None = None,
    validate_crc: bool = True,
    include_control: bool = False,
    on_error: str = "raise",
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    isolation: str = "read_uncommitted",
    aborted_transactions: AbortedTransactions = None,
    hide_open_transactions: bool | None = None,
    threads: int | None = None,
    binary_view: bool = False,
) -> dict[str, Any]:
    """The keywords of ``_native.decode`` for those of :func:`decode` (an
    aborted-transaction list in any accepted form becomes pairs)."""
    return {
        "topic": topic,
        "partition": partition,
        "validate_crc": validate_crc,
        "include_control": include_control,
        "on_error": on_error,
        "max_decompressed_size": max_decompressed_size,
        "isolation": isolation,
        "aborted_transactions": aborted_pairs(aborted_transactions),
        "hide_open_transactions": hide_open_transactions,
        "threads": threads,
        "binary_view": binary_view,
    }


@suggest_keywords
def decode(
    data: Any,
    *,
    topic: str | None = None,
    partition: int | None = None,
    validate_crc: bool = True,
    include_control: bool = False,
    isolation: Isolation = "read_uncommitted",
    on_error: OnError = "raise",
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    aborted_transactions: AbortedTransactions = None,
    hide_open_transactions: bool | None = None,
    threads: int | None = None,
    binary_view: bool = False,
    value_format: ValueFormat = "binary",
    value_schema: Any = None,
    key_format: ValueFormat = "binary",
    key_schema: Any = None,
    schema_registry: Any = None,
    on_value_error: OnValueError = "raise",
    internal: InternalOption = None,
    definitions: str | None = None,
    internal_json: bool = False,
) -> pa.Table:
    """Decode Kafka batches (any magic, any codec, mixed) into a :class:`pyarrow.Table`.

    ``data`` is anything with the buffer protocol (bytes, bytearray, memoryview,
    mmap, numpy uint8) and is read without copying. The table has the columns
    of :data:`SCHEMA` (Spark's Kafka source schema). Control records are left
    out unless ``include_control``. A truncated last batch ends the input
    quietly; a corrupt batch raises :class:`KafkaBatchError` (saying which
    batch, at which byte, and why) unless ``on_error="skip"``, which drops it
    and keeps every good batch around it.

    ``isolation="read_committed"`` returns committed data only, as a
    read_committed consumer sees it: a transactional batch is shown when its
    producer's next marker in the data is a COMMIT, hidden when it is an ABORT
    or when the list ``aborted_transactions`` (``(producer_id, first_offset)``
    pairs from a Fetch response, or a ``.txnindex`` table) says so. A
    transaction with no marker yet is hidden (past the last stable offset)
    unless an ``aborted_transactions`` list is given to judge it
    (``hide_open_transactions`` overrides). Control records never appear.

    Inputs of many batches decode on one thread per core (``threads`` sets
    the number); the rows come back identical and in input order.

    ``binary_view=True`` returns key and value as ``binary_view`` columns
    (:data:`VIEW_SCHEMA`) that point into ``data`` instead of copying it:
    values of uncompressed batches are not copied at all (those of compressed
    batches are copied once out of the decompressed payload). The table holds
    ``data``'s buffer while it lives, so a bytearray cannot be resized and
    changes made to it in place show in the table. For pyarrow, polars and
    DuckDB consumers; Spark does not take view types, so the default stays
    ``binary``.

    ``value_format`` (and ``key_format``) parse the column in the Rust core,
    in parallel: ``"string"`` (UTF-8 checked), ``"json"`` into
    ``value_schema`` (a pyarrow struct type or schema; missing fields are
    null, others ignored) or ``"avro"``: plain datums of ``value_schema``
    (Avro JSON), or with ``schema_registry`` (a URL, a confluent-kafka style
    config dict with ``url``, a confluent-kafka ``SchemaRegistryClient``, or
    ``{schema_id: schema}``) Confluent-framed
    values whose writer schemas are resolved to ``value_schema`` or else the
    newest one; or ``"protobuf"``: plain messages of ``value_schema`` (a
    generated message class, or ``{"message": ..., "descriptor_set": ...}``
    / ``{"message": ..., "proto": ...}``), or with ``schema_registry``
    Confluent-framed messages (``value_schema`` may name the message).
    Schema ids in ``__value_schema_id`` / ``__key_schema_id`` headers count
    as the prefix they stand for. Tombstones stay null. A bad value raises
    :class:`ValueDecodeError` naming its topic, partition and offset, or
    with ``on_value_error="null"`` becomes null.

    ``internal`` decodes the records of Kafka's own topics with Kafka's
    message definitions and appends their columns (see
    ``docs/internal-topics.md``): ``"auto"`` by ``topic``
    (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``,
    ``__cluster_metadata``, ``__remote_log_metadata``), a kind
    (``"consumer_offsets"``, ...) whatever the topic, or ``{topic: kind}``
    for copies under other names. ``definitions`` is a folder of Kafka's
    own ``*.json`` message definitions that replace the built-in ones of
    the same name (a newer Kafka's records); ``internal_json=True`` adds a
    ``json`` column in kafka-dump-log's form. A record that does not decode
    gets its reason in the ``error`` column; the other rows are unharmed.

    >>> import kafkabatch as kb
    >>> table = kb.decode(open("00000000000000000000.log", "rb").read(), topic="orders", partition=0)  # doctest: +SKIP
    >>> table.column_names
    ['key', 'value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType', 'headers']
    """
    if internal is not None or definitions is not None or internal_json:
        resolved = resolve_internal(internal, definitions, internal_json)
        if resolved is not None:
            if value_format != "binary" or key_format != "binary":
                raise ValueError("internal= decodes the raw key and value: leave value_format and key_format binary")
            if binary_view:
                raise ValueError("internal= takes binary columns: leave binary_view False")
            table = decode(
                data,
                topic=topic,
                partition=partition,
                validate_crc=validate_crc,
                include_control=include_control,
                isolation=isolation,
                on_error=on_error,
                max_decompressed_size=max_decompressed_size,
                aborted_transactions=aborted_transactions,
                hide_open_transactions=hide_open_transactions,
                threads=threads,
            )
            return decode_internal_columns(table, resolved)
        if definitions is not None or internal_json:
            raise ValueError("definitions= and internal_json= need internal= ('auto' or a kind)")
    value_options = typed_options(
        {
            "value_format": value_format,
            "value_schema": value_schema,
            "key_format": key_format,
            "key_schema": key_schema,
            "schema_registry": schema_registry,
            "on_value_error": on_value_error,
        }
    )
    if value_options is None:
        # The native call directly, not through decode_report or
        # native_kwargs: this is called once per fetch, and building the
        # keywords through a function cost ~1 µs of a 21 µs call.
        stream = _native.decode(
            data,
            topic=topic,
            partition=partition,
            validate_crc=validate_crc,
            include_control=include_control,
            on_error=on_error,
            max_decompressed_size=max_decompressed_size,
            isolation=isolation,
            aborted_transactions=aborted_pairs(aborted_transactions),
            hide_open_transactions=hide_open_transactions,
            threads=threads,
            binary_view=binary_view,
        )
        return stream_table(stream, VIEW_SCHEMA if binary_view else SCHEMA)
    native_options = native_kwargs(
        topic=topic,
        partition=partition,
        validate_crc=validate_crc,
        include_control=include_control,
        on_error=on_error,
        max_decompressed_size=max_decompressed_size,
        isolation=isolation,
        aborted_transactions=aborted_transactions,
        hide_open_transactions=hide_open_transactions,
        threads=threads,
        binary_view=binary_view,
    )
    return decode_typed(data, value_options, **native_options)[1]


def decode_typed(
    data: Any, value_options: dict[str, Any] | None, **native_options: Any
) -> tuple[_native.DecodedStream, pa.Table]:
    """``_native.decode(data, **native_options)`` and its table with the
    columns ``value_options`` ask for parsed.

    When only the value is typed and its schema is known up front (see
    :func:`~kafkabatch.values.spec.parsed_while_decoding`), each chunk of a
    few megabytes is parsed on the thread that decoded it, while its values
    are in cache, and the raw values of the whole input are never held at
    once. If a value fails there, the input is decoded again and the column
    parsed after, which names the first bad record (or raises the corrupt
    batch that comes before it) exactly as the column way always does.
    """
    spec = parsed_while_decoding(value_options)
    parsed = None if spec is None else decode_parsing(data, spec, **native_options)
    if parsed is not None:
        stream, table = parsed, pa.table(parsed)
    else:
        stream = _native.decode(data, **native_options)
        table = stream_table(stream, VIEW_SCHEMA if native_options.get("binary_view") else SCHEMA)
        if value_options is not None:
            table = parse_columns(table, value_options, native_options.get("threads"))
    if value_options is not None:
        json_columns = [c for c in ("value", "key") if value_options.get(f"{c}_format") == "json"]
        warn_unmatched(table, json_columns, native_options.get("topic"))
    return stream, table


def decode_parsing(data: Any, spec: ValueSpec, **native_options: Any) -> _native.DecodedStream | None:
    """``_native.decode(data, **native_options)`` with the values parsed by
    ``spec`` chunk by chunk as they are decoded, or None if one failed there
    (decode again and parse the column after to name it). Corrupt batches
    raise as they always do."""
    stream = _native.decode(data, values=spec.parser(), **native_options)
    return None if stream.values_failed else stream


@suggest_keywords
def iter_batches(
    data: Any,
    *,
    validate_crc: bool = True,
    on_error: Literal["raise", "skip", "keep"] = "raise",
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    start: int = 0,
    isolation: Isolation = "read_uncommitted",
    aborted_transactions: AbortedTransactions = None,
    hide_open_transactions: bool | None = None,
) -> _native.BatchIterator:
    """Iterate the batches of ``data``: header fields cheaply, records on request.

    ``on_error="keep"`` yields undecodable batches too, with ``batch.error``
    set; ``"skip"`` drops them. After the walk, the iterator's
    ``trailing_bytes`` and ``end`` tell what followed the last complete batch.
    ``start`` is the byte position of the first batch to read (a batch
    boundary). ``isolation="read_committed"`` leaves out aborted and open
    transactional batches and control batches, as :func:`decode` does.

    >>> for batch in kb.iter_batches(data):                          # doctest: +SKIP
    ...     print(batch.base_offset, batch.compression, batch.record_count)
    ...     for rec in batch.records():
    ...         print(rec.offset, rec.key, rec.value, rec.headers)
    """
    return _native.iter_batches(
        data,
        validate_crc=validate_crc,
        on_error=on_error,
        max_decompressed_size=max_decompressed_size,
        start=start,
        isolation=isolation,
        aborted_transactions=aborted_pairs(aborted_transactions),
        hide_open_transactions=hide_open_transactions,
    )


def valid_bytes(data: Any) -> int:
    """Bytes of the complete batches at the start of ``data`` (Kafka's ``validBytes``).

    >>> kb.valid_bytes(data[:-3]) < len(data)                        # doctest: +SKIP
    True
    """
    return int(_native.valid_bytes(data))
