#!/usr/bin/env python3
"""One ``decode()`` call per input, side by side with the other readers, by input size.

The question a user asks first: I have N MB of batches; how long does each
library take to give me every record? Batches of 1,000 records (10-byte keys,
100-byte values, no headers) are written by aiokafka's Cython
``DefaultRecordBatchBuilder``; every peer reads the whole input once per
repetition, with CRC checks on, and materialises every record's offset,
timestamp, key and value (kafkabatch: the whole Arrow table). Peers run
interleaved, in rotating order, so every call finds the caches as the
previous peer left them, as in an application that does other work between
decodes; the table reports medians and ratios within this run.

    .venv/bin/python benches/bench_sizes.py                  # 1, 4 and 24 MB
    .venv/bin/python benches/bench_sizes.py --batches 10 200 --reps 9

See docs/performance.md ("One call per input, by size").
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

import kafkabatch as kb

RECORDS_PER_BATCH = 1000


def batch(first: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=2**30,
    )
    for i in range(RECORDS_PER_BATCH):
        n = first + i
        value = (b'{"id":%d,"event":"click","tags":"kafka record batch"}' % n).ljust(100, b" ")
        builder.append(i, timestamp=1_700_000_000_000 + n, key=b"user-%05d" % (n % 50_000), value=value, headers=[])
    return bytes(builder.build())


def read_all(records_class: type) -> Callable[[bytes], int]:
    """A Python client's reader, every record materialised, CRCs checked."""

    def read(data: bytes) -> int:
        count = 0
        records = records_class(data)
        while records.has_next():
            b = records.next_batch()
            if not b.validate_crc():
                raise ValueError("bad CRC")
            for r in b:
                (r.offset, r.timestamp, r.key, r.value)  # noqa: B018 (materialise the fields)
                count += 1
        return count

    return read


def kafkabatch_decode(data: bytes) -> int:
    return kb.decode(data).num_rows


PEERS: dict[str, Callable[[bytes], int]] = {
    "kafkabatch": kafkabatch_decode,
    "aiokafka": read_all(AioMemoryRecords),
    "kafka-python": read_all(KpMemoryRecords),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--batches", type=int, nargs="+", default=[10, 35, 200], help="input sizes, in batches of 1,000 records"
    )
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions per peer (medians reported)")
    args = parser.parse_args()
    try:
        import crc32c  # noqa: F401

        kp_crc = "crc32c package"
    except ImportError:
        kp_crc = "pure-Python CRC"
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; kafka-python with its {kp_crc}"
    )
    print("| input | kafkabatch | aiokafka | kafka-python | vs aiokafka | vs kafka-python |")
    print("|---|---:|---:|---:|---:|---:|")
    for batches in args.batches:
        data = b"".join(batch(k * RECORDS_PER_BATCH) for k in range(batches))
        records = batches * RECORDS_PER_BATCH
        for read in PEERS.values():  # warm-up, and every peer reads every record
            assert read(data) == records
        times: dict[str, list[float]] = {name: [] for name in PEERS}
        names = list(PEERS)
        for rep in range(args.reps):
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                start = time.perf_counter()
                PEERS[name](data)
                times[name].append(time.perf_counter() - start)
        median = {name: statistics.median(t) for name, t in times.items()}
        rate = {name: records / t / 1e6 for name, t in median.items()}
        print(
            f"| {len(data) / 1e6:.1f} MB ({records:,} records) | {rate['kafkabatch']:.2f} M/s | {rate['aiokafka']:.2f} M/s "
            f"| {rate['kafka-python']:.3f} M/s | {median['aiokafka'] / median['kafkabatch']:.1f}× "
            f"| {median['kafka-python'] / median['kafkabatch']:.0f}× |",
            flush=True,
        )


if __name__ == "__main__":
    main()
