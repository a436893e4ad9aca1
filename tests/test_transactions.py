"""read_committed on raw logs written by real transactional producers.

librdkafka (through confluent-kafka's in-process mock cluster) writes the log:
two transactional producers and one idempotent one, interleaved on one
partition, commits, aborts spanning several batches, and a transaction left
open at the end. The truth is what a committed-only reader must see, derived
from what each producer did. The mock returns no aborted-transaction lists,
so the explicit-list path is checked against lists computed by hand.
"""

from __future__ import annotations

import pytest
import realclients as rc

import kafkabatch as kb

TOPIC = "kb-txn-interleaved"


def _produce(p, records: list[dict], key: str, n: int, *, flush: bool = True) -> None:
    for i in range(n):
        r = {"key": f"{key}-{i}".encode(), "value": f"{key} value {i}".encode()}
        p.produce(TOPIC, key=r["key"], value=r["value"], partition=0, headers=[("who", key.encode())])
        records.append(r | {"who": key})
    if flush:
        p.flush(30)


@pytest.fixture(scope="module")
def interleaved():
    """(raw log bytes with control CRCs fixed, produced records with fate, producer ids)."""
    cluster = rc.MockCluster()
    try:
        t1 = cluster.producer(**{"transactional.id": "kb-t1", "linger.ms": 1})
        t2 = cluster.producer(**{"transactional.id": "kb-t2", "linger.ms": 1})
        plain = cluster.producer(**{"enable.idempotence": True, "linger.ms": 1})
        t1.init_transactions(30)
        t2.init_transactions(30)
        produced: list[dict] = []
        fate: dict[str, str] = {}

        t1.begin_transaction()
        _produce(t1, produced, "t1a", 2)
        t2.begin_transaction()
        _produce(t2, produced, "t2a", 1)
        _produce(plain, produced, "plain1", 2)
        _produce(t1, produced, "t1a-more", 1)
        t1.commit_transaction(30)
        fate.update({"t1a": "commit", "t1a-more": "commit"})
        _produce(t2, produced, "t2a-more", 2)
        t2.abort_transaction(30)  # an abort spanning several batches
        fate.update({"t2a": "abort", "t2a-more": "abort"})
        t1.begin_transaction()
        for part in range(3):
            _produce(t1, produced, f"t1b-{part}", 2)
        t1.abort_transaction(30)
        fate.update({f"t1b-{part}": "abort" for part in range(3)})
        t2.begin_transaction()
        _produce(t2, produced, "t2b", 3)
        _produce(plain, produced, "plain2", 1)
        t2.commit_transaction(30)
        fate.update({"t2b": "commit", "plain1": "plain", "plain2": "plain"})
        t1.begin_transaction()
        _produce(t1, produced, "t1c-open", 2)  # never committed: past the last stable offset
        fate["t1c-open"] = "open"
        plain.flush(30)
        data = cluster.fetch_log(TOPIC)
        del t1, t2, plain
    finally:
        cluster.close()
    for b in rc.reference_batches(data):
        if b["is_control"]:
            data = rc.recompute_crc(data, b["position"])  # the mock writes control CRCs as 0
    for r in produced:
        r["fate"] = fate[r["who"]]
    return data, produced


def _rows(table) -> list[tuple[bytes, bytes]]:
    return list(zip(table.column("key").to_pylist(), table.column("value").to_pylist()))


def _want(produced: list[dict], *fates: str) -> list[tuple[bytes, bytes]]:
    return [(r["key"], r["value"]) for r in produced if r["fate"] in fates]


def test_the_log_is_what_the_producers_wrote(interleaved):
    data, produced = interleaved
    table = kb.decode(data)
    assert sorted(_rows(table)) == sorted(_want(produced, "commit", "abort", "plain", "open"))
    markers = [b.control.type for b in kb.iter_batches(data) if b.is_control]
    assert markers == ["COMMIT", "ABORT", "ABORT", "COMMIT"]


def test_read_committed_from_markers(interleaved):
    data, produced = interleaved
    got = kb.decode(data, isolation="read_committed")
    assert sorted(_rows(got)) == sorted(_want(produced, "commit", "plain"))
    # Offsets keep log order; no control record slips through.
    offsets = got.column("offset").to_pylist()
    assert offsets == sorted(offsets)
    assert len(got) == len(_want(produced, "commit", "plain"))


def test_open_transaction_is_shown_once_a_list_judges_it(interleaved):
    data, produced = interleaved
    got = kb.decode(data, isolation="read_committed", aborted_transactions=[])
    assert sorted(_rows(got)) == sorted(_want(produced, "commit", "plain", "open"))
    hidden = kb.decode(data, isolation="read_committed", aborted_transactions=[], hide_open_transactions=True)
    assert sorted(_rows(hidden)) == sorted(_want(produced, "commit", "plain"))


def _aborted_list(data) -> list[tuple[int, int]]:
    """(producer id, first offset) of each aborted transaction, by hand: the first
    transactional batch of a producer after its previous marker."""
    first: dict[int, int] = {}
    out = []
    for b in kb.iter_batches(data):
        if not b.is_transactional:
            continue
        if b.is_control:
            if b.control.type == "ABORT":
                out.append((b.producer_id, first[b.producer_id]))
            first.pop(b.producer_id, None)
        else:
            first.setdefault(b.producer_id, b.base_offset)
    return out


def test_explicit_list_on_a_response_cut_before_the_marker(interleaved):
    """A fetch response cut before an ABORT marker: only the list can tell
    (and, unsorted, it must still apply)."""
    data, produced = interleaved
    aborted = _aborted_list(data)
    assert len(aborted) == 2
    first_abort = next(b for b in kb.iter_batches(data) if b.is_control and b.control.type == "ABORT")
    cut = data[: first_abort.position]
    fate = {r["key"]: r["fate"] for r in produced}
    shown = [row for row in _rows(kb.decode(cut))]
    want = [row for row in shown if fate[row[0]] != "abort"]
    assert len(want) < len(shown)
    for listed in (aborted, list(reversed(aborted)), [{"producer_id": p, "first_offset": o} for p, o in aborted]):
        got = kb.decode(cut, isolation="read_committed", aborted_transactions=listed)
        assert _rows(got) == want
    # Markers alone can't judge the cut transaction: it stays hidden as open.
    markers_only = _rows(kb.decode(cut, isolation="read_committed"))
    assert markers_only == [row for row in want if fate[row[0]] != "abort"] and all(
        fate[k] in ("commit", "plain") for k, _ in markers_only
    )


def test_iter_batches_read_committed(interleaved):
    data, produced = interleaved
    records = [(r.key, r.value) for b in kb.iter_batches(data, isolation="read_committed") for r in b.records()]
    assert sorted(records) == sorted(_want(produced, "commit", "plain"))


def test_segment_txnindex_and_scan_log(interleaved, tmp_path):
    """A .txnindex beside the segment (Kafka's layout) is applied; scan_log agrees."""
    import struct

    data, produced = interleaved
    path = rc.write_segment(tmp_path, TOPIC, 0, data)
    entries = b"".join(struct.pack(">hqqqq", 0, pid, first, first + 1, first) for pid, first in _aborted_list(data))
    path.with_suffix(".txnindex").write_bytes(entries)
    got = kb.read_segment(path, isolation="read_committed")
    assert sorted(_rows(got)) == sorted(_want(produced, "commit", "plain"))
    assert got.column("topic").unique().to_pylist() == [TOPIC]
    scanned = kb.scan_log(tmp_path, isolation="read_committed").read_all()
    assert sorted(_rows(scanned)) == sorted(_want(produced, "commit", "plain"))


def test_segments_split_mid_transaction(interleaved, tmp_path):
    """A transaction whose marker is in the next segment is judged by that marker."""
    data, produced = interleaved
    batches = list(kb.iter_batches(data))
    cut = next(b for b in batches if b.is_control and b.control.type == "ABORT").position - 1
    cut = max(b.position for b in batches if b.position <= cut)  # start of the batch before the first ABORT
    first_next = next(b.base_offset for b in batches if b.position == cut)
    rc.write_segment(tmp_path, TOPIC, 0, data[:cut])
    rc.write_segment(tmp_path, TOPIC, 0, data[cut:], base_offset=first_next)
    scanned = kb.scan_log(tmp_path, isolation="read_committed").read_all()
    assert sorted(_rows(scanned)) == sorted(_want(produced, "commit", "plain"))
