"""Remote-storage fixtures written the way Kafka's tiered-storage plugins write them.

Independent of kafkabatch's reader: chunks are compressed with ``zstandard``
(a frame with its content size, level 3, as the plugin's ``ZstdCompressCtx``),
encrypted with ``cryptography``'s AESGCM (IV(12) ‖ ciphertext ‖ tag(16), the
manifest's AAD), and the data key wrapped with pycryptodome's PKCS1_OAEP
(SHA3-512 for OAEP and MGF1, empty label), following the facts read from
Aiven-Open/tiered-storage-for-apache-kafka:

- object keys ``{prefix}{topic}-{topicId}/{partition}/{offset:020d}-{segmentId}.{log,indexes,rsm-manifest}``
  (``ObjectKeyFactory.mainPath``);
- the manifest JSON of ``SegmentManifestV1`` with its Jackson property order;
- the ``fixed`` chunk index without compression, ``variable`` with it
  (``ChunkSizesBinaryCodec``, zstd'd with the content size, base64);
- ``.indexes``: offset, time, producer-snapshot, leader-epoch and (when present)
  transaction indexes, each encrypted alone and never compressed
  (``KafkaRemoteStorageManager.uploadIndexes``).

And Kafka's ``LocalTieredStorage`` layout
(``{topic}-{partition}-{topicId}/{startOffset:020d}-{segmentId}.log`` with
``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``,
``.leader_epoch_checkpoint``; ``RemoteLogSegmentFileset``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import re
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard
from Crypto.Cipher import PKCS1_OAEP
from Crypto.Hash import SHA3_512
from Crypto.PublicKey import RSA
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MODES = ("plain", "zstd", "encrypted", "zstd+encrypted")
SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")


def kafka_uuid(rng: random.Random, *, dash_digit: bool = False) -> str:
    """A Kafka ``Uuid.toString()``: 16 bytes, URL-safe base64 without padding (22 chars)."""
    while True:
        text = base64.urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")
        if not dash_digit or re.search(r"-\d", text):
            return text


@dataclass
class KeyPair:
    key_id: str
    private_pem: str
    public: RSA.RsaKey


def make_key_pair(key_id: str, bits: int = 2048) -> KeyPair:
    key = RSA.generate(bits)
    return KeyPair(key_id, key.export_key(pkcs=8).decode(), key.publickey())


def pack_sizes(values: list[int]) -> bytes:
    """``ChunkSizesBinaryCodec.encode``."""
    out = struct.pack(">i", len(values))
    if not values:
        return out
    if len(values) == 1:
        return out + struct.pack(">i", values[0])
    base = min(values[:-1])

    def needed(v: int) -> int:
        return 1 if v <= 0xFF else 2 if v <= 0xFFFF else 3 if v <= 0xFFFFFF else 4

    width = max(needed(v - base) for v in values[:-1])
    out += struct.pack(">ib", base, width)
    for v in values[:-1]:
        out += struct.pack(">I", v - base)[4 - width :]
    return out + struct.pack(">i", values[-1])


def zstd_with_size(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=3, write_content_size=True).compress(data)


@dataclass
class Uploader:
    """Uploads broker segments as the Aiven plugin would, in one mode."""

    root: Path
    mode: str
    chunk_size: int
    key: KeyPair | None = None
    prefix: str = ""
    seed: int = 0
    topic_ids: dict[str, str] = field(default_factory=dict)
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        assert self.mode in MODES
        self.rng = random.Random(self.seed)
        if "encrypted" in self.mode:
            assert self.key is not None

    @property
    def compress(self) -> bool:
        return "zstd" in self.mode

    @property
    def encrypt(self) -> bool:
        return "encrypted" in self.mode

    def topic_id(self, topic: str) -> str:
        if topic not in self.topic_ids:
            # A topic id with "-<digit>" in it: never parse a folder by its last dash.
            self.topic_ids[topic] = kafka_uuid(self.rng, dash_digit=True)
        return self.topic_ids[topic]

    def _seal(self, data_key: bytes, aad: bytes, plain: bytes) -> bytes:
        iv = self.rng.randbytes(12)
        return iv + AESGCM(data_key).encrypt(iv, plain, aad)

    def upload(
        self,
        log_path: Path,
        topic: str,
        partition: int,
        *,
        end_offset: int,
        max_timestamp: int = 0,
        segment_id: str | None = None,
    ) -> dict[str, Path]:
        """Upload one broker segment; returns the three object paths."""
        base = int(log_path.name[:20])
        segment_id = segment_id or kafka_uuid(self.rng)
        folder = self.root / f"{self.prefix}{topic}-{self.topic_id(topic)}" / str(partition)
        folder.mkdir(parents=True, exist_ok=True)
        stem = folder / f"{base:020d}-{segment_id}"
        original = log_path.read_bytes()
        data_key = self.rng.randbytes(32) if self.encrypt else b""
        aad = self.rng.randbytes(32) if self.encrypt else b""
        # The .log: chunks, each compressed then encrypted.
        sizes = []
        with open(f"{stem}.log", "wb") as out:
            for at in range(0, len(original), self.chunk_size):
                chunk = original[at : at + self.chunk_size]
                if self.compress:
                    chunk = zstd_with_size(chunk)
                if self.encrypt:
                    chunk = self._seal(data_key, aad, chunk)
                sizes.append(len(chunk))
                out.write(chunk)
        if self.compress:
            chunk_index = {
                "type": "variable",
                "originalChunkSize": self.chunk_size,
                "originalFileSize": len(original),
                "transformedChunks": base64.b64encode(zstd_with_size(pack_sizes(sizes))).decode(),
            }
        else:
            overhead = 28 if self.encrypt else 0
            chunk_index = {
                "type": "fixed",
                "originalChunkSize": self.chunk_size,
                "originalFileSize": len(original),
                "transformedChunkSize": self.chunk_size + overhead,
                "finalTransformedChunkSize": sizes[-1] if sizes else 0,
            }
        # The .indexes: each index alone, encrypted, never compressed.
        indexes = {}
        position = 0
        with open(f"{stem}.indexes", "wb") as out:
            parts = [
                ("offset", log_path.with_suffix(".index")),
                ("timestamp", log_path.with_suffix(".timeindex")),
                ("producerSnapshot", log_path.with_suffix(".snapshot")),
                ("leaderEpoch", log_path.parent / "leader-epoch-checkpoint"),
                ("transaction", log_path.with_suffix(".txnindex")),
            ]
            for name, path in parts:
                if name == "transaction" and not path.exists():
                    indexes[name] = None
                    continue
                data = path.read_bytes() if path.exists() else b""
                if data and self.encrypt:
                    data = self._seal(data_key, aad, data)
                indexes[name] = {"position": position, "size": len(data)}
                out.write(data)
                position += len(data)
        manifest: dict = {"version": "1", "chunkIndex": chunk_index, "segmentIndexes": indexes}
        manifest["compression"] = self.compress
        if self.encrypt:
            assert self.key is not None
            wrapped = PKCS1_OAEP.new(self.key.public, hashAlgo=SHA3_512).encrypt(data_key)
            manifest["encryption"] = {
                "dataKey": f"{self.key.key_id}:{base64.b64encode(wrapped).decode()}",
                "aad": base64.b64encode(aad).decode(),
            }
        manifest["remoteLogSegmentMetadata"] = {
            "remoteLogSegmentId": {
                "topicIdPartition": {
                    "topicId": self.topic_id(topic),
                    "topicPartition": {"topic": topic, "partition": partition},
                },
                "id": segment_id,
            },
            "startOffset": base,
            "endOffset": end_offset,
            "maxTimestampMs": max_timestamp,
            "brokerId": 1,
            "eventTimestampMs": 1793491200000,
            "segmentLeaderEpochs": {"0": base},
        }
        Path(f"{stem}.rsm-manifest").write_text(json.dumps(manifest, separators=(",", ":")))
        return {s: Path(f"{stem}.{s}") for s in ("log", "indexes", "rsm-manifest")}


def local_tiered_copy(
    root: Path, log_path: Path, topic: str, partition: int, topic_id: str, segment_id: str, *, padded: bool = True
) -> Path:
    """Copy one broker segment into Kafka's LocalTieredStorage layout."""
    folder = root / f"{topic}-{partition}-{topic_id}"
    folder.mkdir(parents=True, exist_ok=True)
    base = int(log_path.name[:20])
    start = f"{base:020d}" if padded else str(base)
    stem = folder / f"{start}-{segment_id}"
    for src, suffix in (
        (log_path, ".log"),
        (log_path.with_suffix(".index"), ".index"),
        (log_path.with_suffix(".timeindex"), ".timeindex"),
        (log_path.with_suffix(".txnindex"), ".txnindex"),
        (log_path.with_suffix(".snapshot"), ".snapshot"),
        (log_path.parent / "leader-epoch-checkpoint", ".leader_epoch_checkpoint"),
    ):
        if src.exists():
            Path(f"{stem}{suffix}").write_bytes(src.read_bytes())
        elif suffix in (".snapshot", ".leader_epoch_checkpoint"):
            Path(f"{stem}{suffix}").write_bytes(b"")
    return Path(f"{stem}.log")


def broker_segments(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if SEGMENT_NAME.match(p.name))


def size_on_disk(root: str | os.PathLike[str]) -> int:
    return sum(p.stat().st_size for p in Path(root).rglob("*") if p.is_file())


#: The credentials and region moto's S3 server takes (any will do); set them before :func:`moto_s3_server`.
S3_TEST_ENV = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}


@contextlib.contextmanager
def moto_s3_server(tmp: Path) -> Iterator[tuple[Any, str, Path]]:
    """A real S3 protocol server (moto's) on loopback with a bucket ``tiered``,
    recording every request it serves to ``tmp / "requests.jsonl"``:
    ``(pyarrow filesystem, "host:port", path of the recording)``. Needs
    :data:`S3_TEST_ENV` in the environment."""
    from pyarrow import fs as pafs

    recording = tmp / "requests.jsonl"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"127.0.0.1:{port}"
    server = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "moto_server"), "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, MOTO_RECORDER_FILEPATH=str(recording)),
    )
    try:
        filesystem = pafs.S3FileSystem(
            endpoint_override=endpoint, scheme="http", allow_bucket_creation=True, region="us-east-1"
        )
        for _ in range(100):
            try:
                filesystem.create_dir("tiered")
                break
            except OSError:
                time.sleep(0.1)
        yield filesystem, endpoint, recording
    finally:
        server.terminate()
        server.wait(10)


def bytes_fetched(recording: Path, endpoint: str, sizes: dict[str, int]) -> dict[str, int]:
    """Bytes of each object in ``sizes`` that GET requests fetched, from moto's
    request recording (a ``Range`` header counts its range, clipped to the
    object; none counts the whole object)."""
    fetched: dict[str, int] = {}
    for line in recording.read_text().splitlines():
        entry = json.loads(line)
        if entry["method"] != "GET":
            continue
        key = entry["url"].split(f"{endpoint}/", 1)[-1].split("?", 1)[0]
        if key not in sizes:
            continue
        ranged = {k.lower(): v for k, v in entry["headers"].items()}.get("range")
        if ranged:
            a, b = ranged.split("=", 1)[1].split("-")
            n = min(int(b), sizes[key] - 1) - int(a) + 1
        else:
            n = sizes[key]
        fetched[key] = fetched.get(key, 0) + n
    return fetched
