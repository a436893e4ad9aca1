"""Type stubs for the native extension (checked by mypy.stubtest in `make test`)."""

import builtins
from collections.abc import Callable, Mapping
from os import PathLike
from typing import Any, Literal, final

from typing_extensions import Buffer

__version__: str
DEFAULT_MAX_DECOMPRESSED_SIZE: int
#: Every option of the ``kafka-log`` Spark source, in its documented spelling.
SPARK_OPTIONS: tuple[str, ...]
#: Those of them that type ``value`` and ``key``.
SPARK_VALUE_OPTIONS: tuple[str, ...]
SPARK_DEFAULT_MAX_BYTES_PER_PARTITION: int
SPARK_DEFAULT_MAX_RECORDS_PER_BATCH: int
SPARK_OPEN_COST_BYTES: int

class KafkaBatchError(ValueError):
    """Root of every kafkabatch decoding error.

    Instances carry ``batch_position``, ``base_offset``, ``byte_position``,
    ``in_payload`` and ``reason`` attributes.
    """

    batch_position: int
    base_offset: int | None
    byte_position: int
    in_payload: bool
    reason: str

class CorruptBatchError(KafkaBatchError): ...
class CrcMismatchError(CorruptBatchError): ...
class DecompressionError(CorruptBatchError): ...
class UnsupportedFormatError(KafkaBatchError): ...

class ValueDecodeError(KafkaBatchError):
    """A value (or key) that can't be parsed in the requested format.

    Carries ``row`` and ``reason``; raised by :func:`kafkabatch.decode` also
    with ``topic``, ``partition``, ``offset`` and ``column``.
    """

@final
class ParsedColumn:
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

@final
class ValueParser:
    def parse(self, column: object, *, threads: int | None = None) -> ParsedColumn: ...

def value_parser(
    *,
    format: str,
    data_type: object | None = None,
    avro_schema: str | None = None,
    writers: list[tuple[int, str]] | None = None,
    confluent: bool = False,
    on_error: str = "raise",
    proto_files: list[tuple[str, str, bytes]] | None = None,
    proto_writers: list[tuple[int, list[tuple[str, str, bytes]]]] | None = None,
    message: str | None = None,
    max_recursion: int | None = None,
) -> ValueParser: ...
def protobuf_message(
    writers: list[tuple[int, list[tuple[str, str, bytes]]]],
    *,
    message: str | None = None,
    frames: list[tuple[int, list[int]]] | None = None,
) -> str: ...
def protobuf_frames(column: object) -> list[tuple[int, list[int]]]: ...
def header_guids(records: object, column: str) -> list[str]:
    """The distinct schema GUIDs (UUID text) in the ``__value_schema_id`` (``column="value"``) or
    ``__key_schema_id`` (``"key"``) headers of ``records``' ``headers`` column, magic byte 1."""

def header_frames(records: object, column: str, guid_ids: Mapping[str, int] | None = None) -> ParsedColumn | None:
    """``records``' ``column`` (binary) with the Confluent prefix (magic 0, schema id, message indexes)
    each row's schema-id header stands for put in front; a GUID gets its id in ``guid_ids`` (UUID text
    to local id), else ``0xFFFFFFFF``, which no schema has. None when no row has such a header.

    >>> headers = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    >>> records = pa.table({"value": pa.array([b"bare"]),
    ...                     "headers": pa.array([[("__value_schema_id", b"\\0\\0\\0\\0\\x07\\0")]], headers)})
    >>> pa.table(header_frames(records, "value")).column(0).to_pylist()
    [b'\\x00\\x00\\x00\\x00\\x07\\x00bare']
    """

@final
class ArrowSchema:
    def __new__(cls, binary_view: bool = False) -> ArrowSchema: ...
    def __arrow_c_schema__(self) -> object: ...

@final
class DecodedStream:
    @property
    def batches(self) -> int: ...
    @property
    def records(self) -> int: ...
    @property
    def hidden_batches(self) -> int: ...
    @property
    def skipped(self) -> list[KafkaBatchError]: ...
    @property
    def skipped_bytes(self) -> int: ...
    @property
    def trailing_bytes(self) -> int: ...
    @property
    def end(self) -> str: ...
    @property
    def end_error(self) -> KafkaBatchError | None: ...
    @property
    def values_failed(self) -> bool: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def _export_arrays(self) -> list[int]: ...

@final
class Record:
    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def timestamp_type(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> list[tuple[str, bytes | None]]: ...
    @property
    def sequence(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class ControlRecord:
    @property
    def version(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def type_id(self) -> int: ...
    @property
    def coordinator_epoch(self) -> int | None: ...

@final
class Batch:
    @property
    def position(self) -> int: ...
    @property
    def size_in_bytes(self) -> int: ...
    @property
    def magic(self) -> int: ...
    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def next_offset(self) -> int: ...
    @property
    def partition_leader_epoch(self) -> int | None: ...
    @property
    def crc(self) -> int: ...
    @property
    def is_valid(self) -> bool: ...
    @property
    def crc_valid(self) -> bool: ...
    @property
    def attributes(self) -> int: ...
    @property
    def compression(self) -> Literal["none", "gzip", "snappy", "lz4", "zstd"]: ...
    @property
    def timestamp_type(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def delete_horizon_ms(self) -> int | None: ...
    @property
    def base_timestamp(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def record_count(self) -> int: ...
    @property
    def error(self) -> KafkaBatchError | None: ...
    @property
    def control(self) -> ControlRecord | None: ...
    def records(self) -> list[Record]: ...
    def __len__(self) -> int: ...

@final
class BatchIterator:
    def __iter__(self) -> BatchIterator: ...
    def __next__(self) -> Batch: ...
    @property
    def position(self) -> int: ...
    @property
    def trailing_bytes(self) -> int: ...
    @property
    def end(self) -> str | None: ...
    @property
    def end_error(self) -> KafkaBatchError | None: ...

def decode(
    data: Buffer,
    *,
    topic: str | None = None,
    partition: int | None = None,
    validate_crc: bool = True,
    include_control: bool = False,
    on_error: str = "raise",
    max_decompressed_size: int = ...,
    isolation: str = "read_uncommitted",
    aborted_transactions: list[tuple[int, int]] | None = None,
    hide_open_transactions: bool | None = None,
    threads: int | None = None,
    start: int = 0,
    end: int | None = None,
    binary_view: bool = False,
    values: ValueParser | None = None,
) -> DecodedStream: ...
def valid_bytes(data: Buffer) -> int: ...
def iter_batches(
    data: Buffer,
    *,
    validate_crc: bool = True,
    on_error: str = "raise",
    max_decompressed_size: int = ...,
    start: int = 0,
    isolation: str = "read_uncommitted",
    aborted_transactions: list[tuple[int, int]] | None = None,
    hide_open_transactions: bool | None = None,
) -> BatchIterator: ...
def kept_ranges(
    data: Buffer,
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    start_ts_us: int | None = None,
    end_ts_us: int | None = None,
    keep_control: bool = False,
) -> tuple[list[tuple[int, int]], int]: ...
def row_mask(
    offsets: Buffer,
    timestamps: Buffer,
    n: int,
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    start_ts_us: int | None = None,
    end_ts_us: int | None = None,
) -> tuple[bytes, int]: ...
def transaction_pass(
    data: Buffer,
    open: list[tuple[int, int]],
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    max_decompressed_size: int = ...,
) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]: ...

# --- one header walk per segment (kafkabatch.log.scan, txn) ---

@final
class SegmentWalk:
    @property
    def start(self) -> int: ...
    @property
    def valid_end(self) -> int: ...
    def __len__(self) -> int: ...
    def columns(self) -> dict[str, list[int]]: ...
    def kept_ranges(
        self,
        a: int,
        b: int,
        *,
        start_offset: int | None = None,
        end_offset: int | None = None,
        start_ts_us: int | None = None,
        end_ts_us: int | None = None,
        keep_control: bool = False,
    ) -> tuple[list[tuple[int, int]], int] | None: ...
    def narrow(
        self,
        a: int,
        b: int,
        *,
        start_offset: int | None = None,
        end_offset: int | None = None,
        start_ts_us: int | None = None,
        end_ts_us: int | None = None,
        keep_control: bool = False,
    ) -> tuple[int, int] | None: ...
    def windows(
        self,
        data: Buffer,
        a: int,
        b: int,
        chunk: int,
        *,
        start_offset: int | None = None,
        end_offset: int | None = None,
    ) -> list[tuple[int, int, bool]] | None: ...
    def transaction_pass(
        self,
        data: Buffer,
        a: int,
        b: int,
        open: list[tuple[int, int]],
        *,
        start_offset: int | None = None,
        end_offset: int | None = None,
        max_decompressed_size: int = ...,
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]] | None: ...

def walk_batches(data: Buffer, start: int = 0) -> SegmentWalk: ...
def offset_index_entries(data: Buffer, base_offset: int) -> tuple[list[int], list[int]]: ...
def index_entries_used(data: Buffer, kind: str) -> int: ...
def seek_range(
    log: Buffer,
    base_offset: int,
    index_name: str,
    index: Buffer | None,
    time_index_name: str,
    time_index: Buffer | None,
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    start_timestamp_ms: int | None = None,
) -> tuple[int, int | None, str | None]: ...
def plan_partition(
    segments: list[tuple[str, int | None, int, str, int | None, int | None]],
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    start_ts_us: int | None = None,
    end_ts_us: int | None = None,
    keep_control: bool = False,
    open: bool = True,
) -> tuple[list[tuple[int, int, int]], list[str]]:
    """The core's plan of each segment of one partition, in offset order (``segments``:
    ``(path, base_offset, size, layout, floor_offset, stop_offset)``): ``(0, 0, 0)``
    skipped by its name, ``(1, start, end)`` the bytes of a local file to read
    (sought with its ``.index``, narrowed by one header walk under time bounds;
    ``start == end``: nothing), ``(2, 0, 0)`` for the caller to seek (remote, Aiven,
    a file the core can't open; every segment its name leaves without ``open``);
    and the texts of the index warnings."""

def plan_roots(
    roots: list[str],
    bounds_of: Callable[[str, int], tuple[int | None, int | None, int | None, int | None] | None],
    *,
    topic: str | None = None,
    partition: int | None = None,
    collect_problems: bool = False,
    filesystem: object | None = None,
    held_last_offset: Callable[[str, str, int], int | None] | None = None,
    keep_control: bool = False,
    transactions: bool = False,
    max_chunk_bytes: int = ...,
) -> tuple[
    list[tuple[list[dict[str, Any]], list[tuple[int, int, int]], list[tuple[int, int, int | None]] | None]],
    list[tuple[str, str]],
    list[tuple[dict[str, Any], TieredStorageError]],
    list[str],
]:
    """:func:`list_roots` and every partition planned in one call: ``(partitions, warnings,
    problems, index_warnings)``, each partition ``(segments, plans, transactions)``: its
    segments as :func:`list_roots` gives them, their plans as :func:`plan_partition`
    gives them, and with ``transactions`` the read_committed pre-pass of a partition
    of local segments (None for remote segments, twins, a file the core can't open). ``bounds_of(topic, partition)`` gives a partition's
    ``(start_offset, end_offset, start_ts_us, end_ts_us)``, or None to leave it out. With
    ``filesystem``, the roots are paths in it and every segment is left to the read to seek."""

def held_last_offset(
    log: str,
    manifest: str,
    base_offset: int,
    *,
    tiered_keys: dict[str, str] | None = None,
    filesystem: Any = None,
    max_decompressed_size: int = ...,
    max_chunk_bytes: int = ...,
) -> int | None:
    """The last offset a remote (Aiven) segment's bytes really hold: its last
    batch header's, walked from the last entry of its offset index (else from
    its start); ``None`` when it can't be read. A plain file with ``manifest``
    empty. Read with ``tiered_keys``, through ``filesystem`` (its paths) when given.

    >>> held_last_offset("s3://b/t/orders-x/0/00000000000000000000-y.log",
    ...                  "s3://b/t/orders-x/0/00000000000000000000-y.rsm-manifest", 0)  # doctest: +SKIP
    999
    """

def partition_transactions(
    segments: list[Any],
    *,
    tiered_keys: dict[str, str] | None = None,
    on_error: str = "raise",
    max_decompressed_size: int = ...,
    max_chunk_bytes: int = ...,
) -> list[tuple[int, int, int | None]]:
    """The read_committed pre-pass over one partition's segments
    (:class:`kafkabatch.log.listing.Segment` s in log order, local or remote, with
    their twins), in the core: ``(producer_id, first_offset, marker offset or None
    while open)`` sorted by first offset. Remote files are read as
    :func:`kafkabatch.log.fs.open_source` reads them, and every file through the
    segments' ``filesystem`` when they were listed in one; ``tiered_keys``: key-pair id →
    PEM text. ``on_error="skip"``: a damaged remote segment without a readable twin
    is walked around its chunks that can't be undone, or left out."""

def source_transactions(
    pieces: list[tuple[Any, int, int | None, int | None, int | None]],
    *,
    max_decompressed_size: int = ...,
    max_chunk_bytes: int = ...,
) -> list[tuple[int, int, int | None]]:
    """The read_committed pre-pass over pieces of one partition in log order, in the
    core: each ``(source, start, end, start_offset, end_offset)``, an open segment (a
    :class:`kafkabatch.log.fs.Source`) walked by its batch headers over bytes
    ``[start, end)`` (``end`` None: to its end) for those offsets; ``(producer_id,
    first_offset, marker offset or None while open)`` sorted by first offset."""

# --- encoding and the sample-log generator (kafkabatch._encode, kafkabatch.generate) ---

def encode(
    records: object,
    *,
    magic: int = 2,
    compression: str = "none",
    compression_level: int | None = None,
    snappy_xerial: bool = False,
    base_offset: int = 0,
    records_per_batch: int | None = None,
    max_batch_bytes: int | None = None,
    producer_id: int = ...,
    producer_epoch: int = ...,
    base_sequence: int = ...,
    transactional: bool = False,
    partition_leader_epoch: int = ...,
    timestamp_type: str = "create",
    log_append_time: int | None = None,
) -> bytes: ...
def control_batch(
    kind: str,
    producer_id: int,
    producer_epoch: int,
    base_offset: int,
    coordinator_epoch: int = 0,
    timestamp: int = ...,
    partition_leader_epoch: int = ...,
) -> bytes: ...

SHIPMENT_SCHEMAS: dict[int, str]

@final
class PartitionWriter:
    def __new__(
        cls,
        folder: str | PathLike[str],
        topic: str,
        partition: int,
        *,
        kind: str,
        target_bytes: int,
        magic: int = 2,
        compression: str = "none",
        compression_level: int | None = None,
        snappy_xerial: bool = False,
        segment_bytes: int = ...,
        index_interval_bytes: int = ...,
        seed: int = 0,
        start_timestamp: int = 1793491200000,
        producer_id_base: int = 1000,
        transactional_producers: int = 2,
        batch_bytes: int = 16384,
    ) -> PartitionWriter: ...
    def step(self, budget: int) -> int: ...
    @property
    def done(self) -> bool: ...
    @property
    def summary(self) -> dict[str, int]: ...
    def finish(self) -> dict[str, int]: ...

@final
class TieredUploader:
    """Stores segments as Aiven's tiered-storage plugin does, for sample
    buckets (``kafkabatch.generate_tiered``); every random byte from a
    ChaCha20 stream of ``seed``. ``public_key`` (SubjectPublicKeyInfo PEM)
    encrypts; ``compression`` zstd's."""

    def __new__(cls, seed: int, *, compression: bool = False, public_key: str | None = None) -> TieredUploader: ...
    def key_pair(self, bits: int = 2048) -> tuple[str, str]: ...
    def random_bytes(self, n: int) -> bytes: ...
    def segment(self, log: Buffer, indexes: list[bytes], chunk_size: int) -> dict[str, Any]: ...

class TieredStorageError(KafkaBatchError):
    """A remote segment that cannot be read.

    Carries ``kind`` (``"manifest"``, ``"key"``, ``"chunk"``, ``"truncated"``,
    or ``"layout"`` for an object whose folders fit no layout), ``chunk`` (the chunk's number, or None), ``object``
    (the object's name) and ``reason``.
    """

    kind: str
    chunk: int | None
    object: str
    reason: str

@final
class TieredKeys:
    """RSA private keys (PEM text) by key-pair id, for encrypted segments.

    >>> keys = TieredKeys({"key-1": open("private.pem").read()})  # doctest: +SKIP
    """

    def __new__(cls, keys: dict[str, str]) -> TieredKeys: ...
    def ids(self) -> list[str]: ...
    def __len__(self) -> int: ...

@final
class RemoteManifest:
    """A remote segment's ``.rsm-manifest``, its data key unwrapped.

    >>> m = RemoteManifest(manifest_text, keys)  # doctest: +SKIP
    >>> start, end = m.transformed_range(*m.chunks_for(0, 4096))  # doctest: +SKIP
    >>> first_bytes = m.detransform(log_object[start:end])  # doctest: +SKIP
    """

    def __new__(cls, text: str | Buffer, keys: TieredKeys | None = None, *, name: str = "") -> RemoteManifest: ...
    @property
    def name(self) -> str: ...
    @property
    def compression(self) -> bool: ...
    @property
    def encrypted(self) -> bool: ...
    @property
    def key_id(self) -> str | None: ...
    @property
    def chunk_index_type(self) -> str: ...
    @property
    def original_size(self) -> int: ...
    @property
    def original_chunk_size(self) -> int: ...
    @property
    def transformed_size(self) -> int: ...
    @property
    def chunk_count(self) -> int: ...
    @property
    def topic(self) -> str | None: ...
    @property
    def partition(self) -> int | None: ...
    @property
    def topic_id(self) -> str | None: ...
    @property
    def segment_id(self) -> str | None: ...
    @property
    def start_offset(self) -> int | None: ...
    @property
    def end_offset(self) -> int | None: ...
    @property
    def max_timestamp(self) -> int | None: ...
    def chunk(self, i: int) -> tuple[int, int, int, int]: ...
    def chunks_for(self, start: int, end: int) -> tuple[int, int]: ...
    def transformed_range(self, first: int, last: int) -> tuple[int, int]: ...
    def original_range(self, first: int, last: int) -> tuple[int, int]: ...
    def index_slice(self, index: str) -> tuple[int, int] | None: ...
    def detransform(
        self,
        data: Buffer,
        first: int = 0,
        *,
        max_decompressed_size: int = ...,
        threads: int | None = None,
        cap_name: str = "max_decompressed_size",
    ) -> bytes: ...
    def detransform_each(
        self,
        data: Buffer,
        first: int = 0,
        *,
        max_decompressed_size: int = ...,
        threads: int | None = None,
        cap_name: str = "max_decompressed_size",
    ) -> tuple[bytes, list[TieredStorageError]]: ...
    def check_chunk_sizes(self) -> None: ...
    def detransform_index(self, index: str, data: Buffer) -> bytes: ...

def list_roots(
    roots: list[str],
    *,
    topic: str | None = None,
    partition: int | None = None,
    collect_problems: bool = False,
    filesystem: object | None = None,
    held_last_offset: Callable[[str, str, int], int | None] | None = None,
    name_glob: str | None = None,
) -> tuple[list[dict[str, Any]], list[tuple[str, str]], list[tuple[dict[str, Any], TieredStorageError]]]:
    """The core's listing of ``roots`` (paths, URIs or globs), joined: ``(segments, warnings, problems)``;
    with ``name_glob`` (Spark's ``pathGlobFilter``), only segments whose file names match it.

    A file under two roots is listed once; partitions come in the order of the
    roots that hold them, each in offset order; where a partition's segments come
    from several places, each offset is left to one segment (the copies left out
    as ``twins``). Segments as dicts of ``kafkabatch.log.listing.Segment``'s fields but
    ``keys`` (``twins`` a list of the same dicts, or ``()``); warnings as ``(kind, message)``; with
    ``collect_problems``, remote segments that can't be listed with their error
    (else the first is raised). Remote roots are read through
    ``kafkabatch.log.fs.resolve_remote``; with ``filesystem`` (a
    ``pyarrow.fs.FileSystem``), every root is a path in it, listed through it;
    ``held_last_offset(log, manifest, base_offset)`` confirms a manifest's end
    offset from the segment's bytes where it would hide another copy's offsets.
    """

def list_segments(
    root: str,
    *,
    topic: str | None = None,
    partition: int | None = None,
    collect_problems: bool = False,
    filesystem: object | None = None,
    held_last_offset: Callable[[str, str, int], int | None] | None = None,
) -> tuple[list[dict[str, Any]], list[tuple[str, str]], list[tuple[dict[str, Any], TieredStorageError]]]:
    """:func:`list_roots` of one root (a path, URI or glob)."""

def remote_name(path: str) -> tuple[str, str | None, int | None, str | None, str, int, str] | None:
    """``(layout, topic, partition, topic_id, segment_id, base_offset, suffix)`` from a remote
    segment's names (layout ``""`` when its folders fit no layout), or None."""

def listing_reason(what: Literal["missing_object", "missing_manifest", "layout"], path: str) -> str:
    """Why a remote segment can't be read, in the listing's words (``path``: the manifest
    whose ``.log`` is gone, the ``.log`` whose manifest is, or the misplaced object)."""

@final
class InternalTable:
    """A decoded internal-topic table; read once through ``__arrow_c_stream__``."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

def decode_internal(
    kind: Literal[
        "consumer_offsets", "transaction_state", "share_group_state", "cluster_metadata", "remote_log_metadata"
    ],
    keys: object,
    values: object,
    *,
    control: object | None = None,
    definitions: str | None = None,
    json: bool = False,
) -> InternalTable:
    """Decode the ``key``/``value`` columns (Arrow binary arrays) of one of Kafka's internal topics.

    One row per record: ``record_type``, ``record_type_id``, ``key_version``,
    ``value_version``, ``tombstone``, one struct column per record type,
    ``error`` (per row) and, with ``json=True``, ``json``.
    """

def _scan_read(
    roots: list[str],
    *,
    start_offset: int | Mapping[Any, Any] | None = None,
    end_offset: int | Mapping[Any, Any] | None = None,
    start_timestamp: int | None = None,
    end_timestamp: int | None = None,
    isolation: str = "read_uncommitted",
    topic: str | None = None,
    partition: int | None = None,
    topics: list[str] | None = None,
    partitions: list[int] | None = None,
    tiered_keys: Mapping[str, str] | None = None,
    validate_crc: bool = True,
    include_control: bool = False,
    on_error: str = "raise",
    max_decompressed_size: int = ...,
    max_chunk_bytes: int = ...,
    columns: list[str] | None = None,
) -> Any:
    """Internal, not part of the API: the Rust core's ``Scan`` (plan and read of
    ``roots``, local paths only) as a ``pyarrow.RecordBatchReader`` of :data:`kafkabatch.SCHEMA`, for the
    tests that compare it with :func:`kafkabatch.scan_log`. Timestamps are epoch
    milliseconds; ``tiered_keys`` maps key-pair ids to PEM text; ``columns``: only
    these columns of the schema are built."""

def _scan_header_aggregates(
    roots: list[str],
    aggregates: list[str],
    group_by: str,
    *,
    start_offset: int | Mapping[Any, Any] | None = None,
    end_offset: int | Mapping[Any, Any] | None = None,
    start_timestamp: int | None = None,
    end_timestamp: int | None = None,
    isolation: str = "read_uncommitted",
    topic: str | None = None,
    partition: int | None = None,
    topics: list[str] | None = None,
    partitions: list[int] | None = None,
    tiered_keys: Mapping[str, str] | None = None,
    validate_crc: bool = True,
    include_control: bool = False,
    on_error: str = "raise",
    max_decompressed_size: int = ...,
    max_chunk_bytes: int = ...,
) -> tuple[list[tuple[str | None, int | None, list[int | None]]] | None, str | None]:
    """Internal, not part of the API: ``aggregates`` (``count``, ``min_offset``,
    ``max_offset``, ``min_timestamp``, ``max_timestamp``; timestamps in µs) of
    the rows ``_scan_read(roots, **options)`` returns, grouped by ``group_by``
    (``all``, ``topic``, ``partition``), from batch headers and, for legacy
    message sets, their files' tallies (read once, remembered while the files
    are unchanged): ``(rows, None)``, or ``(None, why)`` when that can't answer exactly."""

def _in_words(message: str, words: str) -> str:
    """Internal: ``message`` with the option names in Python's keyword names
    (``value_format``, ``tiered_keys``…) said in ``words``' (``"cli"``: the
    command line's flags, ``"spark"``: the Spark source's options)."""

def _spark_estimate_work(data: Buffer, start: int, end: int) -> int:
    """What decoding bytes ``[start, end)`` of a segment (``data``: those bytes) costs Spark, in bytes."""

def _spark_pack(
    wire: builtins.list[int], work: builtins.list[int], max_bytes: int, min_partitions: int
) -> builtins.list[tuple[int, int]]:
    """Consecutive splits packed into balanced tasks: ``(first, end)`` split indices of each task."""

def _spark_plan_tasks(
    options: builtins.list[tuple[str, str]],
    filters: builtins.list[tuple[str, str, builtins.list[tuple[str, Any]], bool]],
    default_min_partitions: int,
) -> dict[str, Any]:
    """Internal: a batch read of the ``kafka-log`` source planned by the core,
    as the JVM source's is: ``options`` (``(name, value)`` pairs, checked
    before), the pushed ``filters`` (column, operator, typed literals,
    negated: what :func:`_pushdown_filter` takes), ``default_min_partitions``
    for an unset ``minPartitions``. A dict: ``tasks`` (per task, its splits as
    ``(split bytes, path, topic, partition, start, end, segment size,
    start from the .index)``), ``partitions`` (topic-partitions the filters
    kept), ``index_warnings`` (index files not trusted, texts)."""

def _spark_stream_tasks(
    state: StreamState,
    start: str,
    end: str,
    options: builtins.list[tuple[str, str]],
    default_min_partitions: int,
) -> builtins.list[builtins.list[tuple[bytes, str, str, int, int, int, int, bool]]]:
    """Internal: the micro-batch of a ``kafka-log`` stream from ``start`` to
    ``end`` (offsets JSON) planned with the driver's ``state``, as the JVM
    source plans its micro-batches, cut and packed into tasks as a batch
    read's are: the ``tasks`` of :func:`_spark_plan_tasks`."""

@final
class SplitRead:
    """Internal: the core's read of one split (see :func:`_spark_read_split`)."""
    def __iter__(self) -> SplitRead: ...
    def __next__(self) -> ArrowStream: ...
    def report(self) -> tuple[bool, str, builtins.list[str]] | None:
        """Once read to its end: whether the split lost batches or bytes, the
        line saying what it found, the texts of the index warnings; None before."""

def _spark_read_split(split: bytes, options: builtins.list[tuple[str, str]], threads: int) -> SplitRead:
    """Internal: read one split of :func:`_spark_plan_tasks` (its bytes) with the
    core's reader, under the source's ``options``, decoding on ``threads`` threads (0: one per core)."""

def _spark_options(options: builtins.list[tuple[str, str]]) -> dict[str, Any]:
    """Internal: the ``kafka-log`` source's options (``(name, value)`` pairs, names
    in any case) parsed and checked by the core, as a dict of their values
    (``paths``, ``isolation``, ``mode``, ``starting_offsets`` keyed by
    ``(topic, partition)``, timestamps in microseconds...); ``ValueError`` in
    the options' words."""

def _spark_check_named_partitions(
    options: builtins.list[tuple[str, str]], found: builtins.list[tuple[str, int]]
) -> None:
    """Internal: ``ValueError`` when ``startingOffsets``/``endingOffsets`` name a
    topic-partition that is not in ``found``."""

def _spark_check_option_names(names: builtins.list[str], known: builtins.list[str]) -> None:
    """Internal: ``ValueError`` for the first of ``names`` not in ``known``
    (case-insensitive), suggesting the closest known name."""

def _pushdown_filter(column: str, op: str, literals: builtins.list[tuple[str, Any]], negated: bool) -> dict[str, Any]:
    """Internal: one Spark filter (``op``: ``==``, ``<``..., ``in``, ``startswith``...,
    ``isnull``, ``isnotnull``; literals as ``(kind, value)``, kinds ``int``, ``str``,
    ``timestamp_us``, ``bool``, ``null``, ``other``) under the core's pushdown rules:
    the ``RecordFilter`` fields (``names``, ``start_offset``...) and ``exact``;
    ``ValueError`` when it is not pushable."""

@final
class ArrowStream:
    """Internal: an Arrow C stream handed to one consumer (the core reader's
    batches, one batch of a :class:`SegmentRead` or a :class:`SplitRead`); a second take raises ``RuntimeError``."""
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...

@final
class SegmentRead:
    """Internal: the read of one segment by the core's reader (see :func:`_read_segment`)."""
    def __iter__(self) -> SegmentRead: ...
    def __next__(self) -> ArrowStream: ...
    def report(self) -> dict[str, Any] | None:
        """What the read found, once done: ``start``, ``end``, ``batches``, ``records``,
        ``rows``, ``skipped`` (the corrupt batches dropped, as exceptions),
        ``skipped_bytes``, ``pruned_bytes``, ``trailing_bytes``, ``status``,
        ``end_error``, ``lost`` (what damage cost, as :class:`TieredStorageError` s),
        ``twin``, ``twin_from``, ``last_offset``, ``fetched`` (bytes of remote objects),
        ``index_warnings``, ``transactions`` (with ``fetch_aborted``: the list, marker
        offsets learnt); None before the end."""

def _read_segment(
    segment: Any,
    *,
    following: int | None = None,
    byte_range: tuple[int, int] | None = None,
    start_offset: int | None = None,
    end_offset: int | None = None,
    start_ts_us: int | None = None,
    end_ts_us: int | None = None,
    transactions: list[tuple[int, int, int | None]] | None = None,
    tiered_keys: dict[str, str] | None = None,
    validate_crc: bool = True,
    include_control: bool = False,
    on_error: str = "raise",
    max_decompressed_size: int = ...,
    max_chunk_bytes: int = ...,
    typed: list[tuple[str, ValueParser, dict[str, int] | None]] | None = None,
    fetch_aborted: bool | None = None,
    source: Any = None,
    index_seek: bool = False,
) -> SegmentRead:
    """Internal: read one segment (a :class:`kafkabatch.log.listing.Segment`; through its
    ``filesystem`` when it was listed in one) with the core's reader: Aiven segments sought with their ``.indexes`` object, twins read
    instead of a damaged copy (up to ``following``), chunks that can't be undone
    skipped under ``on_error="skip"``; rows in the bounds only (timestamps in µs);
    ``transactions``: the partition's read_committed pre-pass; ``byte_range``: the
    bytes of a local file to read, as planned (else the whole segment); ``typed``:
    ``(column, parser, guid_ids or None)`` of the columns parsed as each chunk is
    decoded (a bad value raises :class:`ValueDecodeError` naming its offset);
    ``fetch_aborted`` (``hide_open``): ``transactions`` are a Fetch response's aborted
    list, ended by the ABORT markers read (the report's ``transactions``); ``source``:
    the segment's bytes from this open :class:`kafkabatch.log.fs.Source` instead (plain
    bytes, no twins); ``index_seek``: a whole local segment of a broker sought with the
    ``.index``/``.timeindex`` beside it (a bad one: the report's ``index_warnings``)."""

@final
class ObjectStorage:
    """One bucket (container, host) of an object store, read through Rust's ``object_store``."""

    def list(self, uri: str, recursive: bool = True) -> list[tuple[str, int]]:
        """``(uri, size)`` of every file under the prefix ``uri``, spelled as ``uri`` is, sorted."""
    def size(self, uri: str) -> int | None:
        """The size of the file ``uri``, ``None`` when there is none."""
    def read(self, uri: str, start: int, end: int) -> bytes:
        """The bytes ``start..end`` of the file ``uri`` (one ranged GET)."""
    def read_ranges(self, uri: str, ranges: builtins.list[tuple[int, int]]) -> builtins.list[bytes]:
        """Several ranges of the file ``uri``, nearby ones fetched in one request."""

def resolve_storage(uri: str, options: Mapping[str, str] | None = None) -> ObjectStorage | None:
    """The object storage serving ``uri`` (``s3://``, ``s3a://``, ``gs://``, ``abfs://``, ``az://``,
    ``http(s)://``), ``None`` when the object stores don't serve it. ``options``: object_store
    configuration keys (``aws_endpoint``, ``aws_region``...) over the environment's."""

@final
class StreamState:
    """Internal: the core's state of one ``kafka-log`` stream on its driver (what
    :class:`kafkabatch.spark.stream.KafkaLogStreamReader` delegates to). Offsets
    are JSON text as Spark's Kafka source writes them (``{"t":{"0":12}}``)."""

    def __new__(cls, options: builtins.list[tuple[str, str]], data_loss_error: type[Exception]) -> StreamState:
        """The state of a stream with these source options; data losses under
        ``failOnDataLoss=true`` raise ``data_loss_error(text)``."""
    def has_logs(self) -> bool:
        """Whether any partition was listed yet."""
    def latest(self) -> str | None:
        """The offsets available at the last refresh, ``None`` with no partition."""
    def refresh(
        self,
        segments: builtins.list[
            tuple[str, str, int, int | None, int, str, str | None, str | None, str | None, int | None, int | None]
        ],
        wanted: str,
    ) -> builtins.list[str]:
        """Take a listing (segments as ``list_segments`` gives them, as tuples) and walk
        what was added; ``wanted``: where walks must start at or before (-1: the
        first segment). Returns what ``mode`` skipped, as log lines."""
    def wanted_for(self, start: str, end: str) -> str | None:
        """What to refresh with before planning ``start``..``end``, ``None`` when the walks serve."""
    def initial_offsets(self, spec: str, paths: builtins.list[str]) -> str:
        """``startingOffsets`` (earliest, latest or offsets JSON) as offsets."""
    def prepare_available_now(self) -> None:
        """``Trigger.AvailableNow``: stop at what is available now."""
    def latest_offset(self, start: str, max_offsets: int | None = None, max_bytes: int | None = None) -> str:
        """The end of the next micro-batch from ``start`` under the rate limits."""
    def take_warnings(self) -> builtins.list[str]:
        """The data losses found under ``failOnDataLoss=false`` since the last call."""
    def micro_batch_parts(
        self, start: str, end: str
    ) -> builtins.list[
        tuple[str, int, int | None, int, dict[str, int], builtins.list[tuple[int, int, int | None]] | None]
    ]:
        """Per topic-partition: topic, partition, first offset (``None``: its first
        segment), offset to stop before, segment sizes to plan by path,
        transactions (read_committed)."""
    def seek(self, topic: str, partition: int, path: str, start_offset: int | None) -> int | None:
        """Where to start reading ``path`` for ``start_offset``, from the walk; ``None``: not walked."""
    def earliest(self, topic: str, partition: int) -> int | None:
        """The first offset of a partition still in the log."""
    def commit(self, end: str) -> None:
        """A micro-batch up to ``end`` committed."""
    def stop(self) -> None:
        """The query stopped."""
