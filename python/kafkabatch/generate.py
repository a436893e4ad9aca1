"""Write a realistic sample Kafka log dir, fast: segments plus the broker's index files.

>>> from kafkabatch.generate import generate
>>> summary = generate("/tmp/kafka-logs", size="64MB", seed=7)   # doctest: +SKIP
>>> print(summary)                                                # doctest: +SKIP
wrote 64.0 MiB to /tmp/kafka-logs in 10 partitions (6 topics, 30 segments): 128,512 records ... 393.2 MiB/s

The records are made in Rust (``kafkabatch._kafkabatch.PartitionWriter``: a
seeded PRNG, JSON-ish values, the streaming encoder, index files); this module
picks topics, codecs and sizes, runs the partitions on a few threads (each
step releases the GIL) and draws the progress bar. The same arguments write
the same bytes, whatever the number of threads.

Layout (as a broker's ``log.dirs``)::

    <out_dir>/<topic>-<partition>/00000000000000000000.log        record batches
                                 /00000000000000000000.index      offset -> position, every ~4 KiB
                                 /00000000000000000000.timeindex  max timestamp -> offset
                                 /00000000000000001234.txnindex   aborted transactions (when any)
                                 /leader-epoch-checkpoint
    <out_dir>/schemas/registry.json            {schema id: Avro schema}, the registry of the Avro topic
                     /<topic>.schema.json       JSON Schema of each JSON topic's values

See :mod:`kafkabatch.log.index` to read the index files back, and
``docs`` of :func:`generate` for what is in the data.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kafkabatch import _kafkabatch as _native
from kafkabatch._encode import CODECS
from kafkabatch._sample_schemas import AVRO_KINDS, JSON_SCHEMAS, REGISTRY_FILE, SHIPMENT_SCHEMAS, write_schemas
from kafkabatch._util import byte_progress, format_bytes, parse_size
from kafkabatch.generate_tiered import DEFAULT_CHUNK_SIZE, LAYOUTS, TieredBucket, upload_log_dir

__all__ = [
    "DEFAULT_CODECS",
    "DEFAULT_SIZE",
    "DEFAULT_TOPICS",
    "AVRO_KINDS",
    "JSON_SCHEMAS",
    "KINDS",
    "REGISTRY_FILE",
    "SHIPMENT_SCHEMAS",
    "START_TIMESTAMP",
    "GenerateSummary",
    "TopicSpec",
    "TopicSummary",
    "generate",
]

#: Record shapes the generator knows (``TopicSpec.kind``).
KINDS: tuple[str, ...] = ("orders", "clicks", "payments", "customers", "audit", "events", "shipments")

#: How much :func:`generate` and ``kafkabatch generate`` write by default.
DEFAULT_SIZE = "64MB"

#: Timestamp of the first records: 2026-11-01T00:00:00Z, in ms.
START_TIMESTAMP: int = 1_793_491_200_000


@dataclass(frozen=True)
class TopicSpec:
    """One topic to generate.

    ``kind`` picks the record shape (one of :data:`KINDS`; default: the topic
    name when it is one, else ``"events"``). ``share`` is the topic's part of
    the total size, relative to the other topics'. ``codec`` (None: from
    ``generate(codecs=...)``) and ``magic`` (0, 1, 2) apply to every
    partition. ``transactional_producers`` (default 2 for magic 2, else 0)
    write transactions that end in COMMIT or ABORT markers.
    """

    name: str
    partitions: int = 1
    magic: int = 2
    codec: str | None = None
    kind: str | None = None
    share: float = 1.0
    transactional_producers: int | None = None

    def resolved_kind(self) -> str:
        if self.kind is not None:
            return self.kind
        return self.name if self.name in KINDS else "events"


#: The default topics: a small shop. ``audit-legacy`` is written as magic 1
#: (a topic an old producer still writes), so the log mixes formats;
#: ``shipments`` holds Confluent-framed Avro of two schema versions.
DEFAULT_TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec("orders", 3, share=0.35),
    TopicSpec("clicks", 2, share=0.15),
    TopicSpec("payments", 2, share=0.15),
    TopicSpec("customers", 1, share=0.10),
    TopicSpec("audit-legacy", 1, magic=1, kind="audit", share=0.15),
    TopicSpec("shipments", 1, share=0.10),
)

#: The default codec of each default topic: every codec appears once.
DEFAULT_CODECS: Mapping[str, str] = {
    "orders": "lz4",
    "clicks": "snappy",
    "payments": "zstd",
    "customers": "none",
    "audit-legacy": "gzip",
    "shipments": "zstd",
}
# Codecs for other topics, in turn (zstd skipped for magic 0/1).
_CODEC_CYCLE = ("lz4", "snappy", "zstd", "none", "gzip")

_STEP_BYTES = 4 << 20
_BATCH_BYTES = 16384  # the producer's default batch.size
_PROGRESS_MIN_SIZE = 128 << 20


@dataclass(frozen=True)
class TopicSummary:
    """What :func:`generate` wrote for one topic."""

    name: str
    partitions: int
    magic: int
    codec: str
    kind: str
    bytes: int
    index_bytes: int
    segments: int
    records: int
    batches: int
    control_batches: int
    committed_records: int
    aborted_records: int
    committed_transactions: int
    aborted_transactions: int
    tombstones: int
    null_keys: int
    #: Records of each partition (aborted ones included).
    partition_records: tuple[int, ...] = ()
    #: Log end offset of each partition (records + control batches).
    partition_end_offsets: tuple[int, ...] = ()
    #: The schema of the values: a JSON Schema file, or for Avro values the
    #: ``{schema id: Avro schema}`` file that ``schema_registry`` takes.
    schema_file: Path | None = None


@dataclass(frozen=True)
class GenerateSummary:
    """What :func:`generate` wrote.

    ``records`` counts every data record (what ``read_uncommitted`` shows);
    ``aborted_records`` of them are in aborted transactions, so
    ``read_committed`` shows ``records - aborted_records``
    (:attr:`read_committed_records`). ``batches`` counts top-level entries as
    :func:`kafkabatch.iter_batches` walks them (control batches included).
    ``bytes_written`` is the ``.log`` bytes; ``index_bytes`` the index files'.
    """

    folder: Path
    bytes_written: int
    index_bytes: int
    records: int
    batches: int
    control_batches: int
    segments: int
    committed_records: int
    aborted_records: int
    committed_transactions: int
    aborted_transactions: int
    elapsed: float
    topics: dict[str, TopicSummary] = field(default_factory=dict)
    #: The tiered-storage bucket uploaded from the log dir (``generate(tiered=...)``), else None.
    tiered: TieredBucket | None = None

    @property
    def mb_per_s(self) -> float:
        """Throughput: ``.log`` megabytes (10^6 bytes) written per second."""
        return self.bytes_written / 1e6 / self.elapsed if self.elapsed > 0 else float("inf")

    @property
    def read_committed_records(self) -> int:
        """Records a ``read_committed`` consumer sees."""
        return self.records - self.aborted_records

    @property
    def records_per_topic(self) -> dict[str, int]:
        return {name: t.records for name, t in self.topics.items()}

    def __str__(self) -> str:
        partitions = sum(t.partitions for t in self.topics.values())
        lines = [
            f"wrote {format_bytes(self.bytes_written)} to {self.folder} in {partitions} partitions "
            f"({len(self.topics)} topics, {self.segments} segments): {self.records:,} records in "
            f"{self.batches:,} batches, {self.committed_transactions} committed / {self.aborted_transactions} "
            f"aborted transactions ({self.aborted_records:,} aborted records); "
            f"{self.elapsed:.2f} s, {format_bytes(self.bytes_written / self.elapsed if self.elapsed > 0 else 0)}/s",
        ]
        for t in self.topics.values():
            lines.append(
                f"  {t.name:<16} {t.partitions} part. magic {t.magic} {t.codec:<6} {format_bytes(t.bytes):>10} "
                f"{t.records:>10,} records {t.segments:>4} segments"
            )
        if self.tiered is not None:
            lines.append(str(self.tiered))
        return "\n".join(lines)


def _topic_specs(topics: Any) -> list[TopicSpec]:
    if topics is None:
        return list(DEFAULT_TOPICS)
    specs: list[TopicSpec] = []
    if isinstance(topics, Mapping):
        for name, value in topics.items():
            if isinstance(value, TopicSpec):
                specs.append(replace(value, name=name))
            elif isinstance(value, Mapping):
                specs.append(TopicSpec(name=name, **value))
            elif isinstance(value, int) and not isinstance(value, bool):
                specs.append(TopicSpec(name=name, partitions=value))
            else:
                raise TypeError(f"topics[{name!r}] must be a partition count, a TopicSpec or a dict of its fields")
    elif isinstance(topics, (str, bytes)):
        raise TypeError("topics must be a list of TopicSpec/names or a {name: partitions} dict, not a str")
    else:
        for item in topics:
            if isinstance(item, TopicSpec):
                specs.append(item)
            elif isinstance(item, str):
                specs.append(TopicSpec(name=item))
            else:
                raise TypeError(f"topics items must be TopicSpec or topic names, not {type(item).__name__}")
    if not specs:
        raise ValueError("topics is empty")
    seen = set()
    for spec in specs:
        if not spec.name or "/" in spec.name or spec.name in (".", ".."):
            raise ValueError(f"invalid topic name {spec.name!r}")
        if spec.name in seen:
            raise ValueError(f"topic {spec.name!r} is listed twice")
        seen.add(spec.name)
        if isinstance(spec.partitions, bool) or not isinstance(spec.partitions, int) or spec.partitions < 1:
            raise ValueError(f"topic {spec.name!r}: partitions must be an int >= 1, not {spec.partitions!r}")
        if spec.magic not in (0, 1, 2):
            raise ValueError(f"topic {spec.name!r}: magic must be 0, 1 or 2, not {spec.magic!r}")
        if spec.resolved_kind() not in KINDS:
            raise ValueError(f"topic {spec.name!r}: unknown kind {spec.kind!r}; use one of {', '.join(KINDS)}")
        if not spec.share > 0:
            raise ValueError(f"topic {spec.name!r}: share must be > 0, not {spec.share!r}")
        if spec.transactional_producers is not None and spec.transactional_producers < 0:
            raise ValueError(f"topic {spec.name!r}: transactional_producers must be >= 0")
        if spec.transactional_producers and spec.magic < 2:
            raise ValueError(f"topic {spec.name!r}: transactions need magic 2 (magic is {spec.magic})")
    return specs


def _check_codec(codec: Any, spec: TopicSpec) -> str:
    if not isinstance(codec, str) or codec.lower() not in CODECS:
        raise ValueError(f"topic {spec.name!r}: unknown codec {codec!r}; use one of {', '.join(CODECS)}")
    codec = codec.lower()
    if codec == "zstd" and spec.magic < 2:
        raise ValueError(
            f"topic {spec.name!r}: zstd needs magic 2 (the topic is written as magic {spec.magic}); "
            f"give it another codec, e.g. codecs={{{spec.name!r}: 'gzip', ...}}"
        )
    return codec


def _assign_codecs(specs: list[TopicSpec], codecs: Any) -> list[str]:
    out = []
    for i, spec in enumerate(specs):
        codec: Any
        if spec.codec is not None:
            codec = spec.codec
        elif codecs is None:
            codec = DEFAULT_CODECS.get(spec.name)
            if codec is None:
                cycle = [c for c in _CODEC_CYCLE if spec.magic == 2 or c != "zstd"]
                codec = cycle[i % len(cycle)]
        elif isinstance(codecs, str):
            codec = codecs
        elif isinstance(codecs, Mapping):
            codec = codecs.get(spec.name, "none")
        elif isinstance(codecs, Sequence) and codecs:
            codec = codecs[i % len(codecs)]
        else:
            raise TypeError("codecs must be None, a codec name, a {topic: codec} dict or a list of codec names")
        out.append(_check_codec(codec, spec))
    return out


class _Progress:
    """Bytes done so far, shown on a rich bar and/or handed to a callback."""

    def __init__(self, total: int, progress: Any):
        self.total = total
        self.done = 0
        self._lock = threading.Lock()
        self._callback: Callable[[int, int], Any] | None = progress if callable(progress) else None
        self._rich: Any = None
        self._task: Any = None
        show = progress is True or (progress is None and total >= _PROGRESS_MIN_SIZE and sys.stderr.isatty())
        if show:
            try:
                self._rich = byte_progress("[bold]generating")
            except ImportError:  # rich is a dependency, but stay usable without it
                return
            self._task = self._rich.add_task("generate", total=max(total, 1))

    def __enter__(self) -> _Progress:
        if self._rich is not None:
            self._rich.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._rich is not None:
            if exc[0] is None:
                self._rich.update(self._task, completed=max(self.done, self.total), total=max(self.done, self.total, 1))
            self._rich.stop()

    def advance(self, n: int) -> None:
        with self._lock:
            self.done += n
            done = self.done
        if self._rich is not None:
            self._rich.advance(self._task, n)
        if self._callback is not None:
            self._callback(done, self.total)


def _prepare_folder(folder: Path, overwrite: bool) -> None:
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        if not overwrite:
            raise FileExistsError(f"{folder} already exists and is not empty; pass overwrite=True to replace it")
        if folder.is_dir():
            shutil.rmtree(folder)
        else:
            folder.unlink()


def generate(
    out_dir: str | os.PathLike[str],
    *,
    size: int | str = DEFAULT_SIZE,
    topics: Iterable[TopicSpec | str] | Mapping[str, Any] | None = None,
    codecs: str | Mapping[str, str] | Sequence[str] | None = None,
    segment_bytes: int | str | None = None,
    seed: int = 0,
    progress: bool | Callable[[int, int], Any] | None = None,
    threads: int | None = None,
    overwrite: bool = False,
    start_timestamp: int | _dt.datetime = START_TIMESTAMP,
    tiered: str | None = None,
    tiered_compression: bool = False,
    tiered_encryption: bool = False,
    tiered_chunk_size: int | str = DEFAULT_CHUNK_SIZE,
) -> GenerateSummary:
    """Write a sample Kafka log dir of about ``size`` bytes of segments under ``out_dir``.

    Each partition becomes a folder ``<topic>-<partition>`` of segments
    ``<20-digit base offset>.log`` rolled before they pass ``segment_bytes``
    (default: ``size / 32`` within 1 MiB..1 GiB, so a 64 MB demo has a few
    per partition), each with Kafka's ``.index`` (relative offset -> position,
    one entry per ~4 KiB: ``index.interval.bytes``), ``.timeindex`` (max
    timestamp -> offset) and, for segments with aborted transactions,
    ``.txnindex``; plus a ``leader-epoch-checkpoint``.

    Default topics (:data:`DEFAULT_TOPICS`): ``orders`` (3 partitions),
    ``clicks`` (2; ~10% null keys), ``payments`` (2), ``customers`` (1; a
    compacted-style topic with ~5% tombstones), ``audit-legacy`` (1, magic
    1) and ``shipments`` (1; Confluent-framed Avro values written during a
    producer upgrade: about half with schema id 1, half with id 2, which adds
    fields with defaults). ``codecs`` None mixes every codec across topics
    (:data:`DEFAULT_CODECS`); a codec name applies to all topics, a dict
    names one per topic, a list is dealt out in turn.

    Each topic's value schema is written under ``<out_dir>/schemas``: a JSON
    Schema ``<topic>.schema.json`` per JSON topic (``value_schema``,
    ``--value-schema``, Spark's ``valueSchema`` take it), and
    ``registry.json``, ``{schema id: Avro schema}`` of the Avro topic, as
    ``schema_registry``, ``--schema-registry`` and Spark's ``schemaRegistry``
    take it; ``TopicSummary.schema_file`` names each topic's.

    The data is made to look real: JSON-ish values of ~100-1000 bytes with
    varying fields, string keys, 0-3 headers on v2 records (duplicate keys and
    null values included), timestamps increasing from ``start_timestamp``
    (2026-11-01T00:00:00Z). Magic-2 partitions are written by idempotent
    producers (ids, epochs, sequences), an occasional plain producer, and two
    transactional producers whose transactions (1-3 batches, interleaved
    with other batches) end in COMMIT or, about 30% of the time, ABORT
    markers. No transaction spans a segment roll. ``seed`` decides
    everything: the same arguments write the same bytes.

    ``progress``: None shows a rich progress bar on stderr when it is a
    terminal and ``size`` is at least 128 MiB; True/False force it; a callable
    is called as ``progress(bytes_done, bytes_total)``. Partitions are written
    on ``threads`` threads (default: up to the CPU count). Partition folders
    that exist and are not empty raise :class:`FileExistsError` unless
    ``overwrite``, which replaces them.

    ``tiered`` (``"aiven"`` or ``"local"``) also uploads every segment into a
    tiered-storage bucket, as Aiven's ``tiered-storage-for-apache-kafka``
    plugin (``tiered_compression``: chunks zstd'd; ``tiered_encryption``:
    AES-256-GCM with a new RSA key pair, key-pair id ``key-1``; chunks of
    ``tiered_chunk_size``) or Kafka's ``LocalTieredStorage`` stores them (see
    :mod:`kafkabatch.generate_tiered`). Then the log dir is
    ``<out_dir>/broker``, the bucket ``<out_dir>/bucket``, and the key pair
    ``<out_dir>/private.pem`` and ``public.pem``; the broker folder keeps every
    segment, so reading ``out_dir`` (both) returns each offset once. :attr:`GenerateSummary.tiered` says where and how.

    >>> s = generate("/tmp/kafka-logs", size="64MB")                  # doctest: +SKIP
    >>> kb.decode(open("/tmp/kafka-logs/orders-0/00000000000000000000.log", "rb").read()).num_rows  # doctest: +SKIP
    """
    total = parse_size(size, "size")
    specs = _topic_specs(topics)
    codecs_per_topic = _assign_codecs(specs, codecs)
    if segment_bytes is None:
        segment = min(max(total // 32, 1 << 20), 1 << 30)
    else:
        segment = parse_size(segment_bytes, "segment_bytes")
        if not 1 <= segment <= (1 << 31) - 1:
            raise ValueError(f"segment_bytes must be between 1 and {(1 << 31) - 1}, not {segment}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}")
    if isinstance(start_timestamp, _dt.datetime):
        start = start_timestamp if start_timestamp.tzinfo else start_timestamp.replace(tzinfo=_dt.UTC)
        start_ms = int((start - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)) / _dt.timedelta(milliseconds=1))
    else:
        start_ms = int(start_timestamp)
    if start_ms < 0:
        raise ValueError(f"start_timestamp must not be before 1970, got {start_ms} ms")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be an int >= 1, not {threads!r}")

    if tiered is not None and tiered not in LAYOUTS:
        raise ValueError(f"tiered must be one of {', '.join(LAYOUTS)} or None, not {tiered!r}")
    if tiered is None and (tiered_compression or tiered_encryption):
        raise ValueError("tiered_compression and tiered_encryption need tiered='aiven'")
    if tiered == "local" and (tiered_compression or tiered_encryption):
        raise ValueError(
            "tiered_compression and tiered_encryption are modes of Aiven's plugin (tiered='aiven'); "
            "LocalTieredStorage stores segments as they are"
        )
    root = Path(out_dir) if tiered is None else Path(out_dir) / "broker"
    if tiered is not None:
        _prepare_folder(Path(out_dir) / "bucket", overwrite)
    total_share = sum(s.share for s in specs)
    jobs = []  # (spec index, partition, folder, target bytes)
    for i, spec in enumerate(specs):
        topic_bytes = int(total * spec.share / total_share)
        for p in range(spec.partitions):
            share = topic_bytes // spec.partitions + (1 if p < topic_bytes % spec.partitions else 0)
            jobs.append((i, p, root / f"{spec.name}-{p}", share))
    for _, _, folder, _ in jobs:
        _prepare_folder(folder, overwrite)
    root.mkdir(parents=True, exist_ok=True)

    writers = []
    for i, p, folder, target in jobs:
        spec = specs[i]
        txn = spec.transactional_producers
        writers.append(
            _native.PartitionWriter(
                folder,
                spec.name,
                p,
                kind=spec.resolved_kind(),
                target_bytes=target,
                magic=spec.magic,
                compression=codecs_per_topic[i],
                snappy_xerial=True,  # as the Java client writes snappy
                segment_bytes=segment,
                seed=seed & 0xFFFF_FFFF_FFFF_FFFF,
                start_timestamp=start_ms,
                producer_id_base=1000 * (i + 1),
                transactional_producers=(2 if spec.magic == 2 else 0) if txn is None else txn,
                # batch.size is about compressed bytes: compressed batches hold more records
                batch_bytes=_BATCH_BYTES if codecs_per_topic[i] == "none" else 4 * _BATCH_BYTES,
            )
        )

    stop = threading.Event()

    def run(index: int, report: _Progress) -> dict[str, int]:
        writer = writers[index]
        reported = 0
        while not writer.done and not stop.is_set():
            n = writer.step(_STEP_BYTES)
            reported += n
            report.advance(n)
        summary = writer.finish()
        if summary["log_bytes"] > reported:  # the markers of transactions still open
            report.advance(summary["log_bytes"] - reported)
        return summary

    n_threads = threads or max(1, min(os.cpu_count() or 1, len(writers)))
    order = sorted(range(len(writers)), key=lambda k: -jobs[k][3])  # biggest first
    started = time.perf_counter()
    results: dict[int, dict[str, int]] = {}
    with _Progress(total, progress) as report:
        if n_threads == 1:
            for k in order:
                results[k] = run(k, report)
        else:
            with ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="kafkabatch-generate") as pool:
                futures = {k: pool.submit(run, k, report) for k in order}
                try:
                    for k, future in futures.items():
                        results[k] = future.result()
                except BaseException:
                    stop.set()
                    raise
    elapsed = time.perf_counter() - started
    schema_files = write_schemas(root, specs)

    topic_summaries: dict[str, TopicSummary] = {}
    for i, spec in enumerate(specs):
        parts = [results[k] for k in range(len(jobs)) if jobs[k][0] == i]

        def add(key: str, parts: list[dict[str, int]] = parts) -> int:
            return sum(r[key] for r in parts)

        topic_summaries[spec.name] = TopicSummary(
            name=spec.name,
            partitions=spec.partitions,
            magic=spec.magic,
            codec=codecs_per_topic[i],
            kind=spec.resolved_kind(),
            bytes=add("log_bytes"),
            index_bytes=add("index_bytes"),
            segments=add("segments"),
            records=add("records"),
            batches=add("batches"),
            control_batches=add("control_batches"),
            committed_records=add("committed_records"),
            aborted_records=add("aborted_records"),
            committed_transactions=add("committed_transactions"),
            aborted_transactions=add("aborted_transactions"),
            tombstones=add("tombstones"),
            null_keys=add("null_keys"),
            partition_records=tuple(r["records"] for r in parts),
            partition_end_offsets=tuple(r["next_offset"] for r in parts),
            schema_file=schema_files.get(spec.name),
        )

    def total_of(attr: str) -> int:
        return sum(getattr(t, attr) for t in topic_summaries.values())

    bucket = None
    if tiered is not None:
        bucket = upload_log_dir(
            [(specs[i].name, p, folder, results[k]["next_offset"]) for k, (i, p, folder, _) in enumerate(jobs)],
            Path(out_dir) / "bucket",
            layout=tiered,
            compression=tiered_compression,
            encryption=tiered_encryption,
            chunk_size=tiered_chunk_size,
            seed=seed,
            broker=root,
        )

    return GenerateSummary(
        folder=root,
        bytes_written=total_of("bytes"),
        index_bytes=total_of("index_bytes"),
        records=total_of("records"),
        batches=total_of("batches"),
        control_batches=total_of("control_batches"),
        segments=total_of("segments"),
        committed_records=total_of("committed_records"),
        aborted_records=total_of("aborted_records"),
        committed_transactions=total_of("committed_transactions"),
        aborted_transactions=total_of("aborted_transactions"),
        elapsed=elapsed,
        topics=topic_summaries,
        tiered=bucket,
    )
