#!/usr/bin/env python3
"""Decode throughput: kafkabatch against the Python Kafka clients' readers.

Input is written by aiokafka's (Cython) ``DefaultRecordBatchBuilder``, so it
does not depend on kafkabatch's encoder; the records come from the same
deterministic generator as ``benches/decode.rs`` and, when that bench has
run, the uncompressed batches are checked byte for byte against what
``kafkabatch::encode`` wrote (``target/bench-data/``).

Peers run interleaved: every repetition runs each peer once, in rotating
order, and the table reports medians. Every reader checks CRCs and
materialises each record's offset, timestamp, key and value (and headers in
the headers case); kafkabatch materialises the whole Arrow table.

    .venv/bin/python benches/bench_decode.py                     # full run, table
    .venv/bin/python benches/bench_decode.py --quick             # a smoke run
    .venv/bin/python benches/bench_decode.py --json out.json --plot docs/performance.png

See benches/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import struct
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cramjam
import crc32c as crc32c_mod
import kafka.record.default_records as kp_default_records
import lz4.frame
import zstandard
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record._crc32c import crc as crc32c_pure
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

import kafkabatch as kb

ROOT = Path(__file__).resolve().parent.parent
RECORDS_PER_BATCH = 1000
BASE_TS = 1_700_000_000_000
WORDS = [
    "kafka",
    "record",
    "batch",
    "offset",
    "topic",
    "partition",
    "consumer",
    "producer",
    "broker",
    "leader",
    "replica",
    "segment",
    "index",
    "commit",
    "fetch",
    "stream",
]
EVENTS = ["click", "view", "purchase", "signup"]
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
MASK64 = (1 << 64) - 1


# --------------------------------------------------------------------------
# Data (the generator of benches/decode.rs, step for step)


class Lcg:
    def __init__(self, seed: int) -> None:
        self.state = seed

    def next(self) -> int:
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & MASK64
        return self.state >> 33


def records(n: int, value_size: int, seed: int = 42) -> list[tuple[bytes, bytes, int, bytes]]:
    """(key, value, timestamp, trace) for n records."""
    rng = Lcg(seed)
    out = []
    for i in range(n):
        key = b"user-%05d" % (rng.next() % 50000)
        event = EVENTS[rng.next() % 4]
        whole = rng.next() % 1000
        frac = rng.next() % 100
        v = '{"id":%d,"event":"%s","amount":%d.%02d,"tags":"' % (i, event, whole, frac)
        parts = [v]
        length = len(v)
        while length < value_size:
            w = WORDS[rng.next() % 16]
            parts.append(w + " ")
            length += len(w) + 1
        value = "".join(parts).encode()[:value_size]
        trace = b"%08x%08x" % (rng.next(), rng.next())
        out.append((key, value, BASE_TS + i // 4, trace))
    return out


def build(recs: list[tuple[bytes, bytes, int, bytes]], headers: bool, codec: str) -> bytes:
    """v2 batches of 1,000 records by aiokafka's builder, idempotent-producer style."""
    out = bytearray()
    cid = CODEC_IDS[codec]
    for start in range(0, len(recs), RECORDS_PER_BATCH):
        b = DefaultRecordBatchBuilder(2, cid, 0, 4242, 0, start, 2**31 - 1)  # base sequence advances
        for delta, (key, value, ts, trace) in enumerate(recs[start : start + RECORDS_PER_BATCH]):
            hdrs = [("trace-id", trace), ("content-type", b"application/json")] if headers else []
            if b.append(delta, ts, key, value, hdrs) is None:
                raise RuntimeError("builder full")
        batch = b.build()
        struct.pack_into(">q", batch, 0, start)  # base offset (outside the CRC)
        out += batch
    data = bytes(out)
    if codec == "zstd":
        data = zstd_as_java(data)
    return data


def walk(data: bytes):
    """(position, length) of each batch."""
    pos = 0
    while pos + 12 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos + 8)
        yield pos, 12 + size
        pos += 12 + size


def rewrap(batch: bytes, payload: bytes) -> bytes:
    """batch with a new payload: length and CRC32-C fixed."""
    b = bytearray(batch[:61]) + payload
    struct.pack_into(">i", b, 8, len(b) - 12)
    struct.pack_into(">I", b, 17, crc32c_mod.crc32c(bytes(b[21:])))
    return bytes(b)


def zstd_as_java(data: bytes) -> bytes:
    """Re-compress zstd payloads as Kafka's Java producer writes them: a
    stream (zstd-jni ``ZstdOutputStream``, level 3) without a content size,
    fed in 16 KiB writes."""
    out = bytearray()
    for pos, length in walk(data):
        batch = data[pos : pos + length]
        plain = cramjam.zstd.decompress(batch[61:]).read()
        cobj = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
        payload = b"".join(cobj.compress(plain[i : i + 16384]) for i in range(0, len(plain), 16384)) + cobj.flush()
        out += rewrap(batch, payload)
    return bytes(out)


def first_batches(data: bytes, n: int) -> bytes:
    end = 0
    for i, (pos, length) in enumerate(walk(data)):
        if i == n:
            break
        end = pos + length
    return data[:end]


def repeated(data: bytes, times: int, records_in_data: int) -> bytes:
    """data repeated, base offsets continued (they sit outside the CRC)."""
    out = bytearray()
    for t in range(times):
        chunk = bytearray(data)
        for pos, _ in walk(data):
            (base,) = struct.unpack_from(">q", chunk, pos)
            struct.pack_into(">q", chunk, pos, base + t * records_in_data)
        out += chunk
    return bytes(out)


def payloads(data: bytes) -> list[bytes]:
    return [data[pos + 61 : pos + length] for pos, length in walk(data)]


# --------------------------------------------------------------------------
# Peers


def kafkabatch_reader(threads: int | None) -> Callable[[bytes], int]:
    def run(data: bytes) -> int:
        return kb.decode(data, topic="bench", partition=0, threads=threads).num_rows

    return run


def kafkabatch_views(data: bytes) -> int:
    """decode(binary_view=True): key and value point into the input (uncompressed only)."""
    return kb.decode(data, topic="bench", partition=0, threads=1, binary_view=True).num_rows


def kafkabatch_fetches(chunks: list[bytes]) -> int:
    """One decode call per fetch-sized chunk, as a consumer would call it."""
    return sum(kb.decode(c, topic="bench", partition=0, threads=1).num_rows for c in chunks)


def fetch_chunks(data: bytes, max_bytes: int = 1 << 20) -> list[bytes]:
    """data cut at batch boundaries into chunks of at most about max_bytes
    (a consumer's max.partition.fetch.bytes, 1 MiB by default)."""
    chunks, start, end = [], 0, 0
    for pos, length in walk(data):
        if pos + length - start > max_bytes and end > start:
            chunks.append(data[start:end])
            start = end
        end = pos + length
    chunks.append(data[start:end])
    return chunks


def aiokafka_reader(headers: bool) -> Callable[[bytes], int]:
    def run(data: bytes) -> int:
        out: list[Any] = []
        ap = out.append
        mr = AioMemoryRecords(data)
        while mr.has_next():
            batch = mr.next_batch()
            if not batch.validate_crc():
                raise ValueError("crc")
            if headers:
                for r in batch:
                    ap((r.offset, r.timestamp, r.key, r.value, r.headers))
            else:
                for r in batch:
                    ap((r.offset, r.timestamp, r.key, r.value))
        return len(out)

    return run


_CALC_CRC32C_C = kp_default_records.calc_crc32c


def _calc_crc32c_pure(memview: memoryview) -> int:
    return crc32c_pure(memview)


def kafka_python_reader(headers: bool, c_crc: bool) -> Callable[[bytes], int]:
    # kafka.record.util picks crc32c.crc32c when importable and binds it as a
    # default argument of calc_crc32c; default_records imported that function,
    # so swapping default_records.calc_crc32c toggles the pure-Python CRC.
    crc_fn = _CALC_CRC32C_C if c_crc else _calc_crc32c_pure

    def run(data: bytes) -> int:
        kp_default_records.calc_crc32c = crc_fn
        try:
            out: list[Any] = []
            ap = out.append
            mr = KpMemoryRecords(data)
            while mr.has_next():
                batch = mr.next_batch()
                if not batch.validate_crc():
                    raise ValueError("crc")
                if headers:
                    for r in batch:
                        ap((r.offset, r.timestamp, r.key, r.value, r.headers))
                else:
                    for r in batch:
                        ap((r.offset, r.timestamp, r.key, r.value))
            return len(out)
        finally:
            kp_default_records.calc_crc32c = _CALC_CRC32C_C

    return run


def memcpy(data: bytes) -> int:
    return len(bytes(memoryview(data)))


def crc_only(data: bytes) -> int:
    crc32c_mod.crc32c(data)
    return len(data)


def xerial_blocks(payload: bytes) -> list[bytes]:
    blocks, pos = [], 16
    while pos < len(payload):
        (n,) = struct.unpack_from(">i", payload, pos)
        blocks.append(payload[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return blocks


def codec_reader(codec: str) -> tuple[str, Callable[[list[bytes]], int]]:
    """Each codec's own Python-level decompression of the batch payloads."""
    if codec == "lz4":
        return "lz4.frame", lambda ps: sum(len(lz4.frame.decompress(p)) for p in ps)
    if codec == "zstd":
        d = zstandard.ZstdDecompressor()
        return "zstandard", lambda ps: sum(len(d.decompressobj().decompress(p)) for p in ps)
    if codec == "snappy":
        raw = cramjam.snappy.decompress_raw
        return "cramjam.snappy", lambda ps: sum(len(raw(b)) for p in ps for b in xerial_blocks(p))
    if codec == "gzip":
        return "zlib", lambda ps: sum(len(zlib.decompress(p, 31)) for p in ps)
    raise ValueError(codec)


# --------------------------------------------------------------------------
# Harness


@dataclass
class Peer:
    dataset: str
    name: str
    kind: str  # "kafkabatch", "peer" or "limit"
    fn: Callable[[Any], int]
    arg: Any
    records: int  # records the input holds (0 for limits)
    plain_bytes: int  # uncompressed record bytes (MB/s is over these)
    wire_bytes: int
    times: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def row(self) -> dict[str, Any]:
        t = self.median
        return {
            "dataset": self.dataset,
            "peer": self.name,
            "kind": self.kind,
            "records": self.records,
            "plain_bytes": self.plain_bytes,
            "wire_bytes": self.wire_bytes,
            "median_s": t,
            "min_s": min(self.times),
            "reps": len(self.times),
            "times_s": self.times,
            "records_per_s": self.records / t if self.records else None,
            "mb_per_s": self.plain_bytes / t / 1e6,
            "wire_mb_per_s": self.wire_bytes / t / 1e6,
        }


def check_identity(name: str, data: bytes) -> str:
    """Compare with the bytes kafkabatch::encode wrote for benches/decode.rs."""
    path = ROOT / "target" / "bench-data" / f"{name}.bin"
    if not path.exists():
        return "not checked (run cargo bench --bench decode first)"
    theirs = path.read_bytes()
    n = min(len(theirs), len(data))
    if n and theirs[:n] == data[:n]:
        return f"identical ({n} bytes, kafkabatch::encode vs aiokafka's builder)"
    diff = next(i for i in range(n) if theirs[i] != data[i]) if n else 0
    return f"DIFFERENT from byte {diff}"


def make_peers(args: argparse.Namespace) -> tuple[list[Peer], dict[str, str]]:
    scale = 0.1 if args.quick else 1.0
    nb = max(2, int(200 * scale))  # batches of 1,000 records for the peers
    kb_times = 1 if args.quick else args.kb_repeat
    peers: list[Peer] = []
    notes: dict[str, str] = {}
    t0 = time.perf_counter()
    recs100 = records(nb * RECORDS_PER_BATCH, 100)
    recs1k = records(max(2, int(50 * scale)) * RECORDS_PER_BATCH, 1000)
    print(f"generated records in {time.perf_counter() - t0:.1f}s", file=sys.stderr)

    datasets = [
        ("none_100B", recs100, False, "none"),
        ("none_100B_headers", recs100, True, "none"),
        ("none_1KB", recs1k, False, "none"),
        ("lz4_100B", recs100, False, "lz4"),
        ("zstd_100B", recs100, False, "zstd"),
        ("snappy_100B", recs100, False, "snappy"),
        ("gzip_100B", recs100, False, "gzip"),
    ]
    for name, recs, headers, codec in datasets:
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        data = build(recs, headers, codec)
        n = len(recs)
        plain = sum(len(p) for p in payloads(build(recs, headers, "none"))) if codec != "none" else len(data)
        if codec == "none":
            notes[f"identity {name}"] = check_identity(name, data)
        # kafkabatch gets a larger input (repeated) so it runs long enough to
        # time and, when large, spreads over the cores.
        # 100 B values: 400,000 records (48 MB); others as the peers (35-51 MB
        # uncompressed): large enough for threads=auto to use both cores.
        times = kb_times if name == "none_100B" else 1
        big = repeated(data, times, n) if times > 1 else data
        kbn, kbp, kbw = n * times, plain * times, len(big)
        peers.append(Peer(name, "kafkabatch threads=1", "kafkabatch", kafkabatch_reader(1), big, kbn, kbp, kbw))
        peers.append(Peer(name, "kafkabatch threads=auto", "kafkabatch", kafkabatch_reader(None), big, kbn, kbp, kbw))
        peers.append(
            Peer(
                name,
                "kafkabatch threads=1, per 1 MiB fetch",
                "kafkabatch",
                kafkabatch_fetches,
                fetch_chunks(data),
                n,
                plain,
                len(data),
            )
        )
        if codec == "none":
            peers.append(
                Peer(name, "kafkabatch binary_view, threads=1", "kafkabatch", kafkabatch_views, big, kbn, kbp, kbw)
            )
        if name == "none_100B":
            # One fetch per timing, right after another peer: what a single
            # call costs with cold caches (the per-fetch row above decodes 25
            # in a row, so only its first is cold).
            first = fetch_chunks(data)[0]
            n_first = kb.decode(first).num_rows
            peers.append(
                Peer(
                    name,
                    "kafkabatch, one 1 MiB call (cold)",
                    "kafkabatch",
                    kafkabatch_fetches,
                    [first],
                    n_first,
                    plain * n_first // n,
                    len(first),
                )
            )
        peers.append(Peer(name, "aiokafka (Cython)", "peer", aiokafka_reader(headers), data, n, plain, len(data)))
        # kafka-python is slow: a slice keeps a repetition near a second.
        sub = max(1, nb // 10)
        kp = first_batches(data, sub)
        kp_plain = plain * sub // (n // RECORDS_PER_BATCH)
        peers.append(
            Peer(
                name,
                "kafka-python + crc32c",
                "peer",
                kafka_python_reader(headers, True),
                kp,
                sub * 1000,
                kp_plain,
                len(kp),
            )
        )
        if codec == "none":
            sub2 = max(1, nb // 40)
            kp2 = first_batches(data, sub2)
            peers.append(
                Peer(
                    name,
                    "kafka-python, pure-Python CRC",
                    "peer",
                    kafka_python_reader(headers, False),
                    kp2,
                    sub2 * 1000,
                    plain * sub2 // (n // 1000),
                    len(kp2),
                )
            )
            peers.append(Peer(name, "limit: bytes copy (memcpy)", "limit", memcpy, big, 0, kbp, kbw))
            peers.append(Peer(name, "limit: crc32c.crc32c", "limit", crc_only, big, 0, kbp, kbw))
        else:
            label, fn = codec_reader(codec)
            ps = payloads(data)
            assert fn(ps) == plain, (codec, fn(ps), plain)
            peers.append(Peer(name, f"limit: {label} decompress", "limit", fn, ps, 0, plain, sum(map(len, ps))))
    # Everything must decode to the right count before timing.
    for p in peers:
        got = p.fn(p.arg)
        if p.records and got != p.records:
            raise AssertionError(f"{p.dataset} {p.name}: {got} records, expected {p.records}")
    return peers, notes


def run(peers: list[Peer], reps: int) -> None:
    for rep in range(reps + 1):  # rep 0 warms up and is dropped
        order = peers[rep % len(peers) :] + peers[: rep % len(peers)]
        for p in order:
            gc.collect()
            t = time.perf_counter()
            p.fn(p.arg)
            dt = time.perf_counter() - t
            if rep:
                p.times.append(dt)
        print(f"rep {rep}/{reps} done, load {os.getloadavg()}", file=sys.stderr)


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| dataset | peer | records/s | MB/s | kafkabatch (1 thread) is |", "|---|---|---:|---:|---:|"]
    by_ds: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_ds.setdefault(r["dataset"], []).append(r)
    for ds, rs in by_ds.items():
        ref = next(r for r in rs if r["peer"] == "kafkabatch threads=1")
        for r in rs:
            if r["records"]:
                ratio = ref["records_per_s"] / r["records_per_s"]
                rps_s = f"{r['records_per_s'] / 1e6:,.2f} M"
            else:
                ratio = ref["mb_per_s"] / r["mb_per_s"]
                rps_s = "—"
            rel = "—" if r is ref else (f"{ratio:,.1f}× faster" if ratio >= 1 else f"{1 / ratio:,.2f}× slower")
            lines.append(f"| {ds} | {r['peer']} | {rps_s} | {r['mb_per_s']:,.0f} | {rel} |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    names = [
        "kafkabatch threads=1",
        "kafkabatch threads=auto",
        "kafkabatch threads=1, per 1 MiB fetch",
        "kafkabatch binary_view, threads=1",
        "aiokafka (Cython)",
        "kafka-python + crc32c",
        "kafka-python, pure-Python CRC",
    ]
    colors = ["#1f77b4", "#6baed6", "#9ecae1", "#08306b", "#ff7f0e", "#2ca02c", "#98df8a", "#7f7f7f"]
    fig, axes = plt.subplots(2, 1, figsize=(13, 9))
    width = 0.8 / (len(names) + 1)
    for ax, metric, label in (
        (axes[0], "records_per_s", "records/s (log)"),
        (axes[1], "gb_per_s", "GB/s of record bytes (log)"),
    ):
        for j, name in enumerate(names + ["limit"]):
            xs, ys = [], []
            for i, ds in enumerate(datasets):
                match = [
                    r
                    for r in rows
                    if r["dataset"] == ds and (r["peer"] == name or (name == "limit" and r["kind"] == "limit"))
                ]
                if name == "limit":
                    # the tightest limit: the codec's own decompression, or memcpy+CRC
                    match = [r for r in match if metric == "gb_per_s"]
                    if not match:
                        continue
                    t = sum(r["median_s"] for r in match)
                    y = match[0]["plain_bytes"] / t / 1e9
                elif match:
                    r = match[0]
                    y = r["records_per_s"] if metric == "records_per_s" else r["mb_per_s"] / 1e3
                else:
                    continue
                xs.append(i + (j - len(names) / 2) * width)
                ys.append(y)
            lab = "limit: memcpy + CRC32-C / codec's own decompression" if name == "limit" else name
            if xs:
                ax.bar(xs, ys, width, label=lab, color=colors[j])
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.set_xticks(range(len(datasets)), datasets)
        ax.grid(axis="y", which="both", alpha=0.3)
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, ncol=3, loc="lower center")
    axes[0].set_title(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)


def _git_head() -> str:
    import subprocess

    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "?"


def threads_check(seconds: float = 3.0) -> list[dict[str, Any]]:
    """Wall and CPU time of threads=1 against threads=2, alternating, in a
    steady loop. CPU time ≈ wall time with threads=2 means the process got one
    core's worth: on a shared machine Linux's autogroup scheduling gives each
    busy session an equal share, so thread scaling is only measurable when
    nobody else is busy."""
    import resource

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    recs100 = records(200_000, 100)
    sets = {
        "none_100B x2 (48 MB)": repeated(build(recs100, False, "none"), 2, 200_000),
        "none_100B_headers (35 MB)": build(recs100, True, "none"),
        "none_1KB (51 MB)": build(records(50_000, 1000), False, "none"),
        "zstd_100B (5.7 MB wire)": build(recs100, False, "zstd"),
    }
    out = []
    for name, data in sets.items():
        res: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
        for th in (1, 2, 1, 2):
            kb.decode(data, threads=th)
            w0, c0, n = time.perf_counter(), cpu(), 0
            while time.perf_counter() - w0 < seconds / 2:
                kb.decode(data, topic="bench", partition=0, threads=th)
                n += 1
            res[th].append(((time.perf_counter() - w0) / n, (cpu() - c0) / n))
        w1, c1 = min(res[1])
        w2, c2 = min(res[2])
        row = {"dataset": name, "wall_1": w1, "cpu_1": c1, "wall_2": w2, "cpu_2": c2, "speedup": w1 / w2}
        out.append(row)
        print(
            f"{name:28} threads=1 {w1 * 1e3:6.1f} ms (cpu {c1 * 1e3:6.1f}) | threads=2 {w2 * 1e3:6.1f} ms "
            f"(cpu {c2 * 1e3:6.1f}, cpu/wall {c2 / w2:.2f}) | speedup {w1 / w2:.2f}×"
        )
    print(f"load average {os.getloadavg()}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=7, help="timed repetitions per peer (medians reported)")
    ap.add_argument(
        "--kb-repeat", type=int, default=2, help="kafkabatch's none_100B input = the peers' repeated this many times"
    )
    ap.add_argument("--quick", action="store_true", help="small inputs, 2 repetitions: a smoke test")
    ap.add_argument("--only", metavar="NAMES", help="comma-separated dataset name parts to run (e.g. none_1KB,lz4)")
    ap.add_argument("--json", metavar="OUT", help="write results as JSON")
    ap.add_argument(
        "--threads-check",
        action="store_true",
        help="threads=1 vs threads=2 wall and CPU time in a steady loop, then exit",
    )
    ap.add_argument("--from-json", metavar="IN", help="print the table (and --plot) of a saved run instead of running")
    ap.add_argument("--plot", metavar="PNG", help="draw a bar chart (needs matplotlib)")
    args = ap.parse_args()
    if args.threads_check:
        threads_check()
        return
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        print(table(saved["results"]))
        if args.plot:
            la = " / ".join(f"{x:.1f}" for x in saved["env"]["load_before"])
            title = f"kafkabatch decode vs Python readers — {saved['env']['cpus']} cores, load avg {la}, medians of {saved['env']['reps']} interleaved reps"
            plot(saved["results"], args.plot, title)
        return
    if args.quick:
        args.reps = 2
    assert "_crecords" in type(AioMemoryRecords(b"")).__module__, "aiokafka's C extension is not in use"
    load_before = os.getloadavg()
    peers, notes = make_peers(args)
    t = time.perf_counter()
    run(peers, args.reps)
    elapsed = time.perf_counter() - t
    load_after = os.getloadavg()
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "kafkabatch": getattr(kb._kafkabatch, "__version__", "?"),
        "extension_built": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(os.path.getmtime(kb._kafkabatch.__file__))),
        "git_head": _git_head(),
        "aiokafka_reader": type(AioMemoryRecords(b"")).__module__,
        "load_before": load_before,
        "load_after": load_after,
        "elapsed_s": elapsed,
        "reps": args.reps,
    }
    rows = [p.row() for p in peers]
    print(table(rows))
    print()
    for k, v in notes.items():
        print(f"{k}: {v}")
    print(f"load average before {load_before}, after {load_after}; {args.reps} reps in {elapsed:.0f}s")
    print(f"git {env['git_head']}, extension built {env['extension_built']} UTC")
    if args.json:
        Path(args.json).write_text(json.dumps({"env": env, "notes": notes, "results": rows}, indent=1))
    if args.plot:
        la = " / ".join(f"{x:.1f}" for x in load_before)
        plot(
            rows,
            args.plot,
            f"kafkabatch decode vs Python readers — {os.cpu_count()} cores, load avg {la}, medians of {args.reps} interleaved reps",
        )


if __name__ == "__main__":
    main()
