"""A tiered-storage manifest whose packed chunk sizes claim a count no bytes
hold (``count = 2^31 - 1`` with ``bytesPerValue = 0``: 13 bytes before zstd
and base64), read under a 4 GiB address-space limit as an ordinary executor
has: a clear error naming the manifest, never an abort.

The bucket is uploaded as the Aiven plugin writes it (``tiered_fixtures``),
then one manifest's ``transformedChunks`` is replaced. Each read runs in a
fresh interpreter under ``RLIMIT_AS``, so an abort is a failed test.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import kafkabatch as kb

pytest.importorskip("zstandard")
pytest.importorskip("Crypto")
pytest.importorskip("cryptography")
import tiered_fixtures as tf  # noqa: E402

LIMIT = 4 << 30

CHILD = """
import resource, sys, json
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
import kafkabatch as kb
from kafkabatch.log import scan_log
from kafkabatch.log.tiered import load_manifest
what, path = sys.argv[1], sys.argv[2]
try:
    if what == "manifest":
        load_manifest(path)
        out = {{"ok": True}}
    else:
        table = scan_log(path, on_error=what).read_all()
        out = {{"ok": True, "rows": table.num_rows}}
except kb.KafkaBatchError as error:
    out = {{"ok": False, "type": type(error).__name__, "error": str(error)}}
print(json.dumps(out))
"""


def hostile_packed(count: int) -> bytes:
    """``ChunkSizesBinaryCodec``'s layout: count, base, bytesPerValue 0, last."""
    packed = struct.pack(">iiBi", count, 100, 0, 100)
    assert len(packed) == 13
    return packed


def run_limited(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(limit=LIMIT), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode < 0:
        pytest.fail(f"{args}: died of {signal.Signals(-proc.returncode).name}\n{proc.stderr[-2000:]}")
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert "memory allocation of" not in proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def bucket(tmp_path_factory) -> tuple[Path, Path]:
    """A zstd bucket (``variable`` chunk indexes) and the manifest made hostile."""
    broker = tmp_path_factory.mktemp("broker")
    kb.generate(
        broker, size="300KB", topics=[kb.TopicSpec("orders", 1, codec="lz4")], segment_bytes="64KB", progress=False
    )
    root = tmp_path_factory.mktemp("bucket")
    uploader = tf.Uploader(root, "zstd", 8 << 10, prefix="tiered/")
    folder = broker / "orders-0"
    logs = tf.broker_segments(folder)
    assert len(logs) >= 3
    manifests = []
    for log in logs:
        batches = list(kb.iter_batches(log.read_bytes(), validate_crc=False))
        paths = uploader.upload(log, "orders", 0, end_offset=batches[-1].last_offset)
        manifests.append(paths["rsm-manifest"])
    return root, manifests[1]


@pytest.mark.parametrize("count", [2**31 - 1, 400_000_000])
def test_a_packed_count_no_bytes_hold_is_a_clear_error_under_4_gib(bucket, count):
    root, path = bucket
    original = path.read_text()
    manifest = json.loads(original)
    manifest["chunkIndex"]["transformedChunks"] = base64.b64encode(tf.zstd_with_size(hostile_packed(count))).decode()
    path.write_text(json.dumps(manifest, separators=(",", ":")))
    try:
        out = run_limited("manifest", str(path))
        assert not out["ok"] and out["type"] == "TieredStorageError", out
        assert "transformedChunks" in out["error"] and str(count) in out["error"], out
        # The whole bucket: an error naming the object, or (skip) its segment
        # left out with the rest read; never an abort.
        for mode in ("raise", "skip"):
            out = run_limited(mode, str(root))
            if not out["ok"]:
                assert path.name.split(".")[0] in out["error"] or "transformedChunks" in out["error"], out
            else:
                assert mode == "skip" and out["rows"] > 0, out
    finally:
        path.write_text(original)


def test_the_untouched_bucket_reads_under_the_same_limit(bucket):
    root, _ = bucket
    out = run_limited("raise", str(root))
    assert out["ok"] and out["rows"] > 0, out
    assert os.path.exists(root)
