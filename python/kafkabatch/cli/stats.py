"""``kafkabatch stats``: what is in a log, per segment and per topic-partition."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import kafkabatch as kb
from kafkabatch.log.txn import DEFAULT_MAX_CHUNK_BYTES

from ._common import (
    SegmentFile,
    add_tiered_option,
    find_segments,
    format_bytes,
    format_ms,
    mapped,
    positive_size_arg,
    progress_bar,
    tiered_keys,
    warn,
)

DESCRIPTION = """\
Count what Kafka log segments hold, per segment and per topic-partition:
batches, records, bytes, codecs, compression ratio, offset and time ranges,
transactional and control batches, and problems (bad CRCs, unreadable
batches, invalid bytes at the end). PATH is a segment file, a
<topic>-<partition> folder, or a folder of them (a broker log dir)."""

EPILOG = """\
examples:
  kafkabatch stats /var/lib/kafka/data/orders-0
  kafkabatch stats /var/lib/kafka/data               # every partition
  kafkabatch stats --json orders-0 | jq .total.records
  kafkabatch stats --headers-only --partitions /var/lib/kafka/data

columns:
  ratio      record bytes (keys + values + header keys and values, after
             decompression) / stored bytes (those batches as on disk); batch
             and record framing count as stored bytes, so an uncompressed log
             shows a little under 1; needs a decode (not with --headers-only)
  time       from batch headers: first record (or batch) timestamp to the
             largest max timestamp, UTC
  txn/ctrl   transactional data batches / control batches (COMMIT+ABORT)
"""


def add_parser(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "stats",
        parents=parents,
        help="summarise segments and partitions (table or JSON)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="segment files or folders")
    add_tiered_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON document (segments, partitions, total)")
    p.add_argument("--partitions", action="store_true", help="table: one row per topic-partition, not per segment")
    p.add_argument(
        "--wide",
        action="store_true",
        help="table: also the compression ratio and transactional/control batches, and times to the millisecond",
    )
    p.add_argument(
        "--headers-only",
        action="store_true",
        help="read batch headers only (fast; no record bytes or compression ratio)",
    )
    p.add_argument(
        "--window",
        type=positive_size_arg,
        default=DEFAULT_MAX_CHUNK_BYTES,
        metavar="SIZE",
        help="decode at most about SIZE of batches at once (default 16MiB)",
    )
    p.add_argument(
        "--max-decompressed-size",
        type=positive_size_arg,
        default=kb.DEFAULT_MAX_DECOMPRESSED_SIZE,
        metavar="SIZE",
        help="refuse batches that decompress to more than SIZE",
    )
    p.add_argument(
        "--no-progress", action="store_true", help="no progress bar (there is none unless stderr is a terminal)"
    )
    p.set_defaults(func=run)


@dataclass
class Stats:
    """Counts for a segment, a partition or everything."""

    path: str | None = None
    topic: str | None = None
    partition: int | None = None
    base_offset: int | None = None
    segments: int = 0
    file_bytes: int = 0
    stored_bytes: int = 0
    batches: int = 0
    records: int = 0
    control_batches: int = 0
    commit_markers: int = 0
    abort_markers: int = 0
    transactional_batches: int = 0
    invalid_crc_batches: int = 0
    unreadable_batches: int = 0
    trailing_bytes: int = 0
    end: str = "clean"
    codecs: Counter[str] = field(default_factory=Counter)
    magics: Counter[int] = field(default_factory=Counter)
    first_offset: int | None = None
    last_offset: int | None = None
    min_timestamp: int | None = None
    max_timestamp: int | None = None
    record_bytes: int | None = None
    decoded_stored_bytes: int = 0  # the stored bytes of the batches whose records were counted

    @property
    def compression_ratio(self) -> float | None:
        if self.record_bytes is None or not self.decoded_stored_bytes:
            return None
        return self.record_bytes / self.decoded_stored_bytes

    def add(self, other: Stats) -> None:
        for name in (
            "segments",
            "file_bytes",
            "stored_bytes",
            "batches",
            "records",
            "control_batches",
            "commit_markers",
            "abort_markers",
            "transactional_batches",
            "invalid_crc_batches",
            "unreadable_batches",
            "trailing_bytes",
            "decoded_stored_bytes",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.codecs.update(other.codecs)
        self.magics.update(other.magics)
        self.first_offset = _min(self.first_offset, other.first_offset)
        self.last_offset = _max(self.last_offset, other.last_offset)
        self.min_timestamp = _min(self.min_timestamp, other.min_timestamp)
        self.max_timestamp = _max(self.max_timestamp, other.max_timestamp)
        if other.record_bytes is not None:
            self.record_bytes = (self.record_bytes or 0) + other.record_bytes
        if other.end != "clean":
            self.end = other.end

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.path is not None:
            out["path"] = self.path
        out.update(topic=self.topic, partition=self.partition)
        if self.path is not None:
            out["base_offset"] = self.base_offset
        else:
            out["segments"] = self.segments
        out.update(
            file_bytes=self.file_bytes,
            stored_bytes=self.stored_bytes,
            batches=self.batches,
            records=self.records,
            control_batches=self.control_batches,
            commit_markers=self.commit_markers,
            abort_markers=self.abort_markers,
            transactional_batches=self.transactional_batches,
            invalid_crc_batches=self.invalid_crc_batches,
            unreadable_batches=self.unreadable_batches,
            trailing_bytes=self.trailing_bytes,
            end=self.end,
            codecs=dict(sorted(self.codecs.items())),
            magics={str(k): v for k, v in sorted(self.magics.items())},
            first_offset=self.first_offset,
            last_offset=self.last_offset,
            min_timestamp=self.min_timestamp,
            max_timestamp=self.max_timestamp,
            record_bytes=self.record_bytes,
            compression_ratio=None if self.compression_ratio is None else round(self.compression_ratio, 4),
        )
        return out


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def table_record_bytes(table: pa.Table) -> int:
    """Keys + values + header keys + header values, in bytes (vectorised)."""
    total = 0
    for name in ("key", "value"):
        total += pc.sum(pc.binary_length(table.column(name))).as_py() or 0
    for chunk in table.column("headers").chunks:
        flat = chunk.flatten()
        if len(flat):
            total += pc.sum(pc.binary_length(flat.field("key"))).as_py() or 0
            total += pc.sum(pc.binary_length(flat.field("value"))).as_py() or 0
    return total


def segment_stats(seg: SegmentFile, args: argparse.Namespace, progress: Any) -> Stats:
    st = Stats(
        path=seg.path,
        topic=seg.topic,
        partition=seg.partition,
        base_offset=seg.base_offset,
        segments=1,
        file_bytes=seg.size,
    )
    unreadable: set[int] = set()
    bad_crc: set[int] = set()
    decode = not args.headers_only
    if decode:
        st.record_bytes = 0
    with mapped(seg.path, tiered_keys(args), args.max_decompressed_size) as data:
        window_start = 0
        done = 0

        def flush(end: int) -> None:
            nonlocal window_start, done
            if decode and end > window_start:
                report = kb.decode_report(
                    data[window_start:end],
                    validate_crc=False,
                    on_error="skip",
                    max_decompressed_size=args.max_decompressed_size,
                )
                st.record_bytes = (st.record_bytes or 0) + table_record_bytes(report.table)
                st.decoded_stored_bytes += end - window_start - report.skipped_bytes - report.trailing_bytes
                for error in report.skipped:
                    unreadable.add(window_start + int(getattr(error, "batch_position", 0) or 0))
                del report
            progress.advance(end - done)
            done = end
            window_start = end

        it = kb.iter_batches(
            data, validate_crc=False, on_error="keep", max_decompressed_size=args.max_decompressed_size
        )
        for b in it:
            end = b.position + b.size_in_bytes
            st.batches += 1
            st.stored_bytes += b.size_in_bytes
            if b.error is not None:
                unreadable.add(b.position)
            else:
                st.codecs[b.compression] += 1
                st.magics[b.magic] += 1
                if not b.crc_valid:
                    bad_crc.add(b.position)
                if b.is_control:
                    st.control_batches += 1
                    control = b.control
                    if control is not None and control.type == "COMMIT":
                        st.commit_markers += 1
                    elif control is not None and control.type == "ABORT":
                        st.abort_markers += 1
                else:
                    st.records += b.record_count
                    if b.is_transactional:
                        st.transactional_batches += 1
                st.first_offset = _min(st.first_offset, b.base_offset)
                st.last_offset = _max(st.last_offset, b.last_offset)
                first_ts = b.base_timestamp if b.magic >= 2 and b.timestamp_type == 0 else b.max_timestamp
                if first_ts >= 0:
                    st.min_timestamp = _min(st.min_timestamp, first_ts)
                if b.max_timestamp >= 0:
                    st.max_timestamp = _max(st.max_timestamp, b.max_timestamp)
            if end - window_start >= args.window:
                flush(end)
        valid_end = it.position
        st.trailing_bytes = it.trailing_bytes
        st.end = it.end or "clean"
        del it
        flush(valid_end)
        progress.advance(seg.size - done)
    # One damaged batch counts once: unreadable when its records can't be
    # decoded, else bad CRC (whose records are counted).
    st.unreadable_batches = len(unreadable)
    st.invalid_crc_batches = len(bad_crc - unreadable)
    return st


def _stats_or_twin(seg: SegmentFile, args: argparse.Namespace, progress: Any) -> Stats:
    """:func:`segment_stats`, or, for a damaged remote segment with another
    copy of its offsets (another upload), that copy's, with a warning."""
    try:
        return segment_stats(seg, args, progress)
    except kb.TieredStorageError as error:
        for twin in seg.twins:
            try:
                st = segment_stats(replace(seg, path=twin), args, progress)
            except kb.TieredStorageError:
                continue
            warn(f"{error}; counted its other copy {twin} instead")
            return st
        raise


def _problems(st: Stats) -> str:
    parts = []
    if st.invalid_crc_batches:
        parts.append(f"{st.invalid_crc_batches} bad CRC")
    if st.unreadable_batches:
        parts.append(f"{st.unreadable_batches} unreadable")
    if st.trailing_bytes:
        parts.append(f"{st.trailing_bytes} B at end ({st.end})")
    return ", ".join(parts) or "-"


def _row(label: str, segment: str, st: Stats, wide: bool = False) -> list[str]:
    offsets = "-" if st.first_offset is None else f"{st.first_offset}..{st.last_offset}"
    times = _time_range(st.min_timestamp, st.max_timestamp, wide)
    ratio = "-" if st.compression_ratio is None else f"{st.compression_ratio:.2f}"
    codecs = ", ".join(sorted(st.codecs)) or "-"
    row = [label, segment, format_bytes(st.file_bytes), f"{st.batches:,}", f"{st.records:,}", offsets, times, codecs]
    if wide:
        row += [ratio, f"{st.transactional_batches}/{st.control_batches}", _problems(st)]
    return row


def _time_range(first: int | None, last: int | None, wide: bool = False) -> str:
    """``2023-11-14 22:13:20..22:15:03``: to the second, the date once when
    both ends fall on it; ``wide``: both in full, to the millisecond."""
    if first is None:
        return "-"
    if wide:
        return f"{format_ms(first)} .. {format_ms(last)}"
    start, end = format_ms(first)[:19], format_ms(last)[:19]
    return f"{start}..{end[11:] if end[:10] == start[:10] else end}"


def _partition_label(st: Stats) -> str:
    if st.topic is None or st.partition is None:
        return "?"
    return f"{st.topic}-{st.partition}"


def run(args: argparse.Namespace) -> int:
    segments = find_segments(args.paths, tiered_keys(args))
    total_bytes = sum(s.size for s in segments)
    per_segment: list[Stats] = []
    with progress_bar(total_bytes, "stats", enabled=not args.no_progress) as progress:
        for seg in segments:
            per_segment.append(_stats_or_twin(seg, args, progress))
    partitions: dict[tuple[Any, Any], Stats] = {}
    total = Stats()
    for st in per_segment:
        key = (st.topic, st.partition) if st.topic is not None else (None, st.path)
        agg = partitions.setdefault(key, Stats(topic=st.topic, partition=st.partition))
        agg.add(st)
        total.add(st)
    if args.json:
        doc = {
            "segments": [s.to_json() for s in per_segment],
            "partitions": [p.to_json() for p in partitions.values()],
            "total": {k: v for k, v in total.to_json().items() if k not in ("topic", "partition")},
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    _print_table(per_segment, partitions, total, by_partition=args.partitions, wide=args.wide)
    return 0


def _print_table(
    per_segment: list[Stats],
    partitions: dict[tuple[Any, Any], Stats],
    total: Stats,
    *,
    by_partition: bool,
    wide: bool = False,
) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    # Fit 80-120 columns: the terminal's width, or 120 in a pipe; rich wraps
    # time and codecs when a row needs more, and problems are listed below
    # the table (in it with --wide).
    console = Console(width=None if sys.stdout.isatty() else (220 if wide else 120), highlight=False)
    table = Table(show_lines=False, header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True)
    narrow = console.width < 110 and not wide  # an 80-column terminal: no batches nor codecs
    columns = [
        ("partition", "left"),
        ("segment", "right"),
        ("size", "right"),
        *([] if narrow else [("batches", "right")]),
        ("records", "right"),
        ("offsets", "right"),
        ("time (UTC)", "left"),
        *([] if narrow else [("codecs", "left")]),
        *([("ratio", "right"), ("txn/ctrl", "right"), ("problems", "left")] if wide else []),
    ]
    # Only time and codecs wrap: names and numbers stay whole. A time range
    # within one day (29 characters) stays whole too: rich crops a cell it
    # wrapped when two columns share the shrinking ("gzip, lz4, none, sn").
    one_day = all(len(_time_range(st.min_timestamp, st.max_timestamp)) <= 29 for st in [*per_segment, total])
    wrapping = ("codecs",) if one_day and not (wide or narrow) else ("time (UTC)", "codecs")
    for name, justify in columns:
        table.add_column(
            name,
            justify=justify,  # type: ignore[arg-type]
            no_wrap=name not in wrapping,
            min_width=29 if name == "time (UTC)" and not (wide or narrow) else None,
        )

    def add_row(*cells: str, end_section: bool = False) -> None:
        table.add_row(*(cells[:3] + cells[4:7] if narrow else cells), end_section=end_section)

    if by_partition:
        for st in partitions.values():
            add_row(*_row(_partition_label(st), f"{st.segments} seg", st, wide))
    else:
        for key, agg in partitions.items():
            members = [
                s for s in per_segment if ((s.topic, s.partition) if s.topic is not None else (None, s.path)) == key
            ]
            for st in members:
                label = _partition_label(st) if st.topic is not None else st.path or "?"
                segment = str(st.base_offset) if st.base_offset is not None else "-"
                add_row(*_row(label, segment, st, wide))
            if len(members) > 1:
                add_row(
                    *_row(f"[bold]{_partition_label(agg)}[/bold]", f"[bold]{agg.segments} seg[/bold]", agg, wide),
                    end_section=True,
                )
    if len(partitions) > 1:
        add_row(*_row("[bold]total[/bold]", f"[bold]{total.segments} seg[/bold]", total, wide))
    console.print(table)
    if not wide:
        damaged = [
            (_partition_label(st) if by_partition else st.path or _partition_label(st), _problems(st))
            for st in (partitions.values() if by_partition else per_segment)
            if _problems(st) != "-"
        ]
        for where, problems in damaged:
            console.print(f"problems: {where}: {problems}", soft_wrap=True)
        if not damaged:
            console.print("problems: none")
