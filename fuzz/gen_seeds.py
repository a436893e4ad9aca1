"""Seed corpora for the fuzz targets, from other people's Kafka encoders.

Run with a Python that has kafka-python and aiokafka (the project's test
extras), from the repository root:

    .venv/bin/python fuzz/gen_seeds.py [OUT_DIR]        # default fuzz/corpus

Writes, per target directory:
- decode/, iter_headers/: one selector byte (see the targets) + real batches:
  kafka-python for every magic x codec, aiokafka v2 with headers, control
  batches (COMMIT, ABORT, short keys), a transactional log with markers, a
  log mixing v0/v1/v2, and a truncated tail;
- decompress_<codec>/: payloads from kafka-python's codecs (raw and xerial
  snappy, lz4 frames for magic 0 and magic 1+) and from the codec libraries;
- tiered/: the real batches above uploaded as the Aiven tiered-storage plugin
  stores them (tests/tiered_fixtures.py: chunks zstd'd with zstandard and
  sealed with cryptography's AES-GCM under the target's fixed key and AAD),
  in all four modes, as manifest text and as manifest fields, and manifests
  whose packed sizes claim counts no bytes hold.

Deterministic (gzip timestamps zeroed), small (a few KiB per file).
"""

from __future__ import annotations

import gzip as _gzip
import hashlib
import os
import random
import struct
import sys
from pathlib import Path

from kafka import codec as kc
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import calc_crc32c

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TS = 1_700_000_000_000


def records(n: int, seed: int, headers: bool) -> list[tuple]:
    rng = random.Random(seed)
    words = [b"kafka", b"batch", b"\x00\x01", b"\xff", "ключ".encode(), b"{\"id\": 1}"]
    out = []
    for i in range(n):
        key = None if i % 3 == 0 else b"k%d" % i
        value = None if i % 5 == 4 else b" ".join(rng.choice(words) for _ in range(rng.randrange(0, 12)))
        hs = [("h%d" % j, None if j == 1 else rng.choice(words)) for j in range(i % 3)] if headers else []
        out.append((BASE_TS + 7 * i - (50 if i == 2 else 0), key, value, hs))
    return out


def _xxh32(data: bytes, seed: int = 0) -> int:
    """Pure-Python XXH32, for kafka-python's magic-0 lz4 when xxhash is absent."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF
    rotl = lambda x, r: ((x << r) | (x >> (32 - r))) & m  # noqa: E731
    n, i = len(data), 0
    if n >= 16:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while i + 16 <= n:
            for j in range(4):
                (lane,) = struct.unpack_from("<I", data, i + 4 * j)
                v[j] = (rotl((v[j] + lane * p2) & m, 13) * p1) & m
            i += 16
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, i)
        h = (rotl((h + lane * p3) & m, 17) * p4) & m
        i += 4
    while i < n:
        h = (rotl((h + data[i] * p5) & m, 11) * p1) & m
        i += 1
    h ^= h >> 15
    h = (h * p2) & m
    h ^= h >> 13
    h = (h * p3) & m
    return h ^ (h >> 16)


class _PyXXH32:
    def __init__(self, data: bytes = b"", seed: int = 0):
        self._v = _xxh32(bytes(data), seed)

    def intdigest(self) -> int:
        return self._v

    def digest(self) -> bytes:
        return self._v.to_bytes(4, "big")


if kc.xxhash is None:
    kc.xxhash = type("xxhash", (), {"xxh32": _PyXXH32})


def zero_gzip_mtime(payload: bytes) -> bytes:
    if payload[:3] == b"\x1f\x8b\x08":
        return payload[:4] + b"\x00\x00\x00\x00" + payload[8:]
    return payload


def v2_batch(codec: str, recs, *, base_offset=0, attrs_extra=0, producer=(-1, -1, -1), transactional=False) -> bytes:
    pid, epoch, seq = producer
    b = DefaultRecordBatchBuilder(2, CODECS[codec], int(transactional), pid, epoch, seq, 1 << 30)
    for i, (ts, k, v, hs) in enumerate(recs):
        assert b.append(i, ts, k, v, hs) is not None
    data = bytearray(b.build())
    data[0:8] = struct.pack(">q", base_offset)
    if codec == "gzip":
        data[61:] = zero_gzip_mtime(bytes(data[61:]))
    if attrs_extra:
        (attrs,) = struct.unpack_from(">h", data, 21)
        struct.pack_into(">h", data, 21, attrs | attrs_extra)
    struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    return bytes(data)


def legacy_set(magic: int, codec: str, recs, *, base_offset=0) -> bytes:
    inner_start = 0 if (magic == 1 and codec != "none") else base_offset
    b = LegacyRecordBatchBuilder(magic, CODECS[codec], 1 << 30)
    for i, (ts, k, v, _) in enumerate(recs):
        assert b.append(inner_start + i, -1 if magic == 0 else ts, k, v) is not None
    data = bytearray(b.build())
    if codec != "none":
        # The broker's offset assignment: the wrapper holds the last offset.
        data[0:8] = struct.pack(">q", base_offset + len(recs) - 1)
    return bytes(data)


def control(kind: int, *, base_offset: int, pid: int, key: bytes | None = None) -> bytes:
    key = struct.pack(">hh", 0, kind) if key is None else key
    value = struct.pack(">hi", 0, 5)
    return v2_batch("none", [(BASE_TS, key, value, [])], base_offset=base_offset,
                    attrs_extra=0x20, producer=(pid, 0, -1), transactional=True)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "corpus")
    batches: dict[str, bytes] = {}
    small, headed = records(6, 1, False), records(6, 2, True)
    for magic in (0, 1, 2):
        for codec in CODECS:
            if codec == "zstd" and magic < 2:
                continue
            name = f"v{magic}-{codec}"
            batches[name] = v2_batch(codec, headed) if magic == 2 else legacy_set(magic, codec, small, base_offset=100)
    from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
    for codec in CODECS:
        b = AioBuilder(2, CODECS[codec], 0, 7, 1, 40, 1 << 30)
        for i, (ts, k, v, hs) in enumerate(headed):
            b.append(i, ts, k, v, hs)
        data = bytearray(b.build())
        if codec == "gzip":
            data[61:] = zero_gzip_mtime(bytes(data[61:]))
            struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
        batches[f"aiokafka-v2-{codec}"] = bytes(data)
    batches["control-commit"] = control(1, base_offset=9, pid=3)
    batches["control-abort"] = control(0, base_offset=9, pid=3)
    batches["control-short-key"] = control(1, base_offset=9, pid=3, key=b"\x00\x01")
    batches["txn-log"] = b"".join([
        v2_batch("none", small[:2], base_offset=0, producer=(3, 0, 0), transactional=True),
        v2_batch("lz4", small[:2], base_offset=2, producer=(4, 0, 0), transactional=True),
        control(0, base_offset=4, pid=3),
        v2_batch("none", small[:1], base_offset=5),
        control(1, base_offset=6, pid=4),
        v2_batch("zstd", small[:2], base_offset=7, producer=(3, 0, 2), transactional=True),
    ])
    batches["mixed-magic"] = b"".join([
        legacy_set(0, "none", small[:2], base_offset=0),
        legacy_set(1, "gzip", small[:3], base_offset=2),
        v2_batch("snappy", headed[:3], base_offset=5),
        legacy_set(1, "none", small[:1], base_offset=8),
        v2_batch("none", headed[:2], base_offset=9),
    ])
    batches["truncated-tail"] = batches["v2-none"] + batches["v2-gzip"][:40]
    batches["empty-records-v2"] = v2_batch("none", [])

    selectors = {"decode": (0x00, 0x01, 0x0A, 0x16), "iter_headers": (0x00, 0x01, 0x02)}
    for target, sels in selectors.items():
        d = out / target
        d.mkdir(parents=True, exist_ok=True)
        for name, data in batches.items():
            if not data:
                continue
            for sel in sels:
                (d / f"{name}-s{sel:02x}").write_bytes(bytes([sel]) + data)

    # Codec payloads.
    rng = random.Random(7)
    texts = [b"", b"a", b"kafka " * 40, bytes(range(256)) * 3, bytes(rng.randrange(256) for _ in range(700)),
             b"\x00" * 5000]
    payloads: dict[str, list[bytes]] = {c: [] for c in ("gzip", "snappy", "lz4", "zstd")}
    for t in texts:
        payloads["gzip"].append(zero_gzip_mtime(kc.gzip_encode(t)))
        payloads["gzip"].append(_gzip.compress(t, mtime=0) + _gzip.compress(t[:10], mtime=0))
        if t:
            payloads["snappy"].append(kc.snappy_encode(t))
            payloads["snappy"].append(kc.snappy_encode(t, xerial_compatible=True, xerial_blocksize=256))
        payloads["lz4"].append(kc.lz4_encode(t))
        try:
            payloads["lz4"].append(kc.lz4_encode_old_kafka(t))
        except Exception:
            pass
        payloads["zstd"].append(kc.zstd_encode(t))
    import lz4.frame
    import zstandard
    for t in texts[2:5]:
        payloads["lz4"].append(lz4.frame.compress(t, block_linked=True, content_checksum=True, store_size=True))
        payloads["lz4"].append(lz4.frame.compress(t, block_checksum=True, block_size=lz4.frame.BLOCKSIZE_MAX256KB))
        payloads["zstd"].append(zstandard.ZstdCompressor(write_content_size=False, write_checksum=True).compress(t))
        payloads["zstd"].append(zstandard.ZstdCompressor(level=19).compress(t) * 2)
    # The payloads inside the real batches above.
    for name, data in batches.items():
        if name.startswith("v2-") or name.startswith("aiokafka-v2-"):
            codec = name.rsplit("-", 1)[1]
            if codec in payloads:
                payloads[codec].append(data[61:])
    for codec, items in payloads.items():
        d = out / f"decompress_{codec}"
        d.mkdir(parents=True, exist_ok=True)
        for p in items:
            (d / hashlib.sha1(p).hexdigest()[:16]).write_bytes(p)
    log = b"".join(batches[n] for n in ("v2-none", "v2-lz4", "mixed-magic", "txn-log"))
    tiered_seeds(out / "tiered", log)
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {sum(1 for f in out.rglob('*') if f.is_file())} seeds, {total} bytes, under {out}")


#: The tiered target's data key and AAD (fuzz/fuzz_targets/checks/tiered.rs).
TIERED_KEY = bytes([7] * 32)
TIERED_AAD = b"kafkabatch fuzz aad"


def tiered_seeds(out: Path, log: bytes) -> None:
    """``log`` cut into chunks and transformed as the plugin does, one seed
    per mode and input form (see the tiered target's checks)."""
    import base64
    import json

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from tiered_fixtures import pack_sizes, zstd_with_size

    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(11)
    chunk_size = 300

    def seal(plain: bytes) -> bytes:
        iv = rng.randbytes(12)
        return iv + AESGCM(TIERED_KEY).encrypt(iv, plain, TIERED_AAD)

    for compress in (False, True):
        for encrypt in (False, True):
            chunks = []
            for at in range(0, len(log), chunk_size):
                chunk = log[at : at + chunk_size]
                chunk = zstd_with_size(chunk) if compress else chunk
                chunks.append(seal(chunk) if encrypt else chunk)
            sizes = [len(c) for c in chunks]
            obj = b"".join(chunks)
            if compress:
                index = {
                    "type": "variable",
                    "originalChunkSize": chunk_size,
                    "originalFileSize": len(log),
                    "transformedChunks": base64.b64encode(zstd_with_size(pack_sizes(sizes))).decode(),
                }
            else:
                index = {
                    "type": "fixed",
                    "originalChunkSize": chunk_size,
                    "originalFileSize": len(log),
                    "transformedChunkSize": sizes[0],
                    "finalTransformedChunkSize": sizes[-1],
                }
            # Index slices over sealed chunks, so they undo as indexes do.
            slices = [(0, sizes[0]), (sizes[0], sizes[1]), (0, 0), (sizes[0] + sizes[1], sizes[2]), (0, 0)]
            names = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")
            manifest = {
                "version": "1",
                "chunkIndex": index,
                "segmentIndexes": {n: {"position": p, "size": z} for n, (p, z) in zip(names, slices)},
                "compression": compress,
            }
            if encrypt:
                manifest["encryption"] = {"dataKey": "k:AAAA", "aad": "AAAA"}
            text = json.dumps(manifest, separators=(",", ":")).encode()
            mode = ("zstd" if compress else "plain") + ("-encrypted" if encrypt else "")
            selector = int(encrypt)
            (out / f"text-{mode}").write_bytes(bytes([selector]) + struct.pack("<H", len(text)) + text + obj)
            packed = pack_sizes(sizes) if compress else b""
            fields = struct.pack(
                ">BiiiiB", int(compress), chunk_size, len(log), sizes[0], sizes[-1], len(packed)
            ) + packed + b"".join(struct.pack(">HH", p, z) for p, z in slices)
            selector = int(encrypt) | 2 | (4 if compress else 0)
            (out / f"fields-{mode}").write_bytes(bytes([selector]) + fields + obj)
    # Packed sizes whose count no bytes hold: bytesPerValue 0 (13 bytes), and
    # a count past the file's chunks.
    for name, count in (("count-2g-width-0", 2**31 - 1), ("count-400m-width-0", 400_000_000)):
        packed = struct.pack(">iiBi", count, 100, 0, 100)
        fields = struct.pack(">BiiiiB", 1, 1, count, 0, 0, len(packed)) + packed + b"\0" * 20
        (out / name).write_bytes(bytes([2 | 4]) + fields)


if __name__ == "__main__":
    main()
