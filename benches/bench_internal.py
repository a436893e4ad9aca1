"""Kafka's internal topics into typed columns, from Python.

A generated ``__consumer_offsets`` partition of offset commits
(OffsetCommitKey v1 + OffsetCommitValue v3, as brokers since Kafka 2.1 write
them; 50 groups x 20 topics x 32 partitions) in lz4 batches of 1,000
records. Keys and values are written by the test suite's independent
encoder of Kafka's definitions (``tests/kafka_internal_records.py``; the
values of the 1 M records by ``struct.pack`` of the same layout, checked
against that encoder), the batches by ``kafkabatch.encode``.

* ``plain``      - ``kb.decode(data, threads=1)``: the key and value columns
* ``internal``   - ``kb.decode(data, threads=1, internal="consumer_offsets")``: the
                   same, plus the typed columns (the whole definition-driven path)
* ``decode_internal`` - the native ``decode_internal`` alone on the key and value
                   columns of ``plain`` (the typed columns only)

Every method runs once per round, rounds interleaved; the median of
``--repeat`` rounds after a warm-up, on the cores the process may use
(``taskset -c 1`` for one core)::

    taskset -c 1 .venv/bin/python benches/bench_internal.py [--records 1000000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys
import time
from pathlib import Path

import pyarrow as pa

import kafkabatch as kb
from kafkabatch import _kafkabatch as native

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from kafka_internal_records import CONSUMER_OFFSETS_TYPES, write_message  # noqa: E402

BASE_TS = 1_700_000_000_000


def segment(records: int) -> bytes:
    _, key_msg, value_msg = CONSUMER_OFFSETS_TYPES[1]
    keys = [
        struct.pack(">h", 1)
        + write_message(key_msg, {"group": f"consumer-group-{g}", "topic": f"orders.events.{t}", "partition": p}, 1)
        for g in range(50)
        for t in range(20)
        for p in range(32)
    ]

    def value(i: int) -> bytes:
        # OffsetCommitValue v3: offset, leaderEpoch, metadata (int16 length), commitTimestamp.
        return struct.pack(">hqihq", 3, i * 37 + 1_000_000, 7, 0, BASE_TS + i)

    for i in (0, 1, records - 1):
        fields = {"offset": i * 37 + 1_000_000, "leaderEpoch": 7, "metadata": "", "commitTimestamp": BASE_TS + i}
        assert value(i) == struct.pack(">h", 3) + write_message(value_msg, fields, 3)
    table = pa.table(
        {
            "key": pa.array([keys[(i * 7919) % len(keys)] for i in range(records)], pa.binary()),
            "value": pa.array([value(i) for i in range(records)], pa.binary()),
            "timestamp": pa.array([BASE_TS + i for i in range(records)], pa.int64()),
        }
    )
    return kb.encode(table, compression="lz4", records_per_batch=1_000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    data = segment(args.records)
    topic = "__consumer_offsets"
    plain_table = kb.decode(data, topic=topic, partition=0, threads=1)
    keys = plain_table.column("key").combine_chunks()
    values = plain_table.column("value").combine_chunks()
    typed = kb.decode(data, topic=topic, partition=0, threads=1, internal="consumer_offsets")
    assert typed.num_rows == args.records
    assert typed.column("error").null_count == args.records
    assert typed.column("offset_commit").null_count == 0
    first = typed.column("offset_commit")[0].as_py()
    assert first["value"]["offset"] == 1_000_000 and first["key"]["group"] == "consumer-group-0", first

    methods = {
        "plain": lambda: kb.decode(data, topic=topic, partition=0, threads=1),
        "internal": lambda: kb.decode(data, topic=topic, partition=0, threads=1, internal="consumer_offsets"),
        "decode_internal": lambda: pa.table(native.decode_internal("consumer_offsets", keys, values)),
    }
    times: dict[str, list[float]] = {name: [] for name in methods}
    for round_ in range(args.repeat + 1):
        for name, run in methods.items():
            start = time.perf_counter()
            run()
            if round_:
                times[name].append(time.perf_counter() - start)
    cores = len(os.sched_getaffinity(0))
    load = os.getloadavg()
    print(f"{args.records:,} OffsetCommit records, lz4, {len(data) / 1e6:.1f} MB; {cores} core(s); load {load[0]:.2f}")
    plain = statistics.median(times["plain"])
    print("| method | median ms | M records/s | vs plain |")
    print("|---|---:|---:|---:|")
    for name, ts in times.items():
        t = statistics.median(ts)
        print(f"| {name} | {t * 1e3:.1f} | {args.records / t / 1e6:.2f} | {t / plain:.2f}x |")


if __name__ == "__main__":
    main()
