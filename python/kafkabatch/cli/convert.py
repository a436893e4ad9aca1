"""``kafkabatch convert``: log segments → Parquet, Arrow IPC (Feather) or JSON lines."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

import kafkabatch as kb
from kafkabatch.log.txn import DEFAULT_MAX_CHUNK_BYTES

from ._common import (
    BYTE_FORMATS,
    CliError,
    add_decode_options,
    add_tiered_option,
    find_segments,
    format_bytes,
    offsets_arg,
    positive_size_arg,
    progress_bar,
    record_json,
    tiered_keys,
    warn,
)
from ._internal import add_decoder_options, internal_of, scan_options

FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "arrow",
    ".feather": "arrow",
    ".ipc": "arrow",
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
}
DEFAULT_COMPRESSION = {"parquet": "zstd", "arrow": "none", "jsonl": "none"}
#: --value-format/--key-format choices that parse into a typed column.
TYPED_FORMATS = ("string", "json", "avro", "protobuf")

DESCRIPTION = """\
Convert Kafka log segments to Parquet (default), Arrow IPC / Feather, or JSON
lines, segment by segment with bounded memory (each segment is memory-mapped
and decoded in windows of complete batches). Columns: the schema of
kafkabatch.SCHEMA (Spark's Kafka source: key, value, topic, partition,
offset, timestamp, timestampType, headers). Topic and partition come from
the <topic>-<partition> folder names (or --topic/--partition). A summary
(records, bytes, MiB/s) goes to stderr."""

EPILOG = """\
examples:
  kafkabatch convert /var/lib/kafka/data/orders-0 orders.parquet
  kafkabatch convert /var/lib/kafka/data/orders-0 orders.arrow --offsets 1000:2000
  kafkabatch convert orders-0/00000000000000000000.log - --format jsonl | head
  kafkabatch convert /var/lib/kafka/data all.parquet --isolation read_committed --on-error skip
  kafkabatch convert /data/orders-0 orders.parquet --value-format json --value-schema 'id string, qty bigint'
  kafkabatch convert /data/payments-0 payments.parquet --value-format avro --schema-registry http://registry:8081

formats (by --format, else by OUT's extension):
  parquet  .parquet .pq      zstd, row groups of ~128MiB or 1M rows
  arrow    .arrow .feather .ipc   Arrow IPC file (= Feather v2), uncompressed
  jsonl    .jsonl .json .ndjson   one JSON object per record: topic, partition,
           offset, timestamp (epoch ms), timestamp_type, key, key_encoding,
           value, value_encoding, headers [{key, value, value_encoding}]
OUT "-" writes JSON lines to stdout.
"""


def add_parser(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "convert",
        parents=parents,
        help="convert segments to Parquet, Arrow IPC/Feather or JSON lines",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="segment files, <topic>-<partition> folders, log dirs")
    p.add_argument("out", metavar="OUT", help='output file ("-": JSON lines to stdout)')
    p.add_argument(
        "--format",
        choices=("parquet", "arrow", "feather", "ipc", "jsonl"),
        help="output format (default: from OUT's extension)",
    )
    p.add_argument(
        "--compression",
        choices=("zstd", "lz4", "snappy", "gzip", "none"),
        help="output compression (parquet: zstd by default; arrow: none, lz4 or zstd)",
    )
    p.add_argument("-f", "--force", action="store_true", help="overwrite OUT if it exists")
    p.add_argument("--topic", help="topic for files not in a <topic>-<partition> folder")
    p.add_argument("--partition", type=int, help="partition for files not in a <topic>-<partition> folder")
    p.add_argument("--offsets", type=offsets_arg, metavar="START:END", help="only offsets in [START, END)")
    p.add_argument(
        "--start-time",
        metavar="TIME",
        help="only records at or after TIME (epoch ms or ISO-8601, e.g. 2024-05-01T12:00Z)",
    )
    p.add_argument("--end-time", metavar="TIME", help="only records before TIME")
    p.add_argument(
        "--window",
        type=positive_size_arg,
        default=DEFAULT_MAX_CHUNK_BYTES,
        metavar="SIZE",
        help="decode at most about SIZE of batches at once (default 16MiB)",
    )
    p.add_argument(
        "--row-group-size",
        type=int,
        default=1_000_000,
        metavar="ROWS",
        help="parquet: rows per row group at most (default 1000000)",
    )
    p.add_argument(
        "--row-group-bytes",
        type=positive_size_arg,
        default=128 << 20,
        metavar="SIZE",
        help="parquet: close a row group at about SIZE of Arrow data (default 128MiB)",
    )
    group = p.add_argument_group("value and key formats")
    group.add_argument(
        "--value-format",
        choices=(*BYTE_FORMATS, *TYPED_FORMATS),
        default="utf8",
        help="string, json, avro or protobuf: parse values into a typed column (in every output format); "
        "utf8 (default; text when valid UTF-8, else base64), hex or base64: how JSON lines show the bytes",
    )
    group.add_argument(
        "--value-schema",
        metavar="SCHEMA",
        help="for json: a file or text holding a JSON Schema, an Avro record schema, a Spark DDL string "
        "('id string, qty bigint') or Spark's StructType JSON; for avro: the Avro schema (file or text); "
        "for protobuf: the .proto file or text (with --value-message)",
    )
    group.add_argument(
        "--value-message",
        metavar="NAME",
        help="protobuf: the message's full name (pkg.Message); with --schema-registry, which message to read",
    )
    group.add_argument(
        "--value-descriptor-set",
        metavar="FILE",
        help="protobuf: a FileDescriptorSet file (protoc --descriptor_set_out) holding --value-message",
    )
    group.add_argument(
        "--key-format", choices=(*BYTE_FORMATS, *TYPED_FORMATS), default="utf8", help="as --value-format"
    )
    group.add_argument("--key-schema", metavar="SCHEMA", help="as --value-schema")
    group.add_argument("--key-message", metavar="NAME", help="as --value-message")
    group.add_argument("--key-descriptor-set", metavar="FILE", help="as --value-descriptor-set")
    group.add_argument(
        "--schema-registry",
        metavar="REGISTRY",
        help="values carry the Confluent Schema Registry prefix: a registry URL (user:password@ for basic auth), "
        "or a JSON file / text of {schema id: schema}",
    )
    group.add_argument(
        "--on-value-error",
        choices=("raise", "null"),
        default="raise",
        help="a value that can't be parsed: stop naming its offset (default), or write null",
    )
    group.add_argument("--header-format", choices=BYTE_FORMATS, default="utf8", help="as --value-format, for headers")
    add_decode_options(p)
    add_tiered_option(p)
    add_decoder_options(p, dump=False)
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    p.add_argument(
        "--no-progress", action="store_true", help="no progress bar (there is none unless stderr is a terminal)"
    )
    p.set_defaults(func=run)


def _output_format(args: argparse.Namespace) -> str:
    if args.format:
        return {"feather": "arrow", "ipc": "arrow"}.get(args.format, args.format)
    if args.out == "-":
        return "jsonl"
    fmt = FORMATS.get(Path(args.out).suffix.lower())
    if fmt is None:
        raise CliError(
            f"can't tell the output format from {args.out!r}: use --format parquet|arrow|jsonl "
            f"or an extension ({', '.join(sorted(FORMATS))})"
        )
    return fmt


class _ParquetSink:
    def __init__(self, path: str, schema: pa.Schema, compression: str, rows: int, nbytes: int) -> None:
        import pyarrow.parquet as pq

        self._schema = schema
        self._writer = pq.ParquetWriter(path, schema, compression=compression)
        self._rows_limit, self._bytes_limit = rows, nbytes
        self._pending: list[pa.RecordBatch] = []
        self._rows = self._bytes = 0

    def write(self, batch: pa.RecordBatch) -> None:
        self._pending.append(batch)
        self._rows += batch.num_rows
        self._bytes += batch.nbytes
        if self._rows >= self._rows_limit or self._bytes >= self._bytes_limit:
            self._flush(final=False)

    def _flush(self, *, final: bool) -> None:
        """Write the pending rows as row groups: whole groups of ``rows`` rows
        (the rest waits for more, unless ``final`` or the byte limit is hit)."""
        if not self._pending:
            return
        table = pa.Table.from_batches(self._pending, schema=self._schema)
        keep = 0
        if not final and self._bytes < self._bytes_limit:
            keep = table.num_rows % self._rows_limit
        self._writer.write_table(table.slice(0, table.num_rows - keep), row_group_size=self._rows_limit)
        rest = table.slice(table.num_rows - keep).to_batches() if keep else []
        self._pending = rest
        self._rows = keep
        self._bytes = sum(b.nbytes for b in rest)

    def close(self) -> None:
        self._flush(final=True)
        self._writer.close()


class _ArrowSink:
    def __init__(self, path: str, schema: pa.Schema, compression: str) -> None:
        if compression not in ("none", "lz4", "zstd"):
            raise CliError(f"Arrow IPC supports --compression none, lz4 or zstd, not {compression}")
        options = pa.ipc.IpcWriteOptions(compression=None if compression == "none" else compression)
        self._sink = pa.OSFile(path, "wb")
        self._writer = pa.ipc.new_file(self._sink, schema, options=options)

    def write(self, batch: pa.RecordBatch) -> None:
        self._writer.write_batch(batch)

    def close(self) -> None:
        self._writer.close()
        self._sink.close()


class _JsonSink:
    def __init__(self, path: str, formats: tuple[str, str, str]) -> None:
        self._file = sys.stdout if path == "-" else open(path, "w", encoding="utf-8")
        self._formats = formats

    def write(self, batch: pa.RecordBatch) -> None:
        ts = batch.column("timestamp").cast(pa.int64())  # µs
        columns = {
            name: batch.column(name).to_pylist()
            for name in ("key", "value", "topic", "partition", "offset", "timestampType", "headers")
        }
        typed = [name for name in ("key", "value") if not pa.types.is_binary(batch.schema.field(name).type)]
        extra = {name: batch.column(name).to_pylist() for name in batch.schema.names if name not in kb.SCHEMA.names}
        lines = []
        for i, micros in enumerate(ts.to_pylist()):
            headers = [(h["key"], h["value"]) for h in columns["headers"][i]]
            obj = record_json(
                columns["topic"][i],
                columns["partition"][i],
                columns["offset"][i],
                -1 if micros is None else micros // 1000,
                columns["timestampType"][i],
                None if "key" in typed else columns["key"][i],
                None if "value" in typed else columns["value"][i],
                headers,
                self._formats,
            )
            for name in typed:  # parsed: the value itself, as JSON
                obj[name] = columns[name][i]
                obj[f"{name}_encoding"] = None if obj[name] is None else "parsed"
            for name, values in extra.items():  # decoded internal-topic columns: those that are set
                if values[i] is not None:
                    obj[name] = values[i]
            lines.append(json.dumps(obj, ensure_ascii=False, default=_json_default))
        if lines:
            self._file.write("\n".join(lines) + "\n")

    def close(self) -> None:
        if self._file is sys.stdout:
            self._file.flush()
        else:
            self._file.close()


def _json_default(value: Any) -> Any:
    """Parsed values in JSON: dates and times as ISO-8601, decimals as text, bytes as base64."""
    import base64
    import datetime as dt
    import decimal

    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _schema_text(arg: str | None) -> str | None:
    """A schema argument: the text of a file when it names one, else the text itself."""
    if arg is None:
        return None
    if arg.lstrip().startswith(("{", "[", '"')):
        return arg
    try:
        if Path(arg).is_file():
            return Path(arg).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CliError(
            f"{arg} is not a text file: a schema file holds JSON, Avro, Spark DDL or .proto text "
            "(a Protobuf FileDescriptorSet goes to --value-descriptor-set or --key-descriptor-set)"
        ) from None
    except OSError:  # not a usable file name (too long, ...): the text itself
        pass
    if _looks_like_path(arg):
        raise CliError(f"{arg}: file not found")
    return arg


def _is_descriptor_set(arg: str | None) -> bool:
    """Whether a schema argument names a binary file (a Protobuf
    FileDescriptorSet, as ``protoc --descriptor_set_out`` writes)."""
    if arg is None or arg.lstrip().startswith(("{", "[", '"')):
        return False
    try:
        with open(arg, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start < len(head) - 3  # not just a character cut at the end of the head
    return b"\0" in head


#: Suffixes of schema files (JSON Schema, Avro, Spark DDL, Protobuf).
_SCHEMA_SUFFIXES = (".json", ".avsc", ".ddl", ".sql", ".proto", ".schema", ".txt")


def _looks_like_path(arg: str) -> bool:
    """Whether a schema argument names a file rather than holding a schema
    (a URL is neither): a schema file suffix, or a path separator and no
    spaces (DDL has spaces)."""
    text = arg.strip()
    if not text or "://" in text:
        return False
    if text.lower().endswith(_SCHEMA_SUFFIXES):
        return True
    return " " not in text and ("/" in text or os.sep in text)


def _json_target(text: str) -> pa.DataType:
    """The Arrow type a --value-schema for JSON values names: a JSON Schema,
    an Avro record schema, or (with pyspark) Spark DDL / StructType JSON."""
    from kafkabatch.values.spec import arrow_type_of

    try:
        return arrow_type_of(text)
    except ImportError:
        raise CliError(
            "a Spark DDL or StructType schema needs pyspark installed; give a JSON Schema or an Avro record schema"
        ) from None


def value_options(args: argparse.Namespace) -> dict[str, Any]:
    """scan_log's typed-value keywords from the command line."""
    options: dict[str, Any] = {}
    for column in ("value", "key"):
        fmt = getattr(args, f"{column}_format")
        schema_arg = getattr(args, f"{column}_schema")
        message = getattr(args, f"{column}_message")
        descriptor_set = getattr(args, f"{column}_descriptor_set")
        if fmt == "protobuf" and descriptor_set is None and _is_descriptor_set(schema_arg):
            descriptor_set, schema_arg = schema_arg, None  # protoc --descriptor_set_out given as the schema
        schema = _schema_text(schema_arg)
        if fmt != "protobuf" and (message is not None or descriptor_set is not None):
            raise CliError(f"--{column}-message and --{column}-descriptor-set need --{column}-format protobuf")
        if fmt not in TYPED_FORMATS:
            if schema is not None:
                raise CliError(f"--{column}-schema needs --{column}-format json, avro or protobuf")
            continue
        options[f"{column}_format"] = fmt
        if fmt == "protobuf":
            if (schema is not None or descriptor_set is not None) and message is None:
                raise CliError(f"--{column}-format protobuf with a schema needs --{column}-message")
            if descriptor_set is not None:
                options[f"{column}_schema"] = {"message": message, "descriptor_set": descriptor_set}
            elif schema is not None:
                options[f"{column}_schema"] = {"message": message, "proto": schema}
            elif message is not None:
                options[f"{column}_schema"] = message
        elif schema is not None:
            options[f"{column}_schema"] = _json_target(schema) if fmt == "json" else schema
    if options:
        registry = _schema_text(args.schema_registry)
        if registry is not None and registry.lstrip().startswith("{"):
            options["schema_registry"] = {int(k): v for k, v in json.loads(registry).items()}
        elif registry is not None:
            options["schema_registry"] = registry.strip()
        options["on_value_error"] = args.on_value_error
    elif args.schema_registry is not None:
        raise CliError("--schema-registry needs --value-format or --key-format json, avro or protobuf")
    return options


def _in_flags(text: str) -> str:
    """A tiered-storage cap named as the command line spells it."""
    return text.replace("(max_decompressed_size)", "(--max-decompressed-size)")


def run(args: argparse.Namespace) -> int:
    fmt = _output_format(args)
    compression = args.compression or DEFAULT_COMPRESSION[fmt]
    if fmt == "jsonl" and compression != "none":
        raise CliError("JSON lines are written uncompressed (pipe them through a compressor)")
    if args.out == "-" and fmt != "jsonl":
        raise CliError(f"only JSON lines can go to stdout, not {fmt}")
    if (args.topic is None) != (args.partition is None):
        raise CliError("give both --topic and --partition, or neither")
    segments = find_segments(args.paths, tiered_keys(args), skip=args.on_error == "skip")
    out_path = Path(args.out) if args.out != "-" else None
    if out_path is not None:
        if out_path.exists() and not args.force:
            raise CliError(f"{args.out} exists (use --force to overwrite)")
        if out_path.exists() and out_path.is_dir():
            raise CliError(f"{args.out} is a folder")
        resolved = out_path.resolve()
        if any(Path(s.path).resolve() == resolved for s in segments):
            raise CliError(f"{args.out} is one of the inputs")
    if args.topic is None:
        stray = [s.path for s in segments if s.topic is None]
        if stray:
            raise CliError(f"{stray[0]} is not in a <topic>-<partition> folder: give --topic and --partition")

    start_offset, end_offset = args.offsets if args.offsets else (None, None)
    decode_options = dict(
        validate_crc=args.validate_crc,
        include_control=args.include_control,
        isolation=args.isolation,
        on_error=args.on_error,
        max_decompressed_size=args.max_decompressed_size,
    )
    try:
        decode_options.update(value_options(args))
    except (ValueError, TypeError, kb.SchemaRegistryError) as error:
        raise CliError(str(error)) from error
    internal = internal_of(args)
    if internal is not None and ("value_format" in decode_options or "key_format" in decode_options):
        raise CliError("--decoder reads the raw key and value: leave --value-format and --key-format out")
    decode_options.update(scan_options(internal))
    results: list[Any] = []
    temp = None if out_path is None else out_path.with_name(f".{out_path.name}.partial-{os.getpid()}")
    target = "-" if temp is None else str(temp)
    t0 = time.perf_counter()
    rows = 0
    sink: Any = None
    try:

        def open_sink(schema: pa.Schema) -> Any:
            if fmt == "parquet":
                return _ParquetSink(target, schema, compression, args.row_group_size, args.row_group_bytes)
            if fmt == "arrow":
                return _ArrowSink(target, schema, compression)
            shown = tuple(f if f in BYTE_FORMATS else "utf8" for f in (args.key_format, args.value_format))
            return _JsonSink(target, (*shown, args.header_format))

        from kafkabatch.log.scan import scan_log

        total = sum(s.size for s in segments)
        with (
            progress_bar(total, "convert", enabled=not (args.no_progress or args.quiet)) as progress,
            _results_only(),
        ):

            def on_segment(result: Any) -> None:
                results.append(result)
                progress.advance(result.segment.size)

            # One read of every root: a partition found under several (a bucket and a broker
            # dir) gives each offset once, as scan_log does for a list.
            reader = scan_log(
                args.paths,
                topic=args.topic,
                partition=args.partition,
                max_chunk_bytes=args.window,
                start_offset=start_offset,
                end_offset=end_offset,
                start_timestamp=args.start_time,
                end_timestamp=args.end_time,
                on_segment=on_segment,
                tiered_keys=tiered_keys(args),
                **decode_options,
            )
            if sink is None:
                sink = open_sink(reader.schema)
            try:
                for batch in reader:
                    rows += batch.num_rows
                    sink.write(batch)
            except kb.ValueDecodeError as error:
                raise CliError(f"{error} (use --on-value-error null to write null instead)") from error
            except kb.TieredStorageError as error:
                raise CliError(f"{_in_flags(str(error))} (use --on-error skip to leave it out)") from error
            except kb.KafkaBatchError as error:
                hint = "--on-error skip to leave corrupt batches out"
                if isinstance(error, kb.CrcMismatchError):
                    hint += ", --no-crc to ignore CRCs"
                raise CliError(f"{error} (use {hint})") from error
        if sink is None:
            sink = open_sink(kb.SCHEMA)
        sink.close()
        sink = None
        if temp is not None and out_path is not None:
            os.replace(temp, out_path)
    except BaseException:
        if sink is not None:
            with contextlib.suppress(Exception):
                sink.close()
        if temp is not None:
            with contextlib.suppress(OSError):
                temp.unlink()
        raise
    elapsed = time.perf_counter() - t0
    for result in results:
        if result.skipped or result.trailing_bytes:
            warn(_in_flags(result.describe()))  # a segment lost to a tiered-storage error says so
            # (the segment's own tiered-storage errors are in that line already)
            details = [e for e in result.skipped if getattr(e, "object", None) != result.segment.path]
            for skipped in details[:5]:
                print(f"  {skipped}", file=sys.stderr)
    lost = [r for r in results if r.batches == 0 and any(isinstance(e, kb.TieredStorageError) for e in r.skipped)]
    results = [r for r in results if r not in lost]
    if not args.quiet:
        read = sum(r.segment.size for r in results)
        speed = read / elapsed / (1 << 20) if elapsed > 0 else float("inf")
        where = "stdout" if out_path is None else args.out
        extra = f", {compression}" if compression != "none" else ""
        print(
            f"kafkabatch: converted {len(results)} segment{'s' if len(results) != 1 else ''} "
            f"({format_bytes(read)}) to {rows:,} records in {where} ({fmt}{extra}) "
            f"in {elapsed:.2f} s, {speed:.1f} MiB/s"
            + (f"; {len(lost)} segment{'s' if len(lost) != 1 else ''} not read (see above)" if lost else ""),
            file=sys.stderr,
        )
    return 0


@contextlib.contextmanager
def _results_only() -> Iterator[None]:
    """Leave out the logged skips that a segment's result counts too: convert prints each result once."""
    import logging

    class Reported(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return not getattr(record, "segment_report", False)

    logger = logging.getLogger("kafkabatch.log")
    reported = Reported()
    logger.addFilter(reported)
    try:
        yield
    finally:
        logger.removeFilter(reported)
