"""``kafkabatch dump``: print segments and index files the way Kafka's
``kafka-dump-log.sh`` (``kafka.tools.DumpLogSegments``) does."""

from __future__ import annotations

import argparse
import bisect
import json
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kafkabatch as kb
from kafkabatch.log.errors import guess_content
from kafkabatch.log.fs import remote_size
from kafkabatch.log.naming import snapshot_id

from ._common import (
    TIMESTAMP_TYPE_NAMES,
    CliError,
    add_format_options,
    add_tiered_option,
    base_offset_of,
    find_segments,
    format_bytes_text,
    is_remote,
    mapped,
    offsets_arg,
    positive_size_arg,
    record_json,
    tiered_keys,
    warn,
)
from ._internal import Decoded, add_decoder_options, internal_of

DESCRIPTION = """\
Print the batches of Kafka log segments (and the entries of .index,
.timeindex and .txnindex files) in the format of Kafka's kafka-dump-log.sh:
one line per batch, and with --deep-iteration / --print-data one line per
record. A batch whose CRC does not match shows "isvalid: false" and the dump
goes on; a batch that cannot be read at all gets one line saying where and
why; bytes after the last complete batch are reported at the end
("Found N invalid bytes at the end of FILE")."""

EPILOG = """\
examples:
  kafkabatch dump orders-0/00000000000000000000.log
  kafkabatch dump --print-data --offsets 100:200 orders-0/00000000000000000000.log
  kafkabatch dump --json orders-0/00000000000000000000.log | jq .value
  kafkabatch dump --json --batches orders-0/            # every segment of a partition
  kafkabatch dump orders-0/00000000000000000000.index orders-0/00000000000000000000.timeindex

JSON output (one object per line):
  records: topic, partition, offset, timestamp (ms), timestamp_type (-1 none,
    0 CreateTime, 1 LogAppendTime), key, key_encoding, value, value_encoding,
    headers [{key, value, value_encoding}], sequence, batch_position, control,
    file. *_encoding is "utf8", "hex" or "base64" (null for a null key/value).
  batches (--batches): the attributes of kafkabatch.Batch (position,
    size_in_bytes, magic, base_offset, last_offset, record_count, crc,
    crc_valid, compression, ...), error, control, file, topic, partition.
"""


def add_parser(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "dump",
        parents=parents,
        help="print batches and records like kafka-dump-log.sh",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help=".log segments (any file of batches), .index/.timeindex/.txnindex files, or folders of segments",
    )
    p.add_argument(
        "--files",
        dest="files_option",
        metavar="FILE1,FILE2",
        action="append",
        default=[],
        help="comma-separated files, as kafka-dump-log.sh takes them",
    )
    p.add_argument(
        "--print-data",
        "--print-data-log",
        dest="print_data",
        action="store_true",
        help="print each record's key and value (implies --deep-iteration)",
    )
    p.add_argument("--deep-iteration", action="store_true", help="print one line per record")
    p.add_argument(
        "--skip-record-metadata",
        action="store_true",
        help="leave offset, timestamp, sizes and headers out of record lines",
    )
    p.add_argument(
        "--verify-index-only",
        action="store_true",
        help="for .index files: only check the entries against the .log, print mismatches",
    )
    p.add_argument(
        "--max-bytes",
        type=positive_size_arg,
        metavar="SIZE",
        help="read only the first SIZE bytes of each segment (e.g. 64k, 10MB)",
    )
    p.add_argument(
        "--offsets",
        type=offsets_arg,
        metavar="START:END",
        help="only batches and records with offsets in [START, END) (either side may be empty)",
    )
    p.add_argument(
        "--isolation",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="read_committed hides aborted and open transactions and control batches",
    )
    add_tiered_option(p)
    p.add_argument("--json", action="store_true", help="one JSON object per record (see below)")
    p.add_argument("--batches", action="store_true", help="with --json: one object per batch instead")
    p.add_argument(
        "--include-control", action="store_true", help="with --json: include control records (transaction markers)"
    )
    add_format_options(p)
    add_decoder_options(p, dump=True)
    p.set_defaults(func=run)


def _jbool(value: bool) -> str:
    return "true" if value else "false"


def _optional_long(value: int | None) -> str:
    # Java's OptionalLong.toString(), as DumpLogSegments prints deleteHorizonMs.
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def _ts_name(timestamp_type: int) -> str:
    return TIMESTAMP_TYPE_NAMES.get(timestamp_type, "NoTimestampType")


def batch_line(b: kb.Batch) -> str:
    """One batch as DumpLogSegments' ``printBatchLevel`` prints it."""
    if b.magic >= 2:
        head = (
            f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count} "
            f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} producerId: {b.producer_id} "
            f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch} "
            f"isTransactional: {_jbool(b.is_transactional)} isControl: {_jbool(b.is_control)} "
            f"deleteHorizonMs: {_optional_long(b.delete_horizon_ms)}"
        )
    else:
        head = f"offset: {b.last_offset}"
    return (
        f"{head} position: {b.position} {_ts_name(b.timestamp_type)}: {b.max_timestamp} "
        f"size: {b.size_in_bytes} magic: {b.magic} compresscodec: {b.compression} crc: {b.crc} "
        f"isvalid: {_jbool(b.crc_valid)}"
    )


def _control_text(b: kb.Batch) -> str:
    control = b.control
    if control is None:
        return " controlType: UNKNOWN(-1)"
    if control.type in ("COMMIT", "ABORT"):
        return f" endTxnMarker: {control.type} coordinatorEpoch: {control.coordinator_epoch}"
    return f" controlType: {control.type}({control.type_id})"


def record_line(b: kb.Batch, r: kb.Record, args: argparse.Namespace, decoded: Decoded | None = None) -> str:
    """One record as DumpLogSegments' deep iteration prints it (with a
    decoder, the record's key and payload as the decoder's JSON)."""
    text = ""
    prefix = "| "
    if not args.skip_record_metadata:
        key_size = -1 if r.key is None else len(r.key)
        value_size = -1 if r.value is None else len(r.value)
        text = (
            f"{prefix}offset: {r.offset} {_ts_name(b.timestamp_type)}: {r.timestamp} "
            f"keySize: {key_size} valueSize: {value_size}"
        )
        prefix = " "
        if b.magic >= 2:
            text += f" sequence: {r.sequence} headerKeys: [{','.join(k for k, _ in r.headers)}]"
        elif b.compression == "none":
            # An uncompressed legacy message is its own record: its CRC is the batch's.
            # (Inner messages of a compressed wrapper: their CRCs are not exposed.)
            text += f" isValid: {_jbool(b.crc_valid)} crc: {b.crc}"
        if b.is_control:
            text += _control_text(b)
    shown = None if decoded is None else decoded.text(r.offset)
    if args.print_data and shown is not None:
        text += shown
    elif args.print_data and not b.is_control:
        if r.key is not None:
            text += f"{prefix}key: {format_bytes_text(r.key, args.key_format)}"
            prefix = " "
        if r.value is not None:
            text += f" payload: {format_bytes_text(r.value, args.value_format)}"
    return text


def batch_json(b: kb.Batch, path: str, tp: tuple[str, int] | None) -> dict[str, Any]:
    control = b.control
    return {
        "file": path,
        "topic": tp[0] if tp else None,
        "partition": tp[1] if tp else None,
        "position": b.position,
        "size_in_bytes": b.size_in_bytes,
        "magic": b.magic,
        "base_offset": b.base_offset,
        "last_offset": b.last_offset,
        "record_count": b.record_count,
        "partition_leader_epoch": b.partition_leader_epoch,
        "crc": b.crc,
        "crc_valid": b.crc_valid,
        "attributes": b.attributes,
        "compression": b.compression,
        "timestamp_type": b.timestamp_type,
        "base_timestamp": b.base_timestamp,
        "max_timestamp": b.max_timestamp,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control,
        "delete_horizon_ms": b.delete_horizon_ms,
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "last_sequence": b.last_sequence,
        "control": None
        if control is None
        else {
            "type": control.type,
            "type_id": control.type_id,
            "version": control.version,
            "coordinator_epoch": control.coordinator_epoch,
        },
        "error": None if b.error is None else str(b.error),
        "error_type": None if b.error is None else type(b.error).__name__,
    }


class _Dumper:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.internal = internal_of(args, json_text=True)
        if self.internal is not None:  # as in kafka-dump-log, a decoder prints the data
            args.print_data = True
        self.deep = args.deep_iteration or args.print_data
        self.decoded: Decoded | None = None
        self.formats = (args.key_format, args.value_format, args.header_format)
        self.start: int | None
        self.end: int | None
        self.start, self.end = args.offsets if args.offsets else (None, None)
        self.write: Callable[[str], Any] = sys.stdout.write
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}
        self.index_mismatches: dict[str, list[tuple[int, int]]] = {}
        # Files whose first bytes are not a batch: reported, then an error at the end.
        self.not_segments: list[str] = []

    def line(self, text: str) -> None:
        self.write(text + "\n")

    def json(self, obj: dict[str, Any]) -> None:
        self.write(json.dumps(obj, ensure_ascii=False) + "\n")

    def note(self, text: str) -> None:
        """A finding about the data: in the text dump on stdout (as Kafka), with --json on stderr."""
        if self.args.json:
            print(text, file=sys.stderr)
        else:
            self.line(text)

    # ---- .log -------------------------------------------------------------

    def _seek(self, path: str, data: Any) -> int:
        """Where to start for --offsets START: the .index entry at or below START."""
        if self.start is None:
            return 0
        index_path = Path(path).with_suffix(".index")
        base = base_offset_of(path)
        if not path.endswith(".log") or base is None or not index_path.is_file() or self.start <= base:
            return 0
        from kafkabatch.log.index import InvalidIndexError, offset_index_entries

        try:
            offsets, positions = offset_index_entries(index_path.read_bytes(), base)
        except InvalidIndexError:
            return 0  # an index a broker could not have written: read from the start
        i = bisect.bisect_right(offsets, self.start) - 1
        if i < 0 or not 0 < positions[i] < len(data):
            return 0
        # Trust the entry only if a good batch starts there that holds offsets <= the entry's.
        first = next(iter(kb.iter_batches(data, validate_crc=False, on_error="keep", start=positions[i])), None)
        if first is None or first.error is not None or first.position != positions[i] or first.base_offset > offsets[i]:
            return 0
        return positions[i]

    def dump_log(self, path: str) -> None:
        args = self.args
        name = Path(path).name
        tp = kb.topic_partition_from_path(path)
        if not args.json:
            self.line(f"Dumping {path}")
            base = base_offset_of(path)
            if name.endswith((".log", ".rsm-manifest")) and base is not None:  # a manifest stands for its segment
                self.line(f"Log starting offset: {base}")
        options: dict[str, Any] = {}
        committed = args.isolation == "read_committed"
        if committed:
            options["isolation"] = "read_committed"
            txn_index = Path(path).with_suffix(".txnindex")
            if name.endswith(".log") and txn_index.is_file():
                from kafkabatch.log.index import read_txn_index

                options["aborted_transactions"] = read_txn_index(txn_index)
                options["hide_open_transactions"] = True
        last_offset = -1
        pairs: list[tuple[int, int]] = []
        with mapped(path, tiered_keys(args)) as whole:
            data = whole if args.max_bytes is None else whole[: args.max_bytes]
            if self.internal is not None:
                self.decoded = Decoded(data, tp[0] if tp else None, self.internal)
            it = kb.iter_batches(data, validate_crc=False, on_error="keep", start=self._seek(path, data), **options)
            stopped = False
            for b in it:
                if b.error is not None:
                    self._unreadable(path, tp, b)
                    continue
                if self.start is not None and b.last_offset < self.start:
                    continue
                if self.end is not None and b.base_offset >= self.end:
                    stopped = True
                    break
                if args.json and args.batches:
                    self.json(batch_json(b, path, tp))
                elif not args.json:
                    self.line(batch_line(b))
                if not (self.deep or (args.json and not args.batches)):
                    continue
                if args.json and not args.batches and b.is_control and not args.include_control:
                    continue
                try:
                    records = b.records()
                except kb.KafkaBatchError as e:
                    self.note(f"| records of the batch at position {b.position} can't be read: {e}")
                    continue
                for r in records:
                    if (self.start is not None and r.offset < self.start) or (
                        self.end is not None and r.offset >= self.end
                    ):
                        continue
                    if self.deep and not committed:  # read_committed leaves gaps on purpose
                        if last_offset != -1 and r.offset != last_offset + 1:
                            pairs.append((last_offset, r.offset))
                        last_offset = r.offset
                    if args.json:
                        if not args.batches:
                            self._record_json(path, tp, b, r)
                    else:
                        self.line(record_line(b, r, args, self.decoded))
            end, trailing, end_error, walk_end = it.end, it.trailing_bytes, it.end_error, it.position
            del it, data
            self.decoded = None
        if pairs:
            self.non_consecutive.setdefault(os.path.abspath(path), []).extend(pairs)
        if stopped or end is None:
            return
        if end == "broken":
            reason = getattr(end_error, "reason", None) or str(end_error or "broken framing")
            self.note(f"Broken framing at position: {walk_end} reason: {reason}")
            if walk_end == 0:
                with open(path, "rb") as f:
                    guess = guess_content(f.read(512), path)
                self.not_segments.append(f"{path}: byte 0: {reason}" + (f"; {guess}" if guess else ""))
        # Kafka reports trailing bytes only when reading the whole file.
        if trailing > 0 and args.max_bytes is None:
            self.note(f"Found {trailing} invalid bytes at the end of {Path(path).name}")

    def _unreadable(self, path: str, tp: tuple[str, int] | None, b: kb.Batch) -> None:
        if self.args.json:
            if self.args.batches:
                self.json(batch_json(b, path, tp))
            else:
                print(
                    f"{path}: skipping unreadable batch at position {b.position} (size {b.size_in_bytes}): {b.error}",
                    file=sys.stderr,
                )
            return
        self.line(
            f"Skipping unreadable batch at position: {b.position} size: {b.size_in_bytes} "
            f"magic: {b.magic} error: {b.error}"
        )

    def _record_json(self, path: str, tp: tuple[str, int] | None, b: kb.Batch, r: kb.Record) -> None:
        obj = record_json(
            tp[0] if tp else None,
            tp[1] if tp else None,
            r.offset,
            r.timestamp,
            r.timestamp_type,
            r.key,
            r.value,
            r.headers,
            self.formats,
        )
        obj["sequence"] = r.sequence
        obj["batch_position"] = b.position
        control = b.control if b.is_control else None
        obj["control"] = (
            None if control is None else {"type": control.type, "coordinator_epoch": control.coordinator_epoch}
        )
        obj["file"] = path
        if self.decoded is not None:
            obj.update(self.decoded.fields(r.offset))
        self.json(obj)

    # ---- index files ------------------------------------------------------

    def _read_index(self, reader: Callable[..., Any], path: str) -> Any:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = reader(path)
        for w in caught:
            warn(str(w.message))
        return table

    def dump_offset_index(self, path: str) -> None:
        from kafkabatch.log.index import read_offset_index

        if not self.args.json:
            self.line(f"Dumping {path}")
        table = self._read_index(read_offset_index, path)
        if table.num_rows == 0:
            self.note(f"{path} is empty.")
            return
        offsets = table.column("offset").to_pylist()
        positions = table.column("position").to_pylist()
        log_path = Path(path).with_suffix(".log")
        mismatches: list[tuple[int, int]] = []
        if log_path.is_file():
            with mapped(str(log_path)) as data:
                for offset, position in zip(offsets, positions):
                    found = -1
                    if 0 <= position < len(data):
                        b = next(iter(kb.iter_batches(data, validate_crc=False, on_error="keep", start=position)), None)
                        if b is not None and b.position == position and b.error is None:
                            found = b.last_offset
                    if found != offset:
                        mismatches.append((offset, found))
        if mismatches:
            self.index_mismatches[os.path.abspath(path)] = mismatches
        if self.args.verify_index_only:
            return
        if self.args.json:
            for entry in table.to_pylist():
                self.json({"file": path, **entry})
        else:
            self.write("".join(f"offset: {o} position: {p}\n" for o, p in zip(offsets, positions)))

    def dump_time_index(self, path: str) -> None:
        from kafkabatch.log.index import read_time_index

        if not self.args.json:
            self.line(f"Dumping {path}")
        table = self._read_index(read_time_index, path)
        if self.args.verify_index_only:
            return
        if self.args.json:
            for entry in table.to_pylist():
                self.json({"file": path, **entry})
            return
        ts = table.column("timestamp").to_pylist()
        offsets = table.column("offset").to_pylist()
        self.write("".join(f"timestamp: {t} offset: {o}\n" for t, o in zip(ts, offsets)))

    def dump_txn_index(self, path: str) -> None:
        from kafkabatch.log.index import read_txn_index

        if not self.args.json:
            self.line(f"Dumping {path}")
        table = self._read_index(read_txn_index, path)
        if self.args.json:
            for entry in table.to_pylist():
                self.json({"file": path, **entry})
            return
        for e in table.to_pylist():
            self.line(
                f"version: {e['version']} producerId: {e['producer_id']} firstOffset: {e['first_offset']} "
                f"lastOffset: {e['last_offset']} lastStableOffset: {e['last_stable_offset']}"
            )

    # ---- the end ------------------------------------------------------------

    def report(self) -> None:
        sys.stdout.flush()
        for name, entries in self.index_mismatches.items():
            print(f"Mismatches in :{name}", file=sys.stderr)
            for index_offset, log_offset in entries:
                print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=sys.stderr)
        for name, pairs in self.non_consecutive.items():
            print(f"Non-consecutive offsets in {name}", file=sys.stderr)
            for first, second in pairs:
                print(f"  {first} is followed by {second}", file=sys.stderr)


_IGNORED_SUFFIXES = (".snapshot", ".checkpoint", ".properties", ".deleted", ".cleaned", ".swap")


def _expand(args: argparse.Namespace) -> list[str]:
    names = list(args.files)
    for option in args.files_option:
        names.extend(n.strip() for n in option.split(",") if n.strip())
    if not names:
        raise CliError("no files to dump (give FILE arguments or --files)")
    paths: list[str] = []
    for name in names:
        if is_remote(name):  # a remote segment (or manifest), or a prefix of them
            if remote_size(name) is not None:
                paths.append(name)
            else:
                paths.extend(s.path for s in find_segments([name], tiered_keys(args)))
        elif os.path.isdir(name):
            paths.extend(s.path for s in find_segments([name], tiered_keys(args)))
        elif os.path.isfile(name):
            paths.append(name)
        elif os.path.exists(name):
            raise CliError(f"not a regular file: {name}")
        else:
            raise CliError(f"no such file or folder: {name}")
    return paths


def run(args: argparse.Namespace) -> int:
    if args.batches and not args.json:
        raise CliError("--batches only makes sense with --json")
    paths = _expand(args)
    dumper = _Dumper(args)
    for path in paths:
        suffix = Path(path).suffix
        if suffix == ".index":
            dumper.dump_offset_index(path)
        elif suffix == ".timeindex":
            dumper.dump_time_index(path)
        elif suffix == ".txnindex":
            dumper.dump_txn_index(path)
        elif suffix in _IGNORED_SUFFIXES and snapshot_id(Path(path).name) is None:  # KRaft snapshots are batches
            print(f"Ignoring unknown file {path}", file=sys.stderr)
        else:
            dumper.dump_log(path)
    dumper.report()
    if dumper.not_segments:
        more = f" (and {len(dumper.not_segments) - 1} more files)" if len(dumper.not_segments) > 1 else ""
        raise CliError(dumper.not_segments[0] + more)
    return 0
