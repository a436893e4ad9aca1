"""Concurrency: ``kafkabatch.decode`` releases the GIL and shares no state
between calls, so many Python threads decoding at once get exactly what
sequential decoding gives, and ``decode(threads=N)`` (the core's own
parallel decode) gives exactly what ``threads=1`` gives.

Buffers are written by kafka-python: every codec, several magics, headers,
a corrupt batch (skip mode), a truncated tail.
"""

from __future__ import annotations

import os
import struct
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

kb = pytest.importorskip("kafkabatch")
pytest.importorskip("kafka")

from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402
from kafka.record.legacy_records import LegacyRecordBatchBuilder  # noqa: E402

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TS = 1_700_000_000_000


def v2_batch(codec: str, n: int, base_offset: int, seed: int) -> bytes:
    b = DefaultRecordBatchBuilder(2, CODECS[codec], 0, -1, -1, -1, 1 << 30)
    for i in range(n):
        key = None if i % 7 == 0 else b"key-%d-%d" % (seed, i)
        value = (b"value %d " % (i * seed)) * (1 + i % 5)
        headers = [("h", b"%d" % i)] if i % 3 == 0 else []
        b.append(i, TS + i, key, value, headers)
    data = bytearray(b.build())
    data[0:8] = struct.pack(">q", base_offset)
    return bytes(data)


def legacy_set(magic: int, codec: str, n: int, base_offset: int) -> bytes:
    b = LegacyRecordBatchBuilder(magic, CODECS[codec], 1 << 30)
    inner = 0 if (magic == 1 and codec != "none") else base_offset
    for i in range(n):
        b.append(inner + i, -1 if magic == 0 else TS + i, b"k%d" % i, b"legacy value %d" % i)
    data = bytearray(b.build())
    if codec != "none":
        data[0:8] = struct.pack(">q", base_offset + n - 1)
    return bytes(data)


def log(seed: int, batches: int = 30, per_batch: int = 200) -> bytes:
    """A log of many v2 batches cycling through the codecs."""
    out, offset = [], 0
    codecs = list(CODECS)
    for i in range(batches):
        out.append(v2_batch(codecs[(i + seed) % len(codecs)], per_batch, offset, seed))
        offset += per_batch
    return b"".join(out)


def corrupt_middle(data: bytes) -> bytes:
    """Flip a byte in the CRC-covered part of the second batch."""
    (size,) = struct.unpack_from(">i", data, 8)
    second = 12 + size
    buf = bytearray(data)
    buf[second + 70] ^= 0x40
    return bytes(buf)


@pytest.fixture(scope="module")
def buffers() -> dict[str, bytes]:
    bufs = {f"log-{s}": log(s) for s in range(4)}
    bufs["legacy-mixed"] = b"".join(
        [
            legacy_set(0, "none", 50, 0),
            legacy_set(1, "gzip", 500, 50),
            legacy_set(1, "snappy", 500, 550),
            legacy_set(1, "lz4", 300, 1050),
            v2_batch("zstd", 300, 1350, 9),
        ]
    )
    bufs["corrupt-and-truncated"] = corrupt_middle(log(7, batches=10)) + log(8, batches=1)[:100]
    return bufs


OPTIONS = [{"on_error": "raise"}, {"on_error": "skip"}, {"include_control": True, "validate_crc": False}]


def decode(data: bytes, opts: dict):
    try:
        return kb.decode_report(data, topic="t", partition=1, **opts)
    except kb.KafkaBatchError as e:  # raise mode on the corrupt buffer
        return f"{type(e).__name__}: {e}"


def same(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return (
        a.table.equals(b.table)
        and (a.batches, a.records, a.end, a.trailing_bytes, a.skipped_bytes)
        == (b.batches, b.records, b.end, b.trailing_bytes, b.skipped_bytes)
        and [str(e) for e in a.skipped] == [str(e) for e in b.skipped]
    )


def test_threads_decoding_different_and_identical_buffers_match_sequential(buffers):
    jobs = [(name, i) for name in buffers for i in range(len(OPTIONS))]
    expected = {job: decode(buffers[job[0]], OPTIONS[job[1]]) for job in jobs}
    assert any(isinstance(v, str) for v in expected.values()), "the corrupt buffer raises in raise mode"
    # Every job 4 times, interleaved: identical buffers decode at the same time too.
    work = jobs * 4
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda job: (job, decode(buffers[job[0]], OPTIONS[job[1]])), work))
    assert len(results) == len(work)
    for job, got in results:
        assert same(got, expected[job]), f"{job}: threaded result differs from sequential"


def test_one_buffer_object_shared_by_many_threads(buffers):
    """The very same bytes object (and a memoryview of it), decoded by 8 threads at once."""
    data = buffers["log-0"]
    view = memoryview(data)
    expected = kb.decode(data)
    barrier = threading.Barrier(8)

    def run(i):
        barrier.wait()
        return kb.decode(view if i % 2 else data)

    with ThreadPoolExecutor(max_workers=8) as pool:
        tables = list(pool.map(run, range(8)))
    assert all(t.equals(expected) for t in tables)


def test_decode_releases_the_gil(buffers):
    """A Python thread keeps running while another thread is inside decode."""
    data = b"".join(buffers[f"log-{s}"] for s in range(4))
    while True:  # long enough to watch: at least ~0.2 s
        start = time.perf_counter()
        kb.decode(data, threads=1)
        if time.perf_counter() - start > 0.2 or len(data) > 1 << 30:
            break
        data *= 2

    ticks: list[float] = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.02)
    begin = time.perf_counter()
    kb.decode(data, threads=1)
    end = time.perf_counter()
    done.set()
    t.join()
    during = [x for x in ticks if begin <= x <= end]
    gaps = [b - a for a, b in zip(during, during[1:])] or [end - begin]
    # Holding the GIL would stall the ticker for the whole call.
    assert len(during) >= 5, f"ticker ran {len(during)} times during a {end - begin:.3f}s decode"
    assert max(gaps) < (end - begin) / 2, f"ticker stalled {max(gaps):.3f}s of {end - begin:.3f}s"


@pytest.fixture(scope="module")
def big_log() -> bytes:
    """Well past the parallel threshold: ~48 MiB of batches,
    a corrupt batch in the middle and a truncated tail."""
    one = v2_batch("none", 2000, 0, 3) + v2_batch("lz4", 2000, 2000, 4) + v2_batch("zstd", 2000, 4000, 5)
    parts, size, i = [], 0, 0
    while size < 48 << 20:
        chunk = bytearray(one)
        pos = 0
        for k in range(3):
            (length,) = struct.unpack_from(">i", chunk, pos + 8)
            chunk[pos : pos + 8] = struct.pack(">q", (i * 3 + k) * 2000)
            pos += 12 + length
        parts.append(bytes(chunk))
        size += len(chunk)
        i += 1
    data = b"".join(parts)
    assert len(data) > 3 * (16 << 20)
    middle = len(parts) // 2 * len(one)
    buf = bytearray(data)
    buf[middle + 100] ^= 1  # inside the first batch of the middle chunk
    return bytes(buf) + one[:500]


@pytest.mark.parametrize("threads", [2, 3, 4, None])
def test_parallel_decode_is_identical_to_one_thread(big_log, threads):
    for opts in ({"on_error": "skip"}, {"on_error": "skip", "isolation": "read_committed"}):
        one = kb.decode_report(big_log, topic="t", partition=0, threads=1, **opts)
        many = kb.decode_report(big_log, topic="t", partition=0, threads=threads, **opts)
        assert one.records > 0 and len(one.skipped) == 1 and one.end == "truncated"
        assert same(many, one), f"threads={threads} {opts}"
    with pytest.raises(kb.CorruptBatchError) as one_err:
        kb.decode(big_log, threads=1)
    with pytest.raises(kb.CorruptBatchError) as many_err:
        kb.decode(big_log, threads=threads)
    assert str(many_err.value) == str(one_err.value)


def test_parallel_decodes_from_many_threads_at_once(big_log):
    """Callers share the helper threads: one has them while the others decode
    on their own thread, and every result matches a one-thread decode."""
    expected = kb.decode_report(big_log, topic="t", partition=0, threads=1, on_error="skip")
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda _: kb.decode_report(big_log, topic="t", partition=0, threads=2, on_error="skip"), range(8))
        )
    assert all(same(r, expected) for r in results)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_parallel_decode_in_a_forked_child(big_log):
    """A forked child has none of its parent's helper threads; it must start
    its own rather than wait for ones that do not exist."""
    expected = kb.decode_report(big_log, topic="t", partition=0, threads=1, on_error="skip")
    kb.decode_report(big_log, topic="t", partition=0, threads=2, on_error="skip")  # the parent's helpers start
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads running
        pid = os.fork()
    if pid == 0:  # the child: report, then leave without running pytest's teardown
        status = 1
        try:
            many = kb.decode_report(big_log, topic="t", partition=0, threads=2, on_error="skip")
            status = 0 if same(many, expected) and many.table.num_rows == expected.table.num_rows else 2
        finally:
            os.write(write_end, bytes([status]))
            os._exit(status)
    os.close(write_end)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's parallel decode did not finish in 60 s")
    assert os.read(read_end, 1) == b"\x00" and os.waitstatus_to_exitcode(status) == 0
