"""Decompression bombs through ``kafkabatch.decode``.

Each bomb is a small v2 batch whose payload inflates past 1 GiB (zstd, gzip
and lz4; snappy, whose format caps the ratio near 21:1, gets the largest
legal bombs: a raw block claiming 4 GiB and a xerial stream of many blocks).
With the default cap (``DEFAULT_MAX_DECOMPRESSED_SIZE``, 256 MiB) each must be
refused with a ``KafkaBatchError`` in bounded time and memory.

Every bomb is decoded in a fresh child process, so its memory is measured on
its own: a small wrapper process starts the decoding process and reports
``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` (which then covers that one
child only) with the wall time. Limits: < 10 s and peak RSS < 1 GiB.

The payloads are built by streaming each compressor over repeated chunks of
zeros, never holding the inflated data.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
import zlib

import pytest

crc32c = pytest.importorskip("crc32c")
kb = pytest.importorskip("kafkabatch")

GIB = 1 << 30
MIB = 1 << 20
TIME_LIMIT_S = 10.0
RSS_LIMIT_KIB = 1 << 20  # ru_maxrss is in KiB on Linux
CODEC_ID = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def zeros(total: int, chunk: int = 4 * MIB):
    for _ in range(total // chunk):
        yield bytes(chunk)


def gzip_bomb(total: int) -> bytes:
    """One gzip member of ``total`` zero bytes (deflate's ~1032:1 at most)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [c.compress(z) for z in zeros(total)]
    return b"".join(parts) + c.flush()


def zstd_bomb(total: int) -> bytes:
    """One zstd frame of ``total`` zero bytes, streamed (no content size, as
    Java's ZstdOutputStream writes)."""
    zstandard = pytest.importorskip("zstandard")
    c = zstandard.ZstdCompressor(level=3).compressobj()
    parts = [c.compress(z) for z in zeros(total)]
    return b"".join(parts) + c.flush()


def lz4_bomb(total: int) -> bytes:
    """One lz4 frame of ``total`` zero bytes (lz4's ~255:1 at most)."""
    lz4_frame = pytest.importorskip("lz4.frame")
    c = lz4_frame.LZ4FrameCompressor(block_size=lz4_frame.BLOCKSIZE_MAX4MB)
    parts = [c.begin()] + [c.compress(z) for z in zeros(total)]
    return b"".join(parts) + c.flush()


def snappy_claim(claim: int) -> bytes:
    """A raw snappy block whose varint length claims ``claim`` bytes."""
    out = bytearray()
    while claim >= 0x80:
        out.append((claim & 0x7F) | 0x80)
        claim >>= 7
    out.append(claim)
    return bytes(out) + b"\x00\x00"  # one literal byte


def snappy_xerial_bomb(blocks: int) -> bytes:
    """snappy-java framing around ``blocks`` raw blocks of 1 MiB of zeros."""
    cramjam = pytest.importorskip("cramjam")
    block = bytes(cramjam.snappy.compress_raw(bytes(MIB)))
    head = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    return head + (struct.pack(">i", len(block)) + block) * blocks


def v2_batch(codec: str, payload: bytes, base_offset: int = 0) -> bytes:
    """A v2 record batch header (spec "Record Batch") claiming one record."""
    body = struct.pack(">hiqqqhii", CODEC_ID[codec], 0, 1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, 1) + payload
    crc = crc32c.crc32c(body)
    head = struct.pack(">qiibI", base_offset, 4 + 1 + 4 + len(body), 0, 2, crc)
    return head + body


BOMBS = {
    "zstd-1GiB": lambda: ("zstd", zstd_bomb(GIB), GIB),
    "gzip-1GiB": lambda: ("gzip", gzip_bomb(GIB), GIB),
    "lz4-1GiB": lambda: ("lz4", lz4_bomb(GIB), GIB),
    "snappy-raw-claims-4GiB": lambda: ("snappy", snappy_claim(4 * GIB - 1), 4 * GIB - 1),
    "snappy-xerial-300x1MiB": lambda: ("snappy", snappy_xerial_bomb(300), 300 * MIB),
}

CHILD = textwrap.dedent(
    """
    import sys, kafkabatch as kb
    data = open(sys.argv[1], "rb").read()
    try:
        kb.decode(data)
    except kb.KafkaBatchError as e:
        print(type(e).__name__ + ": " + str(e))
        sys.exit(0)
    print("decoded without an error")
    sys.exit(3)
    """
)

WRAPPER = textwrap.dedent(
    """
    import json, resource, subprocess, sys, time
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-c", sys.argv[1], sys.argv[2]], capture_output=True, text=True)
    elapsed = time.monotonic() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"rc": p.returncode, "out": p.stdout.strip(), "err": p.stderr[-2000:], "seconds": elapsed, "maxrss_kib": rss}))
    """
)


def first_batch() -> bytes:
    """A small valid batch, written by kafka-python."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    b.append(0, 1_700_000_000_000, b"k", b"v", [])
    return bytes(b.build())


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bomb_is_refused_in_bounded_time_and_memory(name, tmp_path):
    pytest.importorskip("kafka")
    codec, payload, inflates_to = BOMBS[name]()
    assert len(payload) < 16 * MIB, f"the bomb itself is {len(payload)} bytes"
    assert inflates_to / len(payload) > 20
    good = first_batch()
    data = good + v2_batch(codec, payload, base_offset=1)
    path = tmp_path / f"{name}.bin"
    path.write_bytes(data)

    out = subprocess.run([sys.executable, "-c", WRAPPER, CHILD, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    print(
        f"{name}: {len(payload)} bytes -> {inflates_to} claimed; {result['seconds']:.2f}s, "
        f"peak RSS {result['maxrss_kib'] / 1024:.0f} MiB; {result['out']}"
    )
    assert result["rc"] == 0, f"not refused: {result}"
    assert result["out"].startswith("DecompressionError"), result["out"]
    assert f"at byte {len(good)}" in result["out"], result["out"]
    assert result["seconds"] < TIME_LIMIT_S, result
    assert result["maxrss_kib"] < RSS_LIMIT_KIB, result


def test_the_bombs_are_real():
    """A cap above a bomb's size lets it through: the payloads do inflate."""
    zstandard = pytest.importorskip("zstandard")
    payload = zstd_bomb(64 * MIB)
    d = zstandard.ZstdDecompressor().decompressobj()
    assert len(d.decompress(payload)) == 64 * MIB
    assert len(zlib.decompress(gzip_bomb(64 * MIB), 31)) == 64 * MIB
    # Within a cap above its size the payload inflates; 8 MiB of zeros are
    # then refused as records (corrupt), not as a decompression failure.
    report = kb.decode_report(v2_batch("gzip", gzip_bomb(8 * MIB)), max_decompressed_size=16 * MIB, on_error="skip")
    assert [type(e).__name__ for e in report.skipped] == ["CorruptBatchError"]
