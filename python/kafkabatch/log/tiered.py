"""Tiered storage: the segments a RemoteStorageManager plugin copied to an object store, read where they live.

Two layouts are recognised by their names (on local paths and every
:mod:`pyarrow.fs` URI):

- **Aiven's** ``tiered-storage-for-apache-kafka`` plugin, under any key prefix:
  ``{prefix}{topic}-{topicId}/{partition}/{startOffset:020d}-{segmentId}.log``
  with ``.indexes`` and ``.rsm-manifest`` beside it. The manifest (JSON,
  version 1) says how the ``.log`` was cut into chunks and transformed (zstd,
  AES-256-GCM); the Rust core (:class:`kafkabatch._kafkabatch.RemoteManifest`)
  undoes the chunks, in parallel and with the GIL released. Only the chunks a
  read needs are fetched (ranged reads), and the ``.indexes`` object only in
  the slices a seek needs.
- **Kafka's LocalTieredStorage**:
  ``{topic}-{partition}-{topicId}/{startOffset}-{segmentId}.log`` with
  ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot`` and
  ``.leader_epoch_checkpoint``: the segment's own bytes.

A topic id is 22 characters of URL-safe base64 and may itself hold ``-``
followed by digits, so folder names are parsed from the id's fixed length,
never by their last dash.

Encrypted segments need the RSA private key of the key pair that wrapped
their data key: ``tiered_keys`` maps key-pair ids to PEM private keys (a file
path or the PEM text).

>>> spec = resolve_keys({"key-1": "/etc/kafka/tiered/private.pem"})  # doctest: +SKIP
>>> remote_name("s3://b/p/orders-MWJ6FHTfRYy67jzwZdeqSQ/7/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.log").layout
'aiven'
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import struct
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import kafkabatch.log.fs as fs
from kafkabatch._kafkabatch import RemoteManifest, TieredKeys, TieredStorageError
from kafkabatch._kafkabatch import held_last_offset as _native_held_last_offset
from kafkabatch._kafkabatch import listing_reason as _listing_reason
from kafkabatch._kafkabatch import remote_name as _native_remote_name
from kafkabatch.log.index import IndexFileWarning, InvalidIndexError, offset_index_entries
from kafkabatch.log.naming import basename, without_query

MANIFEST = ".rsm-manifest"

#: The keyword (Python), option (Spark) and flag (CLI) that give the keys.
KEYS_OPTION = "tiered_keys"

#: Key pairs as a segment carries them: ``((id, PEM text), ...)``, sorted.
KeySpec = tuple[tuple[str, str], ...]


class TieredStorageWarning(UserWarning):
    """A remote object left out of a read: an upload in progress or abandoned (a ``.log`` without its manifest)."""


@dataclass(frozen=True)
class RemoteName:
    """What a remote segment's names say: its layout, topic, partition, ids and base offset."""

    layout: str  # "aiven", "local-tiered", or "" when the folders fit neither
    topic: str | None
    partition: int | None
    topic_id: str | None
    segment_id: str
    base_offset: int
    suffix: str


def _split_query(path: str) -> tuple[str, str]:
    """``(path, "?query")`` of a URI; a local path keeps a ``?`` as part of its names."""
    base = without_query(path)
    return base, path[len(base) :]


def remote_name(path: str) -> RemoteName | None:
    """The remote-segment facts in ``path``'s names, or None for a name that
    is not ``<offset>-<segment id>.{log,indexes,rsm-manifest}``.

    >>> n = remote_name("t/orders-Ab3-12defghijklmnopqrs/3/00000000000000000100-tqimKeZwStOEOwRzT3L5oQ.log")
    >>> (n.layout, n.topic, n.partition, n.topic_id, n.base_offset)
    ('aiven', 'orders', 3, 'Ab3-12defghijklmnopqrs', 100)
    >>> remote_name("orders-3-Ab3-12defghijklmnopqrs/100-tqimKeZwStOEOwRzT3L5oQ.log").layout
    'local-tiered'
    """
    found = _native_remote_name(path)
    return None if found is None else RemoteName(*found)


def missing_object_error(log_path: str, manifest_path: str) -> TieredStorageError:
    """A manifest whose ``.log`` object is not there: its segment can't be read."""
    return _error(log_path, "truncated", _listing_reason("missing_object", manifest_path))


def missing_manifest_error(log_path: str) -> TieredStorageError:
    """An Aiven remote ``.log`` named directly without its manifest: its bytes are chunks that can't be read alone."""
    return _error(log_path, "manifest", _listing_reason("missing_manifest", log_path))


def sibling(path: str, suffix: str) -> str:
    """The object beside ``path`` (same stem) with another suffix (``.rsm-manifest``, ``.indexes``...)."""
    base, query = _split_query(path)
    stem = base[: base.rfind(".")]
    return stem + suffix + query


# --------------------------------------------------------------------------
# keys
# --------------------------------------------------------------------------


def _read_text(path: str) -> str:
    if fs.is_remote(path):
        filesystem, fs_path = fs.resolve_remote(path)
        with filesystem.open_input_file(fs_path) as f:
            return bytes(f.read()).decode()
    with open(fs.local_path(path), encoding="utf-8") as f:
        return f.read()


def resolve_keys(spec: Any) -> KeySpec:
    """Key pairs from any of the forms users give them, as ``((id, PEM text), ...)``.

    ``spec``: None; a mapping ``{key pair id: PEM}``; an iterable of
    ``"ID=PEM"`` strings (the CLI's repeated ``--tiered-key``); or a string,
    either a JSON object or ``"ID=PEM[,ID=PEM...]"`` (the Spark option
    ``tieredKeys``). Each PEM is the private key's text (it holds
    ``-----BEGIN``) or the path of a file holding it (local or a URI).

    >>> resolve_keys({"k1": "-----BEGIN PRIVATE KEY-----..."})
    (('k1', '-----BEGIN PRIVATE KEY-----...'),)
    """
    if spec is None:
        return ()
    if isinstance(spec, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in spec):
        return tuple(sorted((str(k), str(v)) for k, v in spec))  # already resolved
    pairs: list[tuple[str, str]] = []
    if isinstance(spec, Mapping):
        pairs = [(str(k), os.fspath(v)) for k, v in spec.items()]
    else:
        if isinstance(spec, str):
            text = spec.strip()
            if text.startswith("{"):
                try:
                    loaded = json.loads(text)
                except ValueError as e:
                    raise ValueError(f"{KEYS_OPTION}: not a JSON object: {e}") from None
                return resolve_keys(loaded)
            items: Iterable[str] = [] if not text else (text.split(",") if "-----BEGIN" not in text else [text])
        else:
            items = spec
        for item in items:
            key_id, sep, pem = str(item).partition("=")
            if not sep or not key_id.strip() or not pem.strip():
                shown = "a PEM text" if "-----BEGIN" in str(item) else repr(item)  # never echo a key
                raise ValueError(f"{KEYS_OPTION}: expected KEY_PAIR_ID=PEM (a file path or the PEM text), not {shown}")
            pairs.append((key_id.strip(), pem.strip()))
    resolved = []
    for key_id, pem in pairs:
        if "-----BEGIN" not in pem:
            try:
                pem = _read_text(pem)
            except OSError as e:
                raise ValueError(
                    f"{KEYS_OPTION}: can't read the private key file of key pair {key_id!r} ({pem}): {e.strerror or e}"
                ) from None
        resolved.append((key_id, pem))
    return tuple(sorted(resolved))


@functools.lru_cache(maxsize=16)
def keyring(keys: KeySpec) -> TieredKeys | None:
    """The parsed key pairs (cached: parsing checks each RSA key)."""
    return TieredKeys(dict(keys)) if keys else None


# --------------------------------------------------------------------------
# manifests and the bytes they describe
# --------------------------------------------------------------------------


def _read_object(path: str, position: int | None = None, length: int | None = None, filesystem: Any = None) -> bytes:
    """An object's bytes (``length`` of them from ``position``, else all); ``filesystem``:
    the caller's :class:`pyarrow.fs.FileSystem`, ``path`` a path in it."""
    if filesystem is not None or fs.is_remote(path):
        fs_path = path
        if filesystem is None:
            filesystem, fs_path = fs.resolve_remote(path)
        with filesystem.open_input_file(fs_path) as f:
            if position is None or length is None:
                return bytes(f.read())
            return bytes(f.read_at(length, position))
    with open(fs.local_path(path), "rb") as f:
        if position is None or length is None:
            return f.read()
        f.seek(position)
        return f.read(length)


@functools.lru_cache(maxsize=1024)
def load_manifest(path: str, keys: KeySpec = ()) -> RemoteManifest:
    """A segment's manifest, parsed and its data key unwrapped (cached per path and keys)."""
    return _manifest(path, keys)


def _manifest(path: str, keys: KeySpec, filesystem: Any = None) -> RemoteManifest:
    """A segment's manifest, parsed and its data key unwrapped; ``filesystem``: see :func:`_read_object`."""
    try:
        text = _read_object(path, filesystem=filesystem)
    except FileNotFoundError:
        raise _error(path, "truncated", "the manifest object is missing") from None
    return RemoteManifest(text, keyring(keys), name=path)


def _error(name: str, kind: str, reason: str, chunk: int | None = None) -> TieredStorageError:
    where = "" if chunk is None else f"chunk {chunk}: "
    error = TieredStorageError(f"{name}: {where}{reason}")
    error.kind = kind
    error.chunk = chunk
    error.object = name
    error.reason = reason
    return error


class TieredSource(fs.Source):
    """The original bytes of an Aiven remote segment, read chunk by chunk.

    ``read(position, length)`` fetches only the chunks holding those bytes
    that it does not hold yet (one ranged read of the ``.log`` object), undoes
    them in the Rust core and keeps the most recent ones (up to 64 MiB), so
    the header peeks and windows of a scan fetch each chunk once.
    ``requested`` counts the object bytes fetched."""

    def __init__(
        self,
        log_path: str,
        manifest_path: str,
        keys: KeySpec = (),
        max_decompressed_size: int | None = None,
        cap_name: str = "max_decompressed_size",
        filesystem: Any = None,
    ) -> None:
        self.path = log_path
        self._max_decompressed_size = max_decompressed_size
        self._cap_name = cap_name
        self._filesystem = filesystem  # the caller's pyarrow.fs.FileSystem, the paths its own
        # (a caller's file system can't key a cache: pyarrow's are unhashable)
        self.manifest = (
            load_manifest(manifest_path, keys) if filesystem is None else _manifest(manifest_path, keys, filesystem)
        )
        self.manifest.check_chunk_sizes()
        try:
            self._raw = fs.open_source(log_path, filesystem)
        except FileNotFoundError:
            raise missing_object_error(log_path, manifest_path) from None
        if self._raw.size != self.manifest.transformed_size:
            self._raw.close()
            described = self.manifest.transformed_size
            if self._raw.size < described:
                raise _error(
                    log_path,
                    "truncated",
                    f"the object has {self._raw.size} bytes, fewer than the {described} its manifest describes "
                    "(a truncated object, or a manifest whose chunk index does not fit it)",
                )
            raise _error(
                manifest_path,
                "manifest",
                f"the manifest is inconsistent with its object: its chunk index describes {described} bytes, "
                f"the object {basename(log_path)} has {self._raw.size}",
            )
        self.size = self.manifest.original_size
        self.requested = 0
        self._identity = not self.manifest.compression and not self.manifest.encrypted
        # Undone chunks by number (views into what one fetch returned), most recent last.
        self._chunks: dict[int, memoryview] = {}
        # Chunks that failed to undo (a GCM tag, a frame): reading their bytes raises this.
        self.bad_chunks: dict[int, TieredStorageError] = {}
        self._keep = max(4, (64 << 20) // max(self.manifest.original_chunk_size, 1))
        self._joined: tuple[int, int, memoryview] = (0, 0, memoryview(b""))

    def _fetch(self, first: int, last: int) -> None:
        """Fetch and undo chunks ``first..last`` (one ranged read), each on its
        own: a chunk that fails is remembered in ``bad_chunks``, the others kept."""
        t_start, t_end = self.manifest.transformed_range(first, last)
        raw = self._raw.read(t_start, t_end - t_start)
        self.requested += t_end - t_start
        kwargs: dict[str, Any] = {"cap_name": self._cap_name}
        if self._max_decompressed_size is not None:
            kwargs["max_decompressed_size"] = self._max_decompressed_size
        try:
            undone, failures = self.manifest.detransform_each(raw, first, **kwargs)
        except TieredStorageError as e:  # named after the object that holds the chunk
            raise _error(self.path, e.kind, e.reason, e.chunk) from None
        finally:
            del raw
            self._raw.release()
        data = memoryview(undone)
        for failure in failures:
            if failure.chunk is not None:
                self.bad_chunks[failure.chunk] = _error(self.path, failure.kind, failure.reason, failure.chunk)
        base = self.manifest.original_range(first, last)[0]
        for i in range(first, last):
            if i in self.bad_chunks:
                continue
            a, b = self.manifest.original_range(i, i + 1)
            self._chunks[i] = data[a - base : b - base]
        while len(self._chunks) > self._keep:
            del self._chunks[next(iter(self._chunks))]

    def chunk_range(self, chunk: int) -> tuple[int, int]:
        """Original bytes ``(start, end)`` of chunk ``chunk``."""
        return self.manifest.original_range(chunk, chunk + 1)

    def read(self, position: int, length: int) -> Any:
        end = min(position + max(length, 0), self.size)
        if end <= position:
            return b""
        if self._identity:
            self.requested += end - position
            return self._raw.read(position, end - position)
        a, b, joined = self._joined
        if a <= position and end <= b:
            return joined[position - a : end - a]
        first, last = self.manifest.chunks_for(position, end)
        missing = [i for i in range(first, last) if i not in self._chunks and i not in self.bad_chunks]
        if missing:
            self._fetch(missing[0], missing[-1] + 1)
        for i in range(first, last):
            if i in self.bad_chunks:
                bad = self.bad_chunks[i]
                raise _error(self.path, bad.kind, bad.reason, bad.chunk)
        start = self.manifest.original_range(first, first + 1)[0]
        if last - first == 1:
            return self._chunks[first][position - start : end - start]
        # A window across chunks fetched apart: one copy, kept for the reads
        # that follow (a scan finds batch boundaries, then decodes the window).
        joined = memoryview(b"".join(self._chunks[i] for i in range(first, last)))
        self._joined = (start, start + len(joined), joined)
        return joined[position - start : end - start]

    def release(self) -> None:
        self._raw.release()

    def close(self) -> None:
        self._chunks.clear()
        self._joined = (0, 0, memoryview(b""))
        self._raw.close()

    def index(self, name: str, indexes_path: str) -> bytes | None:
        """One index of the ``.indexes`` object (``offset``, ``timestamp``,
        ``transaction``...), fetched as its slice alone; None when absent."""
        where = self.manifest.index_slice(name)
        if where is None or where[1] == 0:
            return None
        position, size = where
        try:
            data = _read_object(indexes_path, position, size, self._filesystem)
        except OSError as e:  # a missing .indexes object: no index, as for a local segment without one
            reason = "the .indexes object is missing" if isinstance(e, FileNotFoundError) else f"can't read it: {e}"
            raise InvalidIndexError(reason) from None
        if len(data) != size:
            raise _error(
                indexes_path,
                "truncated",
                f"the {name} index lies at bytes {position}-{position + size} of the object, which ends before",
            )
        self.requested += size
        return self.manifest.detransform_index(name, data)


def held_last_offset(
    log_path: str, manifest_path: str, keys: KeySpec, base_offset: int, filesystem: Any = None
) -> int | None:
    """The last offset a remote segment's bytes really hold (its last batch
    header's), walked by the core from the last offset-index entry (or the
    start); None when the segment can't be read. Used to check a manifest's
    end offset before it hides another copy's offsets. ``filesystem``: the
    caller's :class:`pyarrow.fs.FileSystem`, the paths its own."""
    try:
        return _native_held_last_offset(
            log_path, manifest_path, base_offset, tiered_keys=dict(keys), filesystem=filesystem
        )
    except (TieredStorageError, OSError, ValueError):
        return None


# --------------------------------------------------------------------------
# going on past a chunk that can't be undone
# --------------------------------------------------------------------------

#: How far past a failed chunk a batch start is looked for when no offset
#: index entry bounds the search.
RESYNC_LIMIT = 1 << 20


def batch_length(header: Any) -> int | None:
    """The size of the batch starting ``header`` (>= 12 bytes: base offset
    int64, length int32), or None if its length field is impossible (or
    ``header`` is too short to hold it)."""
    if len(header) < 12:
        return None
    (length,) = struct.unpack_from(">i", header, 8)
    return 12 + length if length >= 0 else None


def _header_at(source: TieredSource, position: int) -> tuple[int, int] | None:
    """(base offset, batch length) of the batch header at ``position``, if it is one."""
    header = bytes(source.read(position, 17))
    if len(header) < 17:
        return None
    length = batch_length(header[:12])
    if length is None or position + length > source.size or header[16] > 2:
        return None
    return int.from_bytes(header[:8], "big", signed=True), length


def _time_entries(data: bytes, base_offset: int) -> tuple[list[int], list[int]]:
    """``(timestamps, offsets)`` of a ``.timeindex``'s bytes (12-byte entries,
    the preallocated zero tail dropped as :func:`kafkabatch.read_time_index`
    does), checked to be in order."""
    if len(data) % 12:
        raise InvalidIndexError(f"{len(data)} bytes is not a multiple of the 12-byte time index entry")
    stamps: list[int] = []
    offsets: list[int] = []
    for i in range(len(data) // 12):
        stamp = int.from_bytes(data[i * 12 : i * 12 + 8], "big", signed=True)
        relative = int.from_bytes(data[i * 12 + 8 : i * 12 + 12], "big", signed=True)
        if (relative == 0 and stamp == 0) or (i and relative == 0):
            break
        if stamps and (stamp < stamps[-1] or base_offset + relative < offsets[-1]):
            raise InvalidIndexError(f"time index entries are out of order at entry {i}")
        stamps.append(stamp)
        offsets.append(base_offset + relative)
    return stamps, offsets


def seek(
    source: TieredSource,
    indexes_path: str,
    base_offset: int | None,
    start_offset: int | None,
    end_offset: int | None,
    start_timestamp_ms: int | None,
) -> tuple[int, int | None]:
    """The byte range of a remote segment to read for these bounds, from the
    offset and time indexes in its ``.indexes`` object (each entry used is
    checked against the batch header it points at; a bad index warns and
    reads the whole segment)."""
    if base_offset is None or (start_offset is None and end_offset is None and start_timestamp_ms is None):
        return 0, None
    try:
        raw = source.index("offset", indexes_path)
        if raw is None:
            raise InvalidIndexError("the segment has no offset index")
        offsets, positions = offset_index_entries(raw, base_offset)

        def position_for(offset: int) -> int:
            i = bisect.bisect_right(offsets, offset) - 1
            if i < 0:
                return 0
            found = _header_at(source, positions[i])
            if found is None or found[0] > offsets[i]:
                raise InvalidIndexError(f"entry {offsets[i]} -> {positions[i]} is not a batch of that offset")
            return positions[i]

        start = 0 if start_offset is None else position_for(start_offset)
        if start_timestamp_ms is not None:
            raw_time = source.index("timestamp", indexes_path)
            if raw_time is not None:
                stamps, stamp_offsets = _time_entries(raw_time, base_offset)
                i = bisect.bisect_left(stamps, start_timestamp_ms) - 1
                if i >= 0:
                    start = max(start, position_for(stamp_offsets[i]))
        end = None
        if end_offset is not None:
            j = bisect.bisect_left(offsets, end_offset)
            if j + 1 < len(offsets):
                found = _header_at(source, positions[j + 1])
                if found is None or found[0] < end_offset:
                    raise InvalidIndexError(f"entry {offsets[j + 1]} -> {positions[j + 1]} disagrees with the log")
                end = max(positions[j + 1], start)
        return start, end
    except InvalidIndexError as e:
        warnings.warn(f"{indexes_path}: {e}; scanning the whole segment instead", IndexFileWarning, stacklevel=3)
        return 0, None
