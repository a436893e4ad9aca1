"""Tiered storage: reading Aiven remote-storage segments against reading the same segments plain.

One generated log folder (``kafkabatch.generate``, default topics and codecs,
about ``--size``, segments of ``--segment-bytes``), uploaded twice as Aiven's
plugin writes them (``tests/tiered_fixtures.py``: zstandard, cryptography's
AES-GCM, pycryptodome's OAEP-SHA3-512 key wrap) with ``--chunk`` chunks:

* ``plain``          - the plugin with compression and encryption off (chunks are the segment's bytes)
* ``zstd+encrypted`` - both on (every chunk zstd'd, then AES-256-GCM)

1. **Full read**: ``scan_log(bucket).read_all()`` of each, interleaved (one of
   each per round, rotating order) after a warm-up round; medians of
   ``--repeat`` rounds and the ratio (target: zstd+encrypted at most 2x plain).
2. **Bounded read on S3**: the zstd+encrypted bucket on moto's S3 server; a
   read of about 1 % of the offsets of one ``--remote-segment`` segment
   (64 MiB by default); the bytes the server was asked for, from its own
   request log (target: at most 3 chunks plus the index slice).

::

    .venv/bin/python benches/bench_tiered.py [--size 256MB] [--chunk 4MiB] [--repeat 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import tiered_fixtures as tf  # noqa: E402

import kafkabatch as kb  # noqa: E402
from kafkabatch._util import parse_size  # noqa: E402
from kafkabatch.log import list_segments, scan_log  # noqa: E402


def upload(broker: Path, root: Path, mode: str, chunk: int, key: tf.KeyPair | None) -> None:
    uploader = tf.Uploader(root, mode, chunk, key, prefix="tiered/")
    for folder in sorted(p for p in broker.iterdir() if p.is_dir()):
        topic, _, partition = folder.name.rpartition("-")
        for log in tf.broker_segments(folder):
            batches = list(kb.iter_batches(log.read_bytes(), validate_crc=False))
            uploader.upload(log, topic, int(partition), end_offset=batches[-1].last_offset)


def full_reads(buckets: dict[str, Path], keys: dict[str, str], repeat: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in buckets}
    names = list(buckets)
    for round_ in range(repeat + 1):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            t0 = time.perf_counter()
            rows = scan_log(buckets[name], tiered_keys=keys).read_all().num_rows
            elapsed = time.perf_counter() - t0
            if round_:  # round 0 warms up
                times[name].append(elapsed)
            print(f"  round {round_} {name:15s} {elapsed:6.2f} s  {rows} rows", file=sys.stderr)
    return times


def bounded_on_s3(bucket: Path, keys: dict[str, str], tmp: Path, fraction: float) -> dict[str, object]:
    os.environ.update(tf.S3_TEST_ENV)
    with tf.moto_s3_server(tmp) as (filesystem, endpoint, recording):
        seg = max(list_segments(bucket), key=lambda s: s.size)
        folder = Path(seg.path).parent
        sizes = {}
        for path in sorted(folder.iterdir()):
            key = "tiered/" + path.relative_to(bucket).as_posix()
            with filesystem.open_output_stream(key) as f:
                f.write(path.read_bytes())
            sizes[key] = path.stat().st_size
        manifest = json.loads(Path(seg.manifest).read_text())
        start = manifest["remoteLogSegmentMetadata"]["startOffset"]
        end = manifest["remoteLogSegmentMetadata"]["endOffset"]
        first = start + (end - start) // 2
        count = max(1, int((end - start + 1) * fraction))
        start_rec = urllib.request.Request(f"http://{endpoint}/moto-api/recorder/start-recording", method="POST")
        urllib.request.urlopen(start_rec)
        uri = f"s3://tiered/{folder.relative_to(bucket).as_posix()}/?endpoint_override={endpoint}&scheme=http"
        t0 = time.perf_counter()
        rows = scan_log(uri, start_offset=first, end_offset=first + count, tiered_keys=keys).read_all().num_rows
        elapsed = time.perf_counter() - t0
        urllib.request.urlopen(
            urllib.request.Request(f"http://{endpoint}/moto-api/recorder/stop-recording", method="POST")
        )
        fetched = tf.bytes_fetched(recording, endpoint, sizes)
        log_key = "tiered/" + Path(seg.path).relative_to(bucket).as_posix()
        indexes_key = log_key[: -len(".log")] + ".indexes"
        chunk_sizes = manifest["chunkIndex"]
        m = kb._kafkabatch.RemoteManifest(Path(seg.manifest).read_text(), kb._kafkabatch.TieredKeys(keys))
        biggest = sorted((m.chunk(i)[3] for i in range(m.chunk_count)), reverse=True)
        return {
            "three_biggest_chunks": sum(biggest[:3]),
            "segment_bytes": seg.size,
            "log_object_bytes": sizes[log_key],
            "chunk": chunk_sizes["originalChunkSize"],
            "records": rows,
            "log_bytes_requested": fetched.get(log_key, 0),
            "indexes_bytes_requested": fetched.get(indexes_key, 0),
            "offset_index_slice": manifest["segmentIndexes"]["offset"]["size"],
            "manifest_bytes_requested": sum(n for k, n in fetched.items() if k.endswith(".rsm-manifest")),
            "other_bytes_requested": sum(
                n for k, n in fetched.items() if k not in (log_key, indexes_key) and not k.endswith(".rsm-manifest")
            ),
            "seconds": elapsed,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "kafkabatch-bench-tiered")
    parser.add_argument("--size", default="256MB")
    parser.add_argument("--segment-bytes", default="64MiB")
    parser.add_argument("--chunk", default="4MiB")
    parser.add_argument("--remote-segment", default="64MiB", help="size of the segment the bounded read is on")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--fraction", type=float, default=0.01, help="share of the segment's offsets the bounded read wants"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    chunk = parse_size(args.chunk)
    broker = args.folder / "broker"
    if not broker.exists():
        kb.generate(broker, size=args.size, segment_bytes=args.segment_bytes, seed=1, progress=False)
    key = tf.make_key_pair("bench-key")
    keys = {key.key_id: key.private_pem}
    buckets = {}
    for mode in ("plain", "zstd+encrypted"):
        root = args.folder / mode.replace("+", "-")
        shutil.rmtree(root, ignore_errors=True)
        upload(broker, root, mode, chunk, key if "encrypted" in mode else None)
        buckets[mode] = root
    data_bytes = sum(s.size for s in list_segments(broker))
    print(f"{data_bytes / 1e6:.0f} MB of segments, chunks of {args.chunk}", file=sys.stderr)
    times = full_reads(buckets, keys, args.repeat)
    medians = {name: statistics.median(t) for name, t in times.items()}
    ratio = medians["zstd+encrypted"] / medians["plain"]
    # The bounded read: one partition whose first segment is --remote-segment bytes.
    broker64 = args.folder / "broker-one-segment"
    if not broker64.exists():
        size = parse_size(args.remote_segment)
        kb.generate(
            broker64,
            size=int(size * 1.1),
            topics=[kb.TopicSpec("orders", 1)],
            segment_bytes=size,
            seed=2,
            progress=False,
        )
    bucket64 = args.folder / "one-segment-zstd-encrypted"
    shutil.rmtree(bucket64, ignore_errors=True)
    upload(broker64, bucket64, "zstd+encrypted", chunk, key)
    with tempfile.TemporaryDirectory() as tmp:
        bounded = bounded_on_s3(bucket64, keys, Path(tmp), args.fraction)
    print()
    print(f"| read ({data_bytes / 1e6:.0f} MB, {args.chunk} chunks) | median | MB/s |")
    print("|---|---:|---:|")
    for name, median in medians.items():
        print(f"| {name} | {median:.2f} s | {data_bytes / 1e6 / median:.0f} |")
    print(f"\nzstd+encrypted / plain: {ratio:.2f}x (target <= 2x)")
    log_bytes = bounded["log_bytes_requested"]
    print(
        f"\nbounded read of {args.fraction:.0%} of a {bounded['segment_bytes'] / 2**20:.0f} MiB segment on S3 (moto): "
        f"{bounded['records']} records; requested {log_bytes} bytes of the .log object "
        f"(the 3 biggest transformed chunks: {bounded['three_biggest_chunks']}; object {bounded['log_object_bytes']}), "
        f"{bounded['indexes_bytes_requested']} of .indexes (offset index slice {bounded['offset_index_slice']}), "
        f"{bounded['manifest_bytes_requested']} of manifests, {bounded['other_bytes_requested']} other"
    )
    if args.json:
        args.json.write_text(
            json.dumps({"medians": medians, "ratio": ratio, "times": times, "bounded": bounded}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
