"""A sample tiered-storage bucket: a generated log dir's segments uploaded as
Kafka's RemoteStorageManager plugins store them.

>>> from kafkabatch.generate import generate
>>> s = generate("/tmp/tiered", size="16MB", tiered="aiven", tiered_compression=True, tiered_encryption=True)  # doctest: +SKIP
>>> kb.scan_log(s.tiered.folder, tiered_keys=s.tiered.tiered_keys).read_all().num_rows  # doctest: +SKIP

Layouts (``layout``):

* ``"aiven"``, Aiven's ``tiered-storage-for-apache-kafka``:
  ``{topic}-{topicId}/{partition}/{offset:020d}-{segmentId}.log``, ``.indexes``
  and ``.rsm-manifest``, each ``.log`` cut into chunks of ``chunk_size``
  bytes, zstd'd with ``compression`` and AES-256-GCM-encrypted with
  ``encryption`` (the data key wrapped with an RSA key pair written as
  ``private.pem``/``public.pem`` beside the bucket, key-pair id ``key-1``);
* ``"local"``, Kafka's ``LocalTieredStorage``:
  ``{topic}-{partition}-{topicId}/{offset:020d}-{segmentId}.log`` with its
  ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot`` and
  ``.leader_epoch_checkpoint`` (no transform).

The transforms run in the Rust core (``_kafkabatch.TieredUploader``), seeded:
the same seed writes the same bucket. The key pair is for reading the sample.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkabatch import _kafkabatch as _native
from kafkabatch._util import format_bytes, parse_size
from kafkabatch.log.index import read_time_index
from kafkabatch.log.naming import kafka_uuid

__all__ = ["LAYOUTS", "KEY_ID", "TieredBucket", "upload_log_dir"]

#: The bucket layouts :func:`upload_log_dir` writes.
LAYOUTS: tuple[str, ...] = ("aiven", "local")
#: The key-pair id of an encrypted sample bucket.
KEY_ID = "key-1"
#: The chunk size of the sample buckets (the plugin's ``chunk.size``; its default is 4 MiB).
DEFAULT_CHUNK_SIZE = 1 << 20

_SEGMENT = re.compile(r"^(\d{20})\.log$")
#: When the segments were "uploaded": 2026-11-01T00:00:00Z, in ms.
_EVENT_TIMESTAMP = 1_793_491_200_000


@dataclass(frozen=True)
class TieredBucket:
    """What :func:`upload_log_dir` wrote: the ``folder`` of the bucket, read
    with ``tiered_keys`` (None when not encrypted), uploaded from ``broker``
    (a log dir that keeps every segment, so reading both tries the overlap rule)."""

    layout: str
    folder: Path
    broker: Path
    compression: bool
    encryption: bool
    segments: int
    bytes: int
    elapsed: float
    private_key: Path | None = None
    public_key: Path | None = None

    @property
    def tiered_keys(self) -> dict[str, str] | None:
        """``{key-pair id: private key path}`` for ``tiered_keys=``, or None."""
        return None if self.private_key is None else {KEY_ID: str(self.private_key)}

    @property
    def mode(self) -> str:
        """``plain``, ``zstd``, ``encrypted`` or ``zstd+encrypted`` (Aiven), ``local``."""
        if self.layout == "local":
            return "local"
        return "+".join(m for m, on in (("zstd", self.compression), ("encrypted", self.encryption)) if on) or "plain"

    def __str__(self) -> str:
        text = (
            f"tiered bucket ({self.layout}, {self.mode}): {self.segments} segments, {format_bytes(self.bytes)} "
            f"in {self.folder}, uploaded from {self.broker}"
        )
        if self.private_key is not None:
            text += f"; key pair {KEY_ID!r}: {self.private_key}"
        return text


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def _max_timestamp(timeindex: Path) -> int:
    """The last (largest) timestamp of a ``.timeindex``, or -1."""
    if not timeindex.exists():
        return -1
    stamps = read_time_index(timeindex)["timestamp"]
    return int(stamps[-1].as_py()) if len(stamps) else -1


def upload_log_dir(
    partitions: Iterable[tuple[str, int, Path, int]],
    bucket: str | os.PathLike[str],
    *,
    layout: str = "aiven",
    compression: bool = False,
    encryption: bool = False,
    chunk_size: int | str = DEFAULT_CHUNK_SIZE,
    seed: int = 0,
    broker: str | os.PathLike[str] | None = None,
) -> TieredBucket:
    """Upload every segment of ``partitions`` (``(topic, partition, folder,
    log end offset)``) into ``bucket`` in ``layout``; with ``encryption`` a
    new RSA key pair is written beside the bucket (``private.pem``,
    ``public.pem``)."""
    if layout not in LAYOUTS:
        raise ValueError(f"tiered must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    if layout == "local" and (compression or encryption):
        raise ValueError(
            "tiered_compression and tiered_encryption are Aiven's plugin's modes; LocalTieredStorage stores "
            "segments as they are"
        )
    chunk = parse_size(chunk_size, "tiered_chunk_size")
    if not 1 <= chunk <= (1 << 31) - 1:
        raise ValueError(f"tiered_chunk_size must be between 1 byte and 2 GiB, not {chunk}")
    started = time.perf_counter()
    root = Path(bucket)
    root.mkdir(parents=True, exist_ok=True)
    uploader = _native.TieredUploader(seed & 0xFFFF_FFFF_FFFF_FFFF, compression=compression)
    private_path = public_path = None
    if encryption:
        private_pem, public_pem = uploader.key_pair()
        private_path, public_path = root.parent / "private.pem", root.parent / "public.pem"
        private_path.write_text(private_pem)
        private_path.chmod(0o600)
        public_path.write_text(public_pem)
        uploader = _native.TieredUploader(
            (seed + 1) & 0xFFFF_FFFF_FFFF_FFFF, compression=compression, public_key=public_pem
        )
    topic_ids: dict[str, str] = {}
    segments = 0
    for topic, partition, folder, end_offset in partitions:
        if topic not in topic_ids:
            topic_ids[topic] = kafka_uuid(uploader.random_bytes(16))
        topic_id = topic_ids[topic]
        logs = sorted(p for p in Path(folder).iterdir() if _SEGMENT.match(p.name))
        for i, log in enumerate(logs):
            base = int(log.name[:20])
            last = int(logs[i + 1].name[:20]) - 1 if i + 1 < len(logs) else end_offset - 1
            segment_id = kafka_uuid(uploader.random_bytes(16))
            if layout == "local":
                _local_copy(root, log, topic, partition, topic_id, segment_id)
            else:
                _aiven_upload(
                    root, uploader, log, topic, partition, topic_id, segment_id, base, last, chunk, compression
                )
            segments += 1
    written = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return TieredBucket(
        layout=layout,
        folder=root,
        broker=Path(broker) if broker is not None else root.parent,
        compression=compression,
        encryption=encryption,
        segments=segments,
        bytes=written,
        elapsed=time.perf_counter() - started,
        private_key=private_path,
        public_key=public_path,
    )


def _aiven_upload(
    root: Path,
    uploader: Any,
    log: Path,
    topic: str,
    partition: int,
    topic_id: str,
    segment_id: str,
    base: int,
    last: int,
    chunk: int,
    compression: bool,
) -> None:
    """One segment as Aiven's plugin stores it (``KafkaRemoteStorageManager``)."""
    folder = root / f"{topic}-{topic_id}" / str(partition)
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{base:020d}-{segment_id}"
    txnindex = log.with_suffix(".txnindex")
    parts = [
        ("offset", log.with_suffix(".index")),
        ("timestamp", log.with_suffix(".timeindex")),
        ("producerSnapshot", log.with_suffix(".snapshot")),
        ("leaderEpoch", log.parent / "leader-epoch-checkpoint"),
    ]
    if txnindex.exists():
        parts.append(("transaction", txnindex))
    original = log.read_bytes()
    stored = uploader.segment(original, [_read(path) for _, path in parts], chunk)
    Path(f"{stem}.log").write_bytes(stored["log"])
    indexes: dict[str, Any] = {}
    position = 0
    with open(f"{stem}.indexes", "wb") as out:
        for (name, _), data in zip(parts, stored["indexes"], strict=True):
            indexes[name] = {"position": position, "size": len(data)}
            out.write(data)
            position += len(data)
    indexes.setdefault("transaction", None)
    sizes = stored["sizes"]
    if compression:
        chunk_index: dict[str, Any] = {
            "type": "variable",
            "originalChunkSize": chunk,
            "originalFileSize": len(original),
            "transformedChunks": base64.b64encode(stored["packed_sizes"]).decode(),
        }
    else:
        chunk_index = {
            "type": "fixed",
            "originalChunkSize": chunk,
            "originalFileSize": len(original),
            "transformedChunkSize": chunk + (0 if stored["aad"] is None else 28),  # IV and GCM tag
            "finalTransformedChunkSize": sizes[-1] if sizes else 0,
        }
    # SegmentManifestV1's properties in Jackson's order.
    manifest: dict[str, Any] = {
        "version": "1",
        "chunkIndex": chunk_index,
        "segmentIndexes": indexes,
        "compression": compression,
    }
    if stored["wrapped_key"] is not None:
        manifest["encryption"] = {
            "dataKey": f"{KEY_ID}:{base64.b64encode(stored['wrapped_key']).decode()}",
            "aad": base64.b64encode(stored["aad"]).decode(),
        }
    manifest["remoteLogSegmentMetadata"] = {
        "remoteLogSegmentId": {
            "topicIdPartition": {"topicId": topic_id, "topicPartition": {"topic": topic, "partition": partition}},
            "id": segment_id,
        },
        "startOffset": base,
        "endOffset": last,
        "maxTimestampMs": _max_timestamp(log.with_suffix(".timeindex")),
        "brokerId": 1,
        "eventTimestampMs": _EVENT_TIMESTAMP,
        "segmentLeaderEpochs": {"0": base},
    }
    Path(f"{stem}.rsm-manifest").write_text(json.dumps(manifest, separators=(",", ":")))


def _local_copy(root: Path, log: Path, topic: str, partition: int, topic_id: str, segment_id: str) -> None:
    """One segment in Kafka's ``LocalTieredStorage`` layout (``RemoteLogSegmentFileset``)."""
    folder = root / f"{topic}-{partition}-{topic_id}"
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{log.stem}-{segment_id}"
    for source, suffix in (
        (log, ".log"),
        (log.with_suffix(".index"), ".index"),
        (log.with_suffix(".timeindex"), ".timeindex"),
        (log.with_suffix(".txnindex"), ".txnindex"),
        (log.with_suffix(".snapshot"), ".snapshot"),
        (log.parent / "leader-epoch-checkpoint", ".leader_epoch_checkpoint"),
    ):
        if source.exists():
            shutil.copyfile(source, f"{stem}{suffix}")
        elif suffix in (".snapshot", ".leader_epoch_checkpoint"):
            Path(f"{stem}{suffix}").write_bytes(b"")
