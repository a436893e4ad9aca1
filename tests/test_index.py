"""kafkabatch.index: Kafka's .index / .timeindex / .txnindex files, written
here by hand from the documented layouts (all big-endian):

* .index      8-byte entries: relative offset int32, position int32
* .timeindex 12-byte entries: timestamp int64, relative offset int32
* .txnindex  34-byte entries: version int16, producerId int64, firstOffset
  int64, lastOffset int64, lastStableOffset int64

Brokers preallocate .index/.timeindex and leave a zero tail after an unclean
stop; Kafka (kafka-dump-log.sh, DumpLogSegments) stops at the first entry
after the first whose relative offset is 0.
"""

from __future__ import annotations

import struct
import time
import warnings

import pyarrow as pa
import pytest
import realclients as rc

import kafkabatch as kb
from kafkabatch.log.index import (
    IndexFileWarning,
    base_offset_from_path,
    read_offset_index,
    read_time_index,
    read_txn_index,
)

BASE = 1_000_000


def offset_entries(*pairs: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in pairs)


def time_entries(*pairs: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">qi", ts, rel) for ts, rel in pairs)


def txn_entries(*entries: tuple[int, int, int, int, int]) -> bytes:
    return b"".join(struct.pack(">hqqqq", *e) for e in entries)


def write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def seg(suffix: str, base: int = BASE) -> str:
    return f"{base:020d}{suffix}"


# ---------------------------------------------------------------------------
# .index
# ---------------------------------------------------------------------------


def test_offset_index_columns_and_values(tmp_path):
    pairs = [(57, 4153), (113, 8291), (2**31 - 1, 2**31 - 1)]
    t = read_offset_index(write(tmp_path, seg(".index"), offset_entries(*pairs)))
    assert t.schema == pa.schema([("relative_offset", pa.int32()), ("offset", pa.int64()), ("position", pa.int32())])
    assert t.to_pylist() == [{"relative_offset": r, "offset": BASE + r, "position": p} for r, p in pairs]


def test_offset_index_preallocated_zero_tail_is_trimmed(tmp_path):
    pairs = [(57, 4153), (113, 8291), (170, 12400)]
    data = offset_entries(*pairs) + bytes(10 * 1024 * 1024 - 3 * 8)  # a 10 MiB preallocated file
    t = read_offset_index(write(tmp_path, seg(".index"), data))
    assert t.column("relative_offset").to_pylist() == [57, 113, 170]
    assert t.column("position").to_pylist() == [4153, 8291, 12400]


def test_offset_index_stops_at_first_relative_zero_after_the_first(tmp_path):
    # As DumpLogSegments: an entry with relative offset 0 after the first is
    # the unused tail, even if something non-zero follows it.
    data = offset_entries((5, 100), (9, 200), (0, 0), (12, 300))
    t = read_offset_index(write(tmp_path, seg(".index"), data))
    assert t.column("offset").to_pylist() == [BASE + 5, BASE + 9]


def test_offset_index_first_entry_may_be_relative_zero(tmp_path):
    # (base offset -> position 0) is a real entry; only later zeros are the tail.
    data = offset_entries((0, 0), (40, 4096)) + bytes(8 * 4)
    t = read_offset_index(write(tmp_path, seg(".index"), data))
    assert t.to_pylist() == [
        {"relative_offset": 0, "offset": BASE, "position": 0},
        {"relative_offset": 40, "offset": BASE + 40, "position": 4096},
    ]


def test_offset_index_all_zero_file_is_one_entry_like_kafka(tmp_path):
    t = read_offset_index(write(tmp_path, seg(".index"), bytes(8 * 100)))
    assert t.to_pylist() == [{"relative_offset": 0, "offset": BASE, "position": 0}]


def test_offset_index_empty_file(tmp_path):
    t = read_offset_index(write(tmp_path, seg(".index"), b""))
    assert t.num_rows == 0 and t.column_names == ["relative_offset", "offset", "position"]


def test_offset_index_partial_entry_warns_and_is_ignored(tmp_path):
    data = offset_entries((5, 100), (9, 200)) + b"\x00\x00\x00"
    with pytest.warns(IndexFileWarning, match=r"3 bytes"):
        t = read_offset_index(write(tmp_path, seg(".index"), data))
    assert t.column("relative_offset").to_pylist() == [5, 9]


def test_offset_index_base_offset_override_and_bad_names(tmp_path):
    path = write(tmp_path, "whatever.index", offset_entries((5, 100)))
    with pytest.raises(ValueError, match="base_offset"):
        read_offset_index(path)
    assert read_offset_index(path, base_offset=7).column("offset").to_pylist() == [12]


def test_base_offset_from_path():
    assert base_offset_from_path("/data/orders-0/00000000000000001234.timeindex") == 1234
    assert base_offset_from_path("00000000000000000000.index") == 0
    with pytest.raises(ValueError):
        base_offset_from_path("orders.index")


def test_offset_index_big_file_is_fast(tmp_path):
    # 1.3M entries (a full 10 MiB index): converted column-wise, no per-entry Python.
    import numpy as np

    n = 10 * 1024 * 1024 // 8
    arr = np.empty(n, dtype=[("rel", ">i4"), ("pos", ">i4")])
    arr["rel"] = np.arange(1, n + 1)
    arr["pos"] = np.arange(0, n * 16, 16)
    path = write(tmp_path, seg(".index"), arr.tobytes())
    t0 = time.perf_counter()
    t = read_offset_index(path)
    elapsed = time.perf_counter() - t0
    assert t.num_rows == n
    assert t.column("relative_offset").combine_chunks().equals(pa.array(np.arange(1, n + 1, dtype=np.int32)))
    assert t.column("position").combine_chunks().equals(pa.array(np.arange(0, n * 16, 16, dtype=np.int32)))
    assert t.column("offset")[n - 1].as_py() == BASE + n
    assert elapsed < 2.0, elapsed


# ---------------------------------------------------------------------------
# .timeindex
# ---------------------------------------------------------------------------


def test_time_index_columns_and_values(tmp_path):
    pairs = [(rc.BASE_TS + 412, 57), (rc.BASE_TS + 900, 113), (2**62, 2**31 - 1), (-5, 2**31 - 2)]
    t = read_time_index(write(tmp_path, seg(".timeindex"), time_entries(*pairs)))
    assert t.schema == pa.schema([("timestamp", pa.int64()), ("relative_offset", pa.int32()), ("offset", pa.int64())])
    assert t.to_pylist() == [{"timestamp": ts, "relative_offset": r, "offset": BASE + r} for ts, r in pairs]


def test_time_index_preallocated_zero_tail_is_trimmed(tmp_path):
    pairs = [(rc.BASE_TS + 1, 10), (rc.BASE_TS + 2, 20)]
    data = time_entries(*pairs) + bytes(12 * 1000)
    t = read_time_index(write(tmp_path, seg(".timeindex"), data))
    assert t.column("timestamp").to_pylist() == [rc.BASE_TS + 1, rc.BASE_TS + 2]
    assert t.column("offset").to_pylist() == [BASE + 10, BASE + 20]


def test_time_index_all_zero_file_is_empty(tmp_path):
    # Timestamp 0 at the base offset is preallocated space, not an entry.
    t = read_time_index(write(tmp_path, seg(".timeindex"), bytes(12 * 50)))
    assert t.num_rows == 0


def test_time_index_first_entry_at_relative_zero_is_kept(tmp_path):
    data = time_entries((rc.BASE_TS, 0), (rc.BASE_TS + 5, 3)) + bytes(24)
    t = read_time_index(write(tmp_path, seg(".timeindex"), data))
    assert t.column("relative_offset").to_pylist() == [0, 3]


def test_time_index_stops_at_relative_zero_after_the_first(tmp_path):
    data = time_entries((rc.BASE_TS, 4), (rc.BASE_TS + 5, 0), (rc.BASE_TS + 9, 9))
    t = read_time_index(write(tmp_path, seg(".timeindex"), data))
    assert t.column("relative_offset").to_pylist() == [4]


def test_time_index_partial_entry(tmp_path):
    data = time_entries((rc.BASE_TS, 4)) + b"\x01" * 11
    with pytest.warns(IndexFileWarning, match=r"partial entry"):
        t = read_time_index(write(tmp_path, seg(".timeindex"), data))
    assert t.num_rows == 1


def test_time_index_empty(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = read_time_index(write(tmp_path, seg(".timeindex"), b""))
    assert t.num_rows == 0 and t.column_names == ["timestamp", "relative_offset", "offset"]


# ---------------------------------------------------------------------------
# .txnindex
# ---------------------------------------------------------------------------

TXN_COLUMNS = ["version", "producer_id", "first_offset", "last_offset", "last_stable_offset"]


def test_txn_index_columns_and_values(tmp_path):
    entries = [(0, 2000, 3, 8, 3), (0, 1000, 6, 9, 6), (1, -1, 2**62, 2**63 - 1, -(2**63)), (-1, 2**63 - 1, 0, 0, 0)]
    t = read_txn_index(write(tmp_path, seg(".txnindex"), txn_entries(*entries)))
    assert t.schema == pa.schema([("version", pa.int16())] + [(c, pa.int64()) for c in TXN_COLUMNS[1:]])
    assert t.to_pylist() == [dict(zip(TXN_COLUMNS, e)) for e in entries]


def test_txn_index_is_not_trimmed(tmp_path):
    # Not preallocated: an all-zero entry is a real (if odd) entry.
    entries = [(0, 5, 1, 2, 1), (0, 0, 0, 0, 0)]
    t = read_txn_index(write(tmp_path, seg(".txnindex"), txn_entries(*entries)))
    assert t.num_rows == 2


def test_txn_index_partial_entry(tmp_path):
    data = txn_entries((0, 5, 1, 2, 1)) + b"\x00" * 33
    with pytest.warns(IndexFileWarning, match=r"34-byte"):
        t = read_txn_index(write(tmp_path, seg(".txnindex"), data))
    assert t.to_pylist() == [dict(zip(TXN_COLUMNS, (0, 5, 1, 2, 1)))]


def test_txn_index_any_name(tmp_path):
    # Absolute offsets: no base offset needed from the name.
    t = read_txn_index(write(tmp_path, "aborted.txnindex", txn_entries((0, 5, 1, 2, 1))))
    assert t.num_rows == 1


def test_txn_index_table_is_an_aborted_list_for_decode(tmp_path):
    """read_committed takes the table as Kafka's aborted-transaction list."""
    p = 4242

    def txn(start: int, n: int, seq: int) -> bytes:
        recs = [{"key": b"k%d" % i, "value": b"v%d" % i, "timestamp": rc.BASE_TS + start + i} for i in range(n)]
        return rc.encode_v2_batch(
            recs,
            base_offset=start,
            attributes=rc.ATTR_TRANSACTIONAL,
            producer_id=p,
            producer_epoch=0,
            base_sequence=seq,
        )

    data = txn(0, 2, 0) + rc.control_batch("ABORT", base_offset=2, producer_id=p) + txn(3, 2, 2)
    index = write(tmp_path, seg(".txnindex", 0), txn_entries((0, p, 0, 2, 0)))
    aborted = read_txn_index(index)
    try:
        got = kb.decode(data, isolation="read_committed", aborted_transactions=aborted, hide_open_transactions=False)
    except (NotImplementedError, TypeError) as e:  # read_committed not in this build yet
        pytest.skip(f"read_committed unavailable: {e}")
    assert got.column("offset").to_pylist() == [3, 4]
